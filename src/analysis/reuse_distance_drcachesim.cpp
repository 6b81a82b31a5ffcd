// reuse_distance's drcachesim model (options "model=drcachesim,..."): DynamoRIO drcachesim's
// reuse_distance tool. Where it differs from the gem5 model (reuse_distance.cpp):
//  - accesses are fetched instructions (not non-fetched ones), loads, stores (a modify once)
//    and prefetches, each one access to the line of its start address;
//  - each shard (thread) has its own LRU stack, and the results are the sums of the shards'
//    (histograms added, not recomputed on a merged stream), so serial and parallel runs agree;
//  - a first access adds no histogram entry (gem5: an infinite distance).
// The distance itself is the same: distinct other lines touched since the previous access to
// the line (0 for an immediate repeat), from stackdist::Stack. Also as drcachesim: the data
// histogram (loads, stores, prefetches), "unique accesses" (accesses that are not a distance-0
// repeat), mean, median (the first distance whose running count reaches half, integer halving)
// and population standard deviation of the histogram, the most referenced lines and the lines
// with the most "distant" references (distance above the threshold), and -reuse_distance_limit:
// with a limit L, a line whose distance would be L or more was pruned from drcachesim's list, so
// the access counts as a new line (a pruned address hit) with its reference counts restarted.
// The aggregate's unique lines are, as drcachesim merges them, the distinct lines still in some
// thread's list plus the distinct pruned ones.
//
// Cost per access: one Stack::access, one histogram increment, one hash-map update for the
// line's reference counts. Shard data is touched only by its worker.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <deque>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/builtin_tools.h"
#include "analysis/tool_options.h"
#include "stackdist/stack.h"

