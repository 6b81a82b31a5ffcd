// Reuse histograms of the stackdist concept: counts by stack distance for reads and writes, the
// infinite (cold) count, bins, and Mattson miss-ratio curves.
//
// Two stores per access type: `units` (uint32 counts of unit-weight accesses, the exact mode's
// hot path: half the cache footprint of doubles, which matters when distances are spread over a
// million lines) and `weights` (doubles: SHARDS estimates, each sample weighing 1/R, plus 2^32
// for every wrap of a unit counter). A count is (units + weights) * scale: scale is 1 except
// for SHARDS at a fixed rate R, where every sample weighs the same 1/R, so the samples are
// counted as integers and weighed once when read. Integer counts make a fixed-rate histogram
// independent of how its accesses were cut into batches, chunks or MPI ranks. Not thread-safe;
// one thread owns a Histogram at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "stackdist/huge_alloc.h"
#include "stackdist/stack.h"

namespace sonde::stackdist {

struct Histogram {
    std::vector<uint32_t, HugeAlloc<uint32_t>> units[2];  // [0] reads, [1] writes; index = distance
    std::vector<double> weights[2];
    double infinite[2] = {0, 0};  // in units of `scale`
    uint64_t accesses = 0;        // accesses offered to the calculator (true count)
    uint64_t sampled = 0;         // accesses that went through the stack (== accesses when exact)
    bool sampling = false;
    double sample_rate = 1.0;  // current SHARDS rate (1 when exact)
    // The weight of one count in units, weights and infinite: 1/R for SHARDS at a fixed rate
    // R (set with the rate, before the first count), 1 otherwise.
    double scale = 1.0;
    // SHARDS: total weight of the samples, and the SHARDS_adj correction (accesses minus that
    // weight) counted as reads at distance 0, so the estimate covers exactly `accesses`.
    double sample_weight = 0;
    double adjust = 0;

    // Exact hot path: one uint32 increment (a resize only when `d` is a new maximum).
    void add_unit(uint64_t d, unsigned is_write) {
        if (d == kInfinity) {
            infinite[is_write] += 1.0;
            return;
        }
        auto &c = units[is_write];
        if (d >= c.size()) grow_units(d);
        if (++c[d] == 0) add_weight(d, is_write, 4294967296.0);
    }
    // Hint: start loading the read counter of distance d (no effect on the counts).
    __attribute__((always_inline)) void prefetch(uint64_t d) const {
        if (d < units[0].size()) __builtin_prefetch(&units[0][d], 1);
    }
    // Weighted (SHARDS) path.
    void add_weight(uint64_t d, unsigned is_write, double w) {
        if (d == kInfinity) {
            infinite[is_write] += w;
            return;
        }
        std::vector<double> &c = weights[is_write];
        if (d >= c.size()) grow_weights(d);
        c[d] += w;
    }
    void grow_units(uint64_t d);
    void grow_weights(uint64_t d);
    void merge(const Histogram &other);  // adds counts (same sampling regime assumed)
    void clear();
    // As clear(), but the arrays keep their room (and their sizes, as zeros): for a histogram
    // filled again and again (a parallel chunk's, batch after batch).
    void zero();
    void set_adjustment();

    uint64_t num_distances() const;     // one past the largest distance with storage
    double reads_at(uint64_t d) const;  // includes the SHARDS_adj correction at distance 0
    double writes_at(uint64_t d) const;
    double count_at(uint64_t d) const { return reads_at(d) + writes_at(d); }
    double total() const;  // all weights, infinite included
    double infinite_at(unsigned is_write) const { return infinite[is_write] * scale; }
    double total_infinite() const { return (infinite[0] + infinite[1]) * scale; }
    // Mattson: an access with distance d hits in a fully associative LRU cache of c lines iff
    // d < c. miss_ratio(c) = (infinite + sum_{d >= c} count(d)) / total.
    double miss_ratio(uint64_t cache_lines) const;
    // Step points [cache_lines, miss_ratio]: (0, 1) then (d + 1, ratio) for each distance d
    // with a non-zero count, ascending.
    std::vector<std::pair<uint64_t, double>> mrc() const;
    std::size_t bytes() const;
};

// Rounds an estimated count to an integer count.
uint64_t round_count(double c);

}  // namespace sonde::stackdist
