// Reuse histograms of the stackdist concept: counts by stack distance for reads and writes, the
// infinite (cold) count, bins, and Mattson miss-ratio curves. Counts are doubles holding
// estimated full-trace counts: 1 per access in exact mode, 1/R per sampled access under
// SHARDS (so a histogram never needs rescaling when a fixed-size sampler lowers its rate).
// Not thread-safe; one thread owns a Histogram at a time.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "stackdist/stack.h"

namespace sonde::stackdist {

struct Histogram {
    std::vector<double> counts[2];  // [0] reads, [1] writes; index = distance
    double infinite[2] = {0, 0};
    uint64_t accesses = 0;  // accesses offered to the calculator (true count)
    uint64_t sampled = 0;   // accesses that went through the stack (== accesses when exact)
    bool sampling = false;
    double sample_rate = 1.0;  // current SHARDS rate (1 when exact)

    // Hot path: one vector index (a resize only when `d` is a new maximum).
    void add(uint64_t d, unsigned is_write, double weight) {
        if (d == kInfinity) {
            infinite[is_write] += weight;
            return;
        }
        std::vector<double> &c = counts[is_write];
        if (d >= c.size()) grow(d);
        c[d] += weight;
    }
    void grow(uint64_t d);
    void merge(const Histogram &other);  // adds counts (same sampling regime assumed)
    void clear();

    uint64_t num_distances() const;  // one past the largest distance with storage
    double count_at(uint64_t d) const;
    double total() const;            // all weights, infinite included
    double total_infinite() const { return infinite[0] + infinite[1]; }
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

// Mean absolute difference of two MRCs over cache sizes 1..max_lines (both step functions).
double mrc_mean_abs_error(const Histogram &approx, const Histogram &exact, uint64_t max_lines);

}  // namespace sonde::stackdist
