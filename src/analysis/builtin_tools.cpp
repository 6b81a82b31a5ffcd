// The built-in tool registry and the basic_counts tool. Adding a built-in tool is one line in
// kBuiltins: its name and a factory that builds it from an options string.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/builtin_tools.h"
#include "analysis/dense_set.h"
#include "analysis/json_text.h"
#include "analysis/tool_options.h"
#include "analysis/state_bytes.h"
#include "analysis/union_set.h"
#include <sonde/tool.hpp>

namespace sonde::analysis {

namespace {

// basic_counts: per shard and in total, reads, writes (M counts as both), instruction fetches,
// markers, memory references (`total`: each L, S, M or fetch record once) and distinct lines;
// and drcachesim's categories (docs/analysis.md): distinct instruction addresses,
// non-fetched instructions, prefetches, flushes, encodings, threads and markers by kind.
// Serial mode indexes a per-shard slot by memref->shard; parallel mode gives each shard its own
// slot from parallel_shard_init (slots are made in initialize and add_shards, in a deque so that
// a slot stays where it is when a live run adds shards; a slot's counts are created on the
// shard's first record). Cost per
// record: for a read, write or modify two counters added without a branch on which, and the
// line's bit set in a DenseSet (64 lines to a slot); for other records a switch (and the pc
// of an instruction into a set of its own); an
// access that spans several lines (clamped at the top of the address space) is one interval
// in an ordered map instead, so memory follows the records, not the bytes they cover.
class BasicCounts final : public sonde::tool, public ShardDoneHooks, public JsonText {
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
    uint32_t memref_model() const override { return SONDE_MEMREF_MODEL_1_2; }
    bool initialize(uint32_t num_shards) override {
        shards_.resize(num_shards);
        total_.reset();  // counts change only between here and the results, and in merge_state
        all_lines_.clear();
        all_pcs_.clear();
        united_ = !partitioned_;
        return true;
    }
    bool add_shards_supported() const override { return true; }
    bool add_shards(uint32_t num_shards) override {
        if (num_shards > shards_.size()) shards_.resize(num_shards);
        return true;
    }
    bool process_memrefs(const sonde_memref_t *m, size_t n) override {
        united_ = false;                // the union is counted at the end (union_count)
        uint32_t current = UINT32_MAX;  // the shard of the run being counted
        Counts *c = nullptr;
        for (size_t i = 0; i < n; ++i) {
            if (m[i].shard != current) {
                if (m[i].shard >= shards_.size())
                    return set_error("memref of shard " + std::to_string(m[i].shard) + " beyond the " +
                                     std::to_string(shards_.size()) + " shards announced");
                std::unique_ptr<Counts> &slot = shards_[m[i].shard];
                if (!slot) slot = std::make_unique<Counts>();
                c = slot.get();
                current = m[i].shard;
            }
            count(c, m[i]);
        }
        return true;
    }
    bool parallel_shard_supported() override { return true; }
    // Every count is a sum and every set a union, so a shard may come in pieces: each piece
    // counts on its own, and is folded into its shard's counts when it ends.
    bool parallel_shard_pieces() const override { return true; }
    bool parallel_shard_init(uint32_t shard, void *, void **shard_data) override {
        if (shard >= shards_.size())
            return set_error("shard " + std::to_string(shard) + " beyond the shards announced");
        *shard_data = new Piece{shard, nullptr};
        return true;
    }
    bool parallel_shard_memrefs(void *sd, const sonde_memref_t *m, size_t n) override {
        Piece &p = *static_cast<Piece *>(sd);
        if (!p.counts) p.counts = std::make_unique<Counts>();
        Counts *c = p.counts.get();
        for (size_t i = 0; i < n; ++i) {
            if (i + kAhead < n) c->lines.prefetch(m[i + kAhead].address >> line_bits_);
            prefetch_record(m, i, n);
            count(c, m[i]);
        }
        return true;
    }
    // Adds the piece's lines and instruction addresses to the union over all shards, and folds
    // its counts into its shard's, on the worker that ends the piece (workers may end pieces of
    // one shard at once: a lock per group of shards; the first piece is moved in).
    bool parallel_shard_exit(void *sd) override {
        std::unique_ptr<Piece> p(static_cast<Piece *>(sd));
        if (!p->counts) return true;
        if (united_) {
            all_lines_.add(p->counts->lines);
            all_pcs_.add(p->counts->pcs);
        }
        std::lock_guard<std::mutex> lock(fold_mu_[p->shard % kFoldLocks]);
        std::unique_ptr<Counts> &slot = shards_[p->shard];
        if (!slot) {
            slot = std::move(p->counts);
        } else {
            add_counts(*slot, *p->counts);
            slot->tids.insert_all(p->counts->tids);
        }
        return true;
    }
    // A shard every piece of which has ended (run_parallel): its distinct lines and instruction
    // addresses are counted now and its sets freed, as the union over the shards already has
    // their keys (united_). A run's sets then take the memory of the shards being counted, not
    // of every shard, and each shard's tables, freed, are what the worker's next shard grows
    // into (with one slot a line, 16 shards of 446 K lines held 16 tables of 8 MiB). The sets
    // stay where the state is exported (partitioned runs) or the union is counted at the end.
    void shard_done(uint32_t shard) noexcept override {
        if (!united_ || partitioned_ || shard >= shards_.size()) return;
        std::lock_guard<std::mutex> lock(fold_mu_[shard % kFoldLocks]);
        Counts *c = shards_[shard].get();
        if (c == nullptr || c->done) return;
        c->done_lines = distinct(*c);
        c->done_pcs = c->pcs.size();
        c->done = true;
        c->lines.release();
        c->pcs.release();
    }
    // Partitioned runs: any part (whole shards or time slices) counts exactly, as every count
    // is a sum and every set a union: the state is each shard's counts and sets.
    bool partition_supported() const override { return true; }
    // Called before initialize: a partitioned run's totals are those of the merged states, so
    // its workers build no union.
    uint32_t partition(uint32_t, uint32_t, uint32_t offers) override {
        partitioned_ = true;
        return offers;
    }
    std::string export_state() override {
        StateWriter w;
        w.u64(line_size_);
        w.u64(shards_.size());
        for (const auto &p : shards_) {
            w.u8(p ? 1 : 0);
            if (!p) continue;
            const Counts &c = *p;
            for (uint64_t v : {c.reads, c.writes, c.ifetches, c.markers, c.total, c.non_fetched, c.prefetches,
                               c.encodings, c.icache_flushes, c.dcache_flushes, c.records})
                w.u64(v);
            w.u8(c.extended ? 1 : 0);
            for (uint64_t k : c.kinds) w.u64(k);
            for (const DenseSet *set : {&c.lines, &c.pcs, &c.tids}) {
                w.u64(set->size());
                set->for_each([&](uint64_t v) { w.u64(v); });
            }
            w.u64(c.spans.size());
            for (const auto &sp : c.spans) {
                w.u64(sp.first);
                w.u64(sp.second);
            }
        }
        return std::move(w.out);
    }
    bool merge_state(const void *state, size_t size) override {
        total_.reset();
        united_ = false;  // the merged keys are not in all_lines_ and all_pcs_
        StateReader r(state, size);
        if (r.u64() != line_size_) return set_error("partial state of another line size");
        if (r.u64() != shards_.size()) return set_error("partial state of another shard count");
        for (auto &p : shards_) {
            if (r.u8() == 0) continue;
            if (!p) p = std::make_unique<Counts>();
            Counts &c = *p;
            for (uint64_t *v :
                 {&c.reads, &c.writes, &c.ifetches, &c.markers, &c.total, &c.non_fetched, &c.prefetches,
                  &c.encodings, &c.icache_flushes, &c.dcache_flushes, &c.records})
                *v += r.u64();
            c.extended = r.u8() != 0 || c.extended;
            for (uint64_t &k : c.kinds) k += r.u64();
            for (DenseSet *set : {&c.lines, &c.pcs, &c.tids}) {
                const uint64_t n = r.count(8);
                for (uint64_t i = 0; i < n; ++i) set->insert(r.u64());
            }
            const uint64_t spans = r.count(16);
            for (uint64_t i = 0; i < spans; ++i) {
                const uint64_t first = r.u64(), last = r.u64();
                if (last < first) return set_error("partial state has a span that ends before it starts");
                add_span(c.spans, first, last);
            }
        }
        if (!r.at_end()) return set_error("partial state has bytes after its end");
        return true;
    }
    bool print_results(void *stream) override {
        FILE *f = static_cast<FILE *>(stream);
        const Counts &t = total();
        std::fprintf(f, "basic_counts: %zu shard(s)\n", shards_.size());
        print_line(f, "total", t, t.extended);
        // The text lists the shards that have records: a Sonde trace declares every shard up to
        // the largest one written, so sparse shard numbers (thread ids, say) would otherwise print
        // thousands of lines of zeros. The JSON keeps every shard, indexed by position.
        if (shards_.size() > 1) {
            size_t empty = 0;
            for (size_t i = 0; i < shards_.size(); ++i) {
                if (!shards_[i] || shards_[i]->records == 0) {
                    ++empty;
                    continue;
                }
                print_line(f, ("shard " + std::to_string(i)).c_str(), *shards_[i], t.extended);
            }
            if (empty != 0) std::fprintf(f, "  (%zu shard(s) without records not listed)\n", empty);
        }
        return true;
    }
    // The same text as the analyzer prints (results_json_text), in one string.
    std::string results_json() override {
        JsonPieces pieces;
        results_json_text(&pieces, 0, 1);
        return pieces.joined();
    }
    // The results as JSON text (json_text.h): the totals' keys, line_size, and shards, an array
    // of every shard's counts by position. Written straight rather than built as a document: a
    // trace of a few hundred bytes can declare 65536 shards, whose counts with drcachesim's
    // categories are 56 MB of JSON, and a document of them took seconds and hundreds of MB.
    void results_json_text(JsonPieces *out, int depth, unsigned) override {
        const Counts &t = total();
        std::string &s = out->text();
        s.reserve(s.size() + (shards_.size() + 1) * (t.extended ? 900 : 160));
        write_counts(s, depth, t, t.extended, true);
    }

private:
    // Marker categories of drcachesim's basic_counts, in its order.
    enum Kind {
        kTimestampCpu,
        kKernelTransfer,
        kHardwareTransfer,
        kCoreIdle,
        kCoreWait,
        kFunctionId,
        kFunctionRetaddr,
        kFunctionArg,
        kFunctionRetval,
        kPhysical,
        kPhysicalUnavailable,
        kSyscall,
        kBlockingSyscall,
        kSkippedMemref,
        kOther,
        kNone,  // not counted: Sonde's thread bookkeeping, drmemtrace's folded branch targets
        kKinds = kNone
    };
    static constexpr const char *kKindNames[kKinds] = {"timestamp_cpuid",
                                                       "kernel_transfer",
                                                       "hardware_transfer",
                                                       "core_idle",
                                                       "core_wait",
                                                       "function_id",
                                                       "function_return_address",
                                                       "function_argument",
                                                       "function_return_value",
                                                       "physical_address",
                                                       "physical_address_unavailable",
                                                       "syscall",
                                                       "blocking_syscall",
                                                       "skipped_memref",
                                                       "other"};

