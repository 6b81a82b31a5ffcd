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
// and population standard deviation of the histogram, and the most referenced lines with their
// "distant" references (distance at or above a threshold).
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
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/builtin_tools.h"
#include "stackdist/stack.h"

namespace sonde::analysis {

namespace {

struct Options {
    uint64_t line_size = 64;
    uint64_t threshold = 100;  // drcachesim's -reuse_distance_threshold
    uint64_t report_top = 10;  // drcachesim's -report_top
};

Options parse(const std::string &text) {
    Options o;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t end = text.find(',', pos);
        if (end == std::string::npos) end = text.size();
        const std::string item = text.substr(pos, end - pos);
        pos = end + 1;
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        if (eq == std::string::npos) throw std::invalid_argument("option '" + item + "' has no value");
        const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
        uint64_t v = 0;
        try {
            size_t used = 0;
            v = std::stoull(value, &used);
            if (used != value.size() || value[0] == '-') throw std::invalid_argument(value);
        } catch (const std::exception &) {
            throw std::invalid_argument("bad value for '" + key + "': " + value);
        }
        if (key == "line_size") {
            if (v == 0 || (v & (v - 1)) != 0) throw std::invalid_argument("line_size must be a power of two");
            o.line_size = v;
        } else if (key == "distance_threshold") {
            o.threshold = v;
        } else if (key == "report_top") {
            o.report_top = v;
        } else if (key == "sample_rate" || key == "sample_size" || key == "jobs" || key == "per_shard") {
            throw std::invalid_argument("'" + key +
                                        "' is an option of the gem5 model, not of model=drcachesim");
        } else {
            throw std::invalid_argument("unknown option '" + key + "' for model=drcachesim");
        }
    }
    return o;
}

struct LineRefs {
    uint64_t refs = 0;
    uint64_t distant = 0;
};

// The counts of one shard, or their sum.
struct Counts {
    uint64_t total = 0, instr = 0, unique_accesses = 0, unique_lines = 0;
    std::vector<uint64_t> all, data;  // index: distance
    std::unordered_map<uint64_t, LineRefs> lines;

