// The reuse_distance analysis tool, gem5 model (the default; model=drcachesim is in
// reuse_distance_drcachesim.cpp): exact (or SHARDS-sampled) LRU stack distances of a trace's
// data references, as a histogram and a miss-ratio curve.
//
// What counts: each READ, WRITE or MODIFY memref is one access to the line that holds its
// address (address >> log2(line size)), like gem5's StackDistProbe fed one access per
// reference; a MODIFY counts as a write. Instruction fetches and markers are not data accesses.
//
// Serial only: one global LRU stack over all shards in the order the analyzer interleaves them
// (timestamp order), so the tool does not offer parallel shards. `jobs=N` instead runs the
// calculator's parallel exact mode (chunks of the access sequence, merged exactly) on batches.
// `per_shard=1` also keeps one stack per shard. Partitioned runs (sonde analyze --mpi) take
// time slices and merge them exactly at rank 0 (PARDA's scheme; exact mode and SHARDS at a
// fixed rate, whose sampling is per line and whose scaling depends on an access's position
// only; not fixed-size SHARDS, whose threshold depends on every earlier line). The tool owns
// everything it holds; the analyzer calls it from one thread.
//
// With jobs > 1 the batches (512 K accesses, then 1-4 M each) go through a Pipeline: a calculator
// thread runs the parallel exact calculation of one batch while the analyzer's thread reads,
// decodes and gathers the next, so that reading overlaps the calculation on traces longer than
// the first batch. A parallel batch takes tapped blocks' entries as they are (process_tapped):
// it is a list of spans, those entries (cuts of the tap's arena) and runs gathered from
// records, which the calculator reads in place (Reuse::add_spans); the cuts go back to the
// arena once calculated.
// Threads: the analyzer's thread owns the batch being gathered; the decoding threads run
// convert() and cut from the arena (thread-safe); the calculator thread owns `global_` and the
// batch handed over from the hand-over (Pipeline::mu) until it says it is done; results are
// read after finish() joined it. The two threads of a Pipeline are one core::WakeSpread group:
// the calculator thread starts, and each wakes the other, off the waker's CPU.
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "analysis/builtin_tools.h"
#include "analysis/json_text.h"
#include "analysis/state_bytes.h"
#include "analysis/tool_options.h"
#include "core/wake_spread.h"
#include <sonde/tool.hpp>
#include "stackdist/pool.h"
#include "stackdist/reuse.h"
#include "trace/source.h"

namespace sonde::analysis {

namespace {

using stackdist::Reuse;
using stackdist::ReuseConfig;
using stackdist::ReuseResult;

struct Options {
    uint64_t line_size = 64;
    ReuseConfig cfg;
    unsigned merge_jobs = 0;  // threads of the slices' merge in a partitioned run; 0: cfg.workers
    bool per_shard = false;
    bool seed_given = false;
};

Options parse(const std::string &text) {
    Options o;
    for (const std::string &item : option_items(text)) {
        std::string key, value;
        if (!split_option(item, &key, &value))
            throw std::invalid_argument("option '" + item + "' has no value");
        // Numbers only, whole: std::stoull would take "-1" (as 2^64 - 1) or "64x" (as 64).
        const bool number = !value.empty() &&
                            value.find_first_not_of(key == "sample_rate" ? "0123456789.eE-+"
                                                                         : "0123456789") == std::string::npos;
        const bool numeric = key == "line_size" || key == "sample_rate" || key == "sample_size" ||
                             key == "jobs" || key == "seed" || key == "merge_jobs";
        if (numeric && !number) throw std::invalid_argument("bad value for '" + key + "': " + value);
        try {
            if (key == "line_size") {
                o.line_size = std::stoull(value);
                if (o.line_size == 0 || (o.line_size & (o.line_size - 1)) != 0)
                    throw std::invalid_argument("line_size must be a power of two");
            } else if (key == "sample_rate") {
                o.cfg.sample_rate = std::stod(value);
                if (!(o.cfg.sample_rate > 0 && o.cfg.sample_rate <= 1))
                    throw std::invalid_argument("sample_rate must be in (0, 1]");
                o.cfg.mode = o.cfg.sample_rate < 1 ? stackdist::Mode::kFixedRate : stackdist::Mode::kExact;
            } else if (key == "sample_size") {
                o.cfg.sample_size = std::stoull(value);
                if (o.cfg.sample_size == 0) throw std::invalid_argument("sample_size must be at least 1");
                o.cfg.mode = stackdist::Mode::kFixedSize;
            } else if (key == "seed") {
                o.cfg.seed = std::stoull(value);
                o.seed_given = true;
            } else if (key == "jobs") {
                const unsigned long jobs = std::stoul(value);
                if (jobs == 0 || jobs > 1024) throw std::invalid_argument("jobs must be 1..1024");
                o.cfg.workers = static_cast<unsigned>(jobs);
            } else if (key == "merge_jobs") {
                const unsigned long jobs = std::stoul(value);
                if (jobs == 0 || jobs > 1024) throw std::invalid_argument("merge_jobs must be 1..1024");
                o.merge_jobs = static_cast<unsigned>(jobs);
            } else if (key == "per_shard") {
                o.per_shard = value == "1" || value == "true";
            } else {
                throw std::invalid_argument("unknown option '" + key + "'");
            }
        } catch (const std::invalid_argument &) {
            throw;
        } catch (const std::exception &) {
            throw std::invalid_argument("bad value for '" + key + "': " + value);
        }
    }
    if (o.cfg.mode != stackdist::Mode::kExact && o.cfg.workers > 1) o.cfg.workers = 1;  // sampling is serial
    return o;
}

// The arrays a batch is gathered in: grown without zeroing what the gathering overwrites at once
// (resize() would write every element twice), in huge pages when large (stackdist::HugeAlloc).
// Huge pages were first left out: on a 2-vCPU Zen 3 VM, a 20 M-access run with two jobs spent
// 14 % of its time zeroing fresh huge pages (against 1.3 % zeroing small ones). On the Zen 5 VM
// this tree is tested on, where a 4 KiB fault costs ~10 us, the small pages were the larger cost:
// the analyzer over gzip's 2 M accesses in memory (bench/scale case 5a), gathered into these
// arrays, was 0.70x as fast with two jobs as with one. Most parallel batches no longer use them
// (a decoded input's blocks come as tap cuts, process_tapped).
template <typename T>
struct BatchAlloc : stackdist::HugeAlloc<T> {
    template <typename U>
    struct rebind {
        using other = BatchAlloc<U>;
    };
    BatchAlloc() = default;
    template <typename U>
    BatchAlloc(const BatchAlloc<U> &) noexcept {}
    template <typename U>
    void construct(U *p) noexcept {
        ::new (static_cast<void *>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U *p, Args &&...args) {
        ::new (static_cast<void *>(p)) U(std::forward<Args>(args)...);
    }
};
using BatchLines = std::vector<uint64_t, BatchAlloc<uint64_t>>;
using BatchWrites = std::vector<uint8_t, BatchAlloc<uint8_t>>;

// A parallel batch: the accesses gathered from records (lines, writes) and the entries taken
// from tapped blocks (taps), in the order `pieces` gives. Without pieces, the batch is the
// gathered arrays alone. Taken entries are handed over as they are: the calculator reads them
// as spans (Reuse::add_spans), and they go back to the tap's arena afterwards.
struct Piece {
    size_t tap;  // index into taps, or SIZE_MAX: the gathered accesses [from, to)
    size_t from, to;
};
struct Batch {
    BatchLines lines;
    BatchWrites writes;
    std::vector<Piece> pieces;
    std::vector<trace::BlockTapOut> taps;
    std::vector<stackdist::Span> spans() const {
        std::vector<stackdist::Span> out;
        out.reserve(pieces.size());
        for (const Piece &p : pieces) {
            if (p.tap == SIZE_MAX)
                out.push_back({lines.data() + p.from, writes.data() + p.from, p.to - p.from});
            else
                out.push_back({taps[p.tap].words, taps[p.tap].bytes, taps[p.tap].count});
        }
        return out;
    }
};

// Double buffering between the analyzer's thread and one calculator thread (see the top).
class Pipeline {
public:
    explicit Pipeline(Reuse &reuse) : reuse_(reuse) {}
    Pipeline(const Pipeline &) = delete;
    Pipeline &operator=(const Pipeline &) = delete;
    ~Pipeline() { stop(); }

