// Factories of the built-in tools that live in their own files; the registry is in
// builtin_tools.cpp. Each throws std::invalid_argument (message for the user) on bad options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <sonde/tool.hpp>

namespace sonde::trace {
class BlockTap;      // source.h
struct BlockTapOut;  // source.h
}  // namespace sonde::trace

namespace sonde::analysis {

// A built-in tool's loop over a span of records that does little work a record prefetches the
// record this many ahead (2 KiB): with the hardware's prefetchers alone basic_counts waited for
// its records, 8.0 ns a record against 5.7 with this over case 4's in-memory shards of 32 MB.
// reuse_distance's gathering asks 16 ahead; cache_sim, at 30 ns a record, does not wait for its
// records and was 3 % slower with it.
inline constexpr std::size_t kRecordsAhead = 64;
inline void prefetch_record(const sonde_memref_t *m, std::size_t i, std::size_t n) {
    if (i + kRecordsAhead < n) __builtin_prefetch(m + i + kRecordsAhead);
}

// cache_sim (cache_sim.cpp): options "NAME:SIZE:WAYS:LINE[:POLICY],..." or "" for cachegrind's
// default hierarchy I1:32K:8:64,D1:32K:8:64,LL:1M:16:64 (model=cachegrind, the default), or
// "model=drcachesim[,KEY=VALUE...]" for DynamoRIO drcachesim's (cache_sim_drcachesim.cpp).
std::unique_ptr<sonde::tool> make_cache_sim(const std::string &options);
std::unique_ptr<sonde::tool> make_cache_sim_drcachesim(const std::string &options);

// reuse_distance (reuse_distance.cpp): options "line_size=N,sample_rate=R | sample_size=S,
// jobs=N,merge_jobs=N,per_shard=1" (all optional; exact, line size 64 by default; model=gem5), or
// "model=drcachesim[,line_size=N,distance_threshold=N,report_top=N]" for DynamoRIO
// drcachesim's reuse_distance tool (reuse_distance_drcachesim.cpp).
std::unique_ptr<sonde::tool> make_reuse_distance(const std::string &options);
std::unique_ptr<sonde::tool> make_reuse_distance_drcachesim(const std::string &options);

// What a built-in tool may learn and do in a partitioned run beyond the public table (found by
// dynamic_cast from its sonde::tool). One thread, the analyzer's; errors: the tool's
// get_error_string().
class PartitionHooks {
public:
    virtual ~PartitionHooks() = default;
    // A time-slice run whose slice count is known (byte ranges: one slice per rank; record
    // ranges of a stream of known length): called before the run. A tool may then treat the
    // last slice apart (reuse_distance sends no recency ranks for it).
    virtual void slice_count(uint64_t count) { (void)count; }
    // Routing, in a time-slice run read by byte ranges: a tool that answered
    // SONDE_PARTITION_EVERY_RECORD (cache_sim split by cache sets) reads only its rank's range
    // (its one slice, numbered by its rank) and sends what it reads to the ranks that need it.
    // The analyzer moves the bytes (Analyzer::export_routes and merge_routes,
    // sonde_analyzer_export_routes and _merge_routes for the program that carries them).
    // routes(): whether the tool can; route(): before the run, it will.
    virtual bool routes() const { return false; }
    virtual bool route(uint32_t rank, uint32_t nranks) {
        (void)rank;
        (void)nranks;
        return false;
    }
    // After the run: the bytes for rank `to` (not this rank), as pieces appended to *pieces,
    // valid until the next call that changes the tool.
    virtual void routes_for(uint32_t to, std::vector<std::pair<const void *, size_t>> *pieces) {
        (void)to;
        (void)pieces;
    }
    // Rank `from`'s bytes for this rank, in any rank order; false on bad bytes.
    virtual bool merge_routes(uint32_t from, const void *bytes, size_t size) {
        (void)from;
        (void)bytes;
        (void)size;
        return false;
    }
    // Every other rank's bytes are merged: finishes this rank's part, in slice order.
    virtual bool routes_done() { return true; }
};

// A built-in tool that takes the substance of its records from a tap on the decoding threads
// (trace::BlockTap, source.h), found by dynamic_cast from its sonde::tool: the analyzer's thread
// then copies or takes what the tap made instead of reading every record. The analyzer installs the tap
// in a serial run that is neither partitioned nor live (Analyzer::run_serial), on the readers
// that decode on other threads; a span that is not one whole tapped block comes through
// process_memrefs as usual. One thread, the analyzer's (convert() apart: see BlockTap).
class DecodeTapHooks {
public:
    virtual ~DecodeTapHooks() = default;
    // The tap for this run, asked once after initialize(); nullptr: records only.
    virtual const trace::BlockTap *decode_tap() const = 0;
    // The span [m, m + n) with what the tap made of it: the same as process_memrefs(m, n). The
    // tool may take the tap's arrays, leaving the block others (or none) of its own: the
    // decoding thread reserves room again before it next writes there.
    virtual bool process_tapped(const sonde_memref_t *m, size_t n, trace::BlockTapOut &tap) = 0;
};

// A built-in tool that can let go of a shard's state once the shard is counted, found by
// dynamic_cast from its sonde::tool: basic_counts keeps only the sizes of a finished shard's
// sets of distinct lines and instruction addresses, so that a run holds the sets of the shards
// its workers are counting rather than those of every shard. The analyzer calls shard_done(s)
// in a parallel run over stored inputs (Analyzer::run_parallel), once per shard, after the
// parallel_shard_exit of the shard's last piece (every piece's exit has returned), on the
// worker that ran that piece; no piece of the shard runs after it. Workers may call it for
// different shards at once. Not called for a shard whose run failed, nor in serial or live runs.
class ShardDoneHooks {
public:
    virtual ~ShardDoneHooks() = default;
    virtual void shard_done(uint32_t shard) noexcept = 0;
};

// Removes the "model=NAME" item from a comma-separated option list: returns NAME ("" when
// absent) and sets *rest to the other items, in order.
std::string take_model(const std::string &options, std::string *rest);

}  // namespace sonde::analysis