    void add(const Counts &o) {
        total += o.total;
        instr += o.instr;
        unique_accesses += o.unique_accesses;
        unique_lines += o.unique_lines;
        if (all.size() < o.all.size()) all.resize(o.all.size());
        if (data.size() < o.data.size()) data.resize(o.data.size());
        for (size_t d = 0; d < o.all.size(); ++d) all[d] += o.all[d];
        for (size_t d = 0; d < o.data.size(); ++d) data[d] += o.data[d];
        for (const auto &kv : o.lines) {
            LineRefs &r = lines[kv.first];
            r.refs += kv.second.refs;
            r.distant += kv.second.distant;
        }
    }
};

struct Shard {
    stackdist::Stack stack;
    Counts counts;
};

struct Summary {
    uint64_t count = 0;
    double mean = 0, stddev = 0;
    uint64_t median = 0;
};

Summary summarize(const std::vector<uint64_t> &hist) {
    Summary s;
    double sum = 0;
    for (size_t d = 0; d < hist.size(); ++d) {
        s.count += hist[d];
        sum += double(d) * double(hist[d]);
    }
    if (s.count == 0) return s;
    s.mean = sum / double(s.count);
    double squares = 0;
    uint64_t running = 0;
    bool have_median = false;
    for (size_t d = 0; d < hist.size(); ++d) {
        if (hist[d] == 0) continue;
        const double diff = double(d) - s.mean;
        squares += diff * diff * double(hist[d]);
        running += hist[d];
        if (!have_median && running >= s.count / 2) {
            s.median = d;
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
    bool process_memrefs(const sonde_memref_t *m, size_t n) override {
        for (size_t i = 0; i < n; ++i) {
            const uint32_t s = m[i].shard;
            if (s >= shards_.size()) shards_.resize(s + 1);
            if (!shards_[s]) shards_[s] = std::make_unique<Shard>();
            access(*shards_[s], m[i]);
        }
        return true;
    }
    bool parallel_shard_supported() override { return true; }
    bool parallel_shard_init(uint32_t shard, void *, void **shard_data) override {
        shards_.at(shard) = std::make_unique<Shard>();
        *shard_data = shards_[shard].get();
        return true;
    }
    bool parallel_shard_memrefs(void *sd, const sonde_memref_t *m, size_t n) override {
        Shard &s = *static_cast<Shard *>(sd);
        for (size_t i = 0; i < n; ++i) access(s, m[i]);
        return true;
    }
    bool print_results(void *stream) override {
        FILE *f = static_cast<FILE *>(stream);
        const Counts t = total();
        const Summary all = summarize(t.all);
        std::fprintf(f, "reuse_distance (drcachesim model): line size %" PRIu64 ", %zu shard(s)\n",
                     opt_.line_size, shards_.size());
        std::fprintf(f, "  Total accesses: %" PRIu64 "\n  Instruction accesses: %" PRIu64 "\n", t.total,
                     t.instr);
        std::fprintf(f, "  Data accesses: %" PRIu64 "\n  Unique accesses: %" PRIu64 "\n", t.total - t.instr,
                     t.unique_accesses);
        std::fprintf(f, "  Unique cache lines accessed: %" PRIu64 "\n", t.unique_lines);
        std::fprintf(f, "  Reuse distance mean: %.2f\n  Reuse distance median: %" PRIu64 "\n", all.mean,
                     all.median);
        std::fprintf(f, "  Reuse distance standard deviation: %.2f\n", all.stddev);
        std::fprintf(f, "  Reuse distance histogram:\n  %10s %12s %8s %11s : %12s %8s %11s\n", "Distance",
                     "Count", "Percent", "Cumulative", "Data", "Percent", "Cumulative");
        uint64_t cum_all = 0, cum_data = 0;
        for (size_t d = 0; d < t.all.size(); ++d) {
            if (t.all[d] == 0) continue;
            const uint64_t data = d < t.data.size() ? t.data[d] : 0;
            cum_all += t.all[d];
            cum_data += data;
            const double c = double(all.count);
            std::fprintf(f, "  %10zu %12" PRIu64 " %7.2f%% %10.2f%% : %12" PRIu64 " %7.2f%% %10.2f%%\n", d,
                         t.all[d], 100.0 * double(t.all[d]) / c, 100.0 * double(cum_all) / c, data,
                         100.0 * double(data) / c, 100.0 * double(cum_data) / c);
        }
        std::fprintf(
            f, "  Top %" PRIu64 " frequently referenced cache lines (distant: distance >= %" PRIu64 ")\n",
            opt_.report_top, opt_.threshold);
        for (const auto &l : top(t))
            std::fprintf(f, "  %18s: %12" PRIu64 ", %12" PRIu64 "\n", hex(l.first << bits_).c_str(),
                         l.second.refs, l.second.distant);
        return true;
    }
    std::string results_json() override {
        nlohmann::json j = as_json(total());
        j["model"] = "drcachesim";
        j["line_size"] = opt_.line_size;
        j["distance_threshold"] = opt_.threshold;
        nlohmann::json per = nlohmann::json::array();
        for (const auto &s : shards_) per.push_back(as_json(s ? s->counts : Counts()));
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
        Counts &c = s.counts;
        ++c.total;
        c.instr += instr;
        const uint64_t line = m.address >> bits_;
        const uint64_t d = s.stack.access(line);
        LineRefs &refs = c.lines[line];
        ++refs.refs;
        if (d == stackdist::kInfinity) {
            ++c.unique_lines;
            ++c.unique_accesses;
            return;
        }
        if (d != 0) ++c.unique_accesses;
        if (d >= opt_.threshold) ++refs.distant;
        if (d >= c.all.size()) {
            c.all.resize(d + 1);
            c.data.resize(d + 1);
        }
        ++c.all[d];
        if (!instr) ++c.data[d];
    }

    Counts total() const {
        Counts t;
        for (const auto &s : shards_)
            if (s) t.add(s->counts);
        return t;
    }

    // The report_top lines with the most references (then most distant references, then the
    // lowest address), as drcachesim orders them.
    std::vector<std::pair<uint64_t, LineRefs>> top(const Counts &c) const {
        std::vector<std::pair<uint64_t, LineRefs>> v(c.lines.begin(), c.lines.end());
        auto before = [](const std::pair<uint64_t, LineRefs> &a, const std::pair<uint64_t, LineRefs> &b) {
            if (a.second.refs != b.second.refs) return a.second.refs > b.second.refs;
            if (a.second.distant != b.second.distant) return a.second.distant > b.second.distant;
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

    nlohmann::json as_json(const Counts &c) const {
        const Summary all = summarize(c.all);
        nlohmann::json hist = nlohmann::json::array(), data = nlohmann::json::array();
        for (size_t d = 0; d < c.all.size(); ++d) {
            if (c.all[d] == 0) continue;
            hist.push_back({d, c.all[d]});
            data.push_back({d, d < c.data.size() ? c.data[d] : 0});
        }
        nlohmann::json lines = nlohmann::json::array();
        for (const auto &l : top(c))
            lines.push_back({{"line", l.first << bits_},
                             {"address", hex(l.first << bits_)},
                             {"references", l.second.refs},
                             {"distant_references", l.second.distant}});
        return {{"total_accesses", c.total},
                {"instruction_accesses", c.instr},
                {"data_accesses", c.total - c.instr},
                {"unique_accesses", c.unique_accesses},
                {"unique_cache_lines", c.unique_lines},
                {"mean", all.mean},
                {"median", all.median},
                {"standard_deviation", all.stddev},
                {"histogram", hist},
                {"data_histogram", data},
                {"top_lines", lines}};
    }

    Options opt_;
    unsigned bits_ = 0;
    std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace

std::unique_ptr<sonde::tool> make_reuse_distance_drcachesim(const std::string &options) {
    return std::make_unique<DrReuseDistance>(options);
}

}  // namespace sonde::analysis