    // Hands the batch over once the previous one is done; rethrows what the calculation of an
    // earlier batch threw. `b` comes back with the batch before: its vectors empty, with their
    // room, and its taken entries in `taps` (to be given back to the arena).
    void submit(Batch &b) {
        std::unique_lock<std::mutex> lk(mu_);
        wait_idle(lk);
        rethrow_locked();
        std::swap(b, batch_);
        b.lines.clear();
        b.writes.clear();
        b.pieces.clear();
        busy_ = true;
        if (!thread_.joinable()) {
            thread_ = std::thread([this] { run(); });
            spread_.started(1, thread_);
        } else {
            spread_.spread();
        }
        lk.unlock();
        cv_.notify_all();
    }
    // No batch in flight: submit() would not wait.
    bool idle() {
        std::lock_guard<std::mutex> g(mu_);
        return !busy_;
    }
    // Waits for the batch in flight; rethrows what its calculation threw.
    void drain() {
        std::unique_lock<std::mutex> lk(mu_);
        wait_idle(lk);
        rethrow_locked();
    }
    void stop() {
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
    }

private:
    void rethrow_locked() {
        if (error_) {
            std::exception_ptr e = error_;
            error_ = nullptr;
            std::rethrow_exception(e);
        }
    }
    // The analyzer's thread waits for the batch in flight.
    void wait_idle(std::unique_lock<std::mutex> &lk) {
        if (!busy_) return;
        spread_.wait(0, cv_, lk, [&] { return !busy_; });
    }
    void run() {
        std::unique_lock<std::mutex> lk(mu_);
        spread_.began(1);
        for (;;) {
            if (!busy_ && !stop_) spread_.wait(1, cv_, lk, [&] { return busy_ || stop_; });
            if (!busy_) return;
            lk.unlock();
            try {
                if (batch_.pieces.empty()) {
                    reuse_.add(batch_.lines.data(), batch_.writes.data(), batch_.lines.size());
                } else {
                    const std::vector<stackdist::Span> spans = batch_.spans();
                    reuse_.add_spans(spans.data(), spans.size());
                }
            } catch (...) {
                lk.lock();
                error_ = std::current_exception();
                lk.unlock();
            }
            lk.lock();
            busy_ = false;
            spread_.spread();
            cv_.notify_all();
        }
    }

