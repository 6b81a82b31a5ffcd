// trace::TapArena (src/trace/source.h, an internal interface, linked from the library's own
// objects): the memory reuse_distance's parallel batches keep decoded taps in. A cut has room
// for its n words and n bytes, 8-byte aligned, apart from every other cut; a cut larger than a
// slab has a region of its own; a slab whose cuts are all gone is cut again rather than a new one
// mapped; a cut outlives its arena. And threads cutting at once: when two find the current slab
// full together, the one that comes second cuts the slab the first put in instead of replacing
// it, so the slabs mapped stay within one per two half-slab cuts plus one per thread.
// 'stress' suite: scripts/test.sh runs it under ThreadSanitizer as well.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "check.hpp"
#include "trace/source.h"

using sonde::trace::BlockTapOut;
using sonde::trace::TapArena;
using sonde_test::check;

namespace {

// The entries that fill half a slab: two such cuts take a slab, a third does not fit.
constexpr size_t kHalf = (TapArena::kSlabBytes / 2) / 9;

struct Range {
    uintptr_t begin, end;
};

Range range_of(const BlockTapOut &c) {
    const uintptr_t b = reinterpret_cast<uintptr_t>(c.words);
    return {b, b + c.count * 9};
}

// No two of the ranges overlap.
bool disjoint(std::vector<Range> r) {
    std::sort(r.begin(), r.end(), [](const Range &a, const Range &b) { return a.begin < b.begin; });
    for (size_t i = 1; i < r.size(); ++i)
        if (r[i].begin < r[i - 1].end) return false;
    return true;
}

// A cut of n entries, its count set (cut() leaves count to the tap that fills it).
BlockTapOut cut(TapArena &arena, size_t n) {
    BlockTapOut c;
    arena.cut(n, &c);
    c.count = n;
    return c;
}

// Writes every entry of the cut with values of `tag`, then reads them back.
void fill(BlockTapOut &c, unsigned tag) {
    for (size_t i = 0; i < c.count; ++i) {
        c.words[i] = (uint64_t{tag} << 32) | i;
        c.bytes[i] = static_cast<uint8_t>(tag + i);
    }
}
bool intact(const BlockTapOut &c, unsigned tag) {
    for (size_t i = 0; i < c.count; ++i)
        if (c.words[i] != ((uint64_t{tag} << 32) | i) || c.bytes[i] != static_cast<uint8_t>(tag + i))
            return false;
    return true;
}

void single_thread() {
    auto arena = std::make_shared<TapArena>();
    {
        BlockTapOut none = cut(*arena, 0);
        check(none.words == nullptr && none.bytes == nullptr && none.storage == nullptr,
              "a cut of 0 entries is empty", 0);
        check(arena->slabs() == 0, "a cut of 0 entries maps nothing", arena->slabs());
    }
    // Small cuts of odd sizes: aligned words, the bytes right after them, apart, all one slab.
    std::vector<BlockTapOut> cuts;
    const size_t sizes[] = {1, 7, 100, 1000, 3, 65537};
    unsigned tag = 1;
    for (size_t n : sizes) {
        cuts.push_back(cut(*arena, n));
        BlockTapOut &c = cuts.back();
        check(reinterpret_cast<uintptr_t>(c.words) % 8 == 0, "a cut's words are 8-byte aligned", n);
        check(c.bytes == reinterpret_cast<uint8_t *>(c.words) + n * 8, "a cut's bytes follow its words", n);
        check(c.storage != nullptr, "a cut owns its storage", n);
        fill(c, tag++);
    }
    tag = 1;
    for (const BlockTapOut &c : cuts)
        check(intact(c, tag++), "a cut keeps its entries while others are cut", c.count);
    std::vector<Range> ranges;
    for (const BlockTapOut &c : cuts) ranges.push_back(range_of(c));
    check(disjoint(ranges), "cuts do not overlap", ranges.size());
    check(arena->slabs() == 1, "small cuts share one slab", arena->slabs());

    // Larger than a slab: a region of its own, not a slab.
    {
        BlockTapOut big = cut(*arena, TapArena::kSlabBytes / 9 + 1);
        check(big.words != nullptr, "a cut larger than a slab", 0);
        check(arena->slabs() == 1, "a cut larger than a slab maps no slab", arena->slabs());
        fill(big, 77);
        check(intact(big, 77), "a cut larger than a slab holds its entries", big.count);
    }
    cuts.clear();

    // A slab whose cuts are gone is cut again. The current slab has the small cuts' room taken:
    // a half-slab cut fits once more; the next maps a second slab; with the first slab's cuts
    // gone, the fourth half takes the first slab back.
    auto fresh = std::make_shared<TapArena>();
    BlockTapOut a = cut(*fresh, kHalf);
    BlockTapOut b = cut(*fresh, kHalf);
    check(fresh->slabs() == 1, "two half-slab cuts take one slab", fresh->slabs());
    BlockTapOut c = cut(*fresh, kHalf);
    check(fresh->slabs() == 2, "a third half-slab cut maps a second slab", fresh->slabs());
    uint64_t *const first = a.words;
    a = BlockTapOut();
    b = BlockTapOut();
    BlockTapOut d = cut(*fresh, kHalf);  // the second slab's other half
    BlockTapOut e = cut(*fresh, kHalf);  // the first slab, given back
    check(fresh->slabs() == 2, "a slab given back is cut again", fresh->slabs());
    check(e.words == first, "the slab given back is the first one", 0);
    fill(d, 5);
    fill(e, 6);
    check(intact(d, 5) && intact(e, 6), "cuts of a reused slab hold their entries", 0);

    // A cut outlives its arena: the slab is freed with the cut (the ASan build's leak checker
    // sees one that is not).
    fresh.reset();
    check(intact(d, 5) && intact(e, 6), "cuts outlive their arena", 0);
}

void threads_at_once() {
    const unsigned kThreads = 4;
    const size_t kCuts = 96;  // per thread; each half a slab, never written (mapped, not faulted)
    for (int round = 0; round < 32; ++round) {
        auto arena = std::make_shared<TapArena>();
        std::vector<std::vector<BlockTapOut>> held(kThreads);
        std::atomic<unsigned> ready{0};
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t] {
                // Each thread owns held[t]; the arena is shared.
                ready.fetch_add(1);
                while (ready.load() < kThreads) std::this_thread::yield();
                for (size_t i = 0; i < kCuts; ++i) held[t].push_back(cut(*arena, kHalf));
            });
        for (std::thread &th : threads) th.join();
        std::vector<Range> ranges;
        for (const auto &v : held)
            for (const BlockTapOut &c : v) ranges.push_back(range_of(c));
        check(disjoint(ranges), "cuts made at once do not overlap", ranges.size());
        const size_t bound = kThreads * kCuts / 2 + kThreads;
        check(arena->slabs() <= bound, "slabs mapped by threads cutting at once", arena->slabs());
    }
}

}  // namespace

int main() {
    single_thread();
    threads_at_once();
    return sonde_test::finish("tap_arena");
}
