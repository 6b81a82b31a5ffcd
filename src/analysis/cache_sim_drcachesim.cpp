// cache_sim's drcachesim model (options "model=drcachesim,..."): DynamoRIO drcachesim's default
// cache simulator. Each simulated core has a private L1I and L1D (32 KiB, 8-way), all share
// one LL (8 MiB, 16-way), lines are 64 bytes, replacement is LRU, and a next-line prefetcher
// sits on each L1D. docs/analysis.md gives the rules; in short, as drcachesim does:
//  - an access that straddles lines is one request per line, each counted as a hit or a miss
//    (a 0-byte access at the start of a line is none);
//  - a miss is passed to the parent (the piece of the access in that line); a demand miss in
//    an L1D then requests the next line in that L1D as a hardware prefetch;
//  - prefetches (software or hardware) count as prefetch hits / misses, not hits / misses;
//    compulsory misses count every first miss of a line, prefetch or not;
//  - a hit in a child cache counts as a child hit of its parent;
//  - cores: each traced cpu id (CPU_ID marker) is mapped, when first seen, to the core with the
//    fewest cpus (ties: the lowest), and a thread runs on the core of its last cpu id
//    (drcachesim's -cpu_scheduling); a thread without one goes to the core with the fewest
//    live threads. Non-fetched instructions and markers touch no cache.
//
// Serial only (cores are shared between shards); the analyzer falls back to a serial run.
// Hot path cost per record: a compare for the core, a scan of one set per cache level
// reached (ways tags, most recent first); no allocation except a new compulsory-miss region.
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/builtin_tools.h"
#include "analysis/tool_options.h"
#include "analysis/seen_blocks.h"