    Reuse &reuse_;
    std::mutex mu_;
    std::condition_variable cv_;
    Batch batch_;  // the batch handed over (the calculator's while busy_)
    bool busy_ = false, stop_ = false;
    std::exception_ptr error_;
    std::thread thread_;
    // Under mu_: slot 0 the analyzer's thread, slot 1 the calculator thread (core/wake_spread.h).
    core::WakeSpread spread_{2};
};

class ReuseDistanceTool final : public sonde::tool,
                                public PartitionHooks,
                                public JsonText,
                                public DecodeTapHooks,
                                public trace::BlockTap {
public:
    explicit ReuseDistanceTool(const std::string &options)
        : opt_(parse(options)), global_(std::make_unique<Reuse>(opt_.cfg)) {
        while ((uint64_t{1} << line_bits_) < opt_.line_size) ++line_bits_;
    }
    const char *name() const override { return "reuse_distance"; }
    // Every record kind: data loads and stores count as before (the 1.2 kinds, instructions,
    // prefetches and flushes are not accesses here), and the source-sampling markers are read.
    uint32_t memref_model() const override { return SONDE_MEMREF_MODEL_1_2; }
    bool initialize(uint32_t num_shards) override {
        // per_shard: a stack per shard, created on the shard's first data access.
        if (opt_.per_shard) shards_.resize(num_shards);
        return true;
    }
    // Serial only: the slots are reached by index on the run's thread.
    bool add_shards_supported() const override { return true; }
    bool add_shards(uint32_t num_shards) override {
        if (opt_.per_shard && num_shards > shards_.size()) shards_.resize(num_shards);
        return true;
    }
    // Partitioned runs (PARDA, Niu et al., IPDPS 2012): this rank's time slices, each on its
    // own stack; distances inside a slice are final, and its first accesses (the ordered
    // distinct lines of the slice, with their recency ranks at its end) are resolved at rank 0
    // against the stack of every earlier slice (Stack::merge_*, as the parallel exact mode
    // merges its chunks), so the histogram equals one process's exactly.
    bool partition_supported() const override { return true; }
    uint32_t partition(uint32_t, uint32_t, uint32_t offers) override {
        if (opt_.cfg.mode == stackdist::Mode::kFixedSize) {
            set_error(
                "SHARDS at a fixed size (sample_size) does not run partitioned: which lines it keeps "
                "depends on every line before them; use sample_rate, or run it in one process");
            return SONDE_PARTITION_REFUSE;
        }
        if (opt_.per_shard) {
            set_error("per_shard does not run partitioned; run it in one process");
            return SONDE_PARTITION_REFUSE;
        }
        if (offers != SONDE_PARTITION_TIME_SLICES) {
            set_error("one global stack needs time slices");
            return SONDE_PARTITION_REFUSE;
        }
        partitioned_ = true;
        return SONDE_PARTITION_TIME_SLICES;
    }
    void slice_count(uint64_t count) override { slice_count_ = count; }
    bool slice_begin(uint64_t slice) override {
        flush();
        close_slice();
        current_ = std::make_unique<Slice>();
        current_->index = slice;
        return true;
    }
    std::string export_state() override {
        flush();
        close_slice();
        if (base_used_)
            throw std::runtime_error(
                "this rank's results hold merged slices already; export its state first");
        for (const auto &sp : slices_) rank_slice(*sp);
        StateWriter w;
        w.u64(opt_.line_size);
        w.u64(sampling_key());
        w.u64(slices_.size());
        for (const auto &sp : slices_) {
            const Slice &sl = *sp;
            w.u64(sl.index);
            w.u64(sl.accesses);
            w.u64(sl.sampled);
            for (unsigned k = 0; k < 2; ++k) {
                const auto &units = sl.hist.units[k];
                uint64_t nonzero = 0;
                for (uint32_t c : units) nonzero += c != 0;
                w.u64(nonzero);
                char *at = w.extend(nonzero * 12);  // distance, count: in place
                for (uint64_t d = 0; d < units.size(); ++d)
                    if (units[d] != 0) {
                        std::memcpy(at, &d, 8);
                        std::memcpy(at + 8, &units[d], 4);
                        at += 12;
                    }
                // Counts past 2^32 (a wrapped unit counter) live in the weights.
                uint64_t wrapped = 0;
                for (double v : sl.hist.weights[k]) wrapped += v != 0;
                w.u64(wrapped);
                for (size_t d = 0; d < sl.hist.weights[k].size(); ++d)
                    if (sl.hist.weights[k][d] != 0) {
                        w.u64(d);
                        w.u64(static_cast<uint64_t>(sl.hist.weights[k][d] / 4294967296.0));
                    }
            }
            const size_t m = sl.first_lines.size();
            w.u64(m);
            w.u8(sl.ranked ? 1 : 0);  // the stream's last slice goes without
            // Line, write flag, [rank], [position]: written in place, millions of them.
            const bool pos = sampling();
            const size_t per = 9 + (sl.ranked ? 4 : 0) + (pos ? 8 : 0);
            char *at = w.extend(m * per);
            for (size_t j = 0; j < m; ++j, at += per) {
                std::memcpy(at, &sl.first_lines[j], 8);
                at[8] = static_cast<char>(sl.first_writes[j]);
                if (sl.ranked) std::memcpy(at + 9, &sl.rank[j], 4);
                if (pos) std::memcpy(at + (sl.ranked ? 13 : 9), &sl.first_pos[j], 8);
            }
            w.u64(sl.capped.size());
            for (const Capped &c : sl.capped) {
                w.u64(c.pos);
                w.u64(c.distance);
                w.u8(c.write);
            }
        }
        return std::move(w.out);
    }
    bool merge_state(const void *state, size_t size) override {
        StateReader r(state, size);
        if (r.u64() != opt_.line_size) return set_error("partial state of another line size");
        if (r.u64() != sampling_key()) return set_error("partial state of another sampling rate or seed");
        const bool sampled = sampling();
        const uint64_t n = r.count(24);
        std::vector<std::unique_ptr<Slice>> got;
        for (uint64_t i = 0; i < n; ++i) {
            auto sl = std::make_unique<Slice>();
            sl->index = r.u64();
            sl->accesses = r.u64();
            sl->sampled = r.u64();
            if (sl->sampled > sl->accesses || (!sampled && sl->sampled != sl->accesses))
                return set_error("partial state has more sampled accesses than accesses");
            for (unsigned k = 0; k < 2; ++k) {
                const uint64_t units = r.count(12);
                const unsigned char *at = r.take(units * 12);
                for (uint64_t u = 0; u < units; ++u, at += 12) {
                    uint64_t d;
                    uint32_t c;
                    std::memcpy(&d, at, 8);
                    std::memcpy(&c, at + 8, 4);
                    if (d > sl->accesses)
                        return set_error("partial state has a distance beyond its accesses");
                    if (d >= sl->hist.units[k].size()) sl->hist.grow_units(d);
                    sl->hist.units[k][d] = c;
                }
                const uint64_t wrapped = r.count(16);
                for (uint64_t u = 0; u < wrapped; ++u) {
                    const uint64_t d = r.u64();
                    const uint64_t times = r.u64();
                    if (d > sl->accesses)
                        return set_error("partial state has a distance beyond its accesses");
                    sl->hist.add_weight(d, k, static_cast<double>(times) * 4294967296.0);
                }
            }
            const uint64_t m = r.count(9);
            if (m > sl->sampled) return set_error("partial state has more first accesses than accesses");
            sl->ranked = r.u8() != 0;
            sl->first_lines.resize(m);
            sl->first_writes.resize(m);
            sl->rank.resize(sl->ranked ? m : 0);
            sl->first_pos.resize(sampled ? m : 0);
            // The first accesses' records, read in place: line, write flag, [rank], [position].
            const size_t per = 9 + (sl->ranked ? 4 : 0) + (sampled ? 8 : 0);
            if (m > r.left() / per) throw std::invalid_argument("truncated state");
            const unsigned char *at = r.take(m * per);
            for (uint64_t j = 0; j < m; ++j, at += per) {
                std::memcpy(&sl->first_lines[j], at, 8);
                sl->first_writes[j] = at[8] != 0;
                if (sl->ranked) {
                    std::memcpy(&sl->rank[j], at + 9, 4);
                    if (sl->rank[j] >= m)
                        return set_error("partial state has a recency rank beyond its lines");
                }
                if (sampled) {
                    std::memcpy(&sl->first_pos[j], at + (sl->ranked ? 13 : 9), 8);
                    if (sl->first_pos[j] == 0 || sl->first_pos[j] > sl->accesses)
                        return set_error("partial state has a first access beyond its accesses");
                }
            }
            const uint64_t capped = r.count(17);
            if (capped > sl->sampled)
                return set_error("partial state has more capped accesses than accesses");
            sl->capped.resize(capped);
            for (Capped &c : sl->capped) {
                c.pos = r.u64();
                c.distance = r.u64();
                c.write = r.u8() != 0;
                if (c.pos == 0 || c.pos > sl->accesses || c.distance >= c.pos)
                    return set_error("partial state has a capped access beyond its accesses");
            }
            sl->stack.reset();  // merged: its ranks (if any) came with it
            for (const auto &have : slices_)
                if (have->index == sl->index)
                    return set_error("partial state repeats slice " + std::to_string(sl->index));
            got.push_back(std::move(sl));
        }
        if (!r.at_end()) return set_error("partial state has bytes after its end");
        if (resolved_ && base_used_)
            return set_error(
                "partial state merged after the results were taken from this rank's stack; merge every "
                "rank's state before asking for results");
        for (auto &sl : got) slices_.push_back(std::move(sl));
        resolved_.reset();
        return true;
    }
    // Hot path (the analyzer's thread, serial): every record is written to the batch and kept
    // when it is a data access (READ 0, WRITE 1, MODIFY 2), without a branch per kind; markers
    // are the rare branch. No allocation once the batch has its room.
    bool process_memrefs(const sonde_memref_t *m, size_t n) override {
        if (opt_.per_shard) return process_per_shard(m, n);
        reserve_batch();
        size_t k = batch_.lines.size();
        // Both arrays' room first, so that a failed allocation leaves them the same length.
        room_for(batch_.lines, n);
        room_for(batch_.writes, n);
        batch_.lines.resize(k + n);
        batch_.writes.resize(k + n);
        uint64_t *lines = batch_.lines.data();
        uint8_t *writes = batch_.writes.data();
        const unsigned bits = line_bits_;
        // Whether a data access came before: k has moved past k0 (kept in a register; a member
        // would be loaded and stored for every record, as the byte stores may alias it).
        const size_t k0 = k;
        for (size_t i = 0; i < n; ++i) {
            // The records were decoded on other threads: ask for them well ahead.
            __builtin_prefetch(m + i + 16);
            const uint16_t type = m[i].type;
            lines[k] = m[i].address >> bits;
            writes[k] = type != SONDE_MEMREF_READ;
            k += type <= SONDE_MEMREF_MODIFY;
            if (__builtin_expect(type == SONDE_MEMREF_MARKER, 0) &&
                m[i].size >= SONDE_MARKER_SAMPLE_THRESHOLD && m[i].size <= SONDE_MARKER_SAMPLE_SKIPPED) {
                data_seen_ = data_seen_ || k > k0;
                if (!source_marker(m[i])) {
                    batch_.lines.resize(k);
                    batch_.writes.resize(k);
                    return false;
                }
            }
        }
        data_seen_ = data_seen_ || k > k0;
        batch_.lines.resize(k);
        batch_.writes.resize(k);
        // Parallel exact mode wants long batches: each worker takes a chunk of one batch.
        if (batch_due()) flush();
        return true;
    }
    // The tap (DecodeTapHooks; begin, piece and end on the decoding threads): a block's data
    // accesses as lines (words) and write flags (bytes), as the hot path above gathers them. A
    // block holding a source-sampling marker is left to its records (whole = false): markers are
    // read in order. per_shard needs each access's shard, so it takes records only.
    const trace::BlockTap *decode_tap() const override { return opt_.per_shard ? nullptr : this; }
    void begin(size_t n, trace::BlockTapOut *out) const override {
        out->storage.reset();
        out->words = out->scratch_words(n);
        out->bytes = out->scratch_bytes();
        out->count = 0;
        out->whole = true;
    }
    // Appends to the scratch (room for the block's records: every index written is below the
    // records seen so far).
    void piece(const sonde_memref_t *m, size_t n, trace::BlockTapOut *out) const override {
        uint64_t *const lines = out->words;
        uint8_t *const writes = out->bytes;
        const unsigned bits = line_bits_;
        size_t k = out->count;
        bool marker = false;
        for (size_t i = 0; i < n; ++i) {
            const uint16_t type = m[i].type;
            lines[k] = m[i].address >> bits;
            writes[k] = type != SONDE_MEMREF_READ;
            k += type <= SONDE_MEMREF_MODIFY;
            marker |= type == SONDE_MEMREF_MARKER && m[i].size >= SONDE_MARKER_SAMPLE_THRESHOLD &&
                      m[i].size <= SONDE_MARKER_SAMPLE_SKIPPED;
        }
        out->count = k;
        out->whole = out->whole && !marker;
    }
    void end(trace::BlockTapOut *out) const override {
        if (!out->whole) return;  // left to the records; words and bytes stay in the scratch
        // The scratch stays with the block's slot (in this core's cache); the entries go to a
        // cut of their exact size, which a parallel batch can keep (process_tapped).
        const uint64_t *const lines = out->words;
        const uint8_t *const writes = out->bytes;
        const size_t k = out->count;
        arena_->cut(k, out);
        if (k != 0) {
            std::memcpy(out->words, lines, k * sizeof(uint64_t));
            std::memcpy(out->bytes, writes, k);
        }
    }
    // A whole tapped block: as process_memrefs would have gathered it. Parallel batches take the
    // block's entries as they are (no copy): a cut of arena_ that the batch holds until it is
    // calculated, so two batches' entries are in use at once (one gathered, one calculated), 9
    // bytes per access, in slabs of huge pages that later batches reuse. Allocated one block at
    // a time instead, in small pages, they were faulted page by page: on a VM whose page fault
    // costs ~10 us, 28 K faults made two jobs slower than one on a 20 M-access trace. Serial
    // batches copy.
    bool process_tapped(const sonde_memref_t *m, size_t n, trace::BlockTapOut &tap) override {
        if (!tap.whole || opt_.per_shard) return process_memrefs(m, n);
        if (tap.count == 0) return true;
        data_seen_ = true;
        if (opt_.cfg.workers > 1 && !partitioned_) {
            // Room first (this may throw): the batch changes only once nothing else can.
            room_for(batch_.pieces, 2);
            room_for(batch_.taps, 1);
            close_gathered();
            batch_.pieces.push_back({batch_.taps.size(), 0, 0});
            taken_ += tap.count;
            batch_.taps.push_back(tap.take());
        } else {
            const size_t k = batch_.lines.size();
            room_for(batch_.lines, tap.count);
            room_for(batch_.writes, tap.count);
            batch_.lines.resize(k + tap.count);
            batch_.writes.resize(k + tap.count);
            std::memcpy(batch_.lines.data() + k, tap.words, tap.count * sizeof(uint64_t));
            std::memcpy(batch_.writes.data() + k, tap.bytes, tap.count);
        }
        if (batch_due()) flush();
        return true;
    }
    // per_shard: a stack per shard beside the global one.
    bool process_per_shard(const sonde_memref_t *m, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            const uint16_t type = m[i].type;
            if (type != SONDE_MEMREF_READ && type != SONDE_MEMREF_WRITE && type != SONDE_MEMREF_MODIFY) {
                if (type == SONDE_MEMREF_MARKER && m[i].size >= SONDE_MARKER_SAMPLE_THRESHOLD &&
                    m[i].size <= SONDE_MARKER_SAMPLE_SKIPPED && !source_marker(m[i]))
                    return false;
                continue;
            }
            data_seen_ = true;
            const uint64_t line = m[i].address >> line_bits_;
            const uint8_t w = type != SONDE_MEMREF_READ;
            batch_.lines.push_back(line);
            batch_.writes.push_back(w);
            if (m[i].shard >= shards_.size())
                return set_error("memref of shard " + std::to_string(m[i].shard) +
                                 " beyond the shards announced");
            Shard &s = shard_at(m[i].shard);
            s.lines.push_back(line);
            s.writes.push_back(w);
            if (s.lines.size() >= kShardBatch) s.flush();
        }
        if (batch_due()) flush();
        return true;
    }
    bool print_results(void *stream) override {
        finish();
        FILE *f = static_cast<FILE *>(stream);
        const ReuseResult &r = result();
        std::fprintf(f, "reuse_distance: line size %llu, %llu accesses, %llu cold (infinite)%s\n",
                     static_cast<unsigned long long>(opt_.line_size),
                     static_cast<unsigned long long>(r.accesses), static_cast<unsigned long long>(r.infinite),
                     r.sampled ? (" [SHARDS, rate " + std::to_string(r.sample_rate) + "]").c_str() : "");
        std::fprintf(f, "  %zu distinct distances; LRU miss ratio by fully associative cache size:\n",
                     r.histogram.size());
        // A few points of the curve: powers of two up to the largest finite distance.
        size_t k = 0;
        for (uint64_t lines = 1; k < r.mrc.size(); lines <<= 1) {
            while (k + 1 < r.mrc.size() && r.mrc[k + 1].first <= lines) ++k;
            if (r.mrc[k].first > lines) continue;
            std::fprintf(f, "    %10llu lines (%s): %.4f\n", static_cast<unsigned long long>(lines),
                         human(lines * opt_.line_size).c_str(), r.mrc[k].second);
            if (k + 1 >= r.mrc.size() || lines > (uint64_t{1} << 40)) break;
        }
        return true;
    }
    // The same text as the analyzer prints (results_json_text), in one string.
    std::string results_json() override {
        JsonPieces pieces;
        results_json_text(&pieces, 0, std::max(1u, opt_.cfg.workers));
        return pieces.joined();
    }

