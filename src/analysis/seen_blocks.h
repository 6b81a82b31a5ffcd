// SeenBlocks: the set of cache blocks a simulated cache has ever held, for compulsory misses;
// shared by cache_sim's cachegrind and drcachesim models. One owner thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace sonde::analysis {

// The blocks a cache has ever held, for compulsory misses: a bitmap per region of 4096 blocks,
// found through an open-addressing table of 16-byte slots (linear probing, at most 1/4 full).
// Cost per call: a hash, the region's home slot and its bitmap, inline; a region away from its
// home slot (at most about one in eight) or new takes the probe out of line. The table is kept
// sparse because that branch is as good as random in a trace: half full (the old limit of 3/4
// allowed that), a cache_sim run over random accesses took 26 % longer; a cache of the 16 last
// regions in front of the table missed on nearly every call there. Regions are large
// so that the table stays small: on a trace whose misses spread over half a gigabyte, regions
// of 512 blocks made a table of 2 MiB a level, beyond the L2, and the slot and then the bitmap
// each missed it (4096 blocks: 23 % less time for the whole run). The bitmaps sit side by side
// in chunks of 128 (64 KiB) that never move, so growing the table rehashes only its slots.
// Memory: 512 bytes a region (256 KiB of addresses with 64-byte lines) and 64 to 128 bytes for
// its slots; a block alone in its region takes that much.
class SeenBlocks {
public:
    // True when `block` was not seen before (and marks it seen).
    bool insert(uint64_t block) {
        const uint64_t region = block >> kRegionBits;
        const Slot &home = slots_[hash(region) & mask_];
        uint64_t *bits = home.key == region + 1 ? home.bits : find_or_add(region);
        const uint64_t bit = block & ((uint64_t(1) << kRegionBits) - 1);
        uint64_t &word = bits[bit >> 6];
        const uint64_t mask = uint64_t(1) << (bit & 63);
        // Without a branch: whether a missed block is new is as good as random in a trace.
        const bool fresh = (word & mask) == 0;
        word |= mask;
        return fresh;
    }

    // Bytes of the bitmaps and the table.
    std::size_t bytes() const { return used_ * kWords * sizeof(uint64_t) + slots_.size() * sizeof(Slot); }
    // Starts loading the word of `block` when its region is at its home slot (no effect on the
    // answers).
    __attribute__((always_inline)) void prefetch(uint64_t block) const {
        const uint64_t region = block >> kRegionBits;
        const Slot &home = slots_[hash(region) & mask_];
        const uint64_t bit = block & ((uint64_t(1) << kRegionBits) - 1);
        __builtin_prefetch(home.key == region + 1 ? home.bits + (bit >> 6) : &mask_);
    }

private:
    static constexpr unsigned kRegionBits = 12;
    static constexpr size_t kWords = (size_t(1) << kRegionBits) / 64;
    static constexpr size_t kChunkRegions = 128;  // bitmaps per chunk of the pool (64 KiB)
    struct Slot {
        uint64_t key;  // region + 1; 0: empty
        uint64_t *bits;
    };

    static uint64_t hash(uint64_t region) { return (region * 0x9E3779B97F4A7C15ull) >> 20; }

    // The bitmap of `region`, added (all zero) when new: the probe from its home slot on.
    __attribute__((noinline)) uint64_t *find_or_add(uint64_t region) {
        if (4 * (used_ + 1) > mask_ + 1) grow();
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
        const uint64_t size = slots_.size() < 64 ? 64 : 2 * slots_.size();
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

    std::vector<Slot> slots_ = std::vector<Slot>(1, Slot{0, nullptr});
    uint64_t mask_ = 0;  // slots - 1 (one empty slot before the first region: the first insert grows)
    uint64_t used_ = 0;  // regions
    std::vector<std::unique_ptr<uint64_t[]>> pool_;
};

}  // namespace sonde::analysis