namespace sonde::analysis {

namespace {

struct Options {
    uint64_t line_size = 64;
    uint64_t threshold = 100;  // drcachesim's -reuse_distance_threshold
    uint64_t report_top = 10;  // drcachesim's -report_top
    uint64_t limit = 0;        // drcachesim's -reuse_distance_limit (0: none)
};

Options parse(const std::string &text) {
    Options o;
    for (const std::string &item : option_items(text)) {
        std::string key, value;
        if (!split_option(item, &key, &value))
            throw std::invalid_argument("option '" + item + "' has no value");
        uint64_t v = 0;
        if (value.empty() || value.size() > 19 || value.find_first_not_of("0123456789") != std::string::npos)
            throw std::invalid_argument("bad value for '" + key + "': '" + value + "'");
        v = std::stoull(value);
        if (key == "line_size") {
            if (v == 0 || (v & (v - 1)) != 0 || v > (1u << 20))
                throw std::invalid_argument("line_size must be a power of two up to 1M");
            o.line_size = v;
        } else if (key == "distance_threshold") {
            o.threshold = v;
        } else if (key == "report_top") {
            if (v > 1000000) throw std::invalid_argument("report_top must be at most 1000000");
            o.report_top = v;
        } else if (key == "distance_limit") {
            o.limit = v;
        } else if (key == "sample_rate" || key == "sample_size" || key == "jobs" || key == "merge_jobs" ||
                   key == "per_shard") {
            throw std::invalid_argument("'" + key +
                                        "' is an option of the gem5 model, not of model=drcachesim");
        } else {
            throw std::invalid_argument("unknown option '" + key +
                                        "' for model=drcachesim (line_size, distance_threshold, "
                                        "report_top, distance_limit)");
        }
    }
    // drcachesim moves its distance gate in ways that only match "distance > threshold" while
    // the list is longer than the threshold.
    if (o.limit != 0 && o.limit <= o.threshold)
        throw std::invalid_argument("distance_limit must be 0 or above distance_threshold (" +
                                    std::to_string(o.threshold) + ")");
    return o;
}

struct LineRefs {
    uint64_t refs = 0;     // since the line entered the list (last insertion)
    uint64_t distant = 0;  // of those, with a distance above the threshold
    uint64_t last = 0;     // the shard's access number of the last reference
};

// A histogram: dense counts for small distances, a map for the rest (a trace with many lines
// can have huge distances, few of each).
struct Histogram {
    static constexpr uint64_t kDense = 1u << 16;
    std::vector<uint64_t> dense;
    std::unordered_map<uint64_t, uint64_t> sparse;
    void add(uint64_t d, uint64_t n = 1) {
        if (d < kDense) {
            if (d >= dense.size()) dense.resize(d + 1);
            dense[d] += n;
        } else {
            sparse[d] += n;
        }
    }
    void add(const Histogram &o) {
        for (size_t d = 0; d < o.dense.size(); ++d)
            if (o.dense[d] != 0) add(d, o.dense[d]);
        for (const auto &kv : o.sparse) add(kv.first, kv.second);
    }
    uint64_t at(uint64_t d) const {
        if (d < kDense) return d < dense.size() ? dense[d] : 0;
        auto it = sparse.find(d);
        return it != sparse.end() ? it->second : 0;
    }
    // (distance, count) pairs with a nonzero count, by distance.
    std::vector<std::pair<uint64_t, uint64_t>> sorted() const {
        std::vector<std::pair<uint64_t, uint64_t>> v;
        for (size_t d = 0; d < dense.size(); ++d)
            if (dense[d] != 0) v.emplace_back(d, dense[d]);
        const size_t mark = v.size();
        for (const auto &kv : sparse) v.push_back(kv);
        std::sort(v.begin() + static_cast<std::ptrdiff_t>(mark), v.end());
        return v;
    }
};

struct Shard {
    stackdist::Stack stack;
    uint64_t total = 0, instr = 0, unique_accesses = 0, insertions = 0, pruned_hits = 0;
    Histogram all, data;
    std::unordered_map<uint64_t, LineRefs> lines;
};

// What is reported for one shard or for the whole run.
struct Result {
    uint64_t total = 0, instr = 0, unique_accesses = 0, unique_lines = 0, pruned = 0, pruned_hits = 0;
    Histogram all, data;
    std::unordered_map<uint64_t, LineRefs> live;  // the lines in the list at the end
};

struct Summary {
    uint64_t count = 0;
    double mean = 0, stddev = 0;
    uint64_t median = 0;
};

Summary summarize(const std::vector<std::pair<uint64_t, uint64_t>> &hist) {
    Summary s;
    double sum = 0;
    for (const auto &e : hist) {
        s.count += e.second;
        sum += double(e.first) * double(e.second);
    }
    if (s.count == 0) return s;
    s.mean = sum / double(s.count);
    double squares = 0;
    uint64_t running = 0;
    bool have_median = false;
    for (const auto &e : hist) {
        const double diff = double(e.first) - s.mean;
        squares += diff * diff * double(e.second);
        running += e.second;
        if (!have_median && running >= s.count / 2) {
            s.median = e.first;
            have_median = true;
        }
    }
    s.stddev = std::sqrt(squares / double(s.count));
    return s;
}

class DrReuseDistance final : public sonde::tool {
public:
    explicit DrReuseDistance(const std::string &options) : opt_(parse(options)) {
        while ((uint64_t{1} << bits_) < opt_.line_size) ++bits_;
    }
    const char *name() const override { return "reuse_distance"; }
    uint32_t memref_model() const override { return SONDE_MEMREF_MODEL_1_2; }
    bool initialize(uint32_t num_shards) override {
        shards_.resize(num_shards);
        return true;
    }
    bool add_shards_supported() const override { return true; }
    bool add_shards(uint32_t num_shards) override {
        if (num_shards > shards_.size()) shards_.resize(num_shards);
        return true;
    }
    bool process_memrefs(const sonde_memref_t *m, size_t n) override {
        uint32_t current = UINT32_MAX;  // the shard of the run being read
        Shard *shard = nullptr;
        for (size_t i = 0; i < n; ++i) {
            const uint32_t s = m[i].shard;
            if (s != current) {
                if (s >= shards_.size())
                    return set_error("memref of shard " + std::to_string(s) + " beyond the " +
                                     std::to_string(shards_.size()) + " shards announced");
                if (!shards_[s]) shards_[s] = std::make_unique<Shard>();
                shard = shards_[s].get();
                current = s;
            }
            access(*shard, m[i]);
        }
        return true;
    }
    bool parallel_shard_supported() override { return true; }
    bool parallel_shard_init(uint32_t shard, void *, void **shard_data) override {
        *shard_data = &shards_.at(shard);
        return true;
    }
    bool parallel_shard_memrefs(void *sd, const sonde_memref_t *m, size_t n) override {
        std::unique_ptr<Shard> &s = *static_cast<std::unique_ptr<Shard> *>(sd);
        if (!s) s = std::make_unique<Shard>();
        for (size_t i = 0; i < n; ++i) access(*s, m[i]);
        return true;
    }
    bool print_results(void *stream) override {
        FILE *f = static_cast<FILE *>(stream);
        const Result t = total();
        const auto hist = t.all.sorted();
        const Summary all = summarize(hist);
        std::fprintf(f, "reuse_distance (drcachesim model): line size %" PRIu64 ", %zu shard(s)\n",
                     opt_.line_size, shards_.size());
        std::fprintf(f, "  Total accesses: %" PRIu64 "\n  Instruction accesses: %" PRIu64 "\n", t.total,
                     t.instr);
        std::fprintf(f, "  Data accesses: %" PRIu64 "\n  Unique accesses: %" PRIu64 "\n", t.total - t.instr,
                     t.unique_accesses);
        std::fprintf(f, "  Unique cache lines accessed: %" PRIu64 "\n", t.unique_lines);
        std::fprintf(f, "  Distance limit: %" PRIu64 "\n  Pruned addresses: %" PRIu64 "\n", opt_.limit,
                     t.pruned);
        std::fprintf(f, "  Pruned address hits: %" PRIu64 "\n", t.pruned_hits);
        std::fprintf(f, "  Reuse distance mean: %.2f\n  Reuse distance median: %" PRIu64 "\n", all.mean,
                     all.median);
        std::fprintf(f, "  Reuse distance standard deviation: %.2f\n", all.stddev);
        std::fprintf(f, "  Reuse distance histogram:\n  %10s %12s %8s %11s : %12s %8s %11s\n", "Distance",
                     "Count", "Percent", "Cumulative", "Data", "Percent", "Cumulative");
        uint64_t cum_all = 0, cum_data = 0;
        const double c = double(all.count);
        for (const auto &e : hist) {
            const uint64_t data = t.data.at(e.first);
            cum_all += e.second;
            cum_data += data;
            std::fprintf(f,
                         "  %10" PRIu64 " %12" PRIu64 " %7.2f%% %10.2f%% : %12" PRIu64 " %7.2f%% %10.2f%%\n",
                         e.first, e.second, 100.0 * double(e.second) / c, 100.0 * double(cum_all) / c, data,
                         100.0 * double(data) / c, 100.0 * double(cum_data) / c);
        }
        std::fprintf(f, "  Reuse distance threshold = %" PRIu64 " cache lines\n", opt_.threshold);
        for (const bool by_distant : {false, true}) {
            std::fprintf(f, "  Top %" PRIu64 " %s cache lines (references, distant references)\n",
                         opt_.report_top,
                         by_distant ? "distant repeatedly referenced" : "frequently referenced");
            for (const auto &l : top(t, by_distant))
                std::fprintf(f, "  %18s: %12" PRIu64 ", %12" PRIu64 "\n", hex(l.first << bits_).c_str(),
                             l.second.refs, l.second.distant);
        }
        return true;
    }
    std::string results_json() override {
        nlohmann::json j = as_json(total());
        j["model"] = "drcachesim";
        j["line_size"] = opt_.line_size;
        j["distance_threshold"] = opt_.threshold;
        j["distance_limit"] = opt_.limit;
        j["report_top"] = opt_.report_top;
        nlohmann::json per = nlohmann::json::array();
        for (const auto &s : shards_) per.push_back(as_json(s ? finish(*s) : Result()));
        j["shards"] = per;
        return j.dump();
    }

private:
    // Hot path: one record of a shard.
    void access(Shard &s, const sonde_memref_t &m) {
        const uint16_t type = m.type;
        const bool instr = sonde_memref_type_is_instr(type);
        if (!instr && type != SONDE_MEMREF_READ && type != SONDE_MEMREF_WRITE &&
            type != SONDE_MEMREF_MODIFY && !sonde_memref_type_is_prefetch(type))
            return;
        ++s.total;
        s.instr += instr;
        const uint64_t line = m.address >> bits_;
        const uint64_t d = s.stack.access(line);
        LineRefs &refs = s.lines[line];
        refs.last = s.total;
        if (d == stackdist::kInfinity || (opt_.limit != 0 && d >= opt_.limit)) {
            // A new line in drcachesim's list: first seen, or pruned since its last access.
            if (d != stackdist::kInfinity) ++s.pruned_hits;
            ++s.insertions;
            ++s.unique_accesses;
            refs.refs = 1;
            refs.distant = 0;
            return;
        }
        ++refs.refs;
        if (d != 0) ++s.unique_accesses;
        if (d > opt_.threshold) ++refs.distant;
        s.all.add(d);
        if (!instr) s.data.add(d);
    }

