// The cache_sim built-in tool: a configurable cache hierarchy with cachegrind's semantics.
//
// Levels come as NAME:SIZE:WAYS:LINE[:POLICY]. Leading levels whose name starts (or ends) with
// I take instruction fetches, those starting (or ending) with D take data accesses; a leading
// level of another name is unified and takes both; each following level takes the misses of
// the levels before it. Semantics follow cachegrind's simulator: the set is the block number
// (address >> line bits) modulo the set count, the tag is the whole block number, LRU keeps
// each set ordered most-recent first; an access that straddles lines touches every line,
// counts as one access and misses if any line misses; a miss passes the same address and size
// to the next level; a modify (lackey M) is one data access. An access that would run past the
// top of the address space ends at its last byte (2^64 - 1).
//
// Serial mode: the first-level caches are private to each shard and the lower levels are
// shared. Parallel mode: each shard simulates a whole private hierarchy on its worker; the
// results are the sums. Hot path cost: per record one set scan (ways tags) per level reached
// and line touched; no allocation except on a miss: the first touch of a page of sets, and of a
// region of blocks (compulsory-miss set).
//
// Memory follows the data: a shard's caches are created on its first record, and a cache's
// sets in pages on their first access, so 65,536 declared shards or a 1 GiB level cost
// nothing until records reach them; a level holds at most 16M lines (32M over all levels).
//
// per_pc=1 (an item among the levels, for `sonde annotate`) also counts, per pc, the reads,
// writes (a modify counts as a write) and instruction fetches and their misses at each level,
// in a row of counters per distinct pc held by the shard's hierarchy: one hash lookup more per
// record. The JSON results then hold them ("per_pc") and each level's accesses and misses by
// kind; the totals are those of the run without it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <deque>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/builtin_tools.h"
#include "analysis/json_release.h"
#include "analysis/route_bytes.h"
#include "analysis/seen_blocks.h"
#include "analysis/state_bytes.h"

