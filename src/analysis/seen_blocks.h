// SeenBlocks: the set of cache blocks a simulated cache has ever held, for compulsory misses;
// shared by cache_sim's cachegrind and drcachesim models. One owner thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

namespace sonde::analysis {

// The blocks a cache has ever held, for compulsory misses: a bitmap per region of 512 blocks,
// found through a hash map with the 16 last regions cached (misses have locality). Cost per
// call: a compare and a bit test; a map lookup when a region is not among the recent ones; one
// 64-byte allocation per new region, so that scattered blocks cost little more than a hash
// set entry each.
class SeenBlocks {
public:
    // True when `block` was not seen before (and marks it seen).
    bool insert(uint64_t block) {
        const uint64_t region = block >> kRegionBits;
        Recent &r = recent_[region & (kRecent - 1)];
        if (r.bits == nullptr || r.region != region) {
            std::unique_ptr<uint64_t[]> &bits = regions_[region];
            if (!bits) bits.reset(new uint64_t[kWords]());
            r.bits = bits.get();
            r.region = region;
        }
        const uint64_t bit = block & ((uint64_t(1) << kRegionBits) - 1);
        uint64_t &word = r.bits[bit >> 6];
        const uint64_t mask = uint64_t(1) << (bit & 63);
        if (word & mask) return false;
        word |= mask;
        return true;
    }

private:
    static constexpr unsigned kRegionBits = 9;
    static constexpr size_t kWords = (size_t(1) << kRegionBits) / 64;
    static constexpr size_t kRecent = 16;  // direct-mapped cache of region bitmaps
    struct Recent {
        uint64_t region = 0;
        uint64_t *bits = nullptr;
    };
    std::unordered_map<uint64_t, std::unique_ptr<uint64_t[]>> regions_;
    Recent recent_[kRecent];
};

}  // namespace sonde::analysis
