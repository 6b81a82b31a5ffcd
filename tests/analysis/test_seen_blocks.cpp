// analysis/seen_blocks.h (an internal header): cache_sim's set of blocks a cache has ever held,
// whose answers are its compulsory misses. A SeenBlocks must answer every insert as a std::set
// would, for blocks dense within their 4096-block regions, one to a region, anywhere in the key
// space (its ends included: with 1-byte lines a block is any 64-bit address), and for regions
// that collide on their home slot, so that the probe past the home slot, the table's growth
// (which moves every slot but no bitmap) and the bitmaps' chunks of 128 regions are all taken.
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "analysis/seen_blocks.h"
#include "check.hpp"

using sonde::analysis::SeenBlocks;
using sonde_test::check;

namespace {

// Inserts `blocks` in order into a SeenBlocks and a std::set, twice: every answer must agree
// (none new the second time).
void same_as_std_set(const char *what, const std::vector<uint64_t> &blocks) {
    SeenBlocks seen;
    std::set<uint64_t> ref;
    unsigned wrong = 0;
    for (int pass = 0; pass < 2; ++pass)
        for (uint64_t b : blocks) wrong += seen.insert(b) != ref.insert(b).second;
    check(wrong == 0, what, wrong);
}

}  // namespace

int main() {
    std::mt19937_64 x(7);
    std::vector<uint64_t> dense, sparse, anywhere, ends, crowd;
    for (int i = 0; i < 1000000; ++i) dense.push_back(x() % 2000000);  // ~490 regions, ~1/2 full
    for (int i = 0; i < 60000; ++i) sparse.push_back((x() % 40000) << 12 | (x() & 4095));
    for (int i = 0; i < 60000; ++i) anywhere.push_back(x());
    for (uint64_t b : {uint64_t{0}, ~uint64_t{0}, ~uint64_t{0} - 4095, uint64_t{4095}, uint64_t{4096},
                       ~uint64_t{0}, uint64_t{0}, (~uint64_t{0}) >> 12})
        ends.push_back(b);
    // Every region at once, region by region, then again in another order: 5000 regions pass
    // through every size of the table while the ones before them are looked up again.
    for (uint64_t r = 0; r < 5000; ++r)
        for (int k = 0; k < 3; ++k) crowd.push_back((r * 7919) << 12 | (x() & 4095));
    for (uint64_t r = 5000; r-- > 0;) crowd.push_back((r * 7919) << 12 | (x() & 4095));
    same_as_std_set("blocks dense in their regions", dense);
    same_as_std_set("one block or so a region", sparse);
    same_as_std_set("blocks anywhere in the key space", anywhere);
    same_as_std_set("the ends of the key space", ends);
    same_as_std_set("regions added while earlier ones come back", crowd);
    same_as_std_set("no blocks", {});
    return sonde_test::finish("analysis_seen_blocks");
}
