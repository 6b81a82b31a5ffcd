// Partitioned runs of the analyzer (sonde_analyzer_set_partition and the state exchange; see
// docs/scaling.md): which part of the inputs this rank reads, and the bytes ranks exchange.
// The library knows nothing of MPI: `sonde analyze --mpi` (src/mpi) moves the bytes.
//
// Time slices are record ranges of the interleaved stream, or, when every shard is a plain
// lackey or raw64 file, byte ranges: rank r reads bytes [B r / n, B (r + 1) / n) of the inputs
// laid end to end (B bytes), each input's part cut at record boundaries by its reader
// (Input::open_range), so that no rank reads another's bytes. A tool that wants every record of
// a time-slice run (cache_sim split by sets) must then route: it sends what it reads to the
// ranks that need it (PartitionHooks, builtin_tools.h), in one exchange of routes between the
// run and the states.
//
// State bytes (state_bytes.h encoding): "SNDPART2", nranks, rank, partition kind, whether the
// slices are byte ranges, the inputs' count and records read from each, the tools' count, then
// per tool its name and the bytes of its export_state(). The records read are every rank's
// slice length per input: the merge sums them, and no built-in tool needs the ordinal of a
// slice's first record (slices are ordered by their numbers). Route bytes: "SNDROUT1", nranks,
// the sending rank, the receiving rank, the routing tools' count, then per routing tool its
// name and its bytes.
//
// Threads: called on the analyzer's thread only (one thread at a time per analyzer).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/builtin_tools.h"
#include "analysis/state_bytes.h"
#include <sonde/tool.hpp>