    // The results as JSON text (json_text.h): accesses, histogram, infinite, line_size, mrc,
    // sample_rate when sampled, shards with --per-shard; the arrays formatted on `threads`.
    void results_json_text(JsonPieces *out, int depth, unsigned threads) override {
        finish();
        auto members = [&](const ReuseResult &r, int d, bool line_size) {
            json_key(out->text(), d, "accesses", true);
            json_append(out->text(), r.accesses);
            json_key(out->text(), d, "histogram", false);
            json_pairs(*out, d, r.histogram, threads);
            json_key(out->text(), d, "infinite", false);
            json_append(out->text(), r.infinite);
            if (line_size) {
                json_key(out->text(), d, "line_size", false);
                json_append(out->text(), opt_.line_size);
            }
            json_key(out->text(), d, "mrc", false);
            json_pairs(*out, d, r.mrc, threads);
            if (r.sampled) {
                json_key(out->text(), d, "sample_rate", false);
                json_append(out->text(), r.sample_rate);
            }
        };
        // out->text() each time: a large array leaves its pieces, and a new text, behind it.
        out->text() += '{';
        members(result(), depth + 1, true);
        if (opt_.per_shard) {
            json_key(out->text(), depth + 1, "shards", false);
            if (shards_.empty()) {
                out->text() += "[]";
            } else {
                out->text() += '[';
                ReuseConfig serial = opt_.cfg;
                serial.workers = 1;
                for (size_t i = 0; i < shards_.size(); ++i) {
                    if (i != 0) out->text() += ',';
                    json_newline(out->text(), depth + 2);
                    out->text() += '{';
                    const std::unique_ptr<Shard> &sh = shards_[i];
                    members(sh ? sh->reuse.result() : Reuse(serial).result(), depth + 3, false);
                    json_newline(out->text(), depth + 2);
                    out->text() += '}';
                }
                json_newline(out->text(), depth + 1);
                out->text() += ']';
            }
        }
        json_newline(out->text(), depth);
        out->text() += '}';
    }

private:
    static constexpr size_t kBatch = 1 << 16;