namespace sonde::analysis {

namespace {

struct Config {
    uint32_t cores = 4;
    uint32_t line = 64;
    uint64_t l1i_size = 32 * 1024, l1d_size = 32 * 1024, ll_size = 8 * 1024 * 1024;
    uint32_t l1i_assoc = 8, l1d_assoc = 8, ll_assoc = 16;
    bool prefetcher = true;
    bool cpu_scheduling = true;
    bool inclusive = false;
};

// Digits with an optional K, M or G (powers of 1024); nothing else (no sign, no spaces).
uint64_t parse_size(const std::string &key, const std::string &v) {
    std::string digits = v;
    uint64_t scale = 1;
    if (!digits.empty()) {
        const char c = digits.back();
        scale = (c == 'K' || c == 'k')   ? uint64_t{1} << 10
                : (c == 'M' || c == 'm') ? uint64_t{1} << 20
                : (c == 'G' || c == 'g') ? uint64_t{1} << 30
                                         : 1;
        if (scale != 1) digits.pop_back();
    }
    if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos)
        throw std::invalid_argument(key + " '" + v + "' is not a number (digits, then K, M or G)");
    const uint64_t n = std::stoull(digits);
    if (n > (uint64_t{1} << 40)) throw std::invalid_argument(key + " '" + v + "' is too large");
    return n * scale;
}

bool parse_bool(const std::string &key, const std::string &v) {
    if (v == "1" || v == "true" || v == "on") return true;
    if (v == "0" || v == "false" || v == "off") return false;
    throw std::invalid_argument(key + " must be 0 or 1");
}

bool pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

constexpr uint64_t kMaxSize = uint64_t{4} << 30;
constexpr uint64_t kMaxTags = uint64_t{1} << 25;

Config parse(const std::string &text) {
    Config c;
    for (const std::string &item : option_items(text)) {
        std::string k, v;
        if (!split_option(item, &k, &v))
            throw std::invalid_argument(
                "option '" + item +
                "' is not KEY=VALUE (the drcachesim model takes "
                "cores, line_size, L1I_size, L1I_assoc, L1D_size, L1D_assoc, LL_size, "
                "LL_assoc, data_prefetcher, cpu_scheduling, inclusive)");
        if (k == "model") {
            if (v != "drcachesim") throw std::invalid_argument("unknown model '" + v + "'");
        } else if (k == "cores") {
            const uint64_t n = parse_size(k, v);
            if (n == 0 || n > 1024) throw std::invalid_argument("cores must be 1..1024");
            c.cores = static_cast<uint32_t>(n);
        } else if (k == "line_size") {
            const uint64_t n = parse_size(k, v);
            if (!pow2(n) || n > 65536)
                throw std::invalid_argument("line_size must be a power of two up to 64K");
            c.line = static_cast<uint32_t>(n);
        } else if (k == "L1I_size") {
            c.l1i_size = parse_size(k, v);
        } else if (k == "L1D_size") {
            c.l1d_size = parse_size(k, v);
        } else if (k == "LL_size") {
            c.ll_size = parse_size(k, v);
        } else if (k == "L1I_assoc" || k == "L1D_assoc" || k == "LL_assoc") {
            const uint64_t n = parse_size(k, v);
            if (n == 0 || n > 1024) throw std::invalid_argument(k + " must be 1..1024");
            (k == "L1I_assoc"   ? c.l1i_assoc
             : k == "L1D_assoc" ? c.l1d_assoc
                                : c.ll_assoc) = static_cast<uint32_t>(n);
        } else if (k == "data_prefetcher") {
            if (v != "nextline" && v != "none")
                throw std::invalid_argument("data_prefetcher must be nextline or none");
            c.prefetcher = v == "nextline";
        } else if (k == "cpu_scheduling") {
            c.cpu_scheduling = parse_bool(k, v);
        } else if (k == "inclusive") {
            c.inclusive = parse_bool(k, v);
        } else {
            throw std::invalid_argument("unknown option '" + k + "' for the drcachesim model");
        }
    }
    auto check = [&](const char *name, uint64_t size, uint32_t assoc) {
        if (size > kMaxSize) throw std::invalid_argument(std::string(name) + ": size is larger than 4G");
        if (size == 0 || size % (uint64_t(c.line) * assoc) != 0 || !pow2(size / c.line / assoc))
            throw std::invalid_argument(std::string(name) +
                                        ": size / (assoc * line_size) must be a power-of-two "
                                        "number of sets");
    };
    check("L1I", c.l1i_size, c.l1i_assoc);
    check("L1D", c.l1d_size, c.l1d_assoc);
    check("LL", c.ll_size, c.ll_assoc);
    // Every line of every cache is a tag held from the start.
    const uint64_t tags = (c.l1i_size + c.l1d_size) / c.line * c.cores + c.ll_size / c.line;
    if (tags > kMaxTags)
        throw std::invalid_argument("the hierarchy has " + std::to_string(tags) + " lines in all; at most " +
                                    std::to_string(kMaxTags) +
                                    " (256 MiB of tags): fewer cores, smaller caches or longer lines");
    return c;
}

struct Stats {
    uint64_t hits = 0, misses = 0, compulsory = 0, invalidations = 0, prefetch_hits = 0, prefetch_misses = 0,
             child_hits = 0, flushes = 0, ifetch_misses = 0, data_misses = 0;
};

// One cache of the hierarchy: sets of `assoc` block tags kept most recent first (kEmpty marks an
// unused way, always after the valid ones), which is drcachesim's LRU with invalid ways filled
// first.
class DrCache {
public:
    DrCache(std::string name, uint64_t size, uint32_t assoc, uint32_t line, bool prefetcher)
        : name_(std::move(name)),
          size_(size),
          assoc_(assoc),
          sets_(size / line / assoc),
          line_(line),
          prefetcher_(prefetcher),
          tags_(sets_ * assoc, kEmpty) {
        while ((1u << bits_) < line) ++bits_;
    }
    void set_parent(DrCache *p, bool inclusive) {
        parent_ = p;
        p->children_.push_back(this);
        p->inclusive_ = inclusive;
    }

