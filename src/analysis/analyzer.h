// The analyzer of the analysis concept: owns tools (built-in, external shared objects, or
// caller tables) and inputs (trace files through source.h, or borrowed in-memory shards) and
// runs the tools serially (one stream interleaved by timestamp, on the caller's thread) or in
// parallel (workers take shards dynamically, largest first; each shard's functions from exactly one
// worker, unless every tool takes shards in pieces: then each piece's from one worker).
//
// It keeps what it learned about each file input (completeness, reader warnings, records read)
// for sonde_analyzer_input_warnings() and the "inputs" and "warnings" keys of the results JSON.
// Memory follows the data: a shard's reader and buffers exist only while it has records to
// give, and a serial run whose shards' decode buffers would exceed the readers' budget
// (trace::memory_need) is refused up front, as a parallel run takes fewer workers.
//
// A live input (trace/live.h: a running program's stream) is the analyzer's only input; its
// shards appear while it is read. The serial merge looks for new shards after every read and
// takes them in (tools' add_shards, a cursor, the shard's first records) before it hands out
// another record; a parallel run starts a worker per shard as each appears (run_live_parallel).
//
// Threads: an Analyzer belongs to one application thread at a time. During run() in parallel
// mode, worker w owns its cursors, its shards' record counts and its tools' worker/shard data;
// the only shared state is the stop flag (atomic) and the first error (mutex). A live parallel
// run adds the thread that starts the workers (the caller's): it alone appends to shards_ (a
// deque, so a worker's ShardSpec stays put) and calls add_shards, under `init_mu`, which also
// serialises the workers' init and exit calls.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <sonde/analysis.h>

#include "analysis/json_text.h"
#include "core/plugin.h"
#include "trace/live.h"
#include "trace/source.h"

namespace sonde {
class tool;  // <sonde/tool.hpp>
}  // namespace sonde

namespace sonde::analysis {

class LegacyView;      // memref_view.h
class PartitionHooks;  // builtin_tools.h
class DecodeTapHooks;  // builtin_tools.h

// The trace readers (src/trace/source.h) that inputs are read through.
using trace::Input;
using trace::ShardReader;

// One tool: a copy of its table, its data, and the library it came from (if any). A built-in
// tool is also known as the C++ object behind its table (`builtin`, owned through destroy()), so
// that its results are taken with C++ calls and running out of memory there is reported as such.
struct Tool {
    sonde_tool_ops_t ops{};
    void *data = nullptr;
    sonde::tool *builtin = nullptr;
    core::Plugin library;  // closed after destroy()
    std::string name;
    bool full_model = false;  // asked for SONDE_MEMREF_MODEL_1_2; else it gets the 1.0 view
    Tool() = default;
    Tool(const Tool &) = delete;
    Tool &operator=(const Tool &) = delete;
    ~Tool();
};

// A shard to analyse: shard `index` of file input number `input_number`, or a borrowed
// memory span; `read` counts the records handed to the tools (written by the one thread that
// reads the shard).
struct ShardSpec {
    const Input *input = nullptr;
    size_t input_number = 0;
    size_t index = 0;
    const sonde_memref_t *memory = nullptr;
    size_t count = 0;
    uint64_t read = 0;
};

// What the analyzer knows about a file input: its warnings (the reader's, then "no records"
// after a run that found none), one per line in `joined` for the C API.
struct InputInfo {
    std::vector<std::string> warnings;
    std::string joined;
    void add(const std::string &w) {
        warnings.push_back(w);
        joined += (joined.empty() ? "" : "\n") + w;
    }
};

class Analyzer {
public:
    sonde_status_t add_builtin(const std::string &name, const std::string &options);
    sonde_status_t load(const std::string &path, const std::string &options);
    sonde_status_t add_ops(const sonde_tool_ops_t *ops, void *data);
    sonde_status_t add_input(const std::string &path, uint32_t format);
    // A live input (borrowed descriptor): INVALID_ARGUMENT when another input came first.
    sonde_status_t add_live(int fd, const std::string &name);
    // *id: the shard's number; INVALID_ARGUMENT after a live input.
    sonde_status_t add_memory(const sonde_memref_t *memrefs, size_t count, uint32_t *id);
    // Input `input` (in the order of successful add_input calls): INVALID_ARGUMENT when there
    // is no such input; the warnings string lives until the next call that adds or runs.
    sonde_status_t input_warnings(uint32_t input, bool *complete, const char **warnings);
    sonde_status_t run();
    // Bytes of the file inputs consumed so far and in all (0: unknown); any thread, during run().
    void progress(uint64_t *done, uint64_t *total) const;
    sonde_status_t print_results(void *stream);
    // The results JSON, in pieces (json_text.h), kept by the analyzer until its state changes
    // (*out points to them).
    sonde_status_t results_json(const JsonPieces **out);
    // Partitioned runs (partition.cpp): this process is rank `rank` of `nranks`; after a
    // successful run, export_state() gives its state and merge_state() adds another rank's.
    sonde_status_t set_partition(uint32_t rank, uint32_t nranks);
    // The state (and routes, below) are made once and kept until the next call that changes
    // them, so that asking for their size first costs nothing: *out points at them.
    sonde_status_t export_state(const std::string **out);
    sonde_status_t merge_state(const void *state, size_t size);
    // Routes of a byte-range partition (partition.cpp): after the run, the bytes this rank's
    // tools send rank `rank` (empty when no tool routes), and the merge of rank `rank`'s bytes
    // for this one; export_state() waits for every other rank's.
    // The routes come as pieces (a header, then the tools' bytes in place), *size in all.
    using Pieces = std::vector<std::pair<const void *, size_t>>;
    sonde_status_t export_routes(uint32_t rank, Pieces *out, size_t *size);
    sonde_status_t merge_routes(uint32_t rank, const void *bytes, size_t size);