namespace sonde::analysis {

namespace {

enum class Policy { lru, fifo, random };
enum class Role { instruction, data, unified };

struct LevelConfig {
    std::string name;
    uint64_t size = 0;
    uint32_t ways = 0;
    uint32_t line = 0;
    Policy policy = Policy::lru;
    Role role = Role::unified;
};

bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

uint64_t parse_number(const std::string &text, bool allow_suffix, const std::string &what) {
    size_t pos = 0;
    unsigned long long v = 0;
    if (text.empty() || text[0] < '0' || text[0] > '9')
        throw std::invalid_argument(what + " '" + text + "' is not a number");
    try {
        v = std::stoull(text, &pos, 10);
    } catch (const std::exception &) {
        throw std::invalid_argument(what + " '" + text + "' is not a number");
    }
    std::string rest = text.substr(pos);
    uint64_t scale = 1;
    if (allow_suffix && rest.size() == 1) {
        const char c = rest[0];
        scale = (c == 'K' || c == 'k')   ? 1024
                : (c == 'M' || c == 'm') ? 1024 * 1024
                : (c == 'G' || c == 'g') ? 1024ull << 20
                                         : 0;
        if (scale != 0) rest.clear();
    }
    if (!rest.empty() || scale == 0) throw std::invalid_argument(what + " '" + text + "' is not valid");
    if (v > UINT64_MAX / scale) throw std::invalid_argument(what + " '" + text + "' is too large");
    return v * scale;
}

// Geometry limits: a cache's tags take 8 bytes per line once touched, so a hierarchy takes at
// most 256 MiB per shard whatever the trace holds.
constexpr uint64_t kMaxLevelLines = uint64_t(1) << 24;
constexpr uint64_t kMaxTotalLines = uint64_t(1) << 25;
// A parallel shard's hierarchy prefetches what the record 8 ahead will read on a miss (its sets
// in the lower levels, its word of each level's blocks seen) when the sets and blocks seen of
// its levels hold this many bytes and its first level misses often (Hierarchy::prefetching):
// below, they stay in a core's L2 and the prefetches only cost (5 % more time a reference over
// 32 MiB of data), above, a miss waited for the L3 (10 % less time for a whole run over 570 MB
// of data, 22 % with a 32 MiB last level).
constexpr std::size_t kPrefetchBytes = std::size_t{1} << 20;

// What the model simulates of a record of `type`: reads, writes and modifies as data accesses,
// a fetched instruction of any kind (sonde_memref_type_is_instr) as an instruction fetch, and
// nothing else (markers, prefetches, instructions not fetched): the 1.0 view of the stream
// (analysis/memref_view.h), read off each record as it comes. The tool takes the 1.2 model so
// that the analyzer does not make that view in a pass of its own over every span of records.
enum class Simulated { kNone, kData, kFetch };
inline Simulated simulated(uint16_t type) {
    if (type < SONDE_MEMREF_IFETCH) return Simulated::kData;
    return sonde_memref_type_is_instr(type) ? Simulated::kFetch : Simulated::kNone;
}

std::vector<LevelConfig> parse_config(const std::string &text) {
    std::vector<LevelConfig> levels;
    uint64_t total_lines = 0;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find(',', start);
        if (end == std::string::npos) end = text.size();
        const std::string item = text.substr(start, end - start);
        std::vector<std::string> f;
        size_t p = 0;
        for (;;) {
            const size_t q = item.find(':', p);
            f.push_back(item.substr(p, q == std::string::npos ? std::string::npos : q - p));
            if (q == std::string::npos) break;
            p = q + 1;
        }
        if (f.size() < 4 || f.size() > 5 || f[0].empty())
            throw std::invalid_argument("cache level '" + item + "' is not NAME:SIZE:WAYS:LINE[:POLICY]");
        LevelConfig c;
        c.name = f[0];
        c.size = parse_number(f[1], true, c.name + " size");
        const uint64_t ways = parse_number(f[2], false, c.name + " ways");
        const uint64_t line = parse_number(f[3], false, c.name + " line size");
        if (line == 0 || line > (1u << 16) || !is_pow2(line))
            throw std::invalid_argument(c.name + ": line size must be a power of two up to 64K");
        if (ways == 0 || ways > 1024) throw std::invalid_argument(c.name + ": ways must be 1..1024");
        if (c.size / line > kMaxLevelLines)
            throw std::invalid_argument(c.name + ": at most 16M lines per level (size / line size)");
        c.ways = static_cast<uint32_t>(ways);
        c.line = static_cast<uint32_t>(line);
        if (f.size() == 5) {
            if (f[4] == "lru")
                c.policy = Policy::lru;
            else if (f[4] == "fifo")
                c.policy = Policy::fifo;
            else if (f[4] == "random")
                c.policy = Policy::random;
            else
                throw std::invalid_argument(c.name + ": unknown policy '" + f[4] + "' (lru, fifo, random)");
        }
        if (c.size == 0 || c.size % (uint64_t(c.line) * c.ways) != 0 || !is_pow2(c.size / c.line / c.ways))
            throw std::invalid_argument(c.name +
                                        ": size / (ways * line) must be a power-of-two number of sets");
        const char first = c.name.front(), last = c.name.back();
        c.role = (first == 'I' || last == 'I')   ? Role::instruction
                 : (first == 'D' || last == 'D') ? Role::data
                                                 : Role::unified;
        levels.push_back(c);
        if (levels.size() > 16) throw std::invalid_argument("at most 16 cache levels");
        total_lines += c.size / c.line;
        if (total_lines > kMaxTotalLines)
            throw std::invalid_argument("at most 32M lines in all levels together");
        start = end + 1;
    }
    // The first level(s): one unified level, or I and/or D levels (at most one of each).
    size_t first = 0;
    bool has_i = false, has_d = false;
    while (first < levels.size() && levels[first].role != Role::unified) {
        bool &seen = levels[first].role == Role::instruction ? has_i : has_d;
        if (seen) break;
        seen = true;
        ++first;
    }
    for (size_t i = first; i < levels.size(); ++i) levels[i].role = Role::unified;
    return levels;
}

// One cache. A set is `ways` tags (block numbers) after one word that holds how many ways are
// in use (low half) and the FIFO replacement position (high half): every block number is a
// valid tag, up to 2^64 - 1 with 1-byte lines. A cache of up to kFlatWords words of sets (8 MiB:
// every cache of a real hierarchy) is one array, zeroed by the kernel page by page as its sets
// are first touched (calloc), indexed directly. Larger ones keep their sets in pages of about
// 8 KiB, allocated zeroed (empty) on their first access and found through a map with the 64
// last pages cached, so that memory follows the sets touched.
class Cache {
public:
    explicit Cache(const LevelConfig &c)
        : ways_(c.ways), policy_(c.policy), sets_(c.size / c.line / c.ways), stride_(uint64_t(c.ways) + 1) {
        while ((uint64_t(1) << line_bits_) < c.line) ++line_bits_;
        page_sets_ = 1;
        while (page_sets_ < sets_ && page_sets_ * 2 * stride_ <= kPageWords) page_sets_ *= 2;
        while ((uint64_t(1) << page_bits_) < page_sets_) ++page_bits_;
        if (sets_ * stride_ <= kFlatWords) {
            flat_.reset(static_cast<uint64_t *>(std::calloc(sets_ * stride_, sizeof(uint64_t))));
            if (!flat_) throw std::bad_alloc();
        }
    }
    // One access of `size` bytes at `a` (size 0 counts as 1 byte); true on a miss. Hot path: no
    // allocation on hits.
    // `count` false (a partitioned run: another rank counts this access) changes the cache's
    // state as the access does but none of its counters.
    bool access(uint64_t a, uint32_t size, bool ifetch, bool count = true) {
        if (!count) return access_uncounted(a, size);
        ++accesses;
        const uint64_t span = size != 0 ? size - 1u : 0u;
        const uint64_t last = a > UINT64_MAX - span ? UINT64_MAX : a + span;  // clamped at the top
        const uint64_t b1 = a >> line_bits_, b2 = last >> line_bits_;
        if (b1 == b2) {  // the common case: one line
            if (!ref_is_miss(b1)) return false;
            ++misses;
            compulsory += seen_.insert(b1);  // no branch: new or not comes at random
            ++(ifetch ? ifetch_misses : data_misses);
            return true;
        }
        bool miss = false;
        bool fresh = false;
        for (uint64_t b = b1;; ++b) {  // b1 < b2: ends at b2, which no increment passes
            if (ref_is_miss(b)) {
                miss = true;
                if (seen_.insert(b)) fresh = true;
            }
            if (b == b2) break;
        }
        if (miss) {
            ++misses;
            if (fresh) ++compulsory;
            ++(ifetch ? ifetch_misses : data_misses);
        }
        return miss;
    }
    // One line of an access, for a partitioned run that simulates only some of its lines here:
    // the set's state and the compulsory-miss set change as access() changes them; true on a miss.
    bool touch(uint64_t block) {
        if (!ref_is_miss(block)) return false;
        seen_.insert(block);
        return true;
    }
    uint64_t accesses = 0, misses = 0, compulsory = 0, ifetch_misses = 0, data_misses = 0;
    // Bytes a miss may read: the sets (a cache of one array) and the blocks seen.
    std::size_t bytes() const { return (flat_ ? sets_ * stride_ * sizeof(uint64_t) : 0) + seen_.bytes(); }
    // Starts loading what an access at `a` reads on a miss: its set (with `set`, a cache of one
    // array only) and its word of the blocks seen. No effect on the answers.
    __attribute__((always_inline)) void prefetch(uint64_t a, bool set) const {
        const uint64_t b = a >> line_bits_;
        if (set && flat_) {
            const uint64_t *w = flat_.get() + (b & (sets_ - 1)) * stride_;
            __builtin_prefetch(w);
            __builtin_prefetch(w + stride_ - 1);
        }
        seen_.prefetch(b);
    }

private:
    bool access_uncounted(uint64_t a, uint32_t size) {
        const uint64_t span = size != 0 ? size - 1u : 0u;
        const uint64_t last = a > UINT64_MAX - span ? UINT64_MAX : a + span;
        bool miss = false;
        for (uint64_t b = a >> line_bits_;; ++b) {
            miss = touch(b) || miss;
            if (b == last >> line_bits_) break;
        }
        return miss;
    }

