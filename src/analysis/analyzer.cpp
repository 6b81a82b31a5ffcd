// The analyzer's run loops (see analyzer.h): tool loading and validation, the serial merge by
// timestamp (over the shards a live input adds as it is read), the parallel workers, and a live
// run's worker per shard.
#include "analysis/analyzer.h"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <queue>
#include <system_error>
#include <thread>

#include <nlohmann/json.hpp>

#include "analysis/builtin_tools.h"
#include "analysis/json_release.h"
#include "analysis/json_text.h"
#include "analysis/memref_view.h"
#include "core/abi_struct.h"
#include "core/huge_pages.h"
#include <sonde/tool.hpp>

namespace sonde::analysis {

Tool::~Tool() {
    if (ops.destroy != nullptr) ops.destroy(data);
    // `library` closes after this body, once destroy() has run.
}

namespace {

constexpr size_t kBatch = 4096;                 // records read from a file shard per call
constexpr size_t kMemorySpan = 1u << 16;        // records of a memory shard handed out per span
constexpr uint64_t kMinPieceRecords = 1 << 16;  // the smallest piece of a memory shard

// Reads one shard, piece `piece` of `pieces` of it, or (the byte-range constructor) the records
// of a stream input that start in a byte range of its file, as spans of records. File shards whose
// reader holds decoded blocks (ShardReader::view) hand them out in place; others copy into an
// owned buffer of up to kBatch records (fewer for a shard known to hold fewer), allocated on the
// first span and freed with the reader at the end; memory shards hand out the caller's records
// in place. Records handed out are added to *read. Owned by one thread.
class Cursor {
public:
    Cursor(const ShardSpec &spec, uint32_t shard_id, uint64_t *read, size_t piece = 0, size_t pieces = 1)
        : spec_(spec), id_(shard_id), read_(read), piece_(piece), pieces_(pieces) {
        if (spec_.input == nullptr) {
            pos_ = spec_.count / pieces_ * piece_ + std::min(piece_, spec_.count % pieces_);
            end_ = pos_ + spec_.count / pieces_ + (piece_ < spec_.count % pieces_ ? 1 : 0);
        }
    }
    // Bytes [begin, end) of a stream input's file (Input::open_range).
    struct Range {
        uint64_t begin, end;
    };
    Cursor(const ShardSpec &spec, uint32_t shard_id, uint64_t *read, Range range)
        : Cursor(spec, shard_id, read) {
        range_ = true;
        range_begin_ = range.begin;
        range_end_ = range.end;
    }
    // Next span; 0 at the end or on an error (then status() / error()).
    size_t next(const sonde_memref_t **out) {
        if (spec_.input == nullptr) {
            const size_t n = std::min(kMemorySpan, end_ - pos_);
            *out = spec_.memory + pos_;
            pos_ += n;
            *read_ += n;
            return n;
        }
        if (done_) return 0;
        if (!reader_) {
            reader_ = range_         ? spec_.input->open_range(id_, range_begin_, range_end_)
                      : pieces_ == 1 ? spec_.input->open_shard(spec_.index, id_)
                                     : spec_.input->open_shard_piece(spec_.index, id_, piece_, pieces_);
            if (tap_ != nullptr) reader_->set_tap(tap_);
            if (!reader_->has_view()) {
                const uint64_t records = spec_.input->shard_records(spec_.index);
                buffer_.resize(
                    static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>(records, 1), kBatch)));
            }
        }
        size_t n;
        if (reader_->has_view()) {
            n = reader_->view(out);  // in place: the reader's decoded block
        } else {
            n = reader_->read(buffer_.data(), buffer_.size());
            *out = buffer_.data();
        }
        *read_ += n;
        if (n == 0) {
            done_ = true;
            status_ = reader_->status();
            error_ = reader_->error();
            reader_.reset();
            std::vector<sonde_memref_t>().swap(buffer_);
        }
        return n;
    }
    sonde_status_t status() const { return status_; }
    const std::string &error() const { return error_; }
    // A tap for the reader's decoding threads (trace::BlockTap), set before the first next();
    // tap(): what it made of exactly the span the last next() returned, or nullptr.
    void set_tap(const trace::BlockTap *tap) { tap_ = tap; }
    trace::BlockTapOut *tap() const { return reader_ != nullptr ? reader_->view_tap() : nullptr; }

private:
    const ShardSpec &spec_;
    uint32_t id_;
    const trace::BlockTap *tap_ = nullptr;
    uint64_t *read_;
    size_t piece_, pieces_;
    size_t pos_ = 0, end_ = 0;  // memory shards: the piece's records
    bool range_ = false;        // a byte range of the file: [range_begin_, range_end_)
    uint64_t range_begin_ = 0, range_end_ = 0;
    bool done_ = false;
    std::unique_ptr<ShardReader> reader_;
    std::vector<sonde_memref_t> buffer_;
    sonde_status_t status_ = SONDE_STATUS_SUCCESS;
    std::string error_;
};

const char *format_name(uint32_t format) {
    switch (format) {
        case SONDE_TRACE_FORMAT_SONDE: return "sonde";
        case SONDE_TRACE_FORMAT_LACKEY: return "lackey";
        case SONDE_TRACE_FORMAT_RAW64: return "raw64";
        case SONDE_TRACE_FORMAT_DRMEMTRACE: return "drmemtrace";
        default: return "unknown";
    }
}

// Keys of the results JSON that are not tools.
bool reserved_name(const std::string &name) {
    return name == "inputs" || name == "warnings" || name == "metadata";
}

std::string tool_message(const Tool &t, const char *what, const char *message) {
    std::string m = t.name + ": ";
    m += (message != nullptr && *message != '\0') ? message : std::string(what) + " failed";
    return m;
}

const char *global_error(const Tool &t) {
    return t.ops.get_error_string != nullptr ? t.ops.get_error_string(t.data) : nullptr;
}

// First failure of a run; shared by the workers (mutex), read after they joined. Recording a
// failure throws nothing: a message that cannot be copied for lack of memory is left empty,
// and the run's error then names the status.
struct Failure {
    std::mutex mutex;
    std::atomic<bool> stop{false};
    sonde_status_t status = SONDE_STATUS_SUCCESS;
    std::string message;
    const trace::LiveInput *live = nullptr;  // a live run's input: cancelled on the first failure
    void set(sonde_status_t s, const char *m) noexcept {
        std::lock_guard<std::mutex> lock(mutex);
        if (status == SONDE_STATUS_SUCCESS) {
            status = s;
            try {
                message = m;
            } catch (...) {
                message.clear();
            }
        }
        stop.store(true, std::memory_order_relaxed);
        if (live != nullptr) live->cancel();  // its waiting readers return; workers stop
    }
    void set(sonde_status_t s, const std::string &m) noexcept { set(s, m.c_str()); }
    // A tool function that answered false ("TOOL: message").
    void tool(const Tool &t, const char *what, const char *tool_says) noexcept {
        try {
            set(SONDE_STATUS_ERROR_TOOL, tool_message(t, what, tool_says));
        } catch (...) {
            set(SONDE_STATUS_ERROR_TOOL, "");
        }
    }
    // The exception being handled, from code that must go on (the workers).
    void exception() noexcept {
        try {
            throw;
        } catch (const std::bad_alloc &) {
            set(SONDE_STATUS_ERROR_OUT_OF_MEMORY, "out of memory");
        } catch (...) {
            set(SONDE_STATUS_ERROR, "unexpected exception in a worker");
        }
    }
};

}  // namespace

