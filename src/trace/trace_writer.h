// The Sonde trace writer: per-shard pending chunks, zstd compression, the index and footer.
// Thread-safety: every public member takes the writer's lock, so the buffer consumer may run
// on any delivering thread while the owner writes from another.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <sonde/status.h>
#include <sonde/trace.h>
#include <sonde/trace_events.h>

#include "trace/source.h"
#include "trace/trace_tables.h"

namespace sonde::trace {

class TraceWriter {
public:
    // Opens `path` (truncating); status() says whether it worked.
    TraceWriter(const std::string &path, int level, uint32_t chunk_records);
    // Reopens the complete trace `path` to add to it: its blocks stay where they are; what is
    // added (tables, events, records) is written from the start of its extension index (or its
    // index), then the indexes, listing the old blocks and the new, and the footer; the header's
    // minor version becomes this writer's when it was older. SUCCESS and *out, or the status of
    // read_append_point() (or SONDE_STATUS_ERROR_IO when the file cannot be opened for writing)
    // with *error saying why.
    static sonde_status_t reopen(const std::string &path, std::unique_ptr<TraceWriter> *out,
                                 std::string *error);
    ~TraceWriter();
    TraceWriter(const TraceWriter &) = delete;
    TraceWriter &operator=(const TraceWriter &) = delete;

    // Appends to a shard; compresses and writes each chunk as it fills. Cost: one copy into
    // the pending chunk per record; compression per chunk. Running out of memory here, in
    // write_events() or flush_tables() stops the writer with OUT_OF_MEMORY (later calls answer
    // PHASE_FAILURE; the file stays a truncated trace), as a write error does.
    sonde_status_t write(uint32_t shard, const sonde_memref_t *memrefs, size_t count);
    // Appends the MEMREF records of one delivered span (buffer consumer). A failure (write
    // error, out of memory, corrupted record) stops the writer like any other; the records of
    // the span that were not taken, and every MEMREF record of later spans, are counted as not
    // written (error() says how many). Throws nothing but a lock failure.
    void consume(const sonde_record_header_t *begin, const sonde_record_header_t *end);
    // Appends program events to an event shard; full chunks are written after the pending
    // table entries. Cost as write().
    sonde_status_t write_events(uint32_t shard, const sonde_trace_event_t *events, size_t count);
    // Table entries: kept pending and written as TABL blocks before the next event chunk and
    // at finish(). add_string interns: equal texts get one id.
    sonde_status_t add_string(const std::string &text, uint32_t *id);
    sonde_status_t add_method(MethodEntry e);
    sonde_status_t add_module(ModuleEntry e);
    sonde_status_t add_thread(ThreadEntry e);
    sonde_status_t add_api_function(ApiFunctionEntry e);
    // A line table entry; `file` is interned in the string table (e.file is set to its id).
    sonde_status_t add_line(LineEntry e, const std::string &file);
    // Writes the pending tables now (a recorder calls it so that a cut trace keeps them).
    sonde_status_t flush_tables();
    // Flushes pending chunks, writes index and footer, closes the file. Idempotent. The file
    // is closed whatever fails; running out of memory answers OUT_OF_MEMORY (the file is then a
    // truncated trace, like after a write error).
    sonde_status_t finish();