    static constexpr uint64_t kPageWords = 1024;
    static constexpr uint64_t kFlatWords = uint64_t{1} << 20;
    static constexpr size_t kRecent = 64;  // direct-mapped cache of pages

    __attribute__((always_inline)) uint64_t *set_words(uint64_t set) {
        if (flat_) return flat_.get() + set * stride_;
        const uint64_t page = set >> page_bits_;
        Recent &r = recent_[page & (kRecent - 1)];
        if (r.words == nullptr || r.page != page) {
            std::unique_ptr<uint64_t[]> &p = pages_[page];
            if (!p) p.reset(new uint64_t[page_sets_ * stride_]());
            r.words = p.get();
            r.page = page;
        }
        return r.words + (set & (page_sets_ - 1)) * stride_;
    }

    // The most recent way's hit inline; the rest (a hit further down, a miss) out of line.
    __attribute__((always_inline)) bool ref_is_miss(uint64_t block) {
        uint64_t *w = set_words(block & (sets_ - 1));
        if (static_cast<uint32_t>(w[0]) != 0 && w[1] == block) return false;
        return ref_is_miss_below(w, block);
    }
    __attribute__((noinline)) bool ref_is_miss_below(uint64_t *w, uint64_t block) {
        uint64_t *t = w + 1;
        uint32_t valid = static_cast<uint32_t>(w[0]);
        for (uint32_t i = 1; i < valid; ++i) {
            if (t[i] != block) continue;
            if (policy_ == Policy::lru) {
                for (uint32_t j = i; j > 0; --j) t[j] = t[j - 1];
                t[0] = block;
            }
            return false;
        }
        uint32_t next = static_cast<uint32_t>(w[0] >> 32);
        switch (policy_) {
            case Policy::lru:
                if (valid < ways_) ++valid;
                for (uint32_t j = valid - 1; j > 0; --j) t[j] = t[j - 1];
                t[0] = block;
                break;
            case Policy::fifo:
                t[next] = block;
                next = (next + 1) % ways_;
                if (valid < ways_) ++valid;
                break;
            case Policy::random: {
                uint32_t way = valid;
                if (valid < ways_) {
                    ++valid;
                } else {
                    rng_ ^= rng_ << 13;
                    rng_ ^= rng_ >> 7;
                    rng_ ^= rng_ << 17;
                    way = static_cast<uint32_t>(rng_ % ways_);
                }
                t[way] = block;
                break;
            }
        }
        w[0] = valid | (uint64_t(next) << 32);
        return true;
    }