    // One request of `size` bytes at `addr`; `prefetch` for prefetches, `ifetch` for
    // instruction fetches (only for the miss split of the stats).
    void request(uint64_t addr, uint32_t size, bool prefetch, bool ifetch) {
        const uint64_t first = addr >> bits_;
        // As drcachesim: the last byte is addr + size - 1, so a 0-byte access at the start of
        // a line touches nothing and one elsewhere touches its line.
        if (size == 0 && (addr & (line_ - 1)) == 0) return;
        const uint64_t last = (addr + (size != 0 ? size - 1u : 0u)) >> bits_;
        for (uint64_t tag = first;; ++tag) {
            const uint64_t piece = tag == first ? addr : tag << bits_;
            uint64_t *t = &tags_[(tag & (sets_ - 1)) * assoc_];
            uint32_t way = 0;
            while (way < assoc_ && t[way] != tag) ++way;
            if (way < assoc_) {
                for (uint32_t j = way; j > 0; --j) t[j] = t[j - 1];
                t[0] = tag;
                ++(prefetch ? stats.prefetch_hits : stats.hits);
                if (parent_ != nullptr) ++parent_->stats.child_hits;
            } else {
                if (prefetch) {
                    ++stats.prefetch_misses;
                } else {
                    ++stats.misses;
                    ++(ifetch ? stats.ifetch_misses : stats.data_misses);
                }
                stats.compulsory += seen_.insert(tag);  // no branch: new or not comes at random
                if (parent_ != nullptr) parent_->request(piece, 1, prefetch, ifetch);
                const uint64_t victim = t[assoc_ - 1];
                for (uint32_t j = assoc_ - 1; j > 0; --j) t[j] = t[j - 1];
                t[0] = tag;
                if (inclusive_ && victim != kEmpty)
                    for (DrCache *c : children_) c->invalidate(victim);
                if (!prefetch && prefetcher_) request(piece + line_, 1, true, false);
            }
            if (tag == last || tag == UINT64_MAX) break;
        }
    }

    // Drops `tag` because a parent evicted it (inclusive hierarchy); counts when it was here.
    void invalidate(uint64_t tag) {
        if (remove(tag)) ++stats.invalidations;
        for (DrCache *c : children_) c->invalidate(tag);
    }

    // Drops every line of [addr, addr + size) here and in the parents.
    void flush(uint64_t addr, uint64_t size) {
        ++stats.flushes;
        const uint64_t first = addr >> bits_;
        const uint64_t last = (addr + (size != 0 ? size - 1 : 0)) >> bits_;
        for (uint64_t tag = first; tag - first <= last - first; ++tag) {
            remove(tag);
            if (tag == UINT64_MAX) break;
        }
        if (parent_ != nullptr) parent_->flush(addr, size);
    }

    const std::string &name() const { return name_; }
    uint64_t size() const { return size_; }
    uint32_t assoc() const { return assoc_; }
    Stats stats;

private:
    static constexpr uint64_t kEmpty = ~uint64_t(0);
    bool remove(uint64_t tag) {
        uint64_t *t = &tags_[(tag & (sets_ - 1)) * assoc_];
        for (uint32_t way = 0; way < assoc_; ++way) {
            if (t[way] != tag) continue;
            for (uint32_t j = way; j + 1 < assoc_; ++j) t[j] = t[j + 1];
            t[assoc_ - 1] = kEmpty;
            return true;
        }
        return false;
    }

    std::string name_;
    uint64_t size_;
    uint32_t assoc_;
    uint64_t sets_;
    uint32_t line_;
    unsigned bits_ = 0;
    bool prefetcher_;
    bool inclusive_ = false;
    DrCache *parent_ = nullptr;
    std::vector<DrCache *> children_;
    std::vector<uint64_t> tags_;
    SeenBlocks seen_;
};

class DrCacheSim final : public sonde::tool {
public:
    explicit DrCacheSim(const std::string &options) : cfg_(parse(options)) {
        ll_ = std::make_unique<DrCache>("LL", cfg_.ll_size, cfg_.ll_assoc, cfg_.line, false);
        for (uint32_t i = 0; i < cfg_.cores; ++i) {
            l1i_.push_back(std::make_unique<DrCache>("L1I" + std::to_string(i), cfg_.l1i_size, cfg_.l1i_assoc,
                                                     cfg_.line, false));
            l1d_.push_back(std::make_unique<DrCache>("L1D" + std::to_string(i), cfg_.l1d_size, cfg_.l1d_assoc,
                                                     cfg_.line, cfg_.prefetcher));
            l1i_.back()->set_parent(ll_.get(), cfg_.inclusive);
            l1d_.back()->set_parent(ll_.get(), cfg_.inclusive);
        }
        cpus_of_core_.resize(cfg_.cores);
        threads_on_core_.assign(cfg_.cores, 0);
    }
    const char *name() const override { return "cache_sim"; }
    uint32_t memref_model() const override { return SONDE_MEMREF_MODEL_1_2; }