    bool parallel = true;
    uint32_t workers = 0;  // 0 = cores
    bool ran = false;
    bool succeeded = false;
    bool ran_parallel = false;
    uint32_t used_workers = 0;
    std::string error;

private:
    sonde_status_t run_serial();
    sonde_status_t run_parallel(uint32_t nworkers);
    sonde_status_t run_live_parallel();
    // A live run: appends the shards the live input announced since the last call and tells
    // the tools (add_shards); false when a tool refused (error set). Returns the shard count.
    bool grow_live(size_t *count);
    // A byte-range partition's serial run: this rank's byte ranges, in input order.
    sonde_status_t run_ranges();
    // Hands a span to the tools; `tap`: what the run's tap (tap_tool_) made of exactly this span.
    bool hand_serial(const sonde_memref_t *p, size_t n, bool owned, LegacyView &legacy,
                     trace::BlockTapOut *tap = nullptr);
    // The serial run's tool fed through a tap (run_serial), SIZE_MAX when none, and its hooks.
    size_t tap_tool_ = SIZE_MAX;
    DecodeTapHooks *tap_hooks_ = nullptr;
    // Asks every tool for its part (partition.cpp); sets partition_kind_ and modes_.
    sonde_status_t start_partition(bool can_parallel);
    // Whether a time-slice partition reads byte ranges (partition.cpp); sets parts_ and routers_.
    sonde_status_t plan_ranges(bool *ranges);
    sonde_status_t finish_routes();
    // Adds "FILE: no records" to each input that gave none (own and merged reads).
    void note_empty_inputs();
    std::vector<size_t> shard_order() const;
    // One unit of parallel work: piece `piece` of `pieces` of shard `shard` (1: the whole
    // shard), `bytes` its share of the shard's stored bytes.
    struct Piece {
        size_t shard, piece, pieces;
        uint64_t bytes;
    };
    std::vector<Piece> pieces(const std::vector<size_t> &order, uint32_t nworkers, bool fixed) const;
    bool piecewise_ = false;  // this run's tools all take shards in pieces
    // results_json()'s text, valid until the tools' state changes (merge_state()).
    JsonPieces results_text_;
    bool results_valid_ = false;
    sonde_status_t adopt(std::unique_ptr<Tool> tool);

    std::vector<std::unique_ptr<Tool>> tools_;
    std::vector<std::unique_ptr<Input>> inputs_;
    std::vector<InputInfo> info_;  // one per input
    size_t memory_shards_ = 0;
    std::deque<ShardSpec> shards_;      // a deque: cursors keep their ShardSpec while live shards grow
    trace::LiveInput *live_ = nullptr;  // the live input, in inputs_, when there is one
    // Partition (0 ranks: none). In a time-slice run, slice k (records [k * slice_records_,
    // (k + 1) * slice_records_) of the interleaved stream) belongs to rank k % nranks_; modes_
    // holds each tool's answer (SONDE_PARTITION_TIME_SLICES or _EVERY_RECORD).
    uint32_t rank_ = 0;
    uint32_t nranks_ = 0;
    uint32_t partition_kind_ = SONDE_PARTITION_REFUSE;
    uint64_t slice_records_ = 0;
    std::vector<uint32_t> modes_;
    // Byte-range slices (ranges_): the slice of rank r is bytes [B r / n, B (r + 1) / n) of the
    // stream inputs laid end to end (B bytes); parts_ is this rank's part of each input it
    // touches, in input order. Tools that route records to the ranks that need them (PartitionHooks,
    // by tool; nullptr for the others) get every other rank's routes before export_state().
    struct RangePart {
        size_t shard;
        uint64_t begin, end;
    };
    bool ranges_ = false;
    std::vector<RangePart> parts_;
    std::vector<PartitionHooks *> routers_;
    std::vector<bool> routes_in_;  // ranks whose routes this rank has (its own: true)
    bool routes_pending_ = false;  // some router still waits for routes
    // The last export_state(), until a merge; the header of the last export_routes() and the
    // tools' bytes for it.
    std::string exported_state_;
    bool state_exported_ = false;
    std::vector<std::string> route_headers_;
    std::vector<uint64_t> input_records_;  // records read per input, own and merged
    std::vector<bool> merged_;             // ranks whose state is in the results
    bool merge_failed_ = false;
};

// Built-in tools (builtin_tools.cpp): creates the tool `name` with `options` (*ops and *data as
// for any tool; *object is the same tool as a sonde::tool); NOT_SUPPORTED for an unknown name,
// INVALID_ARGUMENT (message in *error) for bad options.
sonde_status_t create_builtin_tool(const std::string &name, const std::string &options,
                                   const sonde_tool_ops_t **ops, void **data, sonde::tool **object,
                                   std::string *error);
// Names of the built-in tools, for messages and --help.
std::string builtin_tool_names();

}  // namespace sonde::analysis