    struct Shard {
        explicit Shard(const ReuseConfig &c) : reuse(c) {}
        void flush() {
            reuse.add(lines.data(), writes.data(), lines.size());
            lines.clear();
            writes.clear();
        }
        Reuse reuse;
        std::vector<uint64_t> lines;
        std::vector<uint8_t> writes;
    };

    // One time slice of a partitioned run: its private stack (until closed), the distances
    // found inside it, and its first accesses in order with their recency ranks at its end
    // (0 = least recent).
    // A sampled access found inside its slice whose scaled distance may be capped by its
    // position in the stream (SHARDS at a fixed rate): its position in the slice (1-based),
    // distance in sampled lines, and whether it writes.
    struct Capped {
        uint64_t pos;
        uint64_t distance;
        uint8_t write;
    };
    struct Slice {
        uint64_t index = 0;
        uint64_t accesses = 0;
        uint64_t sampled = 0;  // accesses that reached the stack (all of them when exact)
        std::unique_ptr<stackdist::Stack> stack = std::make_unique<stackdist::Stack>();
        stackdist::Histogram hist;
        std::vector<uint64_t> first_lines;
        std::vector<uint8_t> first_writes;
        std::vector<uint32_t> rank;
        bool ranked = false;  // rank holds the recency ranks (made from the stack, or merged)
        // SHARDS at a fixed rate: the first accesses' positions in the slice (1-based), and the
        // accesses whose scaled distance waits for the merge.
        std::vector<uint64_t> first_pos;
        std::vector<Capped> capped;
    };