    bool process_memrefs(const sonde_memref_t *m, size_t n) override {
        for (size_t i = 0; i < n; ++i) {
            const sonde_memref_t &r = m[i];
            const uint16_t type = r.type;
            if (type == SONDE_MEMREF_MARKER) {
                marker(r);
                continue;
            }
            const bool instr = sonde_memref_type_is_instr(type);
            const bool data =
                type == SONDE_MEMREF_READ || type == SONDE_MEMREF_WRITE || type == SONDE_MEMREF_MODIFY;
            const bool prefetch = sonde_memref_type_is_prefetch(type);
            const bool flush = type == SONDE_MEMREF_INSTR_FLUSH || type == SONDE_MEMREF_DATA_FLUSH;
            if (!instr && !data && !prefetch && !flush) continue;  // non-fetched, encodings
            const uint32_t core = core_of(r.shard);
            if (instr || type == SONDE_MEMREF_PREFETCH_INSTR)
                l1i_[core]->request(r.address, r.size, !instr, instr);
            else if (flush)
                (type == SONDE_MEMREF_INSTR_FLUSH ? l1i_ : l1d_)[core]->flush(
                    r.address, r.size != 0 ? r.size : r.pc - r.address);
            else
                l1d_[core]->request(r.address, r.size, prefetch, false);
        }
        return true;
    }

    bool print_results(void *stream) override {
        FILE *f = static_cast<FILE *>(stream);
        std::fprintf(f, "cache_sim (drcachesim model): %u cores, %u-byte lines\n", cfg_.cores, cfg_.line);
        for (uint32_t c = 0; c < cfg_.cores; ++c) {
            std::string cpus;
            for (uint64_t cpu : cpus_of_core_[c])
                cpus += (cpus.empty() ? ": #" : ", #") + std::to_string(cpu);
            std::fprintf(f, "Core #%u (%zu traced CPU(s)%s)\n", c, cpus_of_core_[c].size(), cpus.c_str());
            const Stats &i = l1i_[c]->stats, &d = l1d_[c]->stats;
            if (i.hits + i.misses + i.prefetch_hits + i.prefetch_misses != 0) print_level(f, *l1i_[c], false);
            if (d.hits + d.misses + d.prefetch_hits + d.prefetch_misses != 0) print_level(f, *l1d_[c], false);
        }
        print_level(f, *ll_, true);
        return true;
    }

    std::string results_json() override {
        nlohmann::json cores = nlohmann::json::array();
        for (uint32_t c = 0; c < cfg_.cores; ++c)
            cores.push_back({{"core", c}, {"traced_cpus", cpus_of_core_[c]}});
        nlohmann::json levels = nlohmann::json::array();
        for (uint32_t c = 0; c < cfg_.cores; ++c) {
            levels.push_back(level_json(*l1i_[c], c));
            levels.push_back(level_json(*l1d_[c], c));
        }
        levels.push_back(level_json(*ll_, -1));
        return nlohmann::json{
            {"model", "drcachesim"}, {"line_size", cfg_.line}, {"cores", cores}, {"levels", levels}}
            .dump();
    }

private:
    // The core of a shard's thread; cached for runs of one shard.
    uint32_t core_of(uint32_t shard) {
        if (shard == last_shard_) return last_core_;
        auto it = core_of_shard_.find(shard);
        if (it == core_of_shard_.end()) {
            uint32_t best = 0;  // drcachesim: the core with the fewest live threads
            for (uint32_t c = 1; c < cfg_.cores; ++c)
                if (threads_on_core_[c] < threads_on_core_[best]) best = c;
            ++threads_on_core_[best];
            it = core_of_shard_.emplace(shard, best).first;
        }
        last_shard_ = shard;
        last_core_ = it->second;
        return last_core_;
    }

