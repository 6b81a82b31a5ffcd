// The built-in tool registry and the basic_counts tool. Adding a built-in tool is one line in
// kBuiltins: its name and a factory that builds it from an options string.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/analyzer.h"
#include "analysis/builtin_tools.h"
#include "analysis/json_release.h"
#include <sonde/tool.hpp>

namespace sonde::analysis {

namespace {

// basic_counts: per shard and in total, reads, writes (M counts as both), instruction fetches,
// markers, memory references (`total`: each L, S, M or I record once) and distinct lines.
// Serial mode indexes a per-shard slot by memref->shard; parallel mode gives each shard its own
// slot from parallel_shard_init (slots are made in initialize, so workers never touch the
// vector's structure; a slot's counts are created on the shard's first record). Cost per
// record: a switch and a hash-set insert for the line; an access that spans several lines
// (clamped at the top of the address space) is one interval in an ordered map instead, so
// memory follows the records, not the bytes they cover.
class BasicCounts final : public sonde::tool {
public:
    explicit BasicCounts(const std::string &options) {
        if (!options.empty()) {
            const std::string key = "line_size=";
            if (options.compare(0, key.size(), key) != 0)
                throw std::invalid_argument("unknown option '" + options + "' (line_size=N)");
            const std::string value = options.substr(key.size());
            unsigned long long v = 0;
            if (value.empty() || value.size() > 8 ||
                value.find_first_not_of("0123456789") != std::string::npos || (v = std::stoull(value)) == 0 ||
                (v & (v - 1)) != 0 || v > (1u << 20))
                throw std::invalid_argument("line_size must be a power of two up to 1M, not '" + value + "'");
            line_size_ = v;
        }
        while ((1ull << line_bits_) < line_size_) ++line_bits_;
    }
    const char *name() const override { return "basic_counts"; }
    bool initialize(uint32_t num_shards) override {
        shards_.resize(num_shards);
        return true;
    }
    bool process_memrefs(const sonde_memref_t *m, size_t n) override {
        for (size_t i = 0; i < n; ++i) {
            if (m[i].shard >= shards_.size())
                return set_error("memref of shard " + std::to_string(m[i].shard) + " beyond the " +
                                 std::to_string(shards_.size()) + " shards announced");
            std::unique_ptr<Counts> &c = shards_[m[i].shard];
            if (!c) c = std::make_unique<Counts>();
            count(c.get(), m[i]);
        }
        return true;
    }
    bool parallel_shard_supported() override { return true; }
    bool parallel_shard_init(uint32_t shard, void *, void **shard_data) override {
        *shard_data = &shards_.at(shard);
        return true;
    }
    bool parallel_shard_memrefs(void *sd, const sonde_memref_t *m, size_t n) override {
        std::unique_ptr<Counts> &c = *static_cast<std::unique_ptr<Counts> *>(sd);
        if (!c) c = std::make_unique<Counts>();
        for (size_t i = 0; i < n; ++i) count(c.get(), m[i]);
        return true;
    }
    bool print_results(void *stream) override {
        FILE *f = static_cast<FILE *>(stream);
        const Counts t = total();
        std::fprintf(f, "basic_counts: %zu shard(s)\n", shards_.size());
        print_line(f, "total", t);
        if (shards_.size() > 1)
            for (size_t i = 0; i < shards_.size(); ++i)
                print_line(f, ("shard " + std::to_string(i)).c_str(), shards_[i] ? *shards_[i] : Counts());
        return true;
    }
    // Runs out of memory with std::bad_alloc, never std::terminate (json_release.h).
    std::string results_json() override {
        const Counts t = total();
        nlohmann::json j = nlohmann::json::object();
        const JsonRelease release_j(j);
        put_counts(j, t);
        j["line_size"] = line_size_;
        nlohmann::json per;
        const JsonRelease release_per(per);
        json_array_reserve(per, shards_.size());
        const Counts none;
        for (const auto &c : shards_) {
            nlohmann::json one = nlohmann::json::object();
            const JsonRelease release_one(one);
            put_counts(one, c ? *c : none);
            per.push_back(std::move(one));  // room reserved: cannot fail
        }
        j["shards"] = std::move(per);
        return j.dump();
    }

private:
    struct Counts {
        uint64_t reads = 0, writes = 0, ifetches = 0, markers = 0, total = 0;
        std::unordered_set<uint64_t> lines;  // lines of accesses within one line
        std::map<uint64_t, uint64_t> spans;  // first -> last line of wider accesses, disjoint
    };
    // Adds lines [first, last] to the spans, merging those it overlaps or touches.
    static void add_span(std::map<uint64_t, uint64_t> &spans, uint64_t first, uint64_t last) {
        auto it = spans.upper_bound(first);
        if (it != spans.begin()) {
            auto prev = std::prev(it);
            if (prev->second >= first || prev->second + 1 == first) {
                first = prev->first;
                last = std::max(last, prev->second);
                it = spans.erase(prev);
            }
        }
        while (it != spans.end() && (it->first <= last || it->first == last + 1)) {
            last = std::max(last, it->second);
            it = spans.erase(it);
        }
        spans.emplace_hint(it, first, last);
    }
    static bool in_spans(const std::map<uint64_t, uint64_t> &spans, uint64_t line) {
        auto it = spans.upper_bound(line);
        return it != spans.begin() && std::prev(it)->second >= line;
    }
    static uint64_t distinct(const Counts &c) {
        uint64_t n = 0;
        for (const auto &sp : c.spans) n += sp.second - sp.first + 1;
        for (uint64_t l : c.lines) n += !in_spans(c.spans, l);
        return n;
    }
    void count(Counts *c, const sonde_memref_t &m) const {
        switch (m.type) {
            case SONDE_MEMREF_READ: ++c->reads; break;
            case SONDE_MEMREF_WRITE: ++c->writes; break;
            case SONDE_MEMREF_MODIFY:
                ++c->reads;
                ++c->writes;
                break;
            case SONDE_MEMREF_IFETCH: ++c->ifetches; break;
            default: ++c->markers; return;
        }
        ++c->total;
        const uint64_t span = m.size != 0 ? m.size - 1u : 0u;
        const uint64_t last_byte = m.address > UINT64_MAX - span ? UINT64_MAX : m.address + span;
        const uint64_t first = m.address >> line_bits_, last = last_byte >> line_bits_;
        if (first == last)
            c->lines.insert(first);
        else
            add_span(c->spans, first, last);
    }
    Counts total() const {
        Counts t;
        for (const auto &c : shards_) {
            if (!c) continue;
            t.reads += c->reads;
            t.writes += c->writes;
            t.ifetches += c->ifetches;
            t.markers += c->markers;
            t.total += c->total;
            t.lines.insert(c->lines.begin(), c->lines.end());
            for (const auto &sp : c->spans) add_span(t.spans, sp.first, sp.second);
        }
        return t;
    }
    static void put_counts(nlohmann::json &j, const Counts &c) {
        j["reads"] = c.reads;
        j["writes"] = c.writes;
        j["ifetches"] = c.ifetches;
        j["markers"] = c.markers;
        j["total"] = c.total;
        j["distinct_lines"] = distinct(c);
    }
    static void print_line(FILE *f, const char *label, const Counts &c) {
        std::fprintf(
            f,
            "  %-10s reads %llu, writes %llu, ifetches %llu, markers %llu, total %llu, distinct lines %llu\n",
            label, static_cast<unsigned long long>(c.reads), static_cast<unsigned long long>(c.writes),
            static_cast<unsigned long long>(c.ifetches), static_cast<unsigned long long>(c.markers),
            static_cast<unsigned long long>(c.total), static_cast<unsigned long long>(distinct(c)));
    }