sonde_status_t Analyzer::adopt(std::unique_ptr<Tool> tool) {
    sonde_tool_ops_t &o = tool->ops;
    if (o.name == nullptr || *o.name == '\0') {
        error = "tool has no name";
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    tool->name = o.name;
    tool->full_model = o.memref_model != nullptr && o.memref_model(tool->data) >= SONDE_MEMREF_MODEL_1_2;
    if (reserved_name(tool->name)) {
        error = "tool name '" + tool->name + "' is reserved (a key of the results JSON)";
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (o.process_memref == nullptr && o.process_memrefs == nullptr && o.parallel_shard_memref == nullptr &&
        o.parallel_shard_memrefs == nullptr) {
        error = tool->name + ": no memref function";
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    for (const auto &t : tools_) {
        if (t->name == tool->name) {
            error = tool->name + ": a tool of this name was already added";
            return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        }
    }
    tools_.push_back(std::move(tool));
    return SONDE_STATUS_SUCCESS;
}

// Copies a caller's table by the struct_size rules. On failure the table's destroy() (when
// readable) still frees the data, as documented.
static sonde_status_t copy_ops(const sonde_tool_ops_t *ops, Tool *tool, std::string *error) {
    const sonde_status_t st = read_abi_struct(ops, SONDE_TOOL_OPS_MIN_SIZE, &tool->ops);
    if (st != SONDE_STATUS_SUCCESS) {
        *error = st == SONDE_STATUS_ERROR_INCOMPATIBLE_ABI
                     ? "tool table struct_size " + std::to_string(ops->struct_size) + " is smaller than " +
                           std::to_string(SONDE_TOOL_OPS_MIN_SIZE)
                     : "tool table has unknown non-zero fields beyond " +
                           std::to_string(sizeof(sonde_tool_ops_t)) + " bytes";
        if (ops->struct_size >= offsetof(sonde_tool_ops_t, destroy) + sizeof(ops->destroy) &&
            ops->destroy != nullptr)
            tool->ops.destroy = ops->destroy;
        return st;
    }
    if (tool->ops.reserved != 0) {
        *error = "tool table reserved field is not 0";
        return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    }
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Analyzer::add_ops(const sonde_tool_ops_t *ops, void *data) {
    std::unique_ptr<Tool> tool;
    try {
        tool = std::make_unique<Tool>();
    } catch (...) {
        // The data is the analyzer's from the call on: free it as a failed copy_ops would.
        Tool orphan;
        orphan.data = data;
        std::string ignored;
        copy_ops(ops, &orphan, &ignored);
        throw;
    }
    tool->data = data;
    const sonde_status_t st = copy_ops(ops, tool.get(), &error);
    if (st != SONDE_STATUS_SUCCESS) return st;
    return adopt(std::move(tool));
}

sonde_status_t Analyzer::add_builtin(const std::string &name, const std::string &options) {
    auto tool = std::make_unique<Tool>();  // first: the tool created next is owned at once
    const sonde_tool_ops_t *ops = nullptr;
    void *data = nullptr;
    sonde::tool *object = nullptr;
    std::string message;
    const sonde_status_t st = create_builtin_tool(name, options, &ops, &data, &object, &message);
    if (st == SONDE_STATUS_ERROR_NOT_SUPPORTED) {
        error = "no built-in tool '" + name + "' (built-in tools: " + builtin_tool_names() + ")";
        return st;
    }
    if (st != SONDE_STATUS_SUCCESS) {
        error = name + ": " + message;
        return st;
    }
    tool->ops = *ops;  // Sonde's own table: nothing to check
    tool->data = data;
    tool->builtin = object;
    return adopt(std::move(tool));
}

sonde_status_t Analyzer::load(const std::string &path, const std::string &options) {
    auto tool = std::make_unique<Tool>();
    if (const sonde_status_t st = tool->library.open(path, &error)) return st;
    // The entry point counts only when the tool defines it itself, not a dependency.
    std::string why_not;
    const auto create = tool->library.function<sonde_tool_create_fn>("sonde_tool_create", &why_not);
    if (create == nullptr) {
        error = path + ": no symbol sonde_tool_create" + (why_not.empty() ? "" : ": " + why_not);
        return SONDE_STATUS_ERROR_LOAD_FAILED;
    }
    const sonde_tool_ops_t *ops = nullptr;
    void *data = nullptr;
    const sonde_status_t created = create(options.c_str(), &ops, &data);
    if (created != SONDE_STATUS_SUCCESS || ops == nullptr) {
        error = path + ": sonde_tool_create failed: " +
                (created != SONDE_STATUS_SUCCESS ? sonde_status_name(created) : "no table");
        return SONDE_STATUS_ERROR_TOOL;
    }
    tool->data = data;
    const sonde_status_t st = copy_ops(ops, tool.get(), &error);
    if (st != SONDE_STATUS_SUCCESS) {
        error = path + ": " + error;
        return st;
    }
    return adopt(std::move(tool));
}

// A live input is read alone: its shards are numbered as they appear, after nothing else.
static const char *const kLiveAlone =
    "a live input is the only input of its analyzer (no trace file or memory shard beside it)";

sonde_status_t Analyzer::add_input(const std::string &path, uint32_t format) {
    if (live_ != nullptr) {
        error = kLiveAlone;
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    std::unique_ptr<Input> input;
    const sonde_status_t st = Input::open(path, format, &input, &error);
    if (st != SONDE_STATUS_SUCCESS) return st;
    InputInfo info;
    for (const std::string &w : input->warnings()) info.add(w);
    for (size_t i = 0; i < input->num_shards(); ++i) {
        ShardSpec spec;
        spec.input = input.get();
        spec.input_number = inputs_.size();
        spec.index = i;
        shards_.push_back(spec);
    }
    info_.push_back(std::move(info));
    inputs_.push_back(std::move(input));
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Analyzer::add_live(int fd, const std::string &name) {
    if (!inputs_.empty() || memory_shards_ != 0) {
        error = kLiveAlone;
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (fcntl(fd, F_GETFD) < 0) {
        error = name + ": descriptor " + std::to_string(fd) + " is not open";
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    auto input = std::make_unique<trace::LiveInput>(fd, name);
    info_.emplace_back();
    live_ = input.get();
    inputs_.push_back(std::move(input));
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Analyzer::add_memory(const sonde_memref_t *memrefs, size_t count, uint32_t *id) {
    if (live_ != nullptr) {
        error = kLiveAlone;
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    ShardSpec spec;
    spec.memory = memrefs;
    spec.count = count;
    shards_.push_back(spec);
    ++memory_shards_;
    *id = static_cast<uint32_t>(shards_.size() - 1);
    return SONDE_STATUS_SUCCESS;
}

void Analyzer::progress(uint64_t *done, uint64_t *total) const {
    // inputs_ does not change during run(); each input's count is an atomic its readers add to.
    uint64_t d = 0, t = 0;
    bool known = true;
    for (const std::unique_ptr<Input> &in : inputs_) {
        d += in->consumed_bytes();
        known = known && in->size_known();
        t += in->stored_bytes();
    }
    *done = d;
    *total = known ? t : 0;
}

sonde_status_t Analyzer::input_warnings(uint32_t input, bool *complete, const char **warnings) {
    if (input >= inputs_.size()) {
        error = "no input " + std::to_string(input) + " (" + std::to_string(inputs_.size()) + " added)";
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (complete != nullptr) *complete = inputs_[input]->complete();
    if (warnings != nullptr) *warnings = info_[input].joined.c_str();
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Analyzer::run() {
    if (ran) {
        error = "the analyzer has already run";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    if (tools_.empty() || (inputs_.empty() && memory_shards_ == 0)) {
        error = tools_.empty() ? "no tool was added" : "no input was added";
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    ran = true;
    bool can_parallel = parallel;
    const Tool *serial_only = nullptr;
    for (const auto &t : tools_) {
        const bool ok = t->ops.parallel_shard_supported != nullptr &&
                        t->ops.parallel_shard_supported(t->data) &&
                        (t->ops.parallel_shard_memref != nullptr || t->ops.parallel_shard_memrefs != nullptr);
        if (!ok) {
            can_parallel = false;
            if (serial_only == nullptr) serial_only = t.get();
        }
    }
    if (!can_parallel) {
        for (const auto &t : tools_) {
            if (t->ops.process_memref == nullptr && t->ops.process_memrefs == nullptr) {
                error = t->name + ": no serial memref function, and the run is serial";
                return SONDE_STATUS_ERROR_NOT_SUPPORTED;
            }
        }
    }
    if (nranks_ != 0 && live_ != nullptr) {
        error = "a live input cannot be partitioned";
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (nranks_ != 0) {
        if (const sonde_status_t st = start_partition(can_parallel)) return st;
        if (partition_kind_ == SONDE_PARTITION_TIME_SLICES) can_parallel = false;
    }
    // Threads of the run: the workers asked for (--jobs), else one per core. When there are
    // fewer shards than threads, the readers of a stream input (lackey text) decode its one
    // shard on the spare ones (block_decode.h); the records are the same for every count.
    const uint32_t cores = workers != 0 ? workers : std::max(1u, std::thread::hardware_concurrency());
    // Shards in pieces (parallel_shard_pieces): asked once, of every tool.
    piecewise_ = can_parallel && nranks_ == 0;
    for (const auto &t : tools_)
        piecewise_ =
            piecewise_ && t->ops.parallel_shard_pieces != nullptr && t->ops.parallel_shard_pieces(t->data);
    // The most pieces the shards can be cut into (one per shard when they stay whole).
    uint64_t most_pieces = 0;
    for (const ShardSpec &spec : shards_)
        most_pieces += !piecewise_             ? 1
                       : spec.input != nullptr ? spec.input->shard_pieces(spec.index)
                                               : std::max<uint64_t>(1, spec.count / kMinPieceRecords);
    const size_t shard_count = std::max<size_t>(1, shards_.size());
    for (const auto &in : inputs_) {
        // An input whose shards are cut into pieces is read a piece per worker; the others
        // decode on the threads left over per shard.
        bool cut = false;
        for (size_t s = 0; piecewise_ && s < in->num_shards(); ++s) cut = cut || in->shard_pieces(s) > 1;
        in->set_decode_threads(cut ? 1 : static_cast<unsigned>(std::max<size_t>(1, cores / shard_count)));
    }
    // Memory of the readers: a serial run holds every shard's at once, a parallel one a
    // shard's per worker.
    std::vector<const Input *> inputs;
    for (const auto &in : inputs_) inputs.push_back(in.get());
    const trace::MemoryNeed need = trace::memory_need(inputs, kBatch);
    if (!can_parallel && need.need > need.budget) {
        error = "a serial run over " + std::to_string(need.shards) + " shards would need " +
                trace::mebibytes(need.need) +
                " at once to decode them (each shard's largest chunk), more than the " +
                trace::mebibytes(need.budget) + " allowed for inputs of this size; " +
                (parallel && serial_only != nullptr ? "tool " + serial_only->name + " runs serially only, so "
                                                    : "") +
                "run the tools in parallel mode (sonde analyze without --serial) or rewrite the trace with "
                "smaller "
                "chunks (sonde convert --chunk-records)";
        return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    }
    for (const auto &t : tools_) {
        // A live run's shards appear later: told by add_shards, or all possible ones up front.
        const size_t count = live_ == nullptr               ? shards_.size()
                             : t->ops.add_shards != nullptr ? 0
                                                            : trace::LiveInput::kMaxShards;
        if (t->ops.initialize != nullptr && !t->ops.initialize(t->data, static_cast<uint32_t>(count))) {
            error = tool_message(*t, "initialize", global_error(*t));
            return SONDE_STATUS_ERROR_TOOL;
        }
    }
    uint32_t n = cores;
    n = static_cast<uint32_t>(
        std::max<uint64_t>(1, std::min<uint64_t>(n, std::max<uint64_t>(most_pieces, 1))));
    if (need.largest != 0)
        n = static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(n, need.budget / need.largest)));
    ran_parallel = can_parallel;
    used_workers = can_parallel ? n : 1;
    sonde_status_t st;
    if (live_ == nullptr) {
        st = can_parallel ? run_parallel(n) : ranges_ ? run_ranges() : run_serial();
    } else {
        st = can_parallel ? run_live_parallel() : run_serial();
        if (st != SONDE_STATUS_SUCCESS) live_->cancel();  // the program goes on unanalysed
        if (st == SONDE_STATUS_SUCCESS) {
            std::string why;
            st = live_->stream_status(&why);
            if (st != SONDE_STATUS_SUCCESS) error = why;
        }
        live_->finish();
        for (const std::string &w : live_->warnings()) info_[0].add(w);
    }
    succeeded = st == SONDE_STATUS_SUCCESS;
    if (succeeded) {
        input_records_.assign(inputs_.size(), 0);
        for (const ShardSpec &spec : shards_)
            if (spec.input != nullptr) input_records_[spec.input_number] += spec.read;
        // A partitioned run knows which inputs gave no record once every rank's reads are in.
        if (nranks_ <= 1) note_empty_inputs();
    }
    return st;
}

void Analyzer::note_empty_inputs() {
    for (size_t i = 0; i < inputs_.size(); ++i)
        if (input_records_[i] == 0) info_[i].add(inputs_[i]->path() + ": no records");
}

// Hands a span to the tools: all of them when `owned`, else (a slice of another rank) only those
// that take every record. False when a tool failed (error set).
bool Analyzer::hand_serial(const sonde_memref_t *p, size_t n, bool owned, LegacyView &legacy,
                           trace::BlockTapOut *tap) {
    const sonde_memref_t *lv = nullptr;  // the span's 1.0 view, made once for all 1.0 tools
    size_t ln = 0;
    for (size_t ti = 0; ti < tools_.size(); ++ti) {
        const Tool &t = *tools_[ti];
        if (!owned && modes_[ti] != SONDE_PARTITION_EVERY_RECORD) continue;
        bool ok = true;
        if (!t.full_model && lv == nullptr) lv = legacy.view(p, n, &ln);
        const sonde_memref_t *v = t.full_model ? p : lv;
        const size_t vn = t.full_model ? n : ln;
        if (vn == 0) continue;
        if (tap != nullptr && ti == tap_tool_) {
            ok = tap_hooks_->process_tapped(p, n, *tap);
        } else if (t.ops.process_memrefs != nullptr) {
            ok = t.ops.process_memrefs(t.data, v, vn);
        } else {
            for (size_t k = 0; k < vn && ok; ++k) ok = t.ops.process_memref(t.data, &v[k]);
        }
        if (!ok) {
            error = tool_message(t, "process_memref", global_error(t));
            return false;
        }
    }
    return true;
}

// Serial mode: repeatedly take the shard whose next record has the smallest timestamp (ties:
// lowest shard) and hand the tools the longest run of its records that stays ahead of every
// other shard's next record. A record with timestamp 0 takes its shard's last timestamp. Only
// shards with records take part. Cost per run: a heap operation (log of the shards); per
// record: one timestamp compare. Spans are passed to the tools in place (no copy beyond the
// reader's).
sonde_status_t Analyzer::run_serial() {
    struct State {
        std::unique_ptr<Cursor> cursor;
        const sonde_memref_t *p = nullptr;
        size_t left = 0;
        uint64_t last_ts = 0;
        trace::BlockTapOut *tap = nullptr;  // what the tap made of the whole span [p, p + left)
    };
    // A tool that takes its records' substance from a tap on the decoding threads
    // (DecodeTapHooks, builtin_tools.h): the first that offers one, in a run that is neither
    // partitioned (spans cut at slice boundaries) nor live. It gets a span through the tap when
    // the span is a whole block its reader decoded on another thread, else as records.
    tap_tool_ = SIZE_MAX;
    tap_hooks_ = nullptr;
    const trace::BlockTap *tap = nullptr;
    for (size_t ti = 0; ti < tools_.size() && nranks_ == 0 && live_ == nullptr && tap == nullptr; ++ti) {
        const Tool &t = *tools_[ti];
        auto *h = t.builtin != nullptr && t.full_model ? dynamic_cast<DecodeTapHooks *>(t.builtin) : nullptr;
        if (h != nullptr && (tap = h->decode_tap()) != nullptr) {
            tap_tool_ = ti;
            tap_hooks_ = h;
        }
    }
    std::deque<State> st;  // in shard order; a deque, so that a State stays put while shards come
    LegacyView legacy;
    auto eff = [](const State &s) { return s.p->timestamp != 0 ? s.p->timestamp : s.last_ts; };
    // Fills state i's span; false at its end (after an error, with *failed set).
    sonde_status_t failed = SONDE_STATUS_SUCCESS;
    auto fill = [&](State &s) -> bool {
        if (s.left != 0) return true;
        s.left = s.cursor->next(&s.p);
        s.tap = s.cursor->tap();
        if (s.left != 0) return true;
        if (s.cursor->status() != SONDE_STATUS_SUCCESS) {
            failed = s.cursor->status();
            error = s.cursor->error();
        }
        s.cursor.reset();
        return false;
    };
    auto hand = [&](const sonde_memref_t *p, size_t n, bool owned) {
        return hand_serial(p, n, owned, legacy);
    };
    auto hand_span = [&](const State &s, size_t n) {
        return hand_serial(s.p, n, true, legacy, n == s.left ? s.tap : nullptr);
    };
    uint64_t ordinal = 0;         // records of the interleaved stream handed out so far
    uint64_t begun = UINT64_MAX;  // the last slice whose slice_begin was called
    uint64_t total = 0;           // records of the stream (UINT64_MAX: not known)
    bool every_record = false;
    for (uint32_t m : modes_) every_record = every_record || m == SONDE_PARTITION_EVERY_RECORD;
    for (const ShardSpec &spec : shards_) {
        const uint64_t r = spec.input != nullptr ? spec.input->shard_records(spec.index) : spec.count;
        total = r == UINT64_MAX || total > UINT64_MAX - r ? UINT64_MAX : total + r;
    }
    using Key = std::pair<uint64_t, size_t>;  // (timestamp of the next record, state)
    std::priority_queue<Key, std::vector<Key>, std::greater<Key>> heap;
    // Takes in the shards not looked at yet: a cursor and the first records of each that has
    // records. With a live input, first the shards it announced since the last look, whose first
    // reads may announce more (live.h: after every read, before the next record is handed out).
    size_t taken = 0;
    auto take_in = [&]() -> sonde_status_t {
        for (;;) {
            size_t count = shards_.size();
            if (live_ != nullptr && !grow_live(&count)) return SONDE_STATUS_ERROR_TOOL;
            if (taken == count) return SONDE_STATUS_SUCCESS;
            for (; taken < count; ++taken) {
                const ShardSpec &spec = shards_[taken];
                if (spec.input != nullptr ? spec.input->shard_records(spec.index) == 0 : spec.count == 0)
                    continue;
                st.emplace_back();
                st.back().cursor = std::make_unique<Cursor>(shards_[taken], static_cast<uint32_t>(taken),
                                                            &shards_[taken].read);
                st.back().cursor->set_tap(tap);
                if (fill(st.back())) heap.emplace(eff(st.back()), st.size() - 1);
                if (failed != SONDE_STATUS_SUCCESS) return failed;
            }
        }
    };
    if (const sonde_status_t took = take_in()) return took;
    for (;;) {
        if (heap.empty()) {
            // Every shard known has ended; a live input may still announce more.
            const size_t known = shards_.size();
            if (live_ == nullptr || live_->wait_shards(known) == known) break;
            if (const sonde_status_t took = take_in()) return took;
            continue;
        }
        const size_t i = heap.top().second;
        heap.pop();
        State &s = st[i];
        // Records up to the next shard's key stay ahead of it; equal timestamps go to the
        // lower shard first.
        const bool bounded = !heap.empty();
        const Key bound = bounded ? heap.top() : Key{UINT64_MAX, 0};
        size_t n = 0;
        uint64_t last = s.last_ts;
        if (!bounded) {
            // The only shard left: all of its span, and its last timestamp, which only a live
            // input's later shards are ordered against (the others have all been taken in, so
            // the span is not read here: a trace without timestamps would be read twice).
            n = s.left;
            for (size_t k = live_ != nullptr ? n : 0; k > 0; --k)
                if (s.p[k - 1].timestamp != 0) {
                    last = s.p[k - 1].timestamp;
                    break;
                }
        }
        while (n < s.left) {
            const uint64_t ts = s.p[n].timestamp != 0 ? s.p[n].timestamp : last;
            if (n > 0 && Key{ts, i} > bound) break;
            last = ts;
            ++n;
        }
        s.last_ts = last;
        if (nranks_ == 0) {
            if (!hand_span(s, n)) return SONDE_STATUS_ERROR_TOOL;
        } else {
            // A time-slice partition: cut the span at slice boundaries; the slices of this rank
            // go to every tool, the others only to the tools that take every record.
            for (size_t off = 0; off < n;) {
                const uint64_t slice = ordinal / slice_records_;
                const size_t piece =
                    static_cast<size_t>(std::min<uint64_t>(n - off, (slice + 1) * slice_records_ - ordinal));
                const bool owned = slice % nranks_ == rank_;
                if (owned && slice != begun) {
                    begun = slice;
                    for (size_t ti = 0; ti < tools_.size(); ++ti) {
                        const Tool &t = *tools_[ti];
                        if (modes_[ti] == SONDE_PARTITION_TIME_SLICES && t.ops.slice_begin != nullptr &&
                            !t.ops.slice_begin(t.data, slice)) {
                            error = tool_message(t, "slice_begin", global_error(t));
                            return SONDE_STATUS_ERROR_TOOL;
                        }
                    }
                }
                if (!hand(s.p + off, piece, owned)) return SONDE_STATUS_ERROR_TOOL;
                off += piece;
                ordinal += piece;
            }
            // Contiguous slices (one per rank) and no tool that wants every record: nothing
            // after this rank's slice matters.
            if (!every_record && nranks_ * slice_records_ >= total && ordinal >= (rank_ + 1) * slice_records_)
                return SONDE_STATUS_SUCCESS;
        }
        s.p += n;
        s.left -= n;
        s.tap = nullptr;  // the rest of a span is not a whole block
        if (fill(s)) heap.emplace(eff(s), i);
        if (failed != SONDE_STATUS_SUCCESS) return failed;
        if (live_ != nullptr)
            if (const sonde_status_t took = take_in()) return took;
    }
    return SONDE_STATUS_SUCCESS;
}

// A time-slice partition by byte ranges (partition.cpp): this rank's one slice, numbered by its
// rank, is its part of each stream input in input order (the serial order of inputs without
// timestamps); every tool gets every record read, as in one process's serial run.
sonde_status_t Analyzer::run_ranges() {
    for (size_t ti = 0; ti < tools_.size(); ++ti) {
        const Tool &t = *tools_[ti];
        if (modes_[ti] == SONDE_PARTITION_TIME_SLICES && t.ops.slice_begin != nullptr &&
            !t.ops.slice_begin(t.data, rank_)) {
            error = tool_message(t, "slice_begin", global_error(t));
            return SONDE_STATUS_ERROR_TOOL;
        }
    }
    LegacyView legacy;
    for (const RangePart &part : parts_) {
        ShardSpec &spec = shards_[part.shard];
        Cursor cursor(spec, static_cast<uint32_t>(part.shard), &spec.read,
                      Cursor::Range{part.begin, part.end});
        const sonde_memref_t *p = nullptr;
        size_t n;
        while ((n = cursor.next(&p)) != 0)
            if (!hand_serial(p, n, true, legacy)) return SONDE_STATUS_ERROR_TOOL;
        if (cursor.status() != SONDE_STATUS_SUCCESS) {
            error = cursor.error();
            return cursor.status();
        }
    }
    // One rank has every slice: its routes go to itself.
    if (routes_pending_ && nranks_ == 1) return finish_routes();
    return SONDE_STATUS_SUCCESS;
}

// The order in which parallel workers take shards: largest first by stored bytes (memory
// shards by their records' bytes), ties in shard order, as drcachesim's scheduler does, so that
// one large shard starts at once and the others fill the remaining workers meanwhile.
// SONDE_ANALYZER_SCHEDULE=static restores the fixed assignment of earlier releases (worker w
// takes shards w, w + n, w + 2n, ...) for comparison in benchmarks.
std::vector<size_t> Analyzer::shard_order() const {
    std::vector<size_t> order(shards_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::vector<uint64_t> bytes(shards_.size());
    for (size_t i = 0; i < shards_.size(); ++i) {
        const ShardSpec &spec = shards_[i];
        bytes[i] =
            spec.input != nullptr ? spec.input->shard_bytes(spec.index) : spec.count * sizeof(sonde_memref_t);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
    return order;
}

// The work of a parallel run: the shards in `order`, whole, unless every tool takes shards in
// pieces (sonde_tool_ops_t::parallel_shard_pieces) and the run is not partitioned or static.
// Then a shard larger than a worker's fair share (the stored bytes over the workers) is cut into
// pieces of about that size, as far as its input allows (a Sonde trace: runs of whole chunks; a memory shard: runs of
// at least kMinPieceRecords records; lackey, raw64 and drmemtrace streams stay whole), and the
// pieces are dealt largest first with the whole shards, so that one large shard keeps every
// worker busy instead of one.
std::vector<Analyzer::Piece> Analyzer::pieces(const std::vector<size_t> &order, uint32_t nworkers,
                                              bool fixed) const {
    const bool cut = piecewise_ && !fixed && nworkers > 1;
    std::vector<Piece> items;
    if (!cut) {
        for (size_t s : order) items.push_back(Piece{s, 0, 1, 0});
        return items;
    }
    std::vector<uint64_t> bytes(shards_.size());
    uint64_t total = 0;
    for (size_t s : order) {
        const ShardSpec &spec = shards_[s];
        bytes[s] =
            spec.input != nullptr ? spec.input->shard_bytes(spec.index) : spec.count * sizeof(sonde_memref_t);
        total += bytes[s];
    }
    // A worker's fair share: only a shard larger than that holds a worker up while others idle.
    const uint64_t target = std::max<uint64_t>(1, total / nworkers);
    for (size_t s : order) {
        const ShardSpec &spec = shards_[s];
        const uint64_t most = spec.input != nullptr ? spec.input->shard_pieces(spec.index)
                                                    : std::max<uint64_t>(1, spec.count / kMinPieceRecords);
        const uint64_t k = std::max<uint64_t>(1, std::min<uint64_t>(most, (bytes[s] + target - 1) / target));
        for (uint64_t p = 0; p < k; ++p)
            items.push_back(Piece{s, static_cast<size_t>(p), static_cast<size_t>(k), bytes[s] / k});
    }
    std::stable_sort(items.begin(), items.end(),
                     [](const Piece &a, const Piece &b) { return a.bytes > b.bytes; });
    return items;
}

namespace {

// One unit of a worker's work: shard `shard`, or piece `piece` of `pieces` of it, whose records
// are counted in *read (null: the shard's own count, when one worker reads the whole shard).
// *left, when given, counts the shard's pieces not yet ended: the worker that ends the last one
// tells the tools that take it (ShardDoneHooks, builtin_tools.h) that the shard is done.
struct Job {
    size_t shard = SIZE_MAX;
    size_t piece = 0, pieces = 1;
    uint64_t *read = nullptr;
    std::atomic<size_t> *left = nullptr;
};

// One parallel worker's life (run_parallel, run_live_parallel): parallel_worker_init of every
// tool, then each job `next` gives (shard SIZE_MAX: none left), from parallel_shard_init to
// parallel_shard_exit with its records in between, then parallel_worker_exit. `init_mu`, when
// given (a live run), serialises the init and exit calls with add_shards. A worker throws
// nothing: an exception while reading a shard is recorded and the shard's and worker's exit
// functions still run; one before any tool function is called (the data vectors) ends the
// worker at once. After a failure anywhere the worker stops reading, but still calls the exit
// functions of what it initialised so tools can free their data (those results are ignored).
template <typename Next>
void work(uint32_t w, std::vector<std::unique_ptr<Tool>> &tools, std::deque<ShardSpec> &shards,
          Failure &failure, std::mutex *init_mu, Next next) noexcept {
    try {
        const size_t nt = tools.size();
        LegacyView legacy;
        std::vector<void *> wdata(nt, nullptr), sdata(nt, nullptr);
        std::unique_lock<std::mutex> serialised;
        if (init_mu != nullptr) serialised = std::unique_lock<std::mutex>(*init_mu, std::defer_lock);
        auto serialise = [&](bool on) {
            if (init_mu == nullptr) return;
            if (on) {
                serialised.lock();
            } else {
                serialised.unlock();
            }
        };
        std::vector<ShardDoneHooks *> done_hooks;
        for (const auto &t : tools)
            if (t->builtin != nullptr)
                if (auto *h = dynamic_cast<ShardDoneHooks *>(t->builtin)) done_hooks.push_back(h);
        size_t inited = 0;
        serialise(true);
        for (; inited < nt; ++inited) {
            Tool &t = *tools[inited];
            if (t.ops.parallel_worker_init != nullptr &&
                !t.ops.parallel_worker_init(t.data, w, &wdata[inited])) {
                failure.tool(t, "parallel_worker_init", global_error(t));
                break;
            }
        }
        serialise(false);
        for (Job job; inited == nt && !failure.stop.load(std::memory_order_relaxed) &&
                      (job = next()).shard != SIZE_MAX;) {
            const size_t s = job.shard;
            size_t sinit = 0;
            serialise(true);
            // The shard's spec stays put (a deque), but a live run's shards grow beside this
            // worker: its place is looked up under the lock.
            ShardSpec &spec = shards[s];
            for (; sinit < nt; ++sinit) {
                Tool &t = *tools[sinit];
                sdata[sinit] = nullptr;
                if (t.ops.parallel_shard_init != nullptr &&
                    !t.ops.parallel_shard_init(t.data, static_cast<uint32_t>(s), wdata[sinit],
                                               &sdata[sinit])) {
                    failure.tool(t, "parallel_shard_init", global_error(t));
                    break;
                }
            }
            serialise(false);
            if (sinit == nt) {
                try {
                    Cursor cursor(spec, static_cast<uint32_t>(s), job.read != nullptr ? job.read : &spec.read,
                                  job.piece, job.pieces);
                    const sonde_memref_t *p = nullptr;
                    size_t n;
                    while (!failure.stop.load(std::memory_order_relaxed) && (n = cursor.next(&p)) != 0) {
                        const sonde_memref_t *lv = nullptr;  // the span's 1.0 view, made once
                        size_t ln = 0;
                        for (size_t ti = 0; ti < nt; ++ti) {
                            Tool &t = *tools[ti];
                            bool ok = true;
                            if (!t.full_model && lv == nullptr) lv = legacy.view(p, n, &ln);
                            const sonde_memref_t *v = t.full_model ? p : lv;
                            const size_t vn = t.full_model ? n : ln;
                            if (vn == 0) continue;
                            if (t.ops.parallel_shard_memrefs != nullptr) {
                                ok = t.ops.parallel_shard_memrefs(t.data, sdata[ti], v, vn);
                            } else {
                                for (size_t k = 0; k < vn && ok; ++k)
                                    ok = t.ops.parallel_shard_memref(t.data, sdata[ti], &v[k]);
                            }
                            if (!ok) {
                                const char *m = t.ops.parallel_shard_error != nullptr
                                                    ? t.ops.parallel_shard_error(t.data, sdata[ti])
                                                    : nullptr;
                                failure.tool(t, "parallel_shard_memref", m);
                                break;
                            }
                        }
                    }
                    if (cursor.status() != SONDE_STATUS_SUCCESS) failure.set(cursor.status(), cursor.error());
                } catch (...) {
                    failure.exception();
                }
            }
            serialise(true);
            for (size_t ti = 0; ti < sinit; ++ti) {
                Tool &t = *tools[ti];
                if (t.ops.parallel_shard_exit != nullptr && !t.ops.parallel_shard_exit(t.data, sdata[ti])) {
                    const char *m = t.ops.parallel_shard_error != nullptr
                                        ? t.ops.parallel_shard_error(t.data, sdata[ti])
                                        : nullptr;
                    failure.tool(t, "parallel_shard_exit", m);
                }
            }
            serialise(false);
            // The last piece of the shard ended here: every other piece's exit came before its
            // decrement (acq_rel), so the tools see the whole shard.
            if (job.left != nullptr && job.left->fetch_sub(1, std::memory_order_acq_rel) == 1 &&
                sinit == nt && !failure.stop.load(std::memory_order_relaxed))
                for (ShardDoneHooks *h : done_hooks) h->shard_done(static_cast<uint32_t>(s));
        }
        serialise(true);
        for (size_t ti = 0; ti < inited; ++ti) {
            Tool &t = *tools[ti];
            if (t.ops.parallel_worker_exit != nullptr && !t.ops.parallel_worker_exit(t.data, wdata[ti]))
                failure.tool(t, "parallel_worker_exit", global_error(t));
        }
    } catch (...) {
        failure.exception();
    }
}

}  // namespace

// Parallel mode: workers take shards one at a time from a shared counter over shard_order()
// (dynamic assignment: a worker that finishes a shard takes the next one left).
sonde_status_t Analyzer::run_parallel(uint32_t nworkers) {
    // A shard's state grows through the same sizes as the shard before it (basic_counts' sets):
    // blocks of huge pages freed while the workers run are handed out again (core/huge_pages.h).
    const core::HugeHold hold;
    Failure failure;
    const char *schedule = std::getenv("SONDE_ANALYZER_SCHEDULE");
    const bool fixed = schedule != nullptr && std::strcmp(schedule, "static") == 0;
    std::vector<size_t> order = shard_order();
    if (fixed)
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (nranks_ != 0) {  // a shard partition: this rank's shards, dealt largest first
        std::vector<size_t> mine;
        for (size_t k = rank_; k < order.size(); k += nranks_) mine.push_back(order[k]);
        order.swap(mine);
    }
    const std::vector<Piece> items = pieces(order, nworkers, fixed);
    std::vector<uint64_t> item_read(items.size(), 0);  // records of each item (its worker's)
    std::atomic<size_t> next{0};                       // the next position in `items`; any worker takes it
    // Pieces not yet ended, per shard (Job::left); set before the workers start.
    std::unique_ptr<std::atomic<size_t>[]> left(new std::atomic<size_t>[shards_.size()]);
    for (size_t i = 0; i < shards_.size(); ++i) left[i].store(0, std::memory_order_relaxed);
    for (const Piece &it : items) left[it.shard].fetch_add(1, std::memory_order_relaxed);
    auto worker = [&](uint32_t w) {
        size_t k = w;  // a fixed schedule's next position
        work(w, tools_, shards_, failure, nullptr, [&]() -> Job {
            const size_t at = fixed ? k : next.fetch_add(1, std::memory_order_relaxed);
            k += nworkers;
            if (at >= items.size()) return Job{};
            return Job{items[at].shard, items[at].piece, items[at].pieces, &item_read[at],
                       &left[items[at].shard]};
        });
    };
    std::vector<std::thread> threads;
    try {
        for (uint32_t w = 1; w < nworkers; ++w) threads.emplace_back(worker, w);
    } catch (...) {
        failure.set(SONDE_STATUS_ERROR_OUT_OF_MEMORY, "could not start worker threads");
    }
    worker(0);
    for (auto &th : threads) th.join();
    for (size_t k = 0; k < items.size(); ++k) shards_[items[k].shard].read += item_read[k];
    if (failure.status != SONDE_STATUS_SUCCESS) {
        error = failure.message.empty() ? sonde_status_string(failure.status) : failure.message;
        return failure.status;
    }
    return SONDE_STATUS_SUCCESS;
}

bool Analyzer::grow_live(size_t *count) {
    const size_t n = live_->num_shards();
    if (n > shards_.size()) {
        for (const auto &t : tools_) {
            if (t->ops.add_shards != nullptr && !t->ops.add_shards(t->data, static_cast<uint32_t>(n))) {
                error = tool_message(*t, "add_shards", global_error(*t));
                return false;
            }
        }
        for (size_t i = shards_.size(); i < n; ++i) {
            ShardSpec spec;
            spec.input = live_;
            spec.index = i;
            shards_.push_back(spec);
        }
    }
    *count = shards_.size();
    return true;
}

// A live parallel run: the calling thread waits for shards to appear (reading the stream when
// no worker does) and starts one worker per shard, worker index = shard; each worker reads its
// shard to its end. Shards are taken in under `init_mu`, which the workers' init and exit calls
// also take (analysis.h: add_shards never runs beside them).
sonde_status_t Analyzer::run_live_parallel() {
    Failure failure;
    failure.live = live_;
    live_->set_parallel(true);
    std::mutex init_mu;
    std::vector<std::thread> threads;
    size_t known = 0;
    // Nothing thrown here may leave the workers unjoined: a failure is recorded and ends the loop.
    try {
        while (!failure.stop.load(std::memory_order_relaxed)) {
            if (live_->wait_shards(known) == known) break;  // the stream ended (or the run failed)
            size_t count = 0;
            {
                std::lock_guard<std::mutex> lock(init_mu);
                if (!grow_live(&count)) {
                    failure.set(SONDE_STATUS_ERROR_TOOL, error);
                    break;
                }
            }
            for (; known < count; ++known) {
                const size_t shard = known;
                threads.emplace_back([&, shard] {
                    bool given = false;
                    work(static_cast<uint32_t>(shard), tools_, shards_, failure, &init_mu, [&]() -> Job {
                        if (given) return Job{};
                        given = true;
                        Job job;
                        job.shard = shard;  // whole, counted in its spec (looked up under init_mu)
                        return job;
                    });
                });
            }
        }
    } catch (const std::system_error &) {
        failure.set(SONDE_STATUS_ERROR_OUT_OF_MEMORY, "could not start worker threads");
    } catch (...) {
        failure.exception();
    }
    for (auto &th : threads) th.join();
    used_workers = static_cast<uint32_t>(threads.size());
    if (failure.status != SONDE_STATUS_SUCCESS) {
        error = failure.message.empty() ? sonde_status_string(failure.status) : failure.message;
        return failure.status;
    }
    return SONDE_STATUS_SUCCESS;
}

// A built-in tool's results are taken with C++ calls, so that std::bad_alloc reaches the C
// boundary (OUT_OF_MEMORY); another exception is the tool's failure. Other tools answer
// through their tables.
sonde_status_t Analyzer::print_results(void *stream) {
    if (!succeeded) {
        error = "no successful run";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    for (const auto &t : tools_) {
        if (t->builtin != nullptr) {
            bool printed = false;
            try {
                printed = t->builtin->print_results(stream);
            } catch (const std::bad_alloc &) {
                throw;
            } catch (const std::exception &e) {
                error = t->name + ": " + e.what();
                return SONDE_STATUS_ERROR_TOOL;
            }
            if (!printed) {
                error = tool_message(*t, "print_results", global_error(*t));
                return SONDE_STATUS_ERROR_TOOL;
            }
            continue;
        }
        if (t->ops.print_results != nullptr && !t->ops.print_results(t->data, stream)) {
            error = tool_message(*t, "print_results", global_error(*t));
            return SONDE_STATUS_ERROR_TOOL;
        }
    }
    return SONDE_STATUS_SUCCESS;
}

// Every JSON value here is built by the rules of json_release.h: running out of memory throws
// std::bad_alloc (OUT_OF_MEMORY at the C boundary) and never ends in std::terminate.
namespace {

void newline(std::string &out, int depth) {
    out += '\n';
    out.append(static_cast<size_t>(depth) * 2, ' ');
}

// Compact JSON (nlohmann's dump() without indent) printed as dump(2) prints it, `depth` levels
// deep: a newline and two spaces a level after an opening bracket and after a comma, before a
// closing one, ": " after a key; empty containers stay "{}" and "[]"; strings are copied as they
// are. One pass over the text, no document built.
std::string indent_json(const std::string &s, int depth) {
    std::string out;
    out.reserve(s.size() + s.size() / 2);
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (in_string) {
            out += c;
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        switch (c) {
            case '"':
                in_string = true;
                out += c;
                break;
            case '{':
            case '[':
                out += c;
                if (i + 1 < s.size() && s[i + 1] == (c == '{' ? '}' : ']')) {
                    out += s[++i];
                    break;
                }
                newline(out, ++depth);
                break;
            case '}':
            case ']':
                newline(out, --depth);
                out += c;
                break;
            case ',':
                out += c;
                newline(out, depth);
                break;
            case ':': out += ": "; break;
            case ' ':
            case '\n':
            case '\r':
            case '\t': break;
            default: out += c;
        }
    }
    return out;
}

}  // namespace

// The results JSON: one member per tool (sorted by name), then "inputs" and "warnings", printed
// as nlohmann's dump(2) prints the whole object. A built-in tool that writes its own text
// (JsonText, json_text.h: reuse_distance, whose histogram may hold millions of pairs) hands it
// over in pieces, already laid out; another built-in tool's text (compact, keys sorted) is
// checked and re-indented in one pass (indent_json); other tools' text is parsed and printed
// again, so that their keys are sorted too. The text is kept, in pieces, until the state changes
// (merge_state), so that asking for its size and then for the text builds it once, and is copied
// once, into the caller's buffer: a large histogram's JSON costs as much as a parallel
// calculation of it.
sonde_status_t Analyzer::results_json(const JsonPieces **out) {
    if (!succeeded) {
        error = "no successful run";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    if (results_valid_) {
        *out = &results_text_;
        return SONDE_STATUS_SUCCESS;
    }
    std::vector<std::pair<std::string, JsonPieces>> members;  // name, value as printed
    auto member = [&members](const std::string &name, std::string &&text) {
        members.emplace_back(name, JsonPieces());
        members.back().second.adopt(std::move(text));
    };
    auto printed = [](const nlohmann::json &j) {
        // A member's value is indented one level inside the outer object.
        const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
        std::string indented;
        indented.reserve(text.size() + text.size() / 8);
        for (char c : text) {
            indented += c;
            if (c == '\n') indented += "  ";
        }
        return indented;
    };
    const unsigned threads = workers != 0 ? workers : std::max(1u, std::thread::hardware_concurrency());
    for (const auto &t : tools_) {
        std::string text;
        if (auto *direct = dynamic_cast<JsonText *>(t->builtin)) {
            // Written as text, already indented, its large arrays on the workers' threads.
            JsonPieces pieces;
            try {
                direct->results_json_text(&pieces, 1, threads);
            } catch (const std::bad_alloc &) {
                throw;
            } catch (const std::exception &e) {
                error = t->name + ": " + e.what();
                return SONDE_STATUS_ERROR_TOOL;
            }
            members.emplace_back(t->name, std::move(pieces));
            continue;
        }
        if (t->builtin != nullptr) {
            try {
                text = t->builtin->results_json();
            } catch (const std::bad_alloc &) {
                throw;
            } catch (const std::exception &e) {
                error = t->name + ": " + e.what();
                return SONDE_STATUS_ERROR_TOOL;
            }
            const size_t first = text.find_first_not_of(" \t\r\n");
            if (first == std::string::npos || text[first] != '{' || !nlohmann::json::accept(text)) {
                error = t->name + ": results_json is not a JSON object";
                return SONDE_STATUS_ERROR_TOOL;
            }
            member(t->name, indent_json(text, 1));
            continue;
        }
        if (t->ops.results_json == nullptr) continue;
        const char *given = t->ops.results_json(t->data);
        if (given == nullptr) {
            error = tool_message(*t, "results_json", global_error(*t));
            return SONDE_STATUS_ERROR_TOOL;
        }
        nlohmann::json j;
        const JsonRelease release_j(j);
        j = nlohmann::json::parse(given, nullptr, false);
        if (j.is_discarded() || !j.is_object()) {
            error = t->name + ": results_json is not a JSON object";
            return SONDE_STATUS_ERROR_TOOL;
        }
        member(t->name, printed(j));
    }
    // What the readers found, when there are file inputs: every warning, and per input whether
    // it was complete.
    if (!inputs_.empty()) {
        nlohmann::json inputs, warnings;
        const JsonRelease release_inputs(inputs), release_warnings(warnings);
        json_array_reserve(inputs, inputs_.size());
        warnings = nlohmann::json::array();
        for (size_t i = 0; i < inputs_.size(); ++i) {
            const Input &in = *inputs_[i];
            nlohmann::json one = nlohmann::json::object();
            const JsonRelease release_one(one);
            one["path"] = in.path();
            one["format"] = &in == live_ ? "live" : format_name(in.format());
            one["complete"] = in.complete();
            nlohmann::json &list = one["warnings"];
            json_array_reserve(list, info_[i].warnings.size());
            for (const std::string &w : info_[i].warnings) {
                list.push_back(w);
                warnings.push_back(w);
            }
            inputs.push_back(std::move(one));  // room reserved: cannot fail
        }
        member("inputs", printed(inputs));
        member("warnings", printed(warnings));
    }
    std::stable_sort(members.begin(), members.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    JsonPieces text;
    text.text() += '{';
    for (size_t i = 0; i < members.size(); ++i) {
        text.text() += i == 0 ? "\n  " : ",\n  ";
        text.text() +=
            nlohmann::json(members[i].first).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        text.text() += ": ";
        text.append(std::move(members[i].second));
    }
    text.text() += members.empty() ? "}" : "\n}";
    results_text_ = std::move(text);
    results_valid_ = true;
    *out = &results_text_;
    return SONDE_STATUS_SUCCESS;
}

}  // namespace sonde::analysis