    void marker(const sonde_memref_t &r) {
        if (r.size == SONDE_MARKER_CPU_ID && cfg_.cpu_scheduling && r.address != UINT64_MAX) {
            auto it = core_of_cpu_.find(r.address);
            if (it == core_of_cpu_.end()) {
                uint32_t best = 0;  // the core with the fewest traced cpus
                for (uint32_t c = 1; c < cfg_.cores; ++c)
                    if (cpus_of_core_[c].size() < cpus_of_core_[best].size()) best = c;
                cpus_of_core_[best].push_back(r.address);
                it = core_of_cpu_.emplace(r.address, best).first;
            }
            core_of_shard_[r.shard] = it->second;
            last_shard_ = UINT32_MAX;
        } else if (r.size == SONDE_MARKER_THREAD_EXIT) {
            auto it = core_of_shard_.find(r.shard);
            if (it != core_of_shard_.end() && threads_on_core_[it->second] > 0)
                --threads_on_core_[it->second];
        }
    }

    static double ratio(uint64_t a, uint64_t b) { return b != 0 ? double(a) / double(b) : 0.0; }

    static nlohmann::json level_json(const DrCache &c, int core) {
        const Stats &s = c.stats;
        nlohmann::json j = {{"name", c.name()},
                            {"size", c.size()},
                            {"assoc", c.assoc()},
                            {"accesses", s.hits + s.misses},
                            {"hits", s.hits},
                            {"misses", s.misses},
                            {"miss_ratio", ratio(s.misses, s.hits + s.misses)},
                            {"compulsory_misses", s.compulsory},
                            {"invalidations", s.invalidations},
                            {"prefetch_hits", s.prefetch_hits},
                            {"prefetch_misses", s.prefetch_misses},
                            {"flushes", s.flushes},
                            {"ifetch_misses", s.ifetch_misses},
                            {"data_misses", s.data_misses}};
        if (core >= 0) {
            j["core"] = core;
        } else {
            j["child_hits"] = s.child_hits;
            j["local_miss_ratio"] = ratio(s.misses, s.hits + s.misses);
            j["total_miss_ratio"] = ratio(s.misses, s.hits + s.misses + s.child_hits);
        }
        return j;
    }

    static std::string grouped(uint64_t v) {
        std::string s = std::to_string(v);
        for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
        return s;
    }

    static void print_level(FILE *f, const DrCache &c, bool last_level) {
        const Stats &s = c.stats;
        std::string line = "  " + c.name() + ": hits " + grouped(s.hits) + ", misses " + grouped(s.misses) +
                           ", compulsory " + grouped(s.compulsory) + ", invalidations " +
                           grouped(s.invalidations);
        if (s.prefetch_hits + s.prefetch_misses != 0)
            line += ", prefetch hits " + grouped(s.prefetch_hits) + ", prefetch misses " +
                    grouped(s.prefetch_misses);
        char rate[64];
        if (last_level) {
            std::snprintf(rate, sizeof rate, ", local miss rate %.2f%%",
                          100.0 * ratio(s.misses, s.hits + s.misses));
            line += rate;
            line += ", child hits " + grouped(s.child_hits);
            std::snprintf(rate, sizeof rate, ", total miss rate %.2f%%",
                          100.0 * ratio(s.misses, s.hits + s.misses + s.child_hits));
        } else {
            std::snprintf(rate, sizeof rate, ", miss rate %.2f%%",
                          100.0 * ratio(s.misses, s.hits + s.misses));
        }
        line += rate;
        std::fprintf(f, "%s\n", line.c_str());
    }

    Config cfg_;
    std::unique_ptr<DrCache> ll_;
    std::vector<std::unique_ptr<DrCache>> l1i_, l1d_;
    std::vector<std::vector<uint64_t>> cpus_of_core_;  // traced cpu ids in order of first sight
    std::vector<uint32_t> threads_on_core_;
    std::unordered_map<uint64_t, uint32_t> core_of_cpu_;
    std::unordered_map<uint32_t, uint32_t> core_of_shard_;
    uint32_t last_shard_ = UINT32_MAX;
    uint32_t last_core_ = 0;
};

}  // namespace

std::unique_ptr<sonde::tool> make_cache_sim_drcachesim(const std::string &options) {
    return std::make_unique<DrCacheSim>(options);
}

}  // namespace sonde::analysis