    struct Counts {
        uint64_t reads = 0, writes = 0, ifetches = 0, markers = 0, total = 0;
        uint64_t non_fetched = 0, prefetches = 0, encodings = 0, icache_flushes = 0, dcache_flushes = 0;
        uint64_t records = 0;
        uint64_t shard_threads = 0;  // total only: the sum of the shards' thread counts
        uint64_t total_lines = 0;    // total only: distinct lines outside the spans
        uint64_t total_pcs = 0;      // total only: distinct instruction addresses
        bool is_total = false;
        bool extended = false;  // saw a kind or marker beyond the 1.0 ones
        // shard_done(): lines and pcs are freed, and their counts are these.
        bool done = false;
        uint64_t done_lines = 0, done_pcs = 0;
        uint64_t kinds[kKinds] = {};
        DenseSet lines;                      // lines of accesses within one line
        std::map<uint64_t, uint64_t> spans;  // first -> last line of wider accesses, disjoint
        DenseSet pcs;
        DenseSet tids;
    };

    static Kind kind_of(uint16_t marker) {
        switch (marker) {
            case SONDE_MARKER_TIMESTAMP:
            case SONDE_MARKER_CPU_ID: return kTimestampCpu;
            case SONDE_MARKER_THREAD_SWITCH:
            case SONDE_MARKER_THREAD_ID:
            case SONDE_MARKER_PROCESS_ID:
            case SONDE_MARKER_THREAD_EXIT:
            case SONDE_MARKER_SAMPLE_THRESHOLD:
            case SONDE_MARKER_SAMPLE_SEED:
            case SONDE_MARKER_SAMPLE_LINE_SIZE:
            case SONDE_MARKER_SAMPLE_SKIPPED:
            case SONDE_MARKER_BRANCH_TARGET:
            case SONDE_MARKER_VIRTUAL_ADDRESS:
            case SONDE_MARKER_DRMEMTRACE + 22:  // record ordinal
                return kNone;
            case SONDE_MARKER_KERNEL_EVENT:
            case SONDE_MARKER_KERNEL_XFER: return kKernelTransfer;
            case SONDE_MARKER_HARDWARE_EVENT:
            case SONDE_MARKER_HARDWARE_CONTEXT_RETURN: return kHardwareTransfer;
            case SONDE_MARKER_CORE_IDLE: return kCoreIdle;
            case SONDE_MARKER_CORE_WAIT: return kCoreWait;
            case SONDE_MARKER_FUNC_ID: return kFunctionId;
            case SONDE_MARKER_FUNC_RETADDR: return kFunctionRetaddr;
            case SONDE_MARKER_FUNC_ARG: return kFunctionArg;
            case SONDE_MARKER_FUNC_RETVAL: return kFunctionRetval;
            case SONDE_MARKER_PHYSICAL_ADDRESS: return kPhysical;
            case SONDE_MARKER_PHYSICAL_ADDRESS_NOT_AVAILABLE: return kPhysicalUnavailable;
            case SONDE_MARKER_SYSCALL: return kSyscall;
            case SONDE_MARKER_MAYBE_BLOCKING_SYSCALL: return kBlockingSyscall;
            case SONDE_MARKER_SKIPPED_MEMREF: return kSkippedMemref;
            default: return kOther;
        }
    }

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
        if (c.is_total) return n + c.total_lines;
        if (c.done) return c.done_lines;
        if (c.spans.empty()) return c.lines.size();
        c.lines.for_each([&](uint64_t l) { n += !in_spans(c.spans, l); });
        return n;
    }
    static uint64_t unique_pcs(const Counts &c) {
        return c.is_total ? c.total_pcs : c.done ? c.done_pcs : c.pcs.size();
    }

