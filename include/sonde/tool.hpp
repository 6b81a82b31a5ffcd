/**
 * @file tool.hpp
 * @brief Header-only C++ helper for analysis tool authors (C++11 and later): derive from
 * sonde::tool, override what the tool needs, and hand sonde::tool::ops() plus the object to the
 * analyzer (sonde_analyzer_add_tool_ops) or return them from sonde_tool_create.
 *
 * The helper turns exceptions into errors (a function that throws counts as answering false
 * with the exception's what() as its message; results_json() that throws makes the table's
 * results_json answer NULL, which the analyzer reports as SONDE_STATUS_ERROR_TOOL), wraps shard
 * data so that each shard carries its own error message (no locking needed), and deletes the
 * object in destroy(). No exception leaves the table's functions, also when memory runs out
 * while an error message is recorded (the message is then "out of memory").
 */
#ifndef SONDE_TOOL_HPP
#define SONDE_TOOL_HPP

#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>

#include <sonde/analysis.h>

namespace sonde {

/** @brief Base class of a C++ analysis tool; see analysis.h for the call order. @since 1.0 */
class tool {
public:
    /** @brief Virtual, so that destroy() deletes the derived object. @since 1.0 */
    virtual ~tool() {
        while (failed_boxes_ != nullptr) {
            shard_box *next = failed_boxes_->next_failed;
            delete failed_boxes_;
            failed_boxes_ = next;
        }
    }
    /** @brief The tool's name (the key of its results). @return A string that outlives the tool. */
    virtual const char *name() const = 0;
    /**
     * @brief Called once before any record.
     * @param num_shards Shards of all inputs. @return false on failure (see set_error()).
     */
    virtual bool initialize(uint32_t num_shards) {
        (void)num_shards;
        return true;
    }
    /**
     * @brief Serial mode: a batch of records of the interleaved stream.
     * @param memrefs The records. @param count How many. @return false on failure.
     */
    virtual bool process_memrefs(const sonde_memref_t *memrefs, size_t count) = 0;
    /**
     * @brief Writes a human summary to @p stream (a FILE *).
     * @param stream The FILE * to write to. @return false on failure.
     */
    virtual bool print_results(void *stream) {
        (void)stream;
        return true;
    }
    /**
     * @brief The results as a JSON object; an exception (e.g. std::bad_alloc) means no results.
     * @return The object's text.
     */
    virtual std::string results_json() { return "{}"; }
    /**
     * @brief Whether parallel mode is supported (then override the parallel_ functions).
     * @return true when supported.
     */
    virtual bool parallel_shard_supported() { return false; }
    /**
     * @brief Called once per worker; may set @p worker_data.
     * @param worker_index The worker (0-based). @param[out] worker_data The worker's data.
     * @return false on failure.
     */
    virtual bool parallel_worker_init(uint32_t worker_index, void **worker_data) {
        (void)worker_index;
        *worker_data = nullptr;
        return true;
    }
    /**
     * @brief Called once per worker after its last shard.
     * @param worker_data The worker's data. @return false on failure.
     */
    virtual bool parallel_worker_exit(void *worker_data) {
        (void)worker_data;
        return true;
    }
    /**
     * @brief Called before a shard's first record; may set @p shard_data.
     * @param shard The shard. @param worker_data Its worker's data.
     * @param[out] shard_data The shard's data. @return false on failure.
     */
    virtual bool parallel_shard_init(uint32_t shard, void *worker_data, void **shard_data) {
        (void)shard;
        (void)worker_data;
        *shard_data = nullptr;
        return true;
    }
    /**
     * @brief A batch of one shard's records, on the shard's worker.
     * @param shard_data The shard's data. @param memrefs The records. @param count How many.
     * @return false on failure.
     */
    virtual bool parallel_shard_memrefs(void *shard_data, const sonde_memref_t *memrefs, size_t count) {
        (void)shard_data;
        (void)memrefs;
        (void)count;
        return set_error("this tool does not process parallel shards (parallel_shard_supported is false)");
    }
    /**
     * @brief Called after a shard's last record.
     * @param shard_data The shard's data. @return false on failure.
     */
    virtual bool parallel_shard_exit(void *shard_data) {
        (void)shard_data;
        return true;
    }
    /**
     * @brief The memref model the tool understands (a sonde_memref_model_value): the default,
     * ::SONDE_MEMREF_MODEL_1_0, gives the 1.0 view of every trace; override it to return
     * ::SONDE_MEMREF_MODEL_1_2 for every record kind. @since 1.2
     * @return The model.
     */
    virtual uint32_t memref_model() const { return SONDE_MEMREF_MODEL_1_0; }
    /**
     * @brief sonde_tool_ops_t::parallel_shard_pieces: whether a shard may come in pieces, each
     * between its own parallel_shard_init() and parallel_shard_exit(), possibly on two workers
     * at once (merge them in parallel_shard_exit() under a lock). @since 1.2
     * @return true when the per-shard results add up over pieces.
     */
    virtual bool parallel_shard_pieces() const { return false; }
    /**
     * @brief Whether the tool runs in partitioned runs (then override partition(),
     * export_state() and merge_state(); slice_begin() when it needs slice boundaries). @since 1.2
     * @return true when supported.
     */
    virtual bool partition_supported() const { return false; }
    /**
     * @brief sonde_tool_ops_t::partition: the part this rank takes. @since 1.2
     * @param rank This rank. @param nranks Ranks. @param offers A sonde_partition_value.
     * @return @p offers, ::SONDE_PARTITION_EVERY_RECORD or ::SONDE_PARTITION_REFUSE (with
     * set_error()).
     */
    virtual uint32_t partition(uint32_t rank, uint32_t nranks, uint32_t offers) {
        (void)rank;
        (void)nranks;
        (void)offers;
        set_error("this tool does not run partitioned");
        return SONDE_PARTITION_REFUSE;
    }
    /**
     * @brief sonde_tool_ops_t::slice_begin: a slice of this rank begins. @since 1.2
     * @param slice The slice's number. @return false on failure.
     */
    virtual bool slice_begin(uint64_t slice) {
        (void)slice;
        return true;
    }
    /**
     * @brief sonde_tool_ops_t::export_state: this rank's partial state; an exception means
     * failure. @since 1.2
     * @return The bytes.
     */
    virtual std::string export_state() { throw std::logic_error("this tool does not run partitioned"); }
    /**
     * @brief sonde_tool_ops_t::merge_state: adds another rank's partial state. @since 1.2
     * @param state The bytes. @param size Their count. @return false on failure.
     */
    virtual bool merge_state(const void *state, size_t size) {
        (void)state;
        (void)size;
        return set_error("this tool does not run partitioned");
    }
    /**
     * @brief Whether the tool follows a shard count that grows during a live run (then
     * override add_shards()). @since 1.2
     * @return true when supported.
     */
    virtual bool add_shards_supported() const { return false; }
    /**
     * @brief sonde_tool_ops_t::add_shards: the shard count grew to @p num_shards; shard data
     * handed out before must stay where it is. @since 1.2
     * @param num_shards The new count. @return false on failure.
     */
    virtual bool add_shards(uint32_t num_shards) {
        (void)num_shards;
        return true;
    }
    /**
     * @brief The message of a failed shard function (for failures reported by false).
     * @param shard_data The shard's data. @return The message.
     */
    virtual std::string parallel_shard_error(void *shard_data) {
        (void)shard_data;
        return "shard function failed";
    }

