// C boundary of the stackdist concept (include/sonde/stackdist.h): argument checks, option
// structs, the array protocol, exception mapping; the work is in sonde::stackdist.
#include <algorithm>
#include <memory>

#include "core/abi_struct.h"
#include "core/array_protocol.h"
#include "core/guarded.h"
#include "stackdist/handle.h"

namespace sonde::stackdist {
namespace {

constexpr uint32_t kMaxWorkers = 256;

sonde_status_t make_config(const sonde_stackdist_options_t *opts, ReuseConfig *cfg) {
    if (opts == nullptr) return SONDE_STATUS_SUCCESS;
    sonde_stackdist_options_t o;
    const sonde_status_t st = read_abi_struct(opts, SONDE_STACKDIST_OPTIONS_SIZE_1_0, &o);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (o.flags & ~SONDE_STACKDIST_FLAG_VERIFY) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    if (o.workers > kMaxWorkers) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    cfg->verify = (o.flags & SONDE_STACKDIST_FLAG_VERIFY) != 0;
    cfg->initial_capacity = std::min<uint64_t>(o.initial_capacity, uint64_t{1} << 32);
    cfg->workers = o.workers == 0 ? 1 : o.workers;
    cfg->seed = o.seed;
    switch (o.sampling) {
        case SONDE_STACKDIST_SAMPLING_NONE: cfg->mode = Mode::kExact; break;
        case SONDE_STACKDIST_SAMPLING_FIXED_RATE:
            if (!(o.sample_rate > 0.0 && o.sample_rate <= 1.0)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
            cfg->mode = Mode::kFixedRate;
            cfg->sample_rate = o.sample_rate;
            break;
        case SONDE_STACKDIST_SAMPLING_FIXED_SIZE:
            if (o.sample_size == 0) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
            cfg->mode = Mode::kFixedSize;
            cfg->sample_size = o.sample_size;
            break;
        default: return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (cfg->verify && cfg->mode != Mode::kExact) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    return SONDE_STATUS_SUCCESS;
}

// Array protocol (core/array_protocol.h): fill the first `size`, report how many exist.
template <typename T>
sonde_status_t deliver(const std::vector<T> &v, T *entries, uint32_t size, uint32_t *actual_size) {
    if (actual_size == nullptr || (entries == nullptr && size > 0)) return SONDE_STATUS_ERROR_NULL_POINTER;
    return sonde::fill_array(entries, size, actual_size, v.size(), [&v](std::size_t i) { return v[i]; });
}

sonde_histogram_bin_t make_bin(const Histogram &h, uint64_t first, uint64_t last) {
    double r = 0, w = 0;
    const uint64_t end = std::min<uint64_t>(last, h.num_distances() - 1);
    for (uint64_t d = first; d <= end; ++d) {
        r += h.reads_at(d);
        w += h.writes_at(d);
    }
    sonde_histogram_bin_t b;
    b.first = first;
    b.last = last;
    b.reads = round_count(r);
    b.writes = round_count(w);
    b.count = b.reads + b.writes;
    return b;
}

std::vector<sonde_histogram_bin_t> bins(const Histogram &h, uint32_t binning, uint64_t width) {
    std::vector<sonde_histogram_bin_t> out;
    uint64_t top = 0;  // one past the largest distance with a count
    for (uint64_t d = h.num_distances(); d > 0; --d)
        if (h.count_at(d - 1) > 0) {
            top = d;
            break;
        }
    if (binning == SONDE_HISTOGRAM_BINS_EXACT) {
        for (uint64_t d = 0; d < top; ++d) {
            sonde_histogram_bin_t b = make_bin(h, d, d);
            if (b.count != 0) out.push_back(b);
        }
    } else if (binning == SONDE_HISTOGRAM_BINS_LINEAR) {
        for (uint64_t lo = 0; lo < top; lo += width)
            out.push_back(make_bin(h, lo, lo + width - 1 < lo ? UINT64_MAX : lo + width - 1));
    } else {
        if (top > 0) out.push_back(make_bin(h, 0, 0));
        for (uint64_t lo = 1; lo < top && lo != 0; lo <<= 1) out.push_back(make_bin(h, lo, 2 * lo - 1));
    }
    return out;
}

}  // namespace
}  // namespace sonde::stackdist

using namespace sonde::stackdist;

extern "C" {

SONDE_API sonde_status_t sonde_stackdist_create(const sonde_stackdist_options_t *opts,
                                                sonde_stackdist_t **out) {
    if (out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *out = nullptr;
    return sonde::guarded([&]() -> sonde_status_t {
        ReuseConfig cfg;
        const sonde_status_t st = make_config(opts, &cfg);
        if (st != SONDE_STATUS_SUCCESS) return st;
        *out = new sonde_stackdist_t(cfg);
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API sonde_status_t sonde_stackdist_calc_and_update(sonde_stackdist_t *sd, uint64_t addr,
                                                         bool add_new_node, uint64_t *distance,
                                                         bool *marked) {
    if (sd == nullptr || distance == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (sd->reuse.config().mode != Mode::kExact) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    return sonde::guarded([&]() -> sonde_status_t {
        Stack &s = sd->reuse.stack();
        *distance = s.calc_and_update(addr, add_new_node, marked);
        return s.verify_ok() ? SONDE_STATUS_SUCCESS : SONDE_STATUS_ERROR_VERIFY_FAILED;
    });
}

SONDE_API sonde_status_t sonde_stackdist_calc(sonde_stackdist_t *sd, uint64_t addr, bool mark,
                                              uint64_t *distance, bool *marked) {
    if (sd == nullptr || distance == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (sd->reuse.config().mode != Mode::kExact) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    return sonde::guarded([&]() -> sonde_status_t {
        Stack &s = sd->reuse.stack();
        *distance = s.calc(addr, mark, marked);
        return s.verify_ok() ? SONDE_STATUS_SUCCESS : SONDE_STATUS_ERROR_VERIFY_FAILED;
    });
}

SONDE_API sonde_status_t sonde_stackdist_batch(sonde_stackdist_t *sd, const uint64_t *addrs,
                                               const uint8_t *is_write, size_t n, sonde_histogram_t *hist) {
    if (sd == nullptr || hist == nullptr || (addrs == nullptr && n > 0))
        return SONDE_STATUS_ERROR_NULL_POINTER;
    return sonde::guarded([&]() -> sonde_status_t {
        const bool ok = sd->reuse.add(addrs, is_write, n, hist->h);
        return ok ? SONDE_STATUS_SUCCESS : SONDE_STATUS_ERROR_VERIFY_FAILED;
    });
}

SONDE_API sonde_status_t sonde_stackdist_size(const sonde_stackdist_t *sd, uint64_t *lines) {
    if (sd == nullptr || lines == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *lines = const_cast<sonde_stackdist_t *>(sd)->reuse.stack().size();
    return SONDE_STATUS_SUCCESS;
}

SONDE_API void sonde_stackdist_destroy(sonde_stackdist_t *sd) { delete sd; }

SONDE_API sonde_status_t sonde_histogram_create(sonde_histogram_t **out) {
    if (out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *out = nullptr;
    return sonde::guarded([&]() -> sonde_status_t {
        *out = new sonde_histogram_t();
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API void sonde_histogram_destroy(sonde_histogram_t *hist) { delete hist; }

SONDE_API sonde_status_t sonde_histogram_reset(sonde_histogram_t *hist) {
    if (hist == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    hist->h.clear();
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_histogram_get_summary(const sonde_histogram_t *hist,
                                                     sonde_histogram_summary_t *out) {
    if (hist == nullptr || out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    return sonde::guarded([&]() -> sonde_status_t {
        const Histogram &h = hist->h;
        sonde_histogram_summary_t s{};
        s.struct_size = sizeof(s);
        s.sampling = h.sampling ? 1 : 0;
        s.accesses = h.accesses;
        double r = h.infinite_at(0), w = h.infinite_at(1);
        for (uint64_t d = 0; d < h.num_distances(); ++d) {
            r += h.reads_at(d);
            w += h.writes_at(d);
        }
        if (h.num_distances() == 0) r += h.adjust;
        s.reads = round_count(r);
        s.writes = round_count(w);
        s.infinite_reads = round_count(h.infinite_at(0));
        s.infinite_writes = round_count(h.infinite_at(1));
        s.infinite = s.infinite_reads + s.infinite_writes;
        s.sampled = h.sampled;
        s.sample_rate = h.sample_rate;
        for (uint64_t d = h.num_distances(); d > 0; --d)
            if (h.count_at(d - 1) > 0) {
                s.max_distance = d - 1;
                break;
            }
        return sonde::write_abi_struct(s, SONDE_HISTOGRAM_SUMMARY_SIZE_1_0, out);
    });
}

SONDE_API sonde_status_t sonde_histogram_get_bins(const sonde_histogram_t *hist, uint32_t binning,
                                                  uint64_t width, sonde_histogram_bin_t *entries,
                                                  uint32_t size, uint32_t *actual_size) {
    if (hist == nullptr || actual_size == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (binning > SONDE_HISTOGRAM_BINS_LOG2) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (binning == SONDE_HISTOGRAM_BINS_LINEAR && width == 0) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (entries == nullptr && size > 0) return SONDE_STATUS_ERROR_NULL_POINTER;
    return sonde::guarded([&]() -> sonde_status_t {
        return deliver(bins(hist->h, binning, width), entries, size, actual_size);
    });
}

SONDE_API sonde_status_t sonde_histogram_get_mrc(const sonde_histogram_t *hist, sonde_mrc_point_t *entries,
                                                 uint32_t size, uint32_t *actual_size) {
    if (hist == nullptr || actual_size == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (entries == nullptr && size > 0) return SONDE_STATUS_ERROR_NULL_POINTER;
    return sonde::guarded([&]() -> sonde_status_t {
        std::vector<sonde_mrc_point_t> pts;
        for (const auto &p : hist->h.mrc()) pts.push_back(sonde_mrc_point_t{p.first, p.second});
        return deliver(pts, entries, size, actual_size);
    });
}

SONDE_API sonde_status_t sonde_histogram_miss_ratio(const sonde_histogram_t *hist, uint64_t cache_lines,
                                                    double *miss_ratio) {
    if (hist == nullptr || miss_ratio == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *miss_ratio = hist->h.miss_ratio(cache_lines);
    return SONDE_STATUS_SUCCESS;
}

}  // extern "C"