namespace sonde::analysis {

namespace {

constexpr char kMagic[] = "SNDPART2";
constexpr char kRouteMagic[] = "SNDROUT1";
constexpr uint64_t kUnknownSliceRecords = uint64_t{1} << 22;  // slice length for streams of unknown size

const char *kind_name(uint32_t kind) { return kind == SONDE_PARTITION_SHARDS ? "shards" : "time slices"; }

// A tool's name and its bytes, in place in a state or in routes.
using Part = std::pair<std::string, Analyzer::Pieces::value_type>;

// The tools' parts of a state or of routes: their count, then each tool's name and bytes.
void read_parts(StateReader &r, std::vector<Part> *parts) {
    const uint64_t ntools = r.count(16);
    for (uint64_t i = 0; i < ntools; ++i) {
        std::string name = r.bytes();
        const uint64_t n = r.u64();
        const void *at = r.take(n);
        parts->emplace_back(std::move(name), Analyzer::Pieces::value_type(at, static_cast<size_t>(n)));
    }
}

// A built-in tool's partition hooks (builtin_tools.h), or nullptr.
PartitionHooks *hooks(const Tool &t) {
    return t.builtin != nullptr ? dynamic_cast<PartitionHooks *>(t.builtin) : nullptr;
}

std::string tool_error(const Tool &t, const std::string &what) {
    const char *why = t.ops.get_error_string != nullptr ? t.ops.get_error_string(t.data) : nullptr;
    return t.name + ": " + what + (why != nullptr && *why != '\0' ? std::string(": ") + why : std::string());
}

// floor(v * num / den) without overflow (num <= den <= 65536): v = q den + r, and r num fits.
uint64_t scale(uint64_t v, uint64_t num, uint64_t den) { return v / den * num + v % den * num / den; }

}  // namespace

sonde_status_t Analyzer::set_partition(uint32_t rank, uint32_t nranks) {
    if (nranks == 0 || nranks > 65536 || rank >= nranks) {
        error = "partition: rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                " (nranks 1..65536, rank below nranks)";
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    rank_ = rank;
    nranks_ = nranks;
    return SONDE_STATUS_SUCCESS;
}

// The part: whole shards when the run is parallel over two or more shards (each shard's tool
// data is independent in parallel mode, so any split of the shards merges exactly), else time
// slices of the one interleaved stream, read serially.
sonde_status_t Analyzer::start_partition(bool can_parallel) {
    partition_kind_ =
        can_parallel && shards_.size() >= 2 ? SONDE_PARTITION_SHARDS : SONDE_PARTITION_TIME_SLICES;
    modes_.assign(tools_.size(), SONDE_PARTITION_REFUSE);
    for (size_t ti = 0; ti < tools_.size(); ++ti) {
        const Tool &t = *tools_[ti];
        if (t.ops.partition == nullptr || t.ops.export_state == nullptr || t.ops.merge_state == nullptr) {
            error = t.name +
                    ": this tool cannot run partitioned (its table has no partition, export_state and "
                    "merge_state entries); run it without --mpi";
            return SONDE_STATUS_ERROR_NOT_SUPPORTED;
        }
        if (partition_kind_ == SONDE_PARTITION_TIME_SLICES && t.ops.process_memref == nullptr &&
            t.ops.process_memrefs == nullptr) {
            error =
                t.name +
                ": a partitioned run of one stream is serial, and this tool has no serial memref function";
            return SONDE_STATUS_ERROR_NOT_SUPPORTED;
        }
        const uint32_t mode = t.ops.partition(t.data, rank_, nranks_, partition_kind_);
        const bool ok = mode == partition_kind_ || (partition_kind_ == SONDE_PARTITION_TIME_SLICES &&
                                                    mode == SONDE_PARTITION_EVERY_RECORD);
        if (!ok) {
            const char *why = t.ops.get_error_string != nullptr ? t.ops.get_error_string(t.data) : nullptr;
            error = t.name + ": cannot run partitioned by " + kind_name(partition_kind_) +
                    (why != nullptr && *why != '\0' ? std::string(": ") + why
                                                    : std::string(" (its partition entry refused)"));
            return SONDE_STATUS_ERROR_NOT_SUPPORTED;
        }
        modes_[ti] = mode;
    }
    ranges_ = false;
    uint64_t slices = 0;  // time slices of the stream, when known
    if (partition_kind_ == SONDE_PARTITION_TIME_SLICES) {
        if (const sonde_status_t st = plan_ranges(&ranges_)) return st;
        if (ranges_) slices = nranks_;
    }
    if (partition_kind_ == SONDE_PARTITION_TIME_SLICES && !ranges_) {
        uint64_t total = 0;
        for (const ShardSpec &spec : shards_) {
            const uint64_t r = spec.input != nullptr ? spec.input->shard_records(spec.index) : spec.count;
            total = r == UINT64_MAX || total > UINT64_MAX - r ? UINT64_MAX : total + r;
        }
        slice_records_ = total == UINT64_MAX
                             ? kUnknownSliceRecords
                             : std::max<uint64_t>(1, total / nranks_ + (total % nranks_ != 0));
        if (total != UINT64_MAX) slices = total / slice_records_ + (total % slice_records_ != 0);
    }
    for (size_t ti = 0; ti < tools_.size() && slices != 0; ++ti)
        if (modes_[ti] == SONDE_PARTITION_TIME_SLICES)
            if (PartitionHooks *h = hooks(*tools_[ti])) h->slice_count(slices);
    merged_.assign(nranks_, false);
    merged_[rank_] = true;
    return SONDE_STATUS_SUCCESS;
}

// Byte ranges need every shard to be a plain stream file (its byte_ranges()) and every tool to
// take its slices only or to route (PartitionHooks::routes()) what it would otherwise need whole.
sonde_status_t Analyzer::plan_ranges(bool *ranges) {
    *ranges = false;
    if (memory_shards_ != 0) return SONDE_STATUS_SUCCESS;
    for (const ShardSpec &spec : shards_)
        if (spec.input == nullptr || !spec.input->byte_ranges()) return SONDE_STATUS_SUCCESS;
    std::vector<PartitionHooks *> routers(tools_.size(), nullptr);
    for (size_t ti = 0; ti < tools_.size(); ++ti) {
        if (modes_[ti] != SONDE_PARTITION_EVERY_RECORD) continue;
        routers[ti] = hooks(*tools_[ti]);
        if (routers[ti] == nullptr || !routers[ti]->routes()) return SONDE_STATUS_SUCCESS;  // it reads it all
    }
    routes_pending_ = false;
    for (size_t ti = 0; ti < tools_.size(); ++ti) {
        if (routers[ti] == nullptr) continue;
        if (!routers[ti]->route(rank_, nranks_)) {
            error = tool_error(*tools_[ti], "cannot route by byte ranges");
            return SONDE_STATUS_ERROR_TOOL;
        }
        routes_pending_ = true;
    }
    routers_ = std::move(routers);
    routes_in_.assign(nranks_, false);
    routes_in_[rank_] = true;
    uint64_t total = 0;
    for (const ShardSpec &spec : shards_) total += spec.input->shard_bytes(spec.index);
    const uint64_t lo = scale(total, rank_, nranks_), hi = scale(total, rank_ + 1, nranks_);
    parts_.clear();
    uint64_t base = 0;
    for (size_t i = 0; i < shards_.size(); ++i) {
        const uint64_t size = shards_[i].input->shard_bytes(shards_[i].index);
        const uint64_t begin = std::clamp(lo, base, base + size) - base;
        const uint64_t end = std::clamp(hi, base, base + size) - base;
        if (begin < end) parts_.push_back(RangePart{i, begin, end});
        base += size;
    }
    *ranges = true;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Analyzer::finish_routes() {
    for (size_t ti = 0; ti < routers_.size(); ++ti) {
        if (routers_[ti] != nullptr && !routers_[ti]->routes_done()) {
            error = tool_error(*tools_[ti], "finishing the routed records failed");
            return SONDE_STATUS_ERROR_TOOL;
        }
    }
    routes_pending_ = false;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Analyzer::export_routes(uint32_t rank, Pieces *out, size_t *size) {
    if (!succeeded || nranks_ == 0) {
        error = nranks_ == 0 ? "not a partitioned run (sonde_analyzer_set_partition)" : "no successful run";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    if (rank >= nranks_ || rank == rank_) {
        error = "routes for rank " + std::to_string(rank) +
                (rank == rank_ ? ", this rank" : ", beyond the " + std::to_string(nranks_) + " ranks");
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    out->clear();
    *size = 0;
    size_t routing = 0;
    for (PartitionHooks *r : routers_) routing += r != nullptr;
    if (routing == 0) return SONDE_STATUS_SUCCESS;
    // Each tool's bytes are a length, in the header before them, and the tool's pieces.
    route_headers_.assign(1 + routing, std::string());
    StateWriter head;
    head.out.append(kRouteMagic, 8);
    head.u32(nranks_);
    head.u32(rank_);
    head.u32(rank);
    head.u64(routing);
    size_t k = 0;
    for (size_t ti = 0; ti < routers_.size(); ++ti) {
        if (routers_[ti] == nullptr) continue;
        Pieces pieces;
        routers_[ti]->routes_for(rank, &pieces);
        uint64_t bytes = 0;
        for (const auto &p : pieces) bytes += p.second;
        head.bytes(tools_[ti]->name);
        head.u64(bytes);
        route_headers_[k++] = std::move(head.out);
        head.out.clear();
        out->emplace_back(route_headers_[k - 1].data(), route_headers_[k - 1].size());
        out->insert(out->end(), pieces.begin(), pieces.end());
    }
    for (const auto &p : *out) *size += p.second;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Analyzer::merge_routes(uint32_t rank, const void *bytes, size_t size) {
    if (!succeeded || nranks_ == 0) {
        error = nranks_ == 0 ? "not a partitioned run (sonde_analyzer_set_partition)" : "no successful run";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    if (rank >= nranks_ || rank == rank_ || (!routes_in_.empty() && routes_in_[rank])) {
        error = "routes of rank " + std::to_string(rank) +
                (rank == rank_     ? ", this rank's own"
                 : rank >= nranks_ ? ", beyond the " + std::to_string(nranks_) + " ranks"
                                   : ", merged already");
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (std::count(routers_.begin(), routers_.end(), nullptr) ==
        static_cast<std::ptrdiff_t>(routers_.size())) {
        // No tool of this run routes: nothing is sent.
        if (size != 0) {
            error = "routes of " + std::to_string(size) + " bytes, but no tool of this run routes records";
            return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        }
        if (!routes_in_.empty()) routes_in_[rank] = true;
        return SONDE_STATUS_SUCCESS;
    }
    std::vector<Part> parts;
    try {
        StateReader r(bytes, size);
        if (size < 8 || std::string(static_cast<const char *>(bytes), 8) != std::string(kRouteMagic, 8)) {
            error = "not routes of sonde analyze (bad magic)";
            return SONDE_STATUS_ERROR_FORMAT;
        }
        for (int i = 0; i < 8; ++i) r.u8();
        const uint32_t ranks = r.u32(), from = r.u32(), to = r.u32();
        if (ranks != nranks_ || from != rank || to != rank_) {
            error = "routes of rank " + std::to_string(from) + " for rank " + std::to_string(to) + " of " +
                    std::to_string(ranks) + ", merged as those of rank " + std::to_string(rank) +
                    " for rank " + std::to_string(rank_) + " of " + std::to_string(nranks_);
            return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        }
        read_parts(r, &parts);
        if (!r.at_end()) {
            error = "routes have " + std::to_string(r.left()) + " bytes after their end";
            return SONDE_STATUS_ERROR_FORMAT;
        }
    } catch (const std::invalid_argument &) {
        error = "routes are truncated";
        return SONDE_STATUS_ERROR_FORMAT;
    }
    size_t k = 0;
    for (size_t ti = 0; ti < routers_.size(); ++ti) {
        if (routers_[ti] == nullptr) continue;
        if (k >= parts.size() || parts[k].first != tools_[ti]->name) {
            error = "routes of rank " + std::to_string(rank) + " are not those of this run's tools";
            return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        }
        ++k;
    }
    if (k != parts.size()) {
        error = "routes of rank " + std::to_string(rank) + " are not those of this run's tools";
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    k = 0;
    for (size_t ti = 0; ti < routers_.size(); ++ti) {
        if (routers_[ti] == nullptr) continue;
        const Pieces::value_type &part = parts[k++].second;
        if (!routers_[ti]->merge_routes(rank, part.first, part.second)) {
            merge_failed_ = true;
            error = tool_error(*tools_[ti], "merging the routes of rank " + std::to_string(rank) + " failed");
            return SONDE_STATUS_ERROR_TOOL;
        }
    }
    routes_in_[rank] = true;
    if (std::all_of(routes_in_.begin(), routes_in_.end(), [](bool b) { return b; })) return finish_routes();
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Analyzer::export_state(const std::string **out) {
    if (!succeeded || nranks_ == 0) {
        error = nranks_ == 0 ? "not a partitioned run (sonde_analyzer_set_partition)" : "no successful run";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    if (routes_pending_) {
        uint32_t missing = 0;
        while (missing < routes_in_.size() && routes_in_[missing]) ++missing;
        error = "the routes of rank " + std::to_string(missing) +
                " are not merged yet (sonde_analyzer_merge_routes); a run split by byte ranges sends records "
                "between the ranks before their states";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    *out = &exported_state_;
    if (state_exported_) return SONDE_STATUS_SUCCESS;
    StateWriter w;
    w.out.append(kMagic, 8);
    w.u32(nranks_);
    w.u32(rank_);
    w.u32(partition_kind_);
    w.u32(ranges_ ? 1 : 0);
    w.u64(inputs_.size());
    for (uint64_t r : input_records_) w.u64(r);
    w.u64(tools_.size());
    for (const auto &t : tools_) {
        size_t size = 0;
        const void *bytes = t->ops.export_state(t->data, &size);
        if (bytes == nullptr && size != 0) size = 0;
        if (bytes == nullptr) {
            const char *why = t->ops.get_error_string != nullptr ? t->ops.get_error_string(t->data) : nullptr;
            error =
                t->name + ": export_state failed" + (why != nullptr && *why ? std::string(": ") + why : "");
            return SONDE_STATUS_ERROR_TOOL;
        }
        w.bytes(t->name);
        w.u64(size);
        w.out.append(static_cast<const char *>(bytes), size);
    }
    exported_state_ = std::move(w.out);
    state_exported_ = true;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Analyzer::merge_state(const void *state, size_t size) {
    results_valid_ = false;
    results_text_.clear();
    if (!succeeded || nranks_ == 0) {
        error = nranks_ == 0 ? "not a partitioned run (sonde_analyzer_set_partition)" : "no successful run";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    if (merge_failed_) {
        error = "an earlier merge failed part-way; the results are unusable";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    if (routes_pending_) {
        error = "this rank's routes are not all merged yet (sonde_analyzer_merge_routes)";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    StateReader r(state, size);
    uint32_t ranks = 0, rank = 0, kind = 0, ranges = 0;
    std::vector<uint64_t> records;
    std::vector<Part> parts;
    try {
        if (size < 8 || std::string(static_cast<const char *>(state), 8) != std::string(kMagic, 8)) {
            error = "not a partial state of sonde analyze (bad magic)";
            return SONDE_STATUS_ERROR_FORMAT;
        }
        for (int i = 0; i < 8; ++i) r.u8();
        ranks = r.u32();
        rank = r.u32();
        kind = r.u32();
        ranges = r.u32();
        const uint64_t ninputs = r.count(8);
        for (uint64_t i = 0; i < ninputs; ++i) records.push_back(r.u64());
        read_parts(r, &parts);
        if (!r.at_end()) {
            error = "partial state has " + std::to_string(r.left()) + " bytes after its end";
            return SONDE_STATUS_ERROR_FORMAT;
        }
    } catch (const std::invalid_argument &) {
        error = "partial state is truncated";
        return SONDE_STATUS_ERROR_FORMAT;
    }
    if (ranks != nranks_ || kind != partition_kind_ || (ranges != 0) != ranges_) {
        const auto what = [](uint32_t k, bool by_bytes) {
            return std::string(kind_name(k)) +
                   (k == SONDE_PARTITION_TIME_SLICES && by_bytes ? " (byte ranges)" : "");
        };
        error = "partial state of a run of " + std::to_string(ranks) + " ranks by " +
                what(kind, ranges != 0) + ", this one is of " + std::to_string(nranks_) + " by " +
                what(partition_kind_, ranges_);
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (rank >= nranks_ || merged_[rank]) {
        error = "partial state of rank " + std::to_string(rank) +
                (rank == rank_     ? ", this rank's own"
                 : rank >= nranks_ ? ", beyond the ranks"
                                   : ", merged already");
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (records.size() != inputs_.size() || parts.size() != tools_.size()) {
        error = "partial state of " + std::to_string(records.size()) + " inputs and " +
                std::to_string(parts.size()) + " tools, this run has " + std::to_string(inputs_.size()) +
                " and " + std::to_string(tools_.size());
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < tools_.size(); ++i) {
        if (parts[i].first != tools_[i]->name) {
            error = "partial state's tool " + std::to_string(i) + " is " + parts[i].first +
                    ", this run's is " + tools_[i]->name;
            return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        }
    }
    state_exported_ = false;
    exported_state_.clear();
    std::vector<uint64_t> aligned;  // a tool's bytes moved to an 8-byte boundary (analysis.h)
    for (size_t i = 0; i < tools_.size(); ++i) {
        const Tool &t = *tools_[i];
        const void *bytes = parts[i].second.first;
        const size_t size = parts[i].second.second;
        if (reinterpret_cast<uintptr_t>(bytes) % alignof(uint64_t) != 0) {
            aligned.assign(size / sizeof(uint64_t) + 1, 0);
            std::memcpy(aligned.data(), bytes, size);
            bytes = aligned.data();
        }
        if (!t.ops.merge_state(t.data, bytes, size)) {
            merge_failed_ = true;
            const char *why = t.ops.get_error_string != nullptr ? t.ops.get_error_string(t.data) : nullptr;
            error = t.name + ": merge_state failed" + (why != nullptr && *why ? std::string(": ") + why : "");
            return SONDE_STATUS_ERROR_TOOL;
        }
    }
    for (size_t i = 0; i < records.size(); ++i) input_records_[i] += records[i];
    merged_[rank] = true;
    bool all = true;
    for (bool m : merged_) all = all && m;
    if (all) note_empty_inputs();
    return SONDE_STATUS_SUCCESS;
}

}  // namespace sonde::analysis