    /**
     * @brief The function table that forwards to a sonde::tool object (the tool data pointer).
     * @return The table (static storage).
     */
    static const sonde_tool_ops_t *ops() {
        static const sonde_tool_ops_t table = make_ops();
        return &table;
    }

protected:
    /**
     * @brief Records @p message as the tool's error (thread-safe) and returns false.
     * @param message The error. @return false.
     */
    bool set_error(const std::string &message) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        error_ = message;
        out_of_memory_ = false;
        return false;
    }

private:
    struct shard_box {
        void *data;
        std::string error;
        bool out_of_memory;
        shard_box *next_failed;
    };
    std::mutex error_mutex_;
    // Boxes of shards whose exit failed: parallel_shard_error() reads them after the exit, so
    // they live until the tool does (a list through the boxes: keeping one allocates nothing).
    shard_box *failed_boxes_ = nullptr;  // guarded by error_mutex_
    std::string error_;
    bool out_of_memory_ = false;  // the last message could not be stored
    std::string json_;
    std::string state_;  // the last export_state()
    std::string name_copy_;

    static tool *self(void *t) { return static_cast<tool *>(t); }
    // Stores a message without throwing: when the copy runs out of memory, "out of memory".
    static void keep(std::string *to, bool *out_of_memory, const char *message) {
        try {
            *to = message;
            *out_of_memory = false;
        } catch (...) {
            to->clear();
            *out_of_memory = true;
        }
    }
    bool note_error(const char *message) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        keep(&error_, &out_of_memory_, message);
        return false;
    }
    template <typename F>
    static bool call(tool *t, F f) {
        try {
            return f();
        } catch (const std::exception &e) {
            return t->note_error(e.what());
        } catch (...) {
            return t->note_error("unknown exception");
        }
    }
    template <typename F>
    static bool call_shard(shard_box *box, F f) {
        try {
            return f();
        } catch (const std::exception &e) {
            keep(&box->error, &box->out_of_memory, e.what());
        } catch (...) {
            keep(&box->error, &box->out_of_memory, "unknown exception");
        }
        return false;
    }

    static bool t_initialize(void *t, uint32_t n) {
        return call(self(t), [&] { return self(t)->initialize(n); });
    }
    static bool t_process_memref(void *t, const sonde_memref_t *m) {
        return call(self(t), [&] { return self(t)->process_memrefs(m, 1); });
    }
    static bool t_process_memrefs(void *t, const sonde_memref_t *m, size_t n) {
        return call(self(t), [&] { return self(t)->process_memrefs(m, n); });
    }
    static bool t_print_results(void *t, void *stream) {
        return call(self(t), [&] { return self(t)->print_results(stream); });
    }
    static bool t_supported(void *t) {
        try {
            return self(t)->parallel_shard_supported();
        } catch (...) {
            return false;
        }
    }
    static bool t_worker_init(void *t, uint32_t w, void **wd) {
        return call(self(t), [&] { return self(t)->parallel_worker_init(w, wd); });
    }
    static bool t_worker_exit(void *t, void *wd) {
        return call(self(t), [&] { return self(t)->parallel_worker_exit(wd); });
    }
    static bool t_shard_init(void *t, uint32_t s, void *wd, void **sd) {
        shard_box *box = nullptr;
        try {
            box = new shard_box();
            box->data = nullptr;
            box->out_of_memory = false;
            box->next_failed = nullptr;
        } catch (...) {
            return self(t)->note_error("out of memory");
        }
        // A failed shard init gets no parallel_shard_exit: the box goes now.
        if (!call(self(t), [&] { return self(t)->parallel_shard_init(s, wd, &box->data); })) {
            delete box;
            *sd = nullptr;
            return false;
        }
        *sd = box;
        return true;
    }
    static bool t_shard_memref(void *t, void *sd, const sonde_memref_t *m) {
        shard_box *box = static_cast<shard_box *>(sd);
        return call_shard(box, [&] { return self(t)->parallel_shard_memrefs(box->data, m, 1); });
    }
    static bool t_shard_memrefs(void *t, void *sd, const sonde_memref_t *m, size_t n) {
        shard_box *box = static_cast<shard_box *>(sd);
        return call_shard(box, [&] { return self(t)->parallel_shard_memrefs(box->data, m, n); });
    }
    static bool t_shard_exit(void *t, void *sd) {
        shard_box *box = static_cast<shard_box *>(sd);
        bool ok = call_shard(box, [&] { return self(t)->parallel_shard_exit(box->data); });
        if (ok) {
            delete box;
        } else {  // kept for parallel_shard_error(); freed with the tool
            std::lock_guard<std::mutex> lock(self(t)->error_mutex_);
            box->next_failed = self(t)->failed_boxes_;
            self(t)->failed_boxes_ = box;
        }
        return ok;
    }
    static const char *t_shard_error(void *t, void *sd) {
        shard_box *box = static_cast<shard_box *>(sd);
        if (box->out_of_memory) return "out of memory";
        if (box->error.empty()) {
            try {
                box->error = self(t)->parallel_shard_error(box->data);
            } catch (...) {
                return "shard function failed";
            }
        }
        return box->error.c_str();
    }
    static const char *t_error_string(void *t) {
        std::lock_guard<std::mutex> lock(self(t)->error_mutex_);
        return self(t)->out_of_memory_ ? "out of memory" : self(t)->error_.c_str();
    }
    static const char *t_results_json(void *t) {
        try {
            self(t)->json_ = self(t)->results_json();
        } catch (const std::exception &e) {
            self(t)->json_.clear();
            self(t)->note_error(e.what());
            return nullptr;
        } catch (...) {
            self(t)->json_.clear();
            self(t)->note_error("unknown exception");
            return nullptr;
        }
        return self(t)->json_.c_str();
    }
    static void t_destroy(void *t) { delete self(t); }
    static uint32_t t_memref_model(void *t) {
        try {
            return self(t)->memref_model();
        } catch (...) {
            return SONDE_MEMREF_MODEL_1_0;
        }
    }

    static bool t_shard_pieces(void *t) { return self(t)->parallel_shard_pieces(); }
    static uint32_t t_partition(void *t, uint32_t rank, uint32_t nranks, uint32_t offers) {
        try {
            return self(t)->partition(rank, nranks, offers);
        } catch (const std::exception &e) {
            self(t)->note_error(e.what());
        } catch (...) {
            self(t)->note_error("unknown exception");
        }
        return SONDE_PARTITION_REFUSE;
    }
    static bool t_slice_begin(void *t, uint64_t slice) {
        return call(self(t), [&] { return self(t)->slice_begin(slice); });
    }
    static const void *t_export_state(void *t, size_t *size) {
        *size = 0;
        try {
            self(t)->state_ = self(t)->export_state();
        } catch (const std::exception &e) {
            self(t)->state_.clear();
            self(t)->note_error(e.what());
            return nullptr;
        } catch (...) {
            self(t)->state_.clear();
            self(t)->note_error("unknown exception");
            return nullptr;
        }
        *size = self(t)->state_.size();
        return self(t)->state_.data();
    }
    static bool t_merge_state(void *t, const void *state, size_t size) {
        return call(self(t), [&] { return self(t)->merge_state(state, size); });
    }
    static bool t_add_shards(void *t, uint32_t n) {
        return call(self(t), [&] { return self(t)->add_shards(n); });
    }

    static sonde_tool_ops_t make_ops() {
        sonde_tool_ops_t o = sonde_tool_ops_t();
        o.struct_size = static_cast<uint32_t>(sizeof(sonde_tool_ops_t));
        o.name = nullptr;  // table() fills in the object's name
        o.initialize = t_initialize;
        o.process_memref = t_process_memref;
        o.print_results = t_print_results;
        o.parallel_shard_supported = t_supported;
        o.parallel_worker_init = t_worker_init;
        o.parallel_worker_exit = t_worker_exit;
        o.parallel_shard_init = t_shard_init;
        o.parallel_shard_memref = t_shard_memref;
        o.parallel_shard_exit = t_shard_exit;
        o.parallel_shard_error = t_shard_error;
        o.get_error_string = t_error_string;
        o.process_memrefs = t_process_memrefs;
        o.parallel_shard_memrefs = t_shard_memrefs;
        o.results_json = t_results_json;
        o.destroy = t_destroy;
        return o;
    }