    uint32_t ways_;
    Policy policy_;
    uint64_t sets_;
    uint64_t stride_;         // words per set
    uint64_t page_sets_ = 1;  // sets per page, a power of two
    unsigned page_bits_ = 0;
    unsigned line_bits_ = 0;
    struct Recent {
        uint64_t page = 0;
        uint64_t *words = nullptr;
    };
    struct Free {
        void operator()(uint64_t *p) const { std::free(p); }
    };
    std::unique_ptr<uint64_t, Free> flat_;  // the sets of a cache of up to kFlatWords words
    std::unordered_map<uint64_t, std::unique_ptr<uint64_t[]>> pages_;
    Recent recent_[kRecent];
    uint64_t rng_ = 0x9E3779B97F4A7C15ull;
    SeenBlocks seen_;
};

// Access kinds of the per-pc counts, and their names in the JSON results.
enum Kind : unsigned { kRead = 0, kWrite = 1, kIfetch = 2, kKinds = 3 };
const char *const kKindName[kKinds] = {"read", "write", "ifetch"};

// per_pc: one row of counters per distinct pc, [accesses by kind][misses by kind and level].
// Rows live in one array; a pc finds its row through a hash map.
struct PcRows {
    size_t width = 0;  // kKinds + kKinds * levels
    std::unordered_map<uint64_t, size_t> row_of;
    std::vector<uint64_t> pcs;
    std::vector<uint64_t> counts;
    uint64_t *row(uint64_t pc) {
        auto it = row_of.find(pc);
        if (it == row_of.end()) {
            it = row_of.emplace(pc, pcs.size()).first;
            pcs.push_back(pc);
            counts.resize(counts.size() + width, 0);
        }
        return counts.data() + it->second * width;
    }
};

// A shard's first-level caches (private) and, in parallel mode, its own lower levels.
struct Hierarchy {
    // Whether the next records (a parallel shard's) are worth prefetching for: the levels' sets
    // and blocks seen hold kPrefetchBytes or more, and at least one access in 8 missed the
    // first level since the last call (a run that mostly hits there would prefetch for
    // nothing: 16 % more time on gzip's lackey trace with a 32 MiB last level).
    bool prefetching() {
        uint64_t a = 0, m = 0;
        for (const Cache &c : first) {
            a += c.accesses;
            m += c.misses;
        }
        const bool missing = (m - last_misses) * 8 >= a - last_accesses && a != last_accesses;
        last_accesses = a;
        last_misses = m;
        if (!missing) return false;
        std::size_t n = 0;
        for (const Cache &c : first) n += c.bytes();
        for (const Cache &c : lower) n += c.bytes();
        return n >= kPrefetchBytes;
    }
    std::vector<Cache> first;  // in config order
    std::vector<Cache> lower;  // empty in serial mode (the shared ones are used)
    Cache *icache = nullptr;
    Cache *dcache = nullptr;
    size_t ilevel = 0, dlevel = 0;                // the levels of icache and dcache
    PcRows pcs;                                   // per_pc only
    uint64_t last_accesses = 0, last_misses = 0;  // the first level's at the last prefetching()
};

// The per_pc=1 item of an option string: removes it (and returns whether it is 1), leaving the
// other items as they were (an empty level stays an error of the levels).
bool take_per_pc(std::string *options) {
    bool per_pc = false;
    std::string rest;
    bool first = true;
    size_t pos = 0;
    while (pos <= options->size()) {
        size_t end = options->find(',', pos);
        if (end == std::string::npos) end = options->size();
        const std::string item = options->substr(pos, end - pos);
        pos = end + 1;
        if (item.compare(0, 7, "per_pc=") == 0) {
            const std::string v = item.substr(7);
            if (v != "0" && v != "1") throw std::invalid_argument("per_pc must be 0 or 1, not '" + v + "'");
            per_pc = v == "1";
            continue;
        }
        rest += (first ? "" : ",") + item;
        first = false;
    }
    *options = rest;
    return per_pc;
}

class CacheSim final : public sonde::tool, public PartitionHooks {
public:
    explicit CacheSim(std::string options) : per_pc_(take_per_pc(&options)) {
        levels_ = parse_config(options.empty() ? "I1:32K:8:64,D1:32K:8:64,LL:1M:16:64" : options);
        if (levels_[0].role == Role::unified)
            nfirst_ = 1;
        else
            while (nfirst_ < levels_.size() && levels_[nfirst_].role != Role::unified) ++nfirst_;
    }
    const char *name() const override { return "cache_sim"; }
    uint32_t memref_model() const override { return SONDE_MEMREF_MODEL_1_2; }
    bool initialize(uint32_t num_shards) override {
        shards_.resize(num_shards);
        for (size_t i = nfirst_; i < levels_.size(); ++i) shared_.emplace_back(levels_[i]);
        return true;
    }
    bool add_shards_supported() const override { return true; }
    bool add_shards(uint32_t num_shards) override {
        if (num_shards > shards_.size()) shards_.resize(num_shards);
        return true;
    }
    bool process_memrefs(const sonde_memref_t *m, size_t n) override {
        uint32_t current = UINT32_MAX;  // the shard of the run being simulated
        Hierarchy *h = nullptr;
        for (size_t i = 0; i < n; ++i) {
            const uint32_t s = m[i].shard;
            if (s != current) {
                if (s >= shards_.size())
                    return set_error("memref of shard " + std::to_string(s) + " beyond the " +
                                     std::to_string(shards_.size()) + " shards announced");
                if (!routing_ && !shards_[s]) shards_[s] = make_hierarchy(false);
                h = shards_[s].get();
                current = s;
            }
            if (routing_) {
                if (!route_one(m[i])) return false;
                continue;
            }
            if (per_pc_) {
                access_per_pc(*h, shared_, m[i]);
            } else if (groups_ == 0) {
                access(*h, shared_, m[i]);
            } else if (!access_part(*h, m[i])) {
                return false;
            }
        }
        return true;
    }