    // A trace sampled at the source (memory-traces.md): its shards start with the sampling's
    // threshold, seed and line size, which make this tool's calculator SHARDS at that rate and
    // seed, so that it keeps exactly the lines the source kept; SAMPLE_SKIPPED markers count
    // the references left out, which SHARDS counts among the accesses.
    // per_shard: the shard's stack, created on its first use.
    Shard &shard_at(uint32_t shard) {
        std::unique_ptr<Shard> &slot = shards_[shard];
        if (!slot) {
            ReuseConfig serial = opt_.cfg;
            serial.workers = 1;
            slot = std::make_unique<Shard>(serial);
        }
        return *slot;
    }
    bool source_marker(const sonde_memref_t &m) {
        switch (m.size) {
            case SONDE_MARKER_SAMPLE_THRESHOLD: marker_threshold_ = m.address; return true;
            case SONDE_MARKER_SAMPLE_SEED: marker_seed_ = m.address; return true;
            case SONDE_MARKER_SAMPLE_LINE_SIZE: return adopt_source_sampling(m.address);
            default: break;  // SAMPLE_SKIPPED
        }
        if (!source_sampled_)
            return set_error("a SAMPLE_SKIPPED marker comes before the trace's sampling markers");
        if (opt_.per_shard) {
            if (m.shard >= shards_.size())
                return set_error("memref of shard " + std::to_string(m.shard) +
                                 " beyond the shards announced");
            shard_at(m.shard).reuse.add_unsampled(m.address);
        } else {
            pending_skipped_ += m.address;
        }
        return true;
    }
    bool adopt_source_sampling(uint64_t line) {
        const uint64_t t = marker_threshold_, seed = marker_seed_;
        if (t == 0 || t > (uint64_t{1} << 32))
            return set_error("bad sampling threshold marker " + std::to_string(t));
        if (source_sampled_) {
            if (t != source_threshold_ || seed != opt_.cfg.seed || line != opt_.line_size)
                return set_error(
                    "the trace's shards were sampled at the source with different rates, seeds or line "
                    "sizes");
            return true;
        }
        const double rate = static_cast<double>(t) / 4294967296.0;
        const std::string what = "the trace was sampled at the source at rate " + std::to_string(rate) +
                                 " (seed " + std::to_string(seed) + ", " + std::to_string(line) +
                                 "-byte lines)";
        if (line != opt_.line_size)
            return set_error(what + "; analyze it with a line size of " + std::to_string(line) +
                             " (--line-size)");
        if (opt_.cfg.mode == stackdist::Mode::kFixedSize ||
            (opt_.cfg.mode == stackdist::Mode::kFixedRate &&
             static_cast<uint64_t>(std::llround(opt_.cfg.sample_rate * 4294967296.0)) != t) ||
            (opt_.seed_given && opt_.cfg.seed != seed))
            return set_error(
                what + "; analyze it without sample_rate, sample_size and seed, or with that rate and seed");
        if (partitioned_) return set_error(what + ", which does not run partitioned; run it in one process");
        if (data_seen_) return set_error(what + ", but its sampling markers come after its first access");
        opt_.cfg.mode = stackdist::Mode::kFixedRate;
        opt_.cfg.sample_rate = rate;
        opt_.cfg.seed = seed;
        opt_.cfg.workers = 1;  // sampling is serial
        global_ = std::make_unique<Reuse>(opt_.cfg);
        source_sampled_ = true;
        source_threshold_ = t;
        return true;
    }

    // Parallel batches: the first is kFirstParallelBatch accesses, every later one at most
    // kParallelBatch (batch_due may hand it over earlier).
    // Nothing is calculated while the first batch is gathered, so it is short: its calculation
    // then runs while the second is gathered. With every batch of kParallelBatch, a trace of one
    // batch (gzip's 2 M accesses) was gathered whole and then calculated, and two jobs were
    // no faster than one. Later batches stay long: each batch's chunks are merged into the
    // global stack, and doubling batch sizes from a small one (more batches) made a 20 M-access
    // trace slower.
    static constexpr size_t kFirstParallelBatch = 1 << 19;
    static constexpr size_t kParallelBatch = 1 << 22;
    // A batch's room beyond its size: the span that completes it (a block of a reader).
    static constexpr size_t kParallelSpan = 1 << 17;
    size_t batch_limit() const { return opt_.cfg.workers > 1 ? parallel_batch_ : kBatch; }
    // A parallel batch is handed over early, at kEarlyBatch accesses (or 128 K per worker when
    // more), when the calculator is idle: it never waits while accesses are gathered, and the
    // batch left when the input ends, calculated after all reading, is short. With batches of
    // kParallelBatch only, gzip's 2 M accesses with two jobs ended in a 1.5 M-access batch that
    // nothing overlapped (about 10 % of the run); early batches took a 2-job run from 1.47x to
    // 1.57x one job's speed. The floor keeps chunks long enough that merging them stays cheap.
    static constexpr size_t kEarlyBatch = 1 << 20;
    bool batch_due() {
        const size_t n = batch_size();
        if (n >= batch_limit()) return true;
        return opt_.cfg.workers > 1 && pipeline_ != nullptr &&
               n >= std::max<size_t>(kEarlyBatch, size_t{opt_.cfg.workers} << 17) && pipeline_->idle();
    }
    // Room for k more elements, growing geometrically (reserve(size + k) would reallocate on
    // nearly every call).
    template <typename V>
    static void room_for(V &v, size_t k) {
        if (v.capacity() - v.size() < k) v.reserve(std::max(v.capacity() * 2, v.size() + k));
    }
    // Accesses in the batch: gathered and taken.
    size_t batch_size() const { return batch_.lines.size() + taken_; }
    // Once the batch has taken entries, the accesses gathered since the last piece become one.
    void close_gathered() {
        if (batch_.lines.size() > gathered_at_)
            batch_.pieces.push_back({SIZE_MAX, gathered_at_, batch_.lines.size()});
        gathered_at_ = batch_.lines.size();
    }
    // A parallel batch's whole room up front, so that gathering it never reallocates.
    void reserve_batch() {
        if (opt_.cfg.workers > 1 && batch_.lines.capacity() < parallel_batch_ + kParallelSpan) {
            batch_.lines.reserve(parallel_batch_ + kParallelSpan);
            batch_.writes.reserve(parallel_batch_ + kParallelSpan);
        }
    }
    static constexpr size_t kShardBatch = 1 << 14;