public:
    /**
     * @brief A table for this object with its name filled in: pass the result and `this` to
     * sonde_analyzer_add_tool_ops(), or return them from sonde_tool_create. The table lives in
     * the object (valid until destroy()). A tool that keeps the 1.0 memref model gets a table
     * of ::SONDE_TOOL_OPS_SIZE_1_0 bytes, so it also loads into a 1.0 or 1.1 library; one that
     * asks for a later model, runs partitioned (partition_supported()), takes shards in pieces
     * (parallel_shard_pieces()) or follows live shards (add_shards_supported()) gets the whole
     * table.
     * @return The table.
     */
    const sonde_tool_ops_t *table() {
        ops_ = *ops();
        name_copy_ = name();
        ops_.name = name_copy_.c_str();
        if (memref_model() != SONDE_MEMREF_MODEL_1_0 || partition_supported() || parallel_shard_pieces() ||
            add_shards_supported()) {
            ops_.memref_model = t_memref_model;
        } else {
            ops_.struct_size = SONDE_TOOL_OPS_SIZE_1_0;
        }
        if (partition_supported()) {
            ops_.partition = t_partition;
            ops_.slice_begin = t_slice_begin;
            ops_.export_state = t_export_state;
            ops_.merge_state = t_merge_state;
        }
        if (parallel_shard_pieces()) ops_.parallel_shard_pieces = t_shard_pieces;
        if (add_shards_supported()) ops_.add_shards = t_add_shards;
        return &ops_;
    }

private:
    sonde_tool_ops_t ops_;
};

}  // namespace sonde

#endif /* SONDE_TOOL_HPP */