    // Partitioned runs. By shards (a parallel run): each shard's hierarchy is private, so any
    // split of the shards merges exactly. By time slices (one stream): every rank simulates
    // only the sets it owns (docs/analysis.md says why this is exact), from every record of the
    // stream when it reads them all, else (byte ranges, route()) from the records that the
    // ranks send it, each rank reading its own range: every reference goes to the ranks that
    // simulate one of its lines' sets, and each rank simulates them in stream order.
    bool routes() const override { return true; }
    bool route(uint32_t rank, uint32_t nranks) override {
        if (nranks == 1) return true;  // one rank reads every record
        routing_ = true;
        rank_ = rank;
        nranks_ = nranks;
        boxes_.clear();
        boxes_.resize(nranks);
        inbox_.assign(nranks, std::string());
        got_.assign(nranks, false);
        next_ = 0;
        // Which ranks simulate the sets of each group (within the first depth's margin), as a
        // bit mask when it fits: most runs have few ranks and few groups.
        masks_.clear();
        if (nranks <= 64 && groups_ <= (uint64_t{1} << 20)) {
            masks_.assign(static_cast<size_t>(groups_), 0);
            for (uint64_t g = 0; g < groups_; ++g)
                for (uint32_t q = 0; q < nranks; ++q)
                    if (needs(q, g)) masks_[static_cast<size_t>(g)] |= uint64_t{1} << q;
        }
        return true;
    }
    void routes_for(uint32_t to, std::vector<std::pair<const void *, size_t>> *pieces) override {
        if (to < boxes_.size()) boxes_[to].pieces(pieces);
    }
    // Slice s is rank s's byte range, and each rank simulates the references of slice 0
    // onwards in order, as their routes come (at once when they come in order, else kept until
    // then), its own when their turn comes. Simulating nothing while reading keeps the ranks'
    // run phases alike: only rank 0 could (slice 0 follows no slice), and it then read for
    // longer while the others waited.
    bool merge_routes(uint32_t from, const void *bytes, size_t size) override {
        if (from >= nranks_ || from == rank_ || got_[from])
            return set_error("routes from an unexpected rank");
        // This rank's own slice first when it comes next (rank 0's always does): the routes
        // that follow it are then simulated as they come, not copied to wait.
        if (!catch_up()) return false;
        got_[from] = true;
        if (from != next_) {
            inbox_[from].assign(static_cast<const char *>(bytes), size);
            return true;
        }
        if (!simulate(from, bytes, size)) return false;
        ++next_;
        return catch_up();
    }
    bool routes_done() override {
        if (!catch_up()) return false;
        if (next_ != nranks_) return set_error("routes of rank " + std::to_string(next_) + " are missing");
        return true;
    }
    bool partition_supported() const override { return true; }
    uint32_t partition(uint32_t rank, uint32_t nranks, uint32_t offers) override {
        if (per_pc_) {
            set_error("per_pc does not run partitioned; run it in one process");
            return SONDE_PARTITION_REFUSE;
        }
        if (offers == SONDE_PARTITION_SHARDS) return offers;
        for (const LevelConfig &c : levels_) {
            if (c.line != levels_[0].line) {
                set_error("levels of different line sizes (" + levels_[0].name + " " +
                          std::to_string(levels_[0].line) + ", " + c.name + " " + std::to_string(c.line) +
                          ") do not split by sets exactly; run it in one process");
                return SONDE_PARTITION_REFUSE;
            }
            if (c.policy == Policy::random) {
                set_error("level " + c.name +
                          " replaces at random, from one generator for all its sets, so its sets do not "
                          "split across ranks; run it in one process");
                return SONDE_PARTITION_REFUSE;
            }
        }
        if (nranks == 1) return SONDE_PARTITION_EVERY_RECORD;  // one rank simulates every set
        groups_ = UINT64_MAX;
        for (const LevelConfig &c : levels_) groups_ = std::min<uint64_t>(groups_, c.size / c.line / c.ways);
        lo_ = groups_ * rank / nranks;
        hi_ = groups_ * (rank + 1) / nranks;
        while ((uint64_t{1} << line_bits_) < levels_[0].line) ++line_bits_;
        depths_ = 1 + (levels_.size() - nfirst_);
        reach_.clear();
        if (groups_ <= (uint64_t{1} << 20)) {
            std::vector<int8_t> table(static_cast<size_t>(groups_));
            for (uint64_t g = 0; g < groups_; ++g)
                table[static_cast<size_t>(g)] = static_cast<int8_t>(reach(g));
            reach_ = std::move(table);
        }
        return SONDE_PARTITION_EVERY_RECORD;
    }
    std::string export_state() override {
        StateWriter w;
        const std::vector<Totals> all = totals();
        w.u64(all.size());
        for (const Totals &t : all)
            for (uint64_t v : {t.accesses, t.misses, t.compulsory, t.ifetch_misses, t.data_misses}) w.u64(v);
        return std::move(w.out);
    }
    bool merge_state(const void *state, size_t size) override {
        StateReader r(state, size);
        if (r.u64() != levels_.size()) return set_error("partial state of another number of levels");
        std::vector<Totals> add(levels_.size());
        for (Totals &t : add)
            for (uint64_t *v : {&t.accesses, &t.misses, &t.compulsory, &t.ifetch_misses, &t.data_misses})
                *v = r.u64();
        if (!r.at_end()) return set_error("partial state has bytes after its end");
        if (merged_.empty()) merged_.resize(levels_.size());
        for (size_t i = 0; i < add.size(); ++i) {
            merged_[i].accesses += add[i].accesses;
            merged_[i].misses += add[i].misses;
            merged_[i].compulsory += add[i].compulsory;
            merged_[i].ifetch_misses += add[i].ifetch_misses;
            merged_[i].data_misses += add[i].data_misses;
        }
        return true;
    }
    bool parallel_shard_supported() override { return true; }
    bool parallel_shard_init(uint32_t shard, void *, void **shard_data) override {
        // The shard's slot: its hierarchy is created on its first record.
        *shard_data = &shards_.at(shard);
        return true;
    }
    bool parallel_shard_memrefs(void *sd, const sonde_memref_t *m, size_t n) override {
        std::unique_ptr<Hierarchy> &slot = *static_cast<std::unique_ptr<Hierarchy> *>(sd);
        if (!slot) slot = make_hierarchy(true);
        Hierarchy &h = *slot;
        if (per_pc_) {
            for (size_t i = 0; i < n; ++i) access_per_pc(h, h.lower, m[i]);
        } else if (h.prefetching()) {
            access_all<true>(h, m, n);
        } else {
            access_all<false>(h, m, n);
        }
        return true;
    }
    // The records of a parallel shard, with kPrefetch each with a prefetch for the one 8 ahead.
    template <bool kPrefetch>
    __attribute__((noinline)) static void access_all(Hierarchy &h, const sonde_memref_t *m, size_t n) {
        constexpr size_t kAhead = 8;
        for (size_t i = 0; i < n; ++i) {
            if (kPrefetch && i + kAhead < n) prefetch(h, h.lower, m[i + kAhead]);
            access(h, h.lower, m[i]);
        }
    }
    static void prefetch(const Hierarchy &h, const std::vector<Cache> &lower, const sonde_memref_t &m) {
        const Simulated k = simulated(m.type);
        if (k == Simulated::kNone) return;
        const Cache *c = k == Simulated::kFetch ? h.icache : h.dcache;
        if (c != nullptr) c->prefetch(m.address, false);
        for (const Cache &l : lower) l.prefetch(m.address, true);
    }
    bool print_results(void *stream) override {
        FILE *f = static_cast<FILE *>(stream);
        std::fprintf(f, "cache_sim:\n");
        for (const Totals &t : totals()) {
            std::fprintf(
                f,
                "  %-4s accesses %s, hits %s, misses %s (%.4f%%; instruction %s, data %s), compulsory %s\n",
                t.name.c_str(), grouped(t.accesses).c_str(), grouped(t.accesses - t.misses).c_str(),
                grouped(t.misses).c_str(), t.accesses ? 100.0 * double(t.misses) / double(t.accesses) : 0.0,
                grouped(t.ifetch_misses).c_str(), grouped(t.data_misses).c_str(),
                grouped(t.compulsory).c_str());
        }
        if (per_pc_) std::fprintf(f, "  per pc: %zu pcs (in the JSON results)\n", pc_rows().pcs.size());
        return true;
    }
    // Runs out of memory with std::bad_alloc, never std::terminate (json_release.h).
    std::string results_json() override {
        const std::vector<Totals> all = totals();
        nlohmann::json levels;
        const JsonRelease release_levels(levels);
        json_array_reserve(levels, all.size());
        for (const Totals &t : all) {
            nlohmann::json level = nlohmann::json::object();
            const JsonRelease release_level(level);
            level["name"] = t.name;
            level["accesses"] = t.accesses;
            level["hits"] = t.accesses - t.misses;
            level["misses"] = t.misses;
            level["miss_ratio"] = t.accesses ? double(t.misses) / double(t.accesses) : 0.0;
            level["compulsory_misses"] = t.compulsory;
            level["ifetch_misses"] = t.ifetch_misses;
            level["data_misses"] = t.data_misses;
            levels.push_back(std::move(level));  // room reserved: cannot fail
        }
        nlohmann::json j = nlohmann::json::object();
        const JsonRelease release_j(j);
        if (per_pc_) put_per_pc(j, levels);
        j["levels"] = std::move(levels);
        return j.dump();
    }

private:
    struct Totals {
        std::string name;
        uint64_t accesses = 0, misses = 0, compulsory = 0, ifetch_misses = 0, data_misses = 0;
    };
    static std::string grouped(uint64_t v) {
        std::string s = std::to_string(v);
        for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
        return s;
    }
    std::unique_ptr<Hierarchy> make_hierarchy(bool with_lower) const {
        auto h = std::make_unique<Hierarchy>();
        h->first.reserve(nfirst_);
        for (size_t i = 0; i < nfirst_; ++i) h->first.emplace_back(levels_[i]);
        for (size_t i = 0; i < nfirst_; ++i) {
            if (levels_[i].role != Role::data) {
                h->icache = &h->first[i];
                h->ilevel = i;
            }
            if (levels_[i].role != Role::instruction) {
                h->dcache = &h->first[i];
                h->dlevel = i;
            }
        }
        h->pcs.width = kKinds + kKinds * levels_.size();
        if (with_lower)
            for (size_t i = nfirst_; i < levels_.size(); ++i) h->lower.emplace_back(levels_[i]);
        return h;
    }
    // Hot path: one record through the hierarchy. Markers are skipped. A kind without a
    // first-level cache goes straight to the first lower level.
    __attribute__((always_inline)) static void access(Hierarchy &h, std::vector<Cache> &lower,
                                                      const sonde_memref_t &m) {
        const Simulated k = simulated(m.type);
        if (k == Simulated::kNone) return;
        const bool ifetch = k == Simulated::kFetch;
        Cache *c = ifetch ? h.icache : h.dcache;
        bool miss = true;
        if (c != nullptr) miss = c->access(m.address, m.size, ifetch);
        for (size_t i = 0; miss && i < lower.size(); ++i) miss = lower[i].access(m.address, m.size, ifetch);
    }
    // access() that also counts the record and its misses in its pc's row (per_pc). Cost: one
    // hash lookup more.
    void access_per_pc(Hierarchy &h, std::vector<Cache> &lower, const sonde_memref_t &m) const {
        const Simulated k = simulated(m.type);
        if (k == Simulated::kNone) return;
        const bool ifetch = k == Simulated::kFetch;
        const unsigned kind = ifetch ? kIfetch : m.type == SONDE_MEMREF_READ ? kRead : kWrite;
        uint64_t *row = h.pcs.row(m.pc);
        ++row[kind];
        uint64_t *misses = row + kKinds + size_t{kind} * levels_.size();
        Cache *c = ifetch ? h.icache : h.dcache;
        bool miss = true;
        if (c != nullptr) {
            miss = c->access(m.address, m.size, ifetch);
            if (miss) ++misses[ifetch ? h.ilevel : h.dlevel];
        }
        for (size_t i = 0; miss && i < lower.size(); ++i) {
            miss = lower[i].access(m.address, m.size, ifetch);
            if (miss) ++misses[nfirst_ + i];
        }
    }
    // Every shard's per-pc rows summed by pc, pcs in increasing order.
    PcRows pc_rows() const {
        PcRows all;
        all.width = kKinds + kKinds * levels_.size();
        std::vector<uint64_t> pcs;
        for (const auto &h : shards_)
            if (h) pcs.insert(pcs.end(), h->pcs.pcs.begin(), h->pcs.pcs.end());
        std::sort(pcs.begin(), pcs.end());
        pcs.erase(std::unique(pcs.begin(), pcs.end()), pcs.end());
        for (uint64_t pc : pcs) all.row(pc);
        for (const auto &h : shards_) {
            if (!h) continue;
            for (size_t r = 0; r < h->pcs.pcs.size(); ++r) {
                uint64_t *to = all.row(h->pcs.pcs[r]);
                const uint64_t *from = h->pcs.counts.data() + r * all.width;
                for (size_t k = 0; k < all.width; ++k) to[k] += from[k];
            }
        }
        return all;
    }
    // per_pc's JSON: "per_pc", one object per pc ({"pc", "reads", "writes", "ifetches", and
    // "read_misses", "write_misses", "ifetch_misses": an array by level}), and each level's
    // accesses by kind and read and write misses, added to `levels` (objects, in level order). A
    // kind reaches a first level by its role and each lower level through the misses of the level
    // above it.
    void put_per_pc(nlohmann::json &j, nlohmann::json &levels) const {
        const PcRows all = pc_rows();
        const size_t nl = levels_.size();
        std::vector<uint64_t> sum(all.width, 0);
        nlohmann::json &rows = j["per_pc"];
        json_array_reserve(rows, all.pcs.size());
        for (size_t r = 0; r < all.pcs.size(); ++r) {
            const uint64_t *row = all.counts.data() + r * all.width;
            for (size_t k = 0; k < all.width; ++k) sum[k] += row[k];
            rows.push_back(nlohmann::json::object());  // room reserved: cannot fail
            nlohmann::json &o = rows.back();
            o["pc"] = all.pcs[r];
            o["reads"] = row[kRead];
            o["writes"] = row[kWrite];
            o["ifetches"] = row[kIfetch];
            for (unsigned kind = 0; kind < kKinds; ++kind) {
                nlohmann::json &m = o[std::string(kKindName[kind]) + "_misses"];
                json_array_reserve(m, nl);
                for (size_t l = 0; l < nl; ++l) m.push_back(row[kKinds + kind * nl + l]);
            }
        }
        for (unsigned kind = 0; kind < kKinds; ++kind) {
            // The first level this kind reaches (none: straight to the first lower level).
            size_t first = nfirst_;
            for (size_t l = 0; l < nfirst_; ++l)
                if (levels_[l].role == Role::unified ||
                    (levels_[l].role == Role::instruction) == (kind == kIfetch))
                    first = l;
            uint64_t reaching = sum[kind];
            for (size_t l = 0; l < nl; ++l) {
                const bool reached = l == first || l >= nfirst_;
                const uint64_t misses = sum[kKinds + kind * nl + l];
                levels[l][std::string(kKindName[kind]) + "_accesses"] = reached ? reaching : 0;
                if (kind != kIfetch)
                    levels[l][std::string(kKindName[kind]) + "_misses"] = misses;  // ifetch_misses is there
                if (reached) reaching = misses;
            }
        }
    }
    // The partitioned path of one record (serial mode, sets split by line group). The group of
    // line b is b mod groups_ (the smallest set count: with power-of-two set counts, every set
    // of every level holds lines of one group); this rank owns groups [lo_, hi_). The cache at
    // depth d (0: the first level, then each lower level) simulates the groups within
    // depths_ - d of that range (circularly), one more at each shallower depth: an access whose
    // first line is owned has both its lines simulated at every depth, and an access with a line
    // outside depth d's groups has none inside depth d + 1's, so whether an access that matters
    // here misses, and so which accesses reach the next depth's sets, is known exactly. The rank
    // owning an access's first line counts it. Hot path: two lookups of reach() per record, two
    // compares per depth reached.
    bool access_part(Hierarchy &h, const sonde_memref_t &m) {
        const Simulated k = simulated(m.type);
        if (k == Simulated::kNone) return true;
        const bool ifetch = k == Simulated::kFetch;
        const uint64_t span = m.size != 0 ? m.size - 1u : 0u;
        const uint64_t last = m.address > UINT64_MAX - span ? UINT64_MAX : m.address + span;
        const uint64_t b1 = m.address >> line_bits_, b2 = last >> line_bits_;
        if (b2 - b1 > 1) return too_wide(m);
        const int64_t r1 = reach(b1 & (groups_ - 1)), r2 = reach(b2 & (groups_ - 1));
        const bool own = r1 == static_cast<int64_t>(depths_);
        Cache *c = ifetch ? h.icache : h.dcache;
        int64_t depth = c != nullptr ? 0 : 1;
        bool miss = true;
        if (c == nullptr) c = shared_.empty() ? nullptr : &shared_[0];
        for (size_t lower = 0; c != nullptr && miss;) {
            const bool in1 = depth <= r1, in2 = depth <= r2;
            if (in1 && in2) {
                miss = c->access(m.address, m.size, ifetch, own);
            } else {
                // Lines out of this depth's range: the outcome is not known here, and no deeper
                // depth simulates this access's lines.
                if (in1) c->touch(b1);
                if (in2) c->touch(b2);
                return true;
            }
            if (depth != 0) ++lower;
            ++depth;
            c = lower < shared_.size() ? &shared_[lower] : nullptr;
        }
        return true;
    }
    // The circular distance from group g to the groups [lo, hi): 0 inside, `groups` when the
    // range is empty (groups, a set count, is a power of two: the circle is taken by masks).
    static uint64_t distance(uint64_t g, uint64_t lo, uint64_t hi, uint64_t groups) {
        if (hi == lo) return groups;
        const uint64_t mask = groups - 1;
        if (((g - lo) & mask) < hi - lo) return 0;
        return std::min((lo - g) & mask, (g - (hi - 1)) & mask);
    }
    // The depths at which this rank simulates group g: depth d iff d <= reach(g) (the groups
    // within depths_ - d of its own), counting when reach(g) == depths_ (its own groups).
    int64_t reach(uint64_t g) const {
        if (!reach_.empty()) return reach_[static_cast<size_t>(g)];
        return static_cast<int64_t>(depths_) -
               static_cast<int64_t>(std::min<uint64_t>(distance(g, lo_, hi_, groups_), depths_ + 1));
    }
    // Whether rank q simulates a set of group g at some depth (its first depth's groups).
    bool needs(uint32_t q, uint64_t g) const {
        return distance(g, groups_ * q / nranks_, groups_ * (q + 1) / nranks_, groups_) <= depths_;
    }
    // Routing (byte ranges): the record goes to every rank that simulates one of its lines'
    // sets, this one included. Hot path: two table lookups (or, past 64 ranks, a walk over the
    // ranks owning the neighbouring groups) and a 16-byte store per destination.
    bool route_one(const sonde_memref_t &m) {
        const Simulated k = simulated(m.type);
        if (k == Simulated::kNone) return true;
        const uint64_t span = m.size != 0 ? m.size - 1u : 0u;
        const uint64_t last = m.address > UINT64_MAX - span ? UINT64_MAX : m.address + span;
        const uint64_t b1 = m.address >> line_bits_, b2 = last >> line_bits_;
        if (b2 - b1 > 1) return too_wide(m);
        const uint64_t g1 = b1 & (groups_ - 1), g2 = b2 & (groups_ - 1);
        const bool fetch = k == Simulated::kFetch;
        const auto send = [&](uint32_t q) { boxes_[q].add(m.address, m.size, m.shard, fetch); };
        if (!masks_.empty()) {
            for (uint64_t bits = masks_[static_cast<size_t>(g1)] | masks_[static_cast<size_t>(g2)]; bits != 0;
                 bits &= bits - 1)
                send(static_cast<uint32_t>(__builtin_ctzll(bits)));
            return true;
        }
        // The owners of the groups within the margin of g1 and g2 (rank q owns
        // [groups q / n, groups (q + 1) / n), so group g's owner is ((g + 1) n - 1) / groups),
        // in increasing order but for the wrap past group 0.
        const uint64_t reach = std::min<uint64_t>(groups_, 2 * depths_ + 2);
        uint32_t first = UINT32_MAX, prev = UINT32_MAX;
        for (uint64_t k = 0; k < reach; ++k) {
            const uint64_t g = (g1 - depths_ + k) & (groups_ - 1);
            const uint32_t q = static_cast<uint32_t>(((g + 1) * nranks_ - 1) / groups_);
            if (q == prev || q == first || !(needs(q, g1) || needs(q, g2))) continue;
            if (first == UINT32_MAX) first = q;
            prev = q;
            send(q);
        }
        return true;
    }
    // Simulates the routed references of slice `slice` (bytes of whole references).
    bool simulate(uint32_t slice, const void *bytes, size_t size) {
        try {
            RouteReader r(bytes, size);
            while (!r.at_end()) {
                const RoutedRef ref = r.next();
                if (ref.shard >= shards_.size())
                    return set_error("routes of rank " + std::to_string(slice) + " hold a bad reference");
                sonde_memref_t m{};
                m.address = ref.address;
                m.size = ref.size;
                m.type = ref.fetch != 0 ? SONDE_MEMREF_IFETCH : SONDE_MEMREF_READ;
                m.shard = ref.shard;
                std::unique_ptr<Hierarchy> &h = shards_[ref.shard];
                if (!h) h = make_hierarchy(false);
                if (!access_part(*h, m)) return false;
            }
        } catch (const std::invalid_argument &e) {
            return set_error("routes of rank " + std::to_string(slice) + ": " + e.what());
        }
        return true;
    }
    // Simulates the slices that are next in order and here: this rank's own, kept routes.
    bool catch_up() {
        while (next_ < nranks_ && (next_ == rank_ || got_[next_])) {
            if (next_ == rank_) {
                std::vector<std::pair<const void *, size_t>> pieces;
                boxes_[rank_].pieces(&pieces);
                for (const auto &p : pieces)
                    if (!simulate(rank_, p.first, p.second)) return false;
                boxes_[rank_].clear();
            } else {
                if (!simulate(next_, inbox_[next_].data(), inbox_[next_].size())) return false;
                std::string().swap(inbox_[next_]);
            }
            ++next_;
        }
        return true;
    }
    bool too_wide(const sonde_memref_t &m) {
        return set_error("an access of " + std::to_string(m.size) + " bytes at 0x" + hex(m.address) +
                         " spans more than two lines, which a run split by cache sets cannot simulate "
                         "exactly; run it in one process");
    }
    static std::string hex(uint64_t v) {
        char text[20];
        std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(v));
        return text;
    }
    std::vector<Totals> totals() const {
        std::vector<Totals> out(levels_.size());
        for (size_t i = 0; i < levels_.size(); ++i) out[i].name = levels_[i].name;
        auto add = [](Totals &t, const Cache &c) {
            t.accesses += c.accesses;
            t.misses += c.misses;
            t.compulsory += c.compulsory;
            t.ifetch_misses += c.ifetch_misses;
            t.data_misses += c.data_misses;
        };
        for (const auto &h : shards_) {
            if (!h) continue;
            for (size_t i = 0; i < h->first.size(); ++i) add(out[i], h->first[i]);
            for (size_t i = 0; i < h->lower.size(); ++i) add(out[nfirst_ + i], h->lower[i]);
        }
        for (size_t i = 0; i < shared_.size(); ++i) add(out[nfirst_ + i], shared_[i]);
        for (size_t i = 0; i < merged_.size(); ++i) {
            out[i].accesses += merged_[i].accesses;
            out[i].misses += merged_[i].misses;
            out[i].compulsory += merged_[i].compulsory;
            out[i].ifetch_misses += merged_[i].ifetch_misses;
            out[i].data_misses += merged_[i].data_misses;
        }
        return out;
    }