    // The lines still in the shard's list: all of them, or the `limit` most recent.
    std::vector<uint64_t> live_lines(const Shard &s) const {
        std::vector<std::pair<uint64_t, uint64_t>> by_last;  // (last, line)
        by_last.reserve(s.lines.size());
        for (const auto &kv : s.lines) by_last.emplace_back(kv.second.last, kv.first);
        if (opt_.limit != 0 && by_last.size() > opt_.limit) {
            std::nth_element(by_last.begin(), by_last.begin() + static_cast<std::ptrdiff_t>(opt_.limit),
                             by_last.end(), std::greater<std::pair<uint64_t, uint64_t>>());
            by_last.resize(opt_.limit);
        }
        std::vector<uint64_t> live;
        live.reserve(by_last.size());
        for (const auto &e : by_last) live.push_back(e.second);
        return live;
    }

    Result finish(const Shard &s) const {
        Result r;
        r.total = s.total;
        r.instr = s.instr;
        r.unique_accesses = s.unique_accesses;
        r.unique_lines = s.lines.size();
        r.pruned = opt_.limit != 0 && s.insertions > opt_.limit ? s.insertions - opt_.limit : 0;
        r.pruned_hits = s.pruned_hits;
        r.all = s.all;
        r.data = s.data;
        for (uint64_t line : live_lines(s)) r.live.emplace(line, s.lines.at(line));
        return r;
    }

