// SeenBlocks: the set of cache blocks a simulated cache has ever held, for compulsory misses;
// shared by cache_sim's cachegrind and drcachesim models. One owner thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace sonde::analysis {

// The blocks a cache has ever held, for compulsory misses: a bitmap per region of 512 blocks,
// found through an open-addressing table of 16-byte slots (linear probing, at most 3/4 full),
// with the 16 last regions cached (misses have locality). Cost per call: a compare and a bit
// test; when a region is not among the recent ones, a hash, usually one slot and its bitmap.
// The bitmaps sit side by side in chunks of 1024 (64 KiB) that never move, so growing the
// table rehashes only its slots. Memory: 64 bytes a region and 16 to 32 for its slot, where a
// node-based map took about 104 and three dependent loads (bucket, node, bitmap).
class SeenBlocks {
public:
    // True when `block` was not seen before (and marks it seen).
    bool insert(uint64_t block) {
        const uint64_t region = block >> kRegionBits;
        Recent &r = recent_[region & (kRecent - 1)];
        if (r.bits == nullptr || r.region != region) {
            r.bits = find_or_add(region);
            r.region = region;
        }
        const uint64_t bit = block & ((uint64_t(1) << kRegionBits) - 1);
        uint64_t &word = r.bits[bit >> 6];
        const uint64_t mask = uint64_t(1) << (bit & 63);
        // Without a branch: whether a missed block is new is as good as random in a trace.
        const bool fresh = (word & mask) == 0;
        word |= mask;
        return fresh;
    }

private:
    static constexpr unsigned kRegionBits = 9;
    static constexpr size_t kWords = (size_t(1) << kRegionBits) / 64;
    static constexpr size_t kRecent = 16;          // direct-mapped cache of region bitmaps
    static constexpr size_t kChunkRegions = 1024;  // bitmaps per chunk of the pool
    struct Recent {
        uint64_t region = 0;
        uint64_t *bits = nullptr;
    };
    struct Slot {
        uint64_t key;  // region + 1; 0: empty
        uint64_t *bits;
    };

    static uint64_t hash(uint64_t region) { return (region * 0x9E3779B97F4A7C15ull) >> 20; }

    // The bitmap of `region`, added (all zero) when new.
    uint64_t *find_or_add(uint64_t region) {
        if (4 * (used_ + 1) > 3 * (mask_ + 1)) grow();
        const uint64_t key = region + 1;
        for (uint64_t i = hash(region) & mask_;; i = (i + 1) & mask_) {
            Slot &s = slots_[i];
            if (s.key == key) return s.bits;
            if (s.key == 0) {
                if (used_ % kChunkRegions == 0) {
                    std::unique_ptr<uint64_t[]> chunk(new uint64_t[kChunkRegions * kWords]());
                    pool_.push_back(std::move(chunk));
                }
                s.bits = pool_.back().get() + (used_ % kChunkRegions) * kWords;
                s.key = key;
                ++used_;
                return s.bits;
            }
        }
    }

    void grow() {
        const uint64_t size = slots_.empty() ? 64 : 2 * slots_.size();
        std::vector<Slot> fresh(size, Slot{0, nullptr});
        for (const Slot &s : slots_) {
            if (s.key == 0) continue;
            uint64_t i = hash(s.key - 1) & (size - 1);
            while (fresh[i].key != 0) i = (i + 1) & (size - 1);
            fresh[i] = s;
        }
        slots_.swap(fresh);
        mask_ = size - 1;
    }

    std::vector<Slot> slots_;
    uint64_t mask_ = 0;  // slots - 1 (0 before the first region: the first insert grows)
    uint64_t used_ = 0;  // regions
    std::vector<std::unique_ptr<uint64_t[]>> pool_;
    Recent recent_[kRecent];
};

}  // namespace sonde::analysis
