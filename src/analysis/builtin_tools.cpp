// The built-in tool registry and the basic_counts tool. Adding a built-in tool is one line in
// kBuiltins: its name and a factory that builds it from an options string.
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/analyzer.h"
#include "analysis/builtin_tools.h"
#include <sonde/tool.hpp>

namespace sonde::analysis {

namespace {

// basic_counts: per shard and in total, reads, writes (M counts as both), instruction fetches,
// markers, memory references (`total`: each L, S, M or I record once) and distinct lines.
// Serial mode indexes a per-shard slot by memref->shard; parallel mode gives each shard its own
// slot from parallel_shard_init (slots are preallocated in initialize, so workers never touch
// the vector's structure). Cost per record: a switch and a hash-set insert for the line.
class BasicCounts final : public sonde::tool {
public:
    explicit BasicCounts(const std::string &options) {
        if (!options.empty()) {
            const std::string key = "line_size=";
            if (options.compare(0, key.size(), key) != 0)
                throw std::invalid_argument("unknown option '" + options + "'");
            const unsigned long v = std::stoul(options.substr(key.size()));
            if (v == 0 || (v & (v - 1)) != 0 || v > (1u << 20))
                throw std::invalid_argument("line_size must be a power of two up to 1M");
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
            if (m[i].shard >= shards_.size()) shards_.resize(m[i].shard + 1);
            count(&shards_[m[i].shard], m[i]);
        }
        return true;
    }
    bool parallel_shard_supported() override { return true; }
    bool parallel_shard_init(uint32_t shard, void *, void **shard_data) override {
        *shard_data = &shards_.at(shard);
        return true;
    }
    bool parallel_shard_memrefs(void *sd, const sonde_memref_t *m, size_t n) override {
        Counts *c = static_cast<Counts *>(sd);
        for (size_t i = 0; i < n; ++i) count(c, m[i]);
        return true;
    }
    bool print_results(void *stream) override {
        FILE *f = static_cast<FILE *>(stream);
        const Counts t = total();
        std::fprintf(f, "basic_counts: %zu shard(s)\n", shards_.size());
        print_line(f, "total", t);
        if (shards_.size() > 1)
            for (size_t i = 0; i < shards_.size(); ++i)
                print_line(f, ("shard " + std::to_string(i)).c_str(), shards_[i]);
        return true;
    }
    std::string results_json() override {
        const Counts t = total();
        nlohmann::json j = as_json(t);
        j["line_size"] = line_size_;
        nlohmann::json per = nlohmann::json::array();
        for (const Counts &c : shards_) per.push_back(as_json(c));
        j["shards"] = per;
        return j.dump();
    }

private:
    struct Counts {
        uint64_t reads = 0, writes = 0, ifetches = 0, markers = 0, total = 0;
        std::unordered_set<uint64_t> lines;
    };
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
        const uint64_t first = m.address >> line_bits_;
        const uint64_t last = (m.address + (m.size != 0 ? m.size - 1u : 0u)) >> line_bits_;
        for (uint64_t l = first; l <= last && l >= first; ++l) c->lines.insert(l);
    }
    Counts total() const {
        Counts t;
        for (const Counts &c : shards_) {
            t.reads += c.reads;
            t.writes += c.writes;
            t.ifetches += c.ifetches;
            t.markers += c.markers;
            t.total += c.total;
            t.lines.insert(c.lines.begin(), c.lines.end());
        }
        return t;
    }
    static nlohmann::json as_json(const Counts &c) {
        return {{"reads", c.reads},     {"writes", c.writes}, {"ifetches", c.ifetches},
                {"markers", c.markers}, {"total", c.total},   {"distinct_lines", c.lines.size()}};
    }
    static void print_line(FILE *f, const char *label, const Counts &c) {
        std::fprintf(
            f,
            "  %-10s reads %llu, writes %llu, ifetches %llu, markers %llu, total %llu, distinct lines %zu\n",
            label, static_cast<unsigned long long>(c.reads), static_cast<unsigned long long>(c.writes),
            static_cast<unsigned long long>(c.ifetches), static_cast<unsigned long long>(c.markers),
            static_cast<unsigned long long>(c.total), c.lines.size());
    }

    uint64_t line_size_ = 64;
    unsigned line_bits_ = 0;
    std::vector<Counts> shards_;
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
                                   const sonde_tool_ops_t **ops, void **data, std::string *error) {
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
