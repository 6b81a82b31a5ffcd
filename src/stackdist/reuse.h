// Reuse-distance engine of the stackdist concept, the internal C++ interface behind the batch
// C API and the `reuse_distance` analysis tool: line addresses (already divided by the line
// size) with a read/write flag go in by batches; exact, SHARDS fixed-rate or fixed-size mode;
// optional parallel exact mode (PARDA-style chunks merged into the serial answer).
//
// Per-shard or global use: one Reuse per stream. A tool keeps one for the global stack (fed in
// timestamp order) and, for per-shard output, one per shard.
//
// Threads: a Reuse is owned by one thread at a time. In parallel mode it keeps workers - 1
// threads (started by the first parallel batch, joined by the destructor); during add() each
// owns a private Stack and Histogram for its chunk, then helps the calling thread merge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <queue>
#include <utility>
#include <vector>

#include "stackdist/histogram.h"
#include "stackdist/pool.h"
#include "stackdist/stack.h"

namespace sonde::stackdist {

enum class Mode { kExact, kFixedRate, kFixedSize };

struct ReuseConfig {
    Mode mode = Mode::kExact;
    double sample_rate = 1.0;  // kFixedRate: 0 < R <= 1
    uint64_t sample_size = 0;  // kFixedSize: most sampled lines kept (>= 1)
    unsigned workers = 1;      // kExact: > 1 runs batches in parallel chunks
    uint64_t seed = 0;         // SHARDS hash seed
    uint64_t initial_capacity = 0;
    bool verify = false;  // check every answer against a naive stack (serial only)
};

// What the tool's JSON needs.
struct ReuseResult {
    uint64_t accesses = 0;
    uint64_t infinite = 0;
    // Huge pages when large (HugeAlloc): a trace with millions of distinct distances makes
    // tens of megabytes of each after the run, faulted 4 KiB at a time otherwise, while every
    // other thread waits.
    std::vector<std::pair<uint64_t, uint64_t>, HugeAlloc<std::pair<uint64_t, uint64_t>>>
        histogram;  // ascending, no zero counts
    std::vector<std::pair<uint64_t, double>, HugeAlloc<std::pair<uint64_t, double>>>
        mrc;  // [cache_lines, miss_ratio]
    bool sampled = false;
    double sample_rate = 1.0;
};

// A run of accesses in caller-owned memory: n lines and their write flags (is_write may be
// null: all reads). A batch may be given as several spans, in order (Reuse::add_spans).
struct Span {
    const uint64_t *lines;
    const uint8_t *is_write;
    std::size_t n;
};

class Reuse {
public:
    explicit Reuse(const ReuseConfig &cfg);

    // Feeds n accesses (is_write may be null: all reads) into `into`. Returns false if verify
    // mode found a mismatch (the histogram is then updated anyway).
    bool add(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &into);
    // Same, into the histogram this object owns.
    bool add(const uint64_t *lines, const uint8_t *is_write, std::size_t n) {
        return add(lines, is_write, n, own_);
    }
    // The spans' accesses in order, with the same answers as add() of their concatenation: the
    // parallel exact mode cuts its chunks across spans, so a batch need not be copied into one
    // array first (the reuse_distance tool hands over the decoding threads' arrays as they are).
    bool add_spans(const Span *spans, std::size_t count, Histogram &into);
    bool add_spans(const Span *spans, std::size_t count) { return add_spans(spans, count, own_); }
    // Counts n accesses that sampling left out before they reached this calculator (a trace
    // sampled at the source): SHARDS counts them among the accesses.
    void add_unsampled(uint64_t n) {
        own_.accesses += n;
        own_.set_adjustment();
    }
    const Histogram &histogram() const { return own_; }
    ReuseResult result() const { return result_of(own_); }
    static ReuseResult result_of(const Histogram &h);

    Stack &stack() { return stack_; }
    const ReuseConfig &config() const { return cfg_; }
    double sample_rate() const;
    // Bytes held by the stacks (the parallel mode's private ones too) and the owned histogram.
    std::size_t bytes() const;

private:
    bool add_exact(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h);
    void add_parallel(const Span *spans, std::size_t count, std::size_t n, Histogram &h);
    void add_parallel_piece(const std::vector<Span> &spans, std::size_t n, Histogram &h);
    void add_fixed_rate(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h);
    void add_fixed_size(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h);

    ReuseConfig cfg_;
    Stack stack_;
    Histogram own_;
    uint64_t threshold_ = 0;  // SHARDS: a line is sampled iff shards_hash(line, key_) < threshold_
    uint64_t key_ = 0;        // shards_key(cfg_.seed)
    std::priority_queue<std::pair<uint32_t, uint64_t>> heap_;  // fixed size: (hash, line)
    std::unique_ptr<Pool> pool_;  // parallel exact mode, from the first parallel batch
    // The parallel exact mode's private stacks, chunk_stacks_[c - 1] for chunk c > 0. The pool
    // runs task c on its worker c (on the calling thread when that worker could not start), so
    // one thread at a time uses a stack. They stay from one batch to the next and the task
    // empties its own at the start of each (Stack::reset): a fresh stack per chunk and batch
    // had every worker allocate, fault in and fill a table as large as its chunk, and free it
    // again, each time. Held until the calculator is destroyed (bytes() counts them).
    std::vector<std::unique_ptr<Stack>> chunk_stacks_;
    // What chunk c > 0 of a parallel batch found (parts_[c - 1], its task's while the pool
    // runs): its first accesses, gathered in order (their lines and write flags), with their
    // recency ranks (`order` is 0, 1, ... m - 1, the offsets the merge reads them at), and its
    // histogram. Kept from batch to batch like chunk_stacks_, emptied in place: made afresh,
    // their arrays (megabytes on a trace of millions of lines) were faulted in every batch.
    struct Part {
        Histogram hist;
        std::vector<uint64_t, HugeAlloc<uint64_t>> lines;
        std::vector<uint8_t, HugeAlloc<uint8_t>> writes;
        std::vector<uint32_t, HugeAlloc<uint32_t>> order, rank;
    };
    std::vector<Part> parts_;
    // Lines the last parallel batch added to stack_: the next batch's table is grown for as
    // many before its workers start (Stack::reserve_lines).
    uint64_t batch_new_lines_ = 0;
};

// SHARDS spatial hash: key = shards_key(seed) once per calculator, then 32 well-mixed bits per
// line. The seed is mixed first so that seeds s and s + 1 pick unrelated line sets (adding a raw
// seed to the line would only shift the same set of sampled lines by one).
uint64_t shards_key(uint64_t seed);
uint32_t shards_hash(uint64_t line, uint64_t key);
// SHARDS fixed rate: the weight 1/R of a sample for a hash threshold R * 2^32, and a sampled
// distance d scaled to the whole trace, d / R, capped at the 1-based position of the access
// in the stream (no reuse distance exceeds the accesses before it, and the dense histogram
// must not grow past what the data holds). The cap depends on the access's own position only,
// not on how the stream was cut, so slices of a stream (MPI ranks) scale their distances as
// one process does.
double fixed_rate_scale(uint64_t threshold);
uint64_t shards_scaled(uint64_t d, double inv, uint64_t position);
// The hash threshold of a fixed rate R: a line is sampled iff shards_hash(line, key) < it.
uint64_t fixed_rate_threshold(double rate);

}  // namespace sonde::stackdist
