// core/huge_pages.h (an internal interface, linked from the library's own object): what a
// block holds. huge_room() is the size huge_alloc() really allocates, and HugeArray::room() the
// elements an array may use, so that a decoded block's slot (trace/block_decode.cpp) grows only
// beyond them. Every element up to room() is written, which AddressSanitizer checks in the
// suite's ASan build. And HugeHold: a block freed while a hold is alive comes back from
// huge_alloc() of the same rounded size, up to kHoldMax bytes kept; the last hold's end frees
// them (the ASan build's leak checker sees a block it does not).
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <sonde/trace.h>

#include "check.hpp"
#include "core/huge_pages.h"

using sonde::core::huge_alloc;
using sonde::core::huge_free;
using sonde::core::huge_kept;
using sonde::core::huge_room;
using sonde::core::HugeArray;
using sonde::core::HugeHold;
using sonde::core::kHoldMax;
using sonde::core::kHugeMin;
using sonde::core::kHugePage;
using sonde_test::check;

namespace {

// Writes every element the array says it holds, then reads them back.
template <typename T>
bool fill_room(HugeArray<T> &a) {
    unsigned char *p = reinterpret_cast<unsigned char *>(a.get());
    const std::size_t bytes = a.room() * sizeof(T);
    for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(i * 7);
    for (std::size_t i = 0; i < bytes; ++i)
        if (p[i] != static_cast<unsigned char>(i * 7)) return false;
    return true;
}

}  // namespace

int main() {
    // Below kHugeMin a block is plain operator new: exactly what was asked.
    check(huge_room(0) == 0, "huge_room(0)", huge_room(0));
    check(huge_room(1) == 1, "huge_room(1)", huge_room(1));
    check(huge_room(kHugeMin - 1) == kHugeMin - 1, "huge_room(kHugeMin - 1)", huge_room(kHugeMin - 1));
    // From kHugeMin on: rounded up to whole huge pages.
    check(huge_room(kHugeMin) == kHugePage, "huge_room(kHugeMin)", huge_room(kHugeMin));
    check(huge_room(kHugePage) == kHugePage, "huge_room(2 MiB)", huge_room(kHugePage));
    check(huge_room(kHugePage + 1) == 2 * kHugePage, "huge_room(2 MiB + 1)", huge_room(kHugePage + 1));
    check(huge_room(SIZE_MAX - 5) == SIZE_MAX, "huge_room wraps around", huge_room(SIZE_MAX - 5));

    {
        HugeArray<sonde_memref_t> none;
        check(none.room() == 0 && none.size() == 0, "empty HugeArray room", none.room());
    }
    {
        // A small array: no rounding.
        HugeArray<sonde_memref_t> a(100);
        check(a.room() == 100, "small HugeArray room", a.room());
        check(fill_room(a), "small HugeArray filled to its room", a.room());
    }
    {
        // A lackey block of 256 KiB holds at most 37,450 records (1.2 MB): one huge page,
        // 65,536 records, every one of them writable.
        HugeArray<sonde_memref_t> a(37450);
        check(a.size() == 37450, "HugeArray size", a.size());
        check(a.room() == kHugePage / sizeof(sonde_memref_t), "HugeArray room is its huge page", a.room());
        check(fill_room(a), "HugeArray filled to its room", a.room());
    }
    {
        // Elements that do not divide the page: the room is the whole elements that fit.
        struct Odd {
            unsigned char b[24];
        };
        HugeArray<Odd> a(kHugeMin / sizeof(Odd) + 1);
        check(a.room() == kHugePage / sizeof(Odd), "room of 24-byte elements", a.room());
        check(a.room() * sizeof(Odd) <= kHugePage, "room within the block", a.room());
        check(fill_room(a), "24-byte elements filled to their room", a.room());
    }
    {
        // Under a hold, a freed block is kept and handed out again for the same rounded size
        // (4 MiB - 1 and 3 MiB + 1 both round to 4 MiB), not for another.
        check(huge_kept() == 0, "nothing kept before a hold", huge_kept());
        void *before = huge_alloc(std::size_t{4} << 20);
        huge_free(before, std::size_t{4} << 20);
        check(huge_kept() == 0, "nothing kept without a hold", huge_kept());
        const HugeHold hold;
        void *a = huge_alloc(std::size_t{4} << 20);
        std::memset(a, 1, std::size_t{4} << 20);
        huge_free(a, std::size_t{4} << 20);
        check(huge_kept() == std::size_t{4} << 20, "a block freed under a hold is kept", huge_kept());
        void *other = huge_alloc(std::size_t{2} << 20);
        check(other != a, "a kept block is not handed out for another size", 0);
        void *again = huge_alloc((std::size_t{3} << 20) + 1);
        check(again == a, "a kept block comes back for its rounded size", 0);
        check(static_cast<unsigned char *>(again)[123] == 1, "a kept block keeps its bytes", 0);
        {
            // Holds nest: the inner one's end frees nothing.
            const HugeHold inner;
            huge_free(again, (std::size_t{4} << 20) - 1);
        }
        check(huge_kept() == std::size_t{4} << 20, "the inner hold's end keeps the block", huge_kept());
        void *third = huge_alloc(std::size_t{4} << 20);
        check(third == a, "a block kept under a nested hold outlives the inner hold", 0);
        huge_free(third, std::size_t{4} << 20);
        huge_free(other, std::size_t{2} << 20);
        // Past kHoldMax a freed block is not kept: of two blocks of more than half of it, the
        // second is freed, and the first comes back.
        const std::size_t big = kHoldMax / 2 + kHugePage;
        void *b1 = huge_alloc(big);
        void *b2 = huge_alloc(big);
        // The two kept above (4 and 2 MiB) count too: free them from the hold first.
        void *k4 = huge_alloc(std::size_t{4} << 20);
        void *k2 = huge_alloc(std::size_t{2} << 20);
        check(k4 == a, "the kept 4 MiB block is handed out", 0);
        huge_free(b1, big);
        huge_free(b2, big);
        check(huge_kept() == huge_room(big), "a block past kHoldMax is freed", huge_kept());
        void *b3 = huge_alloc(big);
        check(b3 == b1, "the block kept within kHoldMax comes back", 0);
        huge_free(b3, big);
        huge_free(k4, std::size_t{4} << 20);
        huge_free(k2, std::size_t{2} << 20);
        check(huge_kept() == huge_room(big) + (std::size_t{6} << 20), "every block within kHoldMax is kept",
              huge_kept());
    }
    check(huge_kept() == 0, "the last hold's end frees the blocks", huge_kept());
    return sonde_test::finish("huge_pages");
}
