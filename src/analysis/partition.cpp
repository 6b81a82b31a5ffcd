// Partitioned runs of the analyzer (sonde_analyzer_set_partition and the state exchange; see
// docs/scaling.md): which part of the inputs this rank reads, and the bytes ranks exchange.
// The library knows nothing of MPI: `sonde analyze --mpi` (src/mpi) moves the bytes.
//
// State bytes (state_bytes.h encoding): "SNDPART1", nranks, rank, partition kind, the inputs'
// count and records read from each, the tools' count, then per tool its name and the bytes of
// its export_state().
//
// Threads: called on the analyzer's thread only (one thread at a time per analyzer).
#include <algorithm>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/state_bytes.h"

namespace sonde::analysis {

namespace {

constexpr char kMagic[] = "SNDPART1";
constexpr uint64_t kUnknownSliceRecords = uint64_t{1} << 22;  // slice length for streams of unknown size

const char *kind_name(uint32_t kind) { return kind == SONDE_PARTITION_SHARDS ? "shards" : "time slices"; }

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
    if (partition_kind_ == SONDE_PARTITION_TIME_SLICES) {
        uint64_t total = 0;
        for (const ShardSpec &spec : shards_) {
            const uint64_t r = spec.input != nullptr ? spec.input->shard_records(spec.index) : spec.count;
            total = r == UINT64_MAX || total > UINT64_MAX - r ? UINT64_MAX : total + r;
        }
        slice_records_ = total == UINT64_MAX
                             ? kUnknownSliceRecords
                             : std::max<uint64_t>(1, total / nranks_ + (total % nranks_ != 0));
    }
    merged_.assign(nranks_, false);
    merged_[rank_] = true;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Analyzer::export_state(std::string *out) {
    if (!succeeded || nranks_ == 0) {
        error = nranks_ == 0 ? "not a partitioned run (sonde_analyzer_set_partition)" : "no successful run";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    StateWriter w;
    w.out.append(kMagic, 8);
    w.u32(nranks_);
    w.u32(rank_);
    w.u32(partition_kind_);
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
        w.bytes(std::string(static_cast<const char *>(bytes), size));
    }
    *out = std::move(w.out);
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Analyzer::merge_state(const void *state, size_t size) {
    results_valid_ = false;
    if (!succeeded || nranks_ == 0) {
        error = nranks_ == 0 ? "not a partitioned run (sonde_analyzer_set_partition)" : "no successful run";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    if (merge_failed_) {
        error = "an earlier merge failed part-way; the results are unusable";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    StateReader r(state, size);
    uint32_t ranks = 0, rank = 0, kind = 0;
    std::vector<uint64_t> records;
    std::vector<std::pair<std::string, std::string>> parts;
    try {
        if (size < 8 || std::string(static_cast<const char *>(state), 8) != std::string(kMagic, 8)) {
            error = "not a partial state of sonde analyze (bad magic)";
            return SONDE_STATUS_ERROR_FORMAT;
        }
        for (int i = 0; i < 8; ++i) r.u8();
        ranks = r.u32();
        rank = r.u32();
        kind = r.u32();
        const uint64_t ninputs = r.count(8);
        for (uint64_t i = 0; i < ninputs; ++i) records.push_back(r.u64());
        const uint64_t ntools = r.count(16);
        for (uint64_t i = 0; i < ntools; ++i) {
            std::string name = r.bytes();
            std::string bytes = r.bytes();
            parts.emplace_back(std::move(name), std::move(bytes));
        }
        if (!r.at_end()) {
            error = "partial state has " + std::to_string(r.left()) + " bytes after its end";
            return SONDE_STATUS_ERROR_FORMAT;
        }
    } catch (const std::invalid_argument &) {
        error = "partial state is truncated";
        return SONDE_STATUS_ERROR_FORMAT;
    }
    if (ranks != nranks_ || kind != partition_kind_) {
        error = "partial state of a run of " + std::to_string(ranks) + " ranks by " + kind_name(kind) +
                ", this one is of " + std::to_string(nranks_) + " by " + kind_name(partition_kind_);
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
    for (size_t i = 0; i < tools_.size(); ++i) {
        const Tool &t = *tools_[i];
        if (!t.ops.merge_state(t.data, parts[i].second.data(), parts[i].second.size())) {
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