    // The part of the hash space a word (key >> 6) falls in, of `parts`.
    static unsigned part_of(uint64_t k, unsigned parts) {
        return UnionSet::part_of(k) * parts / UnionSet::kParts;
    }

    // How many distinct keys the sets hold together (only those outside `spans`), counted on up
    // to one thread per core when they are large: thread p unites the words of its part of the
    // hash space from every set, so no set of the union is ever built whole. The shards' sets
    // are read only. For serial runs and merged partial states; a parallel run's workers build
    // the union as they go (UnionSet).
    static uint64_t union_count(const std::vector<const DenseSet *> &sets,
                                const std::map<uint64_t, uint64_t> &spans) {
        size_t words = 0;
        for (const DenseSet *set : sets) words += set->words();
        const unsigned parts =
            words < (size_t{1} << 20) ? 1u : std::min(16u, std::max(1u, std::thread::hardware_concurrency()));
        std::vector<uint64_t> counts(parts, 0);
        auto unite = [&](unsigned p) {
            DenseSet mine;
            for (const DenseSet *set : sets)
                set->for_each_word([&](uint64_t w, uint64_t bits) {
                    if (part_of(w, parts) == p) mine.insert_word(w, bits);
                });
            uint64_t n = 0;
            if (spans.empty())
                n = mine.size();
            else
                mine.for_each([&](uint64_t k) { n += !in_spans(spans, k); });
            counts[p] = n;
        };
        std::vector<std::thread> threads;
        unsigned p = 1;
        try {
            for (; p < parts; ++p) threads.emplace_back(unite, p);
        } catch (const std::system_error &) {
            // No more threads: this one unites the parts left.
        }
        const unsigned started = p;
        unite(0);
        for (unsigned q = started; q < parts; ++q) unite(q);
        for (std::thread &t : threads) t.join();
        uint64_t n = 0;
        for (uint64_t c : counts) n += c;
        return n;
    }
    // A record other than a read, write or modify; true when it is an instruction fetch, a
    // memory reference whose line count() counts as a data access's.
    bool count_other(Counts *c, const sonde_memref_t &m) const {
        switch (m.type) {
            case SONDE_MEMREF_MARKER: {
                ++c->markers;
                const Kind k = kind_of(m.size);
                if (k != kNone) ++c->kinds[k];
                if (m.size > SONDE_MARKER_CPU_ID) c->extended = true;
                if (m.size == SONDE_MARKER_THREAD_ID) c->tids.insert(m.address);
                return false;
            }
            case SONDE_MEMREF_INSTR_NO_FETCH:
                ++c->non_fetched;
                c->extended = true;
                return false;
            case SONDE_MEMREF_INSTR_ENCODING:
                ++c->encodings;
                c->extended = true;
                return false;
            case SONDE_MEMREF_INSTR_FLUSH:
                ++c->icache_flushes;
                c->extended = true;
                return false;
            case SONDE_MEMREF_DATA_FLUSH:
                ++c->dcache_flushes;
                c->extended = true;
                return false;
            default:
                if (sonde_memref_type_is_instr(m.type)) {
                    ++c->ifetches;
                    c->pcs.insert(m.address);
                    if (m.type != SONDE_MEMREF_IFETCH) c->extended = true;
                    return true;
                }
                if (sonde_memref_type_is_prefetch(m.type)) {
                    ++c->prefetches;
                    c->extended = true;
                    return false;
                }
                ++c->markers;  // a type this tool does not know counts as a marker, as in 1.0
                return false;
        }
    }
    void count(Counts *c, const sonde_memref_t &m) const {
        ++c->records;
        if (m.type <= SONDE_MEMREF_MODIFY) {
            // Data, counted without a branch on its kind (reads and writes come in no order).
            c->reads += m.type != SONDE_MEMREF_WRITE;
            c->writes += m.type != SONDE_MEMREF_READ;
        } else if (!count_other(c, m)) {
            return;
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
    // Threads, as drcachesim counts them: in a shard the distinct thread ids (a shard with
    // records but no thread id marker is one thread); in the total the sum over the shards, so
    // one trace given twice as input has twice the threads.
    static uint64_t threads(const Counts &c) {
        if (c.is_total) return c.shard_threads;
        if (c.tids.size() != 0) return c.tids.size();
        return c.records != 0 ? 1 : 0;
    }
    // How many records ahead the line set's slot is prefetched (DenseSet::prefetch): the
    // slots of the records between are loaded at once rather than one after another.
    static constexpr size_t kAhead = 8;
    // A piece of a shard being counted on a worker (parallel_shard_init to _exit).
    struct Piece {
        uint32_t shard;
        std::unique_ptr<Counts> counts;  // made on the piece's first record
    };

    // Adds `c`'s counts, sets and spans to `t`.
    static void add_counts(Counts &t, const Counts &c) {
        t.reads += c.reads;
        t.writes += c.writes;
        t.ifetches += c.ifetches;
        t.markers += c.markers;
        t.total += c.total;
        t.non_fetched += c.non_fetched;
        t.prefetches += c.prefetches;
        t.encodings += c.encodings;
        t.icache_flushes += c.icache_flushes;
        t.dcache_flushes += c.dcache_flushes;
        t.records += c.records;
        t.extended = t.extended || c.extended;
        for (int k = 0; k < kKinds; ++k) t.kinds[k] += c.kinds[k];
        t.lines.insert_all(c.lines);
        for (const auto &sp : c.spans) add_span(t.spans, sp.first, sp.second);
        t.pcs.insert_all(c.pcs);
    }

    // The totals over the shards: sums, the spans merged, and the distinct lines and
    // instruction addresses counted over the shards' sets (union_count) rather than merged
    // into one set. Kept until the counts change (total_ is reset then).
    const Counts &total() const {
        if (total_) return *total_;
        auto t = std::make_unique<Counts>();
        t->is_total = true;
        std::vector<const DenseSet *> lines, pcs;
        for (const auto &p : shards_) {
            if (!p) continue;
            const Counts &c = *p;
            t->reads += c.reads;
            t->writes += c.writes;
            t->ifetches += c.ifetches;
            t->markers += c.markers;
            t->total += c.total;
            t->non_fetched += c.non_fetched;
            t->prefetches += c.prefetches;
            t->encodings += c.encodings;
            t->icache_flushes += c.icache_flushes;
            t->dcache_flushes += c.dcache_flushes;
            t->records += c.records;
            t->extended = t->extended || c.extended;
            for (int k = 0; k < kKinds; ++k) t->kinds[k] += c.kinds[k];
            for (const auto &sp : c.spans) add_span(t->spans, sp.first, sp.second);
            t->shard_threads += threads(c);
            lines.push_back(&c.lines);
            pcs.push_back(&c.pcs);
        }
        if (united_) {
            t->total_lines = 0;
            if (t->spans.empty())
                t->total_lines = all_lines_.size();
            else
                all_lines_.for_each([&](uint64_t l) { t->total_lines += !in_spans(t->spans, l); });
            t->total_pcs = all_pcs_.size();
        } else {
            t->total_lines = union_count(lines, t->spans);
            t->total_pcs = union_count(pcs, {});
        }
        total_ = std::move(t);
        return *total_;
    }

    // The members of a counts object, and of the results' object around the totals (line_size,
    // shards), written in byte order of the keys, as a JSON document keeps them. The 1.0 keys
    // always; drcachesim's categories when the run saw more than the 1.0 kinds (`extended`), so
    // the output for a 1.0 input stays what it was.
    enum Field {
        kReads,
        kWrites,
        kIfetches,
        kMarkers,
        kTotal,
        kDistinctLines,
        kUniqueIfetches,  // this one and those below it: with drcachesim's categories only
        kNonFetched,
        kPrefetches,
        kEncodings,
        kIcacheFlushes,
        kDcacheFlushes,
        kThreads,
        kMarkerKinds,
        kLineSize,  // the results' object only
        kShards,
        kFields
    };
    static constexpr const char *kFieldNames[kFields] = {
        "reads",      "writes",         "ifetches",        "markers",
        "total",      "distinct_lines", "unique_ifetches", "non_fetched_ifetches",
        "prefetches", "encodings",      "icache_flushes",  "dcache_flushes",
        "threads",    "marker_kinds",   "line_size",       "shards"};
    // The indexes of `names` in byte order of the names.
    template <size_t N>
    static std::array<int, N> sorted_names(const char *const (&names)[N]) {
        std::array<int, N> order{};
        for (size_t i = 0; i < N; ++i) order[i] = static_cast<int>(i);
        std::sort(order.begin(), order.end(),
                  [&](int a, int b) { return std::strcmp(names[a], names[b]) < 0; });
        return order;
    }
    // `c` as a JSON object at `depth` (the level of the key that holds it), in the layout of
    // json_text.h; `top`: the results' object, with line_size and every shard.
    void write_counts(std::string &s, int depth, const Counts &c, bool extended, bool top) const {
        static const std::array<int, kFields> fields = sorted_names(kFieldNames);
        static const std::array<int, kKinds> kinds = sorted_names(kKindNames);
        s += '{';
        bool first = true;
        for (const int f : fields) {
            if ((f >= kUniqueIfetches && f < kLineSize && !extended) || (f >= kLineSize && !top)) continue;
            json_key(s, depth + 1, kFieldNames[f], first);
            first = false;
            switch (f) {
                case kReads: json_append(s, c.reads); break;
                case kWrites: json_append(s, c.writes); break;
                case kIfetches: json_append(s, c.ifetches); break;
                case kMarkers: json_append(s, c.markers); break;
                case kTotal: json_append(s, c.total); break;
                case kDistinctLines: json_append(s, distinct(c)); break;
                case kUniqueIfetches: json_append(s, unique_pcs(c)); break;
                case kNonFetched: json_append(s, c.non_fetched); break;
                case kPrefetches: json_append(s, c.prefetches); break;
                case kEncodings: json_append(s, c.encodings); break;
                case kIcacheFlushes: json_append(s, c.icache_flushes); break;
                case kDcacheFlushes: json_append(s, c.dcache_flushes); break;
                case kThreads: json_append(s, threads(c)); break;
                case kMarkerKinds:
                    s += '{';
                    for (size_t i = 0; i < kinds.size(); ++i) {
                        json_key(s, depth + 2, kKindNames[kinds[i]], i == 0);
                        json_append(s, c.kinds[kinds[i]]);
                    }
                    json_newline(s, depth + 1);
                    s += '}';
                    break;
                case kLineSize: json_append(s, line_size_); break;
                case kShards: {
                    if (shards_.empty()) {
                        s += "[]";
                        break;
                    }
                    s += '[';
                    const Counts none;
                    for (size_t i = 0; i < shards_.size(); ++i) {
                        if (i != 0) s += ',';
                        json_newline(s, depth + 2);
                        write_counts(s, depth + 2, shards_[i] ? *shards_[i] : none, extended, false);
                    }
                    json_newline(s, depth + 1);
                    s += ']';
                    break;
                }
                default: break;
            }
        }
        json_newline(s, depth);
        s += '}';
    }
    static void print_line(FILE *f, const char *label, const Counts &c, bool extended) {
        std::fprintf(
            f,
            "  %-10s reads %llu, writes %llu, ifetches %llu, markers %llu, total %llu, distinct lines %llu\n",
            label, static_cast<unsigned long long>(c.reads), static_cast<unsigned long long>(c.writes),
            static_cast<unsigned long long>(c.ifetches), static_cast<unsigned long long>(c.markers),
            static_cast<unsigned long long>(c.total), static_cast<unsigned long long>(distinct(c)));
        if (!extended) return;
        // drcachesim's categories, when the input has more than the 1.0 kinds.
        std::fprintf(
            f,
            "  %-10s unique ifetches %zu, non-fetched %llu, prefetches %llu, encodings %llu, threads %llu, "
            "flushes %llu/%llu (icache/dcache)\n",
            "", unique_pcs(c), static_cast<unsigned long long>(c.non_fetched),
            static_cast<unsigned long long>(c.prefetches), static_cast<unsigned long long>(c.encodings),
            static_cast<unsigned long long>(threads(c)), static_cast<unsigned long long>(c.icache_flushes),
            static_cast<unsigned long long>(c.dcache_flushes));
        std::string kinds;
        for (int k = 0; k < kKinds; ++k)
            if (c.kinds[k] != 0)
                kinds += (kinds.empty() ? "" : ", ") + std::string(kKindNames[k]) + " " +
                         std::to_string(c.kinds[k]);
        if (!kinds.empty()) std::fprintf(f, "  %-10s markers: %s\n", "", kinds.c_str());
    }

    uint64_t line_size_ = 64;
    unsigned line_bits_ = 0;
    std::deque<std::unique_ptr<Counts>> shards_;
    mutable std::unique_ptr<Counts> total_;  // total()'s, reset when the counts change
    // Locks of the shards' counts while workers fold pieces into them (shard % kFoldLocks).
    static constexpr size_t kFoldLocks = 64;
    std::mutex fold_mu_[kFoldLocks];
    // The lines and instruction addresses of every shard, added by the workers as they end
    // pieces; whole (united_) while every record was counted by a parallel worker, so that the
    // totals need no union at the end.
    UnionSet all_lines_, all_pcs_;
    bool united_ = true;
    bool partitioned_ = false;  // partition() was called: the run exports its state
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

std::string take_model(const std::string &options, std::string *rest) {
    std::string model;
    rest->clear();
    for (const std::string &item : option_items(options)) {
        if (item.compare(0, 6, "model=") == 0) {
            model = item.substr(6);
        } else {
            if (!rest->empty()) *rest += ',';
            *rest += item;
        }
    }
    return model;
}

std::string builtin_tool_names() {
    std::string names;
    for (const Builtin &b : kBuiltins) names += (names.empty() ? "" : ", ") + std::string(b.name);
    return names;
}

}  // namespace sonde::analysis
