// Reuse histograms of the stackdist concept: merging, totals, Mattson miss ratios and MRCs.
#include "stackdist/histogram.h"

#include <algorithm>
#include <cmath>

namespace sonde::stackdist {

namespace {

template <typename V>
void grow_pair(V (&v)[2], uint64_t d) {
    using T = typename V::value_type;
    const std::size_t n = std::max<std::size_t>(static_cast<std::size_t>(d) + 1, v[0].size() * 2);
    v[0].resize(n, T(0));
    v[1].resize(n, T(0));
}

template <typename V>
double at(const V &v, uint64_t d) {
    return d < v.size() ? static_cast<double>(v[d]) : 0.0;
}

}  // namespace

void Histogram::grow_units(uint64_t d) { grow_pair(units, d); }
void Histogram::grow_weights(uint64_t d) { grow_pair(weights, d); }

void Histogram::merge(const Histogram &o) {
    for (unsigned k = 0; k < 2; ++k) {
        for (std::size_t d = 0; d < o.units[k].size(); ++d)
            if (o.units[k][d] != 0) {
                if (d >= units[k].size()) grow_units(d);
                const uint32_t before = units[k][d];
                units[k][d] += o.units[k][d];
                if (units[k][d] < before) add_weight(d, k, 4294967296.0);
            }
        for (std::size_t d = 0; d < o.weights[k].size(); ++d)
            if (o.weights[k][d] != 0) add_weight(d, k, o.weights[k][d]);
        infinite[k] += o.infinite[k];
    }
    accesses += o.accesses;
    sampled += o.sampled;
    sample_weight += o.sample_weight;
}

void Histogram::clear() { *this = Histogram(); }

void Histogram::zero() {
    for (unsigned k = 0; k < 2; ++k) {
        std::fill(units[k].begin(), units[k].end(), 0u);
        weights[k].clear();
        infinite[k] = 0;
    }
    accesses = 0;
    sampled = 0;
    sampling = false;
    sample_rate = 1.0;
    scale = 1.0;
    sample_weight = 0;
    adjust = 0;
}

void Histogram::set_adjustment() {
    // SHARDS_adj (Waldspurger et al.): the sample count differs from its expectation by chance;
    // the difference is credited to (or taken from) distance 0, never below zero.
    if (!sampling || sampled == 0) {
        adjust = 0;
        return;
    }
    adjust = std::max(-(at(units[0], 0) + at(weights[0], 0)) * scale,
                      static_cast<double>(accesses) - sample_weight);
}

uint64_t Histogram::num_distances() const { return std::max(units[0].size(), weights[0].size()); }

double Histogram::reads_at(uint64_t d) const {
    return (at(units[0], d) + at(weights[0], d)) * scale + (d == 0 ? adjust : 0.0);
}

double Histogram::writes_at(uint64_t d) const { return (at(units[1], d) + at(weights[1], d)) * scale; }

double Histogram::total() const {
    double t = 0;
    for (unsigned k = 0; k < 2; ++k) {
        for (uint32_t v : units[k]) t += v;
        for (double v : weights[k]) t += v;
    }
    return (t + infinite[0] + infinite[1]) * scale + adjust;
}

double Histogram::miss_ratio(uint64_t cache_lines) const {
    const double t = total();
    if (t <= 0) return 0.0;
    double m = total_infinite();
    for (uint64_t d = cache_lines; d < num_distances(); ++d) m += count_at(d);
    return std::min(1.0, std::max(0.0, m / t));
}

std::vector<std::pair<uint64_t, double>> Histogram::mrc() const {
    std::vector<std::pair<uint64_t, double>> out;
    const double t = total();
    if (t <= 0) return out;
    out.emplace_back(0, 1.0);
    double hits = 0;
    for (uint64_t d = 0; d < num_distances(); ++d) {
        const double c = count_at(d);
        if (c <= 0) continue;
        hits += c;
        out.emplace_back(d + 1, std::min(1.0, std::max(0.0, 1.0 - hits / t)));
    }
    return out;
}

std::size_t Histogram::bytes() const {
    return (units[0].capacity() + units[1].capacity()) * sizeof(uint32_t) +
           (weights[0].capacity() + weights[1].capacity()) * sizeof(double);
}

uint64_t round_count(double c) { return c <= 0 ? 0 : static_cast<uint64_t>(std::llround(c)); }

}  // namespace sonde::stackdist
