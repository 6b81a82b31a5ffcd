// core/huge_pages.h (an internal interface, linked from the library's own object): what a
// block holds. huge_room() is the size huge_alloc() really allocates, and HugeArray::room() the
// elements an array may use, so that a decoded block's slot (trace/block_decode.cpp) grows only
// beyond them. Every element up to room() is written, which AddressSanitizer checks in the
// suite's ASan build.
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <sonde/trace.h>

#include "core/huge_pages.h"

using sonde::core::huge_room;
using sonde::core::HugeArray;
using sonde::core::kHugeMin;
using sonde::core::kHugePage;

namespace {

int failures = 0;

void check(bool ok, const char *what, unsigned long long got) {
    if (ok) return;
    std::fprintf(stderr, "FAIL: %s (got %llu)\n", what, got);
    ++failures;
}

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
    if (failures != 0) return 1;
    std::printf("huge_pages: all checks passed\n");
    return 0;
}