    uint64_t line_size_ = 64;
    unsigned line_bits_ = 0;
    std::vector<std::unique_ptr<Counts>> shards_;
};

using Factory = std::unique_ptr<sonde::tool> (*)(const std::string &options);

struct Builtin {
    const char *name;
    Factory create;
};

// The registry: one line per built-in tool.
const Builtin kBuiltins[] = {
    {"basic_counts",
     [](const std::string &o) -> std::unique_ptr<sonde::tool> { return std::make_unique<BasicCounts>(o); }},
    {"cache_sim", make_cache_sim},
    {"reuse_distance", make_reuse_distance},
};

}  // namespace

sonde_status_t create_builtin_tool(const std::string &name, const std::string &options,
                                   const sonde_tool_ops_t **ops, void **data, sonde::tool **object,
                                   std::string *error) {
    for (const Builtin &b : kBuiltins) {
        if (name != b.name) continue;
        std::unique_ptr<sonde::tool> tool;
        try {
            tool = b.create(options);
        } catch (const std::bad_alloc &) {
            throw;
        } catch (const std::exception &e) {
            *error = e.what();
            return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        }
        *ops = tool->table();
        *object = tool.get();
        *data = tool.release();
        return SONDE_STATUS_SUCCESS;
    }
    return SONDE_STATUS_ERROR_NOT_SUPPORTED;
}

std::string builtin_tool_names() {
    std::string names;
    for (const Builtin &b : kBuiltins) names += (names.empty() ? "" : ", ") + std::string(b.name);
    return names;
}

}  // namespace sonde::analysis
