// Reuse histograms of the stackdist concept: merging, totals, Mattson miss ratios and MRCs.
#include "stackdist/histogram.h"

#include <algorithm>
#include <cmath>

namespace sonde::stackdist {

void Histogram::grow(uint64_t d) {
    std::vector<double> &c0 = counts[0], &c1 = counts[1];
    const std::size_t n = std::max<std::size_t>(static_cast<std::size_t>(d) + 1, c0.size() * 2);
    c0.resize(n, 0.0);
    c1.resize(n, 0.0);
}

void Histogram::merge(const Histogram &o) {
    if (o.num_distances() > num_distances()) grow(o.num_distances() - 1);
    for (int k = 0; k < 2; ++k) {
        for (std::size_t i = 0; i < o.counts[k].size(); ++i) counts[k][i] += o.counts[k][i];
        infinite[k] += o.infinite[k];
    }
    accesses += o.accesses;
    sampled += o.sampled;
}

void Histogram::clear() { *this = Histogram(); }

uint64_t Histogram::num_distances() const { return counts[0].size(); }

double Histogram::count_at(uint64_t d) const {
    return d < counts[0].size() ? counts[0][d] + counts[1][d] : 0.0;
}

double Histogram::total() const {
    double t = total_infinite();
    for (const auto &c : counts)
        for (double v : c) t += v;
    return t;
}

double Histogram::miss_ratio(uint64_t cache_lines) const {
    const double t = total();
    if (t <= 0) return 0.0;
    double m = total_infinite();
    for (uint64_t d = cache_lines; d < num_distances(); ++d) m += count_at(d);
    return std::min(1.0, m / t);
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
        out.emplace_back(d + 1, std::max(0.0, 1.0 - hits / t));
    }
    return out;
}

std::size_t Histogram::bytes() const {
    return (counts[0].capacity() + counts[1].capacity()) * sizeof(double);
}

uint64_t round_count(double c) { return c <= 0 ? 0 : static_cast<uint64_t>(std::llround(c)); }

double mrc_mean_abs_error(const Histogram &a, const Histogram &e, uint64_t max_lines) {
    if (max_lines == 0) return 0.0;
    const double ta = a.total(), te = e.total();
    if (ta <= 0 || te <= 0) return 0.0;
    // Walk both step functions once: miss(c) = 1 - hits(d < c) / total.
    double ha = 0, he = 0, sum = 0;
    for (uint64_t c = 1; c <= max_lines; ++c) {
        ha += a.count_at(c - 1);
        he += e.count_at(c - 1);
        sum += std::fabs((1.0 - ha / ta) - (1.0 - he / te));
    }
    return sum / static_cast<double>(max_lines);
}

}  // namespace sonde::stackdist