    sonde_status_t status() const;
    // The first failure's message; for a writer fed by consume(), followed by how many memory
    // references it was given that are not in the file.
    std::string error() const;
    // Bytes written so far (header, chunks, and after finish() index and footer).
    uint64_t bytes_written() const;

private:
    struct IndexEntry {
        uint64_t offset;
        uint32_t shard;
        uint32_t records;
        uint64_t first_ts;
        uint64_t last_ts;
    };
    struct FreeCCtx {
        void operator()(void *cctx) const noexcept;
    };
    // reopen(): the writer of a trace resumed at `at`.
    TraceWriter(const std::string &path, const AppendPoint &at);
    // The string's id, interning it when it is new.
    uint32_t intern_locked(const std::string &text);
    // A reopened trace whose header's minor version is older: the header says this writer's.
    void upgrade_header_locked();
    sonde_status_t fail_locked(sonde_status_t s, const std::string &msg);
    // fail_locked for the paths that must not throw (a handler of std::bad_alloc): the message
    // is "PATH: WHAT" when it can be allocated, else error() makes one from the status.
    void fail_nothrow_locked(sonde_status_t s, const char *what) noexcept;
    void consume_locked(const sonde_record_header_t *begin, const sonde_record_header_t *end);
    sonde_status_t append_events_locked(uint32_t shard, const sonde_trace_event_t *events, size_t count);
    // Runs `body`; std::bad_alloc stops the writer (OUT_OF_MEMORY) instead of leaving records
    // of a call half-taken.
    template <typename F>
    sonde_status_t stop_on_throw_locked(const char *what, F &&body);
    void finish_locked();
    // Memory references given to the writer that will not reach the file.
    uint64_t lost_locked() const;
    sonde_status_t flush_shard_locked(uint32_t shard, std::vector<sonde_memref_t> &pending);
    sonde_status_t write_all_locked(const void *data, size_t size);
    sonde_status_t append_locked(uint32_t shard, const sonde_memref_t *memrefs, size_t count);
    sonde_status_t flush_events_locked(uint32_t shard, std::vector<sonde_trace_event_t> &pending);
    sonde_status_t flush_tables_locked();
    sonde_status_t write_table_locked(uint32_t type, uint32_t count, const std::vector<unsigned char> &raw);
    sonde_status_t write_ext_index_locked(uint64_t *offset);
    sonde_status_t writable_locked() const;

    mutable std::mutex mutex_;
    std::string path_;
    int fd_ = -1;
    int level_;
    uint32_t chunk_records_;
    uint64_t offset_ = 0;
    bool finished_ = false;
    sonde_status_t status_ = SONDE_STATUS_SUCCESS;
    std::string error_;
    std::unique_ptr<void, FreeCCtx> cctx_;
    std::vector<unsigned char> cbuf_;
    std::vector<unsigned char> columns_;  // column-coded pending chunk
    std::map<uint32_t, std::vector<sonde_memref_t>> pending_;
    std::vector<IndexEntry> index_;
    uint32_t num_shards_ = 0;
    // Program events and tables.
    struct TableRef {
        uint64_t offset;
        uint32_t type;
        uint32_t count;
    };
    std::map<uint32_t, std::vector<sonde_trace_event_t>> pending_events_;
    std::vector<IndexEntry> event_index_;
    uint32_t num_event_shards_ = 0;
    std::vector<TableRef> table_index_;
    std::unordered_map<std::string, uint32_t> string_ids_;
    uint32_t next_string_id_ = 1;  // id 0 is ""
    bool reopened_ = false;
    uint32_t old_minor_ = 0;  // a reopened trace's header minor version
    std::vector<StringEntry> new_strings_;
    std::vector<ModuleEntry> new_modules_;
    std::vector<MethodEntry> new_methods_;
    std::vector<ThreadEntry> new_threads_;
    std::vector<ApiFunctionEntry> new_api_functions_;
    std::vector<LineEntry> new_lines_;
    // Buffer consumer: Sonde thread id -> dense shard, in order of first appearance.
    std::unordered_map<uint64_t, uint32_t> thread_shards_;
    // Accounting of memory references: taken into pending chunks, written in complete chunks,
    // and delivered to consume() but refused (after a failure, or the rest of the span that
    // failed). Pending records of a failed writer are lost too.
    uint64_t records_accepted_ = 0;
    uint64_t records_written_ = 0;
    uint64_t records_refused_ = 0;
    bool consumer_ = false;  // consume() has been called
};

}  // namespace sonde::trace