    Result total() const {
        Result t;
        std::unordered_set<uint64_t> live, pruned;
        for (const auto &p : shards_) {
            if (!p) continue;
            const Shard &s = *p;
            const Result r = finish(s);
            t.total += r.total;
            t.instr += r.instr;
            t.unique_accesses += r.unique_accesses;
            t.pruned += r.pruned;
            t.pruned_hits += r.pruned_hits;
            t.all.add(r.all);
            t.data.add(r.data);
            for (const auto &kv : r.live) {
                live.insert(kv.first);
                LineRefs &l = t.live[kv.first];
                l.refs += kv.second.refs;
                l.distant += kv.second.distant;
            }
            if (r.live.size() != s.lines.size())
                for (const auto &kv : s.lines)
                    if (r.live.count(kv.first) == 0) pruned.insert(kv.first);
        }
        t.unique_lines = live.size() + pruned.size();
        return t;
    }

    // The report_top lines with the most references (then most distant references, then the
    // lowest address), or with the most distant references first, as drcachesim orders them.
    std::vector<std::pair<uint64_t, LineRefs>> top(const Result &r, bool by_distant) const {
        std::vector<std::pair<uint64_t, LineRefs>> v(r.live.begin(), r.live.end());
        auto before = [by_distant](const std::pair<uint64_t, LineRefs> &a,
                                   const std::pair<uint64_t, LineRefs> &b) {
            const uint64_t a1 = by_distant ? a.second.distant : a.second.refs;
            const uint64_t b1 = by_distant ? b.second.distant : b.second.refs;
            const uint64_t a2 = by_distant ? a.second.refs : a.second.distant;
            const uint64_t b2 = by_distant ? b.second.refs : b.second.distant;
            if (a1 != b1) return a1 > b1;
            if (a2 != b2) return a2 > b2;
            return a.first < b.first;
        };
        const size_t k = std::min<size_t>(v.size(), opt_.report_top);
        std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end(), before);
        v.resize(k);
        return v;
    }

    static std::string hex(uint64_t v) {
        char b[32];
        std::snprintf(b, sizeof b, "0x%" PRIx64, v);
        return b;
    }

    nlohmann::json lines_json(const Result &r, bool by_distant) const {
        nlohmann::json lines = nlohmann::json::array();
        for (const auto &l : top(r, by_distant))
            lines.push_back({{"line", l.first << bits_},
                             {"address", hex(l.first << bits_)},
                             {"references", l.second.refs},
                             {"distant_references", l.second.distant}});
        return lines;
    }

    nlohmann::json as_json(const Result &r) const {
        const auto sorted = r.all.sorted();
        const Summary all = summarize(sorted);
        nlohmann::json hist = nlohmann::json::array(), data = nlohmann::json::array();
        for (const auto &e : sorted) {
            hist.push_back({e.first, e.second});
            data.push_back({e.first, r.data.at(e.first)});
        }
        return {{"total_accesses", r.total},
                {"instruction_accesses", r.instr},
                {"data_accesses", r.total - r.instr},
                {"unique_accesses", r.unique_accesses},
                {"unique_cache_lines", r.unique_lines},
                {"pruned_addresses", r.pruned},
                {"pruned_address_hits", r.pruned_hits},
                {"mean", all.mean},
                {"median", all.median},
                {"standard_deviation", all.stddev},
                {"histogram", hist},
                {"data_histogram", data},
                {"top_lines", lines_json(r, false)},
                {"top_distant_lines", lines_json(r, true)}};
    }

    Options opt_;
    unsigned bits_ = 0;
    std::deque<std::unique_ptr<Shard>> shards_;  // a slot stays where it is when a live run adds shards
};

}  // namespace

std::unique_ptr<sonde::tool> make_reuse_distance_drcachesim(const std::string &options) {
    return std::make_unique<DrReuseDistance>(options);
}

}  // namespace sonde::analysis