    void flush() {
        // Any flush ends the short first batch; a partitioned run (no pipeline) has its first
        // flush at its first slice_begin, before any record, so its batches are all long.
        parallel_batch_ = kParallelBatch;
        if (partitioned_) {
            // Records before this rank's first slice_begin belong to no slice of its own:
            // the analyzer hands a slice-taking tool only its slices, so there are none.
            if (current_ && !batch_.lines.empty()) {
                Slice &sl = *current_;
                if (sampling()) {
                    sample_slice(sl);
                } else {
                    std::vector<uint32_t> firsts;
                    sl.stack->access_chunk(batch_.lines.data(), batch_.writes.data(), batch_.lines.size(),
                                           sl.hist, firsts);
                    for (uint32_t off : firsts) {
                        sl.first_lines.push_back(batch_.lines[off]);
                        sl.first_writes.push_back(batch_.writes[off]);
                    }
                    sl.sampled += batch_.lines.size();
                }
                sl.accesses += batch_.lines.size();
            }
            batch_.lines.clear();
            batch_.writes.clear();
            return;
        }
        if (batch_size() != 0 || pending_skipped_ != 0) resolved_.reset();
        if (opt_.cfg.workers > 1) {
            if (batch_size() == 0) return;
            if (!batch_.pieces.empty()) close_gathered();
            if (!pipeline_) pipeline_ = std::make_unique<Pipeline>(*global_);
            pipeline_->submit(batch_);
            // batch_ is now the batch before, calculated: its cuts go back to the arena.
            batch_.taps.clear();
            taken_ = 0;
            gathered_at_ = 0;
            return;
        }
        if (pending_skipped_ != 0) {
            global_->add_unsampled(pending_skipped_);
            pending_skipped_ = 0;
        }
        global_->add(batch_.lines.data(), batch_.writes.data(), batch_.lines.size());
        batch_.lines.clear();
        batch_.writes.clear();
    }
    bool sampling() const { return opt_.cfg.mode == stackdist::Mode::kFixedRate; }
    // SHARDS at a fixed rate: the hash key, the threshold and the weight 1/R of a sample.
    struct Rate {
        uint64_t key, threshold;
        double inv;
    };
    Rate rate() const {
        const uint64_t thr = stackdist::fixed_rate_threshold(opt_.cfg.sample_rate);
        return {stackdist::shards_key(opt_.cfg.seed), thr, stackdist::fixed_rate_scale(thr)};
    }
    // What a partial state's sampling must match: 0 when exact, else the threshold and seed.
    uint64_t sampling_key() const {
        if (!sampling()) return 0;
        const Rate r = rate();
        return r.key ^ (r.threshold + 1);
    }
    // SHARDS at a fixed rate over a slice's batch: only sampled lines reach the slice's stack.
    // A distance found inside the slice is final; scaled, it is capped by the access's position
    // in the stream, which is at least its position in the slice: when the scaled distance is
    // below the latter, the cap cannot bind and the count goes to the slice's histogram; else
    // the access waits in `capped` for the merge, which knows the position in the stream.
    void sample_slice(Slice &sl) {
        const Rate r = rate();
        const double inv = r.inv;
        for (size_t i = 0; i < batch_.lines.size(); ++i) {
            if (stackdist::shards_hash(batch_.lines[i], r.key) >= r.threshold) continue;
            const uint64_t pos = sl.accesses + i + 1;
            ++sl.sampled;
            const uint64_t d = sl.stack->access(batch_.lines[i]);
            if (d == stackdist::kInfinity) {
                sl.first_lines.push_back(batch_.lines[i]);
                sl.first_writes.push_back(batch_.writes[i]);
                sl.first_pos.push_back(pos);
            } else if (static_cast<double>(d) * inv < static_cast<double>(pos)) {
                sl.hist.add_unit(stackdist::shards_scaled(d, inv, pos), batch_.writes[i]);
            } else {
                sl.capped.push_back({pos, d, batch_.writes[i]});
            }
        }
    }
    // Closes the slice being read. Its recency ranks are made when the slice is exported, and
    // its stack is freed then; slice 0's stays, for result() to merge the later slices into it
    // (the stream's first slice needs no merge: its first accesses are cold).
    void close_slice() {
        if (!current_) return;
        slices_.push_back(std::move(current_));
        resolved_.reset();
    }
    // The recency ranks of a slice read here, which the slices after it need to merge into the
    // stack of the slices up to it: none for the stream's last slice (when the slice count is
    // known), which nothing follows.
    void rank_slice(Slice &sl) {
        if (!sl.stack || sl.ranked || (slice_count_ != 0 && sl.index + 1 == slice_count_)) return;
        std::vector<uint32_t> identity(sl.first_lines.size());
        for (size_t j = 0; j < identity.size(); ++j) identity[j] = static_cast<uint32_t>(j);
        sl.rank.resize(identity.size());
        sl.stack->chunk_ranks(sl.first_lines.data(), identity.data(), identity.size(), sl.rank.data());
        sl.ranked = true;
        if (sl.index != 0) sl.stack.reset();
    }
    // The partitioned run's histogram: every slice in stream order, merged into one stack.
    // Kept until the state changes (the text and the JSON ask for it in turn: a histogram of
    // millions of distances is read once).
    const ReuseResult &result() {
        if (!partitioned_) {
            if (resolved_) return *resolved_;
            if (pipeline_) pipeline_->drain();  // global_ is the calculator thread's until then
            resolved_ = std::make_unique<ReuseResult>(global_->result());
            return *resolved_;
        }
        flush();
        close_slice();
        if (resolved_) return *resolved_;
        std::vector<Slice *> order;
        for (const auto &sl : slices_) order.push_back(sl.get());
        std::sort(order.begin(), order.end(),
                  [](const Slice *a, const Slice *b) { return a->index < b->index; });
        // This rank's slice 0, read here with its stack: every slice after it merges into that
        // stack, and its own first accesses are cold (the stream starts with it).
        stackdist::Stack fresh;
        stackdist::Stack *base = &fresh;
        stackdist::Histogram h;
        // SHARDS at a fixed rate: the distances found at the merge (and the slices' capped ones)
        // are scaled here, capped by their position in the stream: `before` accesses precede
        // the slice being merged.
        const bool sampled = sampling();
        const double inv = sampled ? rate().inv : 1.0;
        uint64_t before = 0;
        auto add_scaled = [&](uint64_t d, uint64_t pos, uint8_t w) {
            h.add_unit(d == stackdist::kInfinity ? d : stackdist::shards_scaled(d, inv, before + pos), w);
        };
        auto add_slice = [&](Slice &sl) {
            for (const Capped &c : sl.capped) add_scaled(c.distance, c.pos, c.write);
            h.merge(sl.hist);
            h.accesses += sl.accesses;
            h.sampled += sl.sampled;
            before += sl.accesses;
        };
        if (!order.empty() && order[0]->index == 0 && order[0]->stack) {
            Slice &first = *order[0];
            base = first.stack.get();
            h = std::move(first.hist);  // the stream's first counts: taken, not merged
            first.hist = stackdist::Histogram();
            for (uint8_t w : first.first_writes) h.add_unit(stackdist::kInfinity, w);
            add_slice(first);
            order.erase(order.begin());
            base_used_ = true;
        }
        stackdist::Stack &stack = *base;
        std::vector<uint32_t> identity;
        std::vector<uint64_t> old;
        // A slice of many first accesses merges on `threads` threads (merge_jobs, else jobs).
        const unsigned threads = std::max(1u, opt_.merge_jobs != 0 ? opt_.merge_jobs : opt_.cfg.workers);
        std::unique_ptr<stackdist::Pool> pool;
        if (threads > 1 && !order.empty()) pool = std::make_unique<stackdist::Pool>(threads - 1);
        std::vector<uint64_t> *const distances = sampled ? &old : nullptr;
        stackdist::Histogram *const counted = sampled ? nullptr : &h;
        for (size_t k = 0; k < order.size(); ++k) {
            Slice *sl = order[k];
            const size_t m = sl->first_lines.size();
            identity.resize(m);
            for (size_t j = 0; j < m; ++j) identity[j] = static_cast<uint32_t>(j);
            if (sampled && sl->first_pos.size() != m)
                throw std::runtime_error("slice " + std::to_string(sl->index) +
                                         " came without the positions of its first accesses");
            if (k + 1 == order.size()) {
                // The stream's last slice: nothing is merged after it, so it needs no room in
                // the stack and no recency ranks.
                stack.merge_last_parallel(sl->first_lines.data(), sl->first_writes.data(), identity.data(), m,
                                          pool.get(), threads, counted, distances);
            } else {
                rank_slice(*sl);
                if (!sl->ranked)
                    throw std::runtime_error("slice " + std::to_string(sl->index) +
                                             " came without recency ranks, as the stream's last, but slice " +
                                             std::to_string(order[k + 1]->index) + " follows it");
                const uint64_t base = stack.merge_reserve(m);
                stack.merge_parallel(sl->first_lines.data(), sl->first_writes.data(), identity.data(),
                                     sl->rank.data(), m, base, pool.get(), threads, counted, distances);
            }
            for (size_t j = 0; sampled && j < m; ++j)
                add_scaled(old[j], sl->first_pos[j], sl->first_writes[j]);
            add_slice(*sl);
        }
        if (sampled) {
            // As Reuse's fixed-rate mode: integer counts weighed 1/R once.
            h.sampling = true;
            h.scale = inv;
            h.sample_rate = global_->sample_rate();
            h.sample_weight = static_cast<double>(h.sampled) * inv;
        }
        h.set_adjustment();
        resolved_ = std::make_unique<ReuseResult>(Reuse::result_of(h));
        return *resolved_;
    }
    void finish() {
        if (finished_) return;
        flush();
        if (pipeline_) {
            pipeline_->drain();
            pipeline_->stop();
        }
        for (auto &s : shards_)
            if (s) s->flush();
        finished_ = true;
    }
    static std::string human(uint64_t bytes) {
        const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
        int u = 0;
        while (bytes >= 1024 && bytes % 1024 == 0 && u < 4) {
            bytes /= 1024;
            ++u;
        }
        return std::to_string(bytes) + " " + unit[u];
    }
    Options opt_;
    std::unique_ptr<Reuse> global_;  // replaced once, before any access, by a trace sampled at the source
    bool data_seen_ = false;
    bool source_sampled_ = false;
    uint64_t source_threshold_ = 0;
    uint64_t marker_threshold_ = 0, marker_seed_ = 0;  // the sampling markers read so far
    uint64_t pending_skipped_ = 0;                     // SAMPLE_SKIPPED counts for the next batch
    unsigned line_bits_ = 0;
    // The batch being gathered (jobs > 1: parallel batches) or the serial batch; the analyzer's.
    Batch batch_;
    size_t taken_ = 0;        // accesses of batch_.taps
    size_t gathered_at_ = 0;  // batch_.lines before this index are in batch_.pieces
    // Memory of the taps' entries (convert, on the decoding threads; thread-safe).
    std::shared_ptr<trace::TapArena> arena_ = std::make_shared<trace::TapArena>();
    std::vector<std::unique_ptr<Shard>> shards_;
    bool finished_ = false;
    bool partitioned_ = false;
    std::unique_ptr<Slice> current_;              // the slice being read
    std::vector<std::unique_ptr<Slice>> slices_;  // closed: this rank's and merged ones
    std::unique_ptr<ReuseResult> resolved_;       // result() of the slices as they are
    bool base_used_ = false;                      // result() merged slices into this rank's slice 0
    uint64_t slice_count_ = 0;                    // the stream's time slices, when known
    std::unique_ptr<Pipeline> pipeline_;          // jobs > 1, from the first batch; after global_
    // The size of the batch being gathered (jobs > 1).
    size_t parallel_batch_ = kFirstParallelBatch;
};

}  // namespace

std::unique_ptr<sonde::tool> make_reuse_distance(const std::string &options) {
    std::string rest;
    const std::string model = take_model(options, &rest);
    if (model == "drcachesim") return make_reuse_distance_drcachesim(rest);
    if (!model.empty() && model != "gem5")
        throw std::invalid_argument("unknown model '" + model + "' (gem5, drcachesim)");
    return std::make_unique<ReuseDistanceTool>(model.empty() ? options : rest);
}

}  // namespace sonde::analysis
