// The analyzer's run loops (see analyzer.h): tool loading and validation, the serial merge by
// timestamp, and the parallel workers.
#include "analysis/analyzer.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "analysis/memref_view.h"
#include "core/abi_struct.h"

namespace sonde::analysis {

Tool::~Tool() {
    if (ops.destroy != nullptr) ops.destroy(data);
    // `library` closes after this body, once destroy() has run.
}

namespace {

constexpr size_t kBatch = 4096;           // records read from a file shard per call
constexpr size_t kMemorySpan = 1u << 16;  // records of a memory shard handed out per span

const char *nonnull(const char *s) { return s != nullptr ? s : ""; }

// Reads one shard as spans of records. File shards copy into an owned buffer; memory shards
// hand out the caller's records in place. Owned by one thread.
class Cursor {
public:
    Cursor(const ShardSpec &spec, uint32_t shard_id) : spec_(spec) {
        if (spec.input != nullptr) {
            reader_ = spec.input->open_shard(spec.index, shard_id);
            buffer_.resize(kBatch);
        }
    }
    // Next span; 0 at the end or on an error (then status() / error()).
    size_t next(const sonde_memref_t **out) {
        if (reader_ == nullptr) {
            const size_t n = std::min(kMemorySpan, spec_.count - pos_);
            *out = spec_.memory + pos_;
            pos_ += n;
            return n;
        }
        const size_t n = reader_->read(buffer_.data(), buffer_.size());
        *out = buffer_.data();
        return n;
    }
    sonde_status_t status() const {
        return reader_ != nullptr ? reader_->status() : sonde_status_t{SONDE_STATUS_SUCCESS};
    }
    std::string error() const { return reader_ != nullptr ? reader_->error() : std::string(); }

private:
    ShardSpec spec_;
    size_t pos_ = 0;
    std::unique_ptr<ShardReader> reader_;
    std::vector<sonde_memref_t> buffer_;
};

// First failure of a run; shared by the workers (mutex), read after they joined.
struct Failure {
    std::mutex mutex;
    std::atomic<bool> stop{false};
    sonde_status_t status = SONDE_STATUS_SUCCESS;
    std::string message;
    void set(sonde_status_t s, const std::string &m) {
        std::lock_guard<std::mutex> lock(mutex);
        if (status == SONDE_STATUS_SUCCESS) {
            status = s;
            message = m;
        }
        stop.store(true, std::memory_order_relaxed);
    }
};

std::string tool_message(const Tool &t, const char *what, const char *message) {
    std::string m = t.name + ": ";
    m += (message != nullptr && *message != '\0') ? message : std::string(what) + " failed";
    return m;
}

const char *global_error(const Tool &t) {
    return t.ops.get_error_string != nullptr ? t.ops.get_error_string(t.data) : nullptr;
}

}  // namespace

sonde_status_t Analyzer::adopt(std::unique_ptr<Tool> tool) {
    sonde_tool_ops_t &o = tool->ops;
    if (o.name == nullptr || *o.name == '\0') {
        error = "tool has no name";
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    tool->name = o.name;
    tool->full_model = o.memref_model != nullptr && o.memref_model(tool->data) >= SONDE_MEMREF_MODEL_1_2;
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
    auto tool = std::make_unique<Tool>();
    tool->data = data;
    const sonde_status_t st = copy_ops(ops, tool.get(), &error);
    if (st != SONDE_STATUS_SUCCESS) return st;
    return adopt(std::move(tool));
}

sonde_status_t Analyzer::add_builtin(const std::string &name, const std::string &options) {
    const sonde_tool_ops_t *ops = nullptr;
    void *data = nullptr;
    std::string message;
    const sonde_status_t st = create_builtin_tool(name, options, &ops, &data, &message);
    if (st == SONDE_STATUS_ERROR_NOT_SUPPORTED) {
        error = "no built-in tool '" + name + "' (built-in tools: " + builtin_tool_names() + ")";
        return st;
    }
    if (st != SONDE_STATUS_SUCCESS) {
        error = name + ": " + message;
        return st;
    }
    return add_ops(ops, data);
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

sonde_status_t Analyzer::add_input(const std::string &path, uint32_t format) {
    std::unique_ptr<Input> input;
    const sonde_status_t st = Input::open(path, format, &input, &error);
    if (st != SONDE_STATUS_SUCCESS) return st;
    for (size_t i = 0; i < input->num_shards(); ++i) {
        ShardSpec spec;
        spec.input = input.get();
        spec.index = i;
        shards_.push_back(spec);
    }
    inputs_.push_back(std::move(input));
    return SONDE_STATUS_SUCCESS;
}

uint32_t Analyzer::add_memory(const sonde_memref_t *memrefs, size_t count) {
    ShardSpec spec;
    spec.memory = memrefs;
    spec.count = count;
    shards_.push_back(spec);
    return static_cast<uint32_t>(shards_.size() - 1);
}

sonde_status_t Analyzer::run() {
    if (ran) {
        error = "the analyzer has already run";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    if (tools_.empty() || shards_.empty()) {
        error = tools_.empty() ? "no tool was added" : "no input was added";
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    ran = true;
    bool can_parallel = parallel;
    for (const auto &t : tools_) {
        const bool ok = t->ops.parallel_shard_supported != nullptr &&
                        t->ops.parallel_shard_supported(t->data) &&
                        (t->ops.parallel_shard_memref != nullptr || t->ops.parallel_shard_memrefs != nullptr);
        if (!ok) can_parallel = false;
    }
    if (!can_parallel) {
        for (const auto &t : tools_) {
            if (t->ops.process_memref == nullptr && t->ops.process_memrefs == nullptr) {
                error = t->name + ": no serial memref function, and the run is serial";
                return SONDE_STATUS_ERROR_NOT_SUPPORTED;
            }
        }
    }
    for (const auto &t : tools_) {
        if (t->ops.initialize != nullptr &&
            !t->ops.initialize(t->data, static_cast<uint32_t>(shards_.size()))) {
            error = tool_message(*t, "initialize", global_error(*t));
            return SONDE_STATUS_ERROR_TOOL;
        }
    }
    uint32_t n = workers != 0 ? workers : std::max(1u, std::thread::hardware_concurrency());
    n = static_cast<uint32_t>(std::min<size_t>(n, shards_.size()));
    ran_parallel = can_parallel;
    used_workers = can_parallel ? n : 1;
    const sonde_status_t st = can_parallel ? run_parallel(n) : run_serial();
    succeeded = st == SONDE_STATUS_SUCCESS;
    return st;
}

// Serial mode: repeatedly take the shard whose next record has the smallest timestamp (ties:
// lowest shard) and hand the tools the longest run of its records that stays at or below the
// other shards' next timestamps. A record with timestamp 0 takes its shard's last timestamp.
// Cost per run: a scan over the shards; per record: one timestamp compare. Spans are passed to
// the tools in place (no copy beyond the reader's).
sonde_status_t Analyzer::run_serial() {
    struct State {
        std::unique_ptr<Cursor> cursor;
        const sonde_memref_t *p = nullptr;
        size_t left = 0;
        uint64_t last_ts = 0;
        bool done = false;
    };
    std::vector<State> st(shards_.size());
    for (size_t i = 0; i < shards_.size(); ++i)
        st[i].cursor = std::make_unique<Cursor>(shards_[i], static_cast<uint32_t>(i));
    LegacyView legacy;
    auto eff = [](const State &s, const sonde_memref_t &m) {
        return m.timestamp != 0 ? m.timestamp : s.last_ts;
    };
    for (;;) {
        size_t best = SIZE_MAX;
        uint64_t best_ts = 0;
        size_t second = SIZE_MAX;
        uint64_t second_ts = UINT64_MAX;
        for (size_t i = 0; i < st.size(); ++i) {
            State &s = st[i];
            if (s.done) continue;
            if (s.left == 0) {
                s.left = s.cursor->next(&s.p);
                if (s.left == 0) {
                    s.done = true;
                    if (s.cursor->status() != SONDE_STATUS_SUCCESS) {
                        error = s.cursor->error();
                        return s.cursor->status();
                    }
                    continue;
                }
            }
            const uint64_t ts = eff(s, *s.p);
            if (best == SIZE_MAX || ts < best_ts) {
                second = best;
                second_ts = best_ts;
                best = i;
                best_ts = ts;
            } else if (second == SIZE_MAX || ts < second_ts) {
                second = i;
                second_ts = ts;
            }
        }
        if (best == SIZE_MAX) return SONDE_STATUS_SUCCESS;
        State &s = st[best];
        // Records up to `bound` stay ahead of the second shard; equal timestamps go to the lower
        // shard first (best < second by the scan order when their timestamps tie).
        const bool inclusive = second == SIZE_MAX || best < second;
        const uint64_t bound = second == SIZE_MAX ? UINT64_MAX : second_ts;
        size_t n = 0;
        uint64_t last = s.last_ts;
        while (n < s.left) {
            const uint64_t ts = s.p[n].timestamp != 0 ? s.p[n].timestamp : last;
            if (n > 0 && (inclusive ? ts > bound : ts >= bound)) break;
            last = ts;
            ++n;
        }
        s.last_ts = last;
        const sonde_memref_t *lv = nullptr;  // the span's 1.0 view, made once for all 1.0 tools
        size_t ln = 0;
        for (const auto &t : tools_) {
            bool ok = true;
            if (!t->full_model && lv == nullptr) lv = legacy.view(s.p, n, &ln);
            const sonde_memref_t *v = t->full_model ? s.p : lv;
            const size_t vn = t->full_model ? n : ln;
            if (vn == 0) continue;
            if (t->ops.process_memrefs != nullptr) {
                ok = t->ops.process_memrefs(t->data, v, vn);
            } else {
                for (size_t k = 0; k < vn && ok; ++k) ok = t->ops.process_memref(t->data, &v[k]);
            }
            if (!ok) {
                error = tool_message(*t, "process_memref", global_error(*t));
                return SONDE_STATUS_ERROR_TOOL;
            }
        }
        s.p += n;
        s.left -= n;
    }
}

// Parallel mode: worker w takes shards w, w + n, w + 2n, ... in order. After a failure anywhere
// the workers stop reading, but still call parallel_shard_exit / parallel_worker_exit for every
// shard and worker they initialised so tools can free their data (those results are ignored).
sonde_status_t Analyzer::run_parallel(uint32_t nworkers) {
    Failure failure;
    auto worker = [&](uint32_t w) {
        const size_t nt = tools_.size();
        LegacyView legacy;
        std::vector<void *> wdata(nt, nullptr);
        size_t inited = 0;
        for (; inited < nt; ++inited) {
            Tool &t = *tools_[inited];
            if (t.ops.parallel_worker_init != nullptr &&
                !t.ops.parallel_worker_init(t.data, w, &wdata[inited])) {
                failure.set(SONDE_STATUS_ERROR_TOOL,
                            tool_message(t, "parallel_worker_init", global_error(t)));
                break;
            }
        }
        std::vector<void *> sdata(nt, nullptr);
        for (size_t s = w;
             inited == nt && s < shards_.size() && !failure.stop.load(std::memory_order_relaxed);
             s += nworkers) {
            size_t sinit = 0;
            for (; sinit < nt; ++sinit) {
                Tool &t = *tools_[sinit];
                sdata[sinit] = nullptr;
                if (t.ops.parallel_shard_init != nullptr &&
                    !t.ops.parallel_shard_init(t.data, static_cast<uint32_t>(s), wdata[sinit],
                                               &sdata[sinit])) {
                    failure.set(SONDE_STATUS_ERROR_TOOL,
                                tool_message(t, "parallel_shard_init", global_error(t)));
                    break;
                }
            }
            if (sinit == nt) {
                Cursor cursor(shards_[s], static_cast<uint32_t>(s));
                const sonde_memref_t *p = nullptr;
                size_t n;
                while (!failure.stop.load(std::memory_order_relaxed) && (n = cursor.next(&p)) != 0) {
                    const sonde_memref_t *lv = nullptr;  // the span's 1.0 view, made once
                    size_t ln = 0;
                    for (size_t ti = 0; ti < nt; ++ti) {
                        Tool &t = *tools_[ti];
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
                            failure.set(SONDE_STATUS_ERROR_TOOL, tool_message(t, "parallel_shard_memref", m));
                            break;
                        }
                    }
                }
                if (cursor.status() != SONDE_STATUS_SUCCESS) failure.set(cursor.status(), cursor.error());
            }
            for (size_t ti = 0; ti < sinit; ++ti) {
                Tool &t = *tools_[ti];
                if (t.ops.parallel_shard_exit != nullptr && !t.ops.parallel_shard_exit(t.data, sdata[ti])) {
                    const char *m = t.ops.parallel_shard_error != nullptr
                                        ? t.ops.parallel_shard_error(t.data, sdata[ti])
                                        : nullptr;
                    failure.set(SONDE_STATUS_ERROR_TOOL, tool_message(t, "parallel_shard_exit", m));
                }
            }
        }
        for (size_t ti = 0; ti < inited; ++ti) {
            Tool &t = *tools_[ti];
            if (t.ops.parallel_worker_exit != nullptr && !t.ops.parallel_worker_exit(t.data, wdata[ti]))
                failure.set(SONDE_STATUS_ERROR_TOOL,
                            tool_message(t, "parallel_worker_exit", global_error(t)));
        }
    };
    std::vector<std::thread> threads;
    try {
        for (uint32_t w = 1; w < nworkers; ++w) threads.emplace_back(worker, w);
    } catch (...) {
        failure.set(SONDE_STATUS_ERROR_OUT_OF_MEMORY, "could not start worker threads");
    }
    worker(0);
    for (auto &th : threads) th.join();
    if (failure.status != SONDE_STATUS_SUCCESS) {
        error = failure.message;
        return failure.status;
    }
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Analyzer::print_results(void *stream) {
    if (!succeeded) {
        error = "no successful run";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    for (const auto &t : tools_) {
        if (t->ops.print_results != nullptr && !t->ops.print_results(t->data, stream)) {
            error = tool_message(*t, "print_results", global_error(*t));
            return SONDE_STATUS_ERROR_TOOL;
        }
    }
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Analyzer::results_json(std::string *out) {
    if (!succeeded) {
        error = "no successful run";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    nlohmann::json all = nlohmann::json::object();
    for (const auto &t : tools_) {
        if (t->ops.results_json == nullptr) continue;
        const char *text = t->ops.results_json(t->data);
        nlohmann::json j = nlohmann::json::parse(nonnull(text), nullptr, false);
        if (j.is_discarded() || !j.is_object()) {
            error = t->name + ": results_json is not a JSON object";
            return SONDE_STATUS_ERROR_TOOL;
        }
        all[t->name] = std::move(j);
    }
    *out = all.dump(2);
    return SONDE_STATUS_SUCCESS;
}

}  // namespace sonde::analysis