    bool per_pc_ = false;
    std::vector<LevelConfig> levels_;
    size_t nfirst_ = 0;
    // Serial: by memref shard; parallel: a slot per shard (a deque: slots stay where they are when a
    // live run adds shards).
    std::deque<std::unique_ptr<Hierarchy>> shards_;
    std::vector<Cache> shared_;   // serial mode's lower levels
    std::vector<Totals> merged_;  // other ranks' counts (partitioned runs)
    // Split by sets (groups_ != 0): line groups, this rank's [lo_, hi_), depths of the hierarchy.
    uint64_t groups_ = 0, lo_ = 0, hi_ = 0;
    uint64_t depths_ = 0;
    unsigned line_bits_ = 0;
    // Routing (byte ranges): this rank of nranks_, what it sends each rank (its own slice's for
    // itself), what each rank sent it, and the ranks of each group.
    bool routing_ = false;
    uint32_t rank_ = 0, nranks_ = 0;
    std::vector<RouteWriter> boxes_;
    std::vector<std::string> inbox_;  // routes that came before their turn
    std::vector<bool> got_;           // ranks whose routes came
    uint32_t next_ = 0;               // the next slice to simulate
    std::vector<uint64_t> masks_;
    std::vector<int8_t> reach_;  // reach() by group, when there are at most 2^20 groups
};

}  // namespace

std::unique_ptr<sonde::tool> make_cache_sim(const std::string &options) {
    std::string rest;
    const std::string model = take_model(options, &rest);
    if (model == "drcachesim") return make_cache_sim_drcachesim(rest);
    if (!model.empty() && model != "cachegrind")
        throw std::invalid_argument("unknown model '" + model + "' (cachegrind, drcachesim)");
    return std::make_unique<CacheSim>(model.empty() ? options : rest);
}

}  // namespace sonde::analysis
