// The Sonde trace writer (see trace_writer.h and docs/trace-format.md).
#include "trace/trace_writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "trace/trace_format.h"

namespace sonde::trace {

void TraceWriter::FreeCCtx::operator()(void *cctx) const noexcept {
    ZSTD_freeCCtx(static_cast<ZSTD_CCtx *>(cctx));
}

TraceWriter::TraceWriter(const std::string &path, int level, uint32_t chunk_records)
    : path_(path), level_(level), chunk_records_(chunk_records) {
    // What can run out of memory comes before the file is created: a writer that cannot be
    // made leaves no descriptor behind.
    cctx_.reset(ZSTD_createCCtx());
    if (!cctx_) throw std::bad_alloc();
    string_ids_.emplace(std::string(), 0u);
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        fail_locked(SONDE_STATUS_ERROR_IO, path + ": cannot create: " + std::strerror(errno));
        return;
    }
    unsigned char header[fmt::kHeaderSize] = {};
    std::memcpy(header, fmt::kFileMagic, 8);
    fmt::store32(header + 8, fmt::kVersion);
    fmt::store32(header + 12, static_cast<uint32_t>(fmt::kHeaderSize));
    fmt::store32(header + 16, fmt::kRecordSize);
    fmt::store32(header + 20, 0);  // flags
    fmt::store32(header + 24, chunk_records_);
    fmt::store32(header + 28, fmt::kMinorVersion);
    fmt::store64(header + 56, fmt::checksum64(header, 56));
    try {
        write_all_locked(header, sizeof header);  // its error message allocates
    } catch (...) {
        ::close(fd_);
        fd_ = -1;
        throw;
    }
}

TraceWriter::TraceWriter(const std::string &path, const AppendPoint &at)
    : path_(path),
      level_(fmt::kDefaultLevel),
      chunk_records_(at.chunk_records == 0 || at.chunk_records > fmt::kMaxChunkRecords
                         ? fmt::kDefaultChunkRecords
                         : at.chunk_records) {
    cctx_.reset(ZSTD_createCCtx());
    if (!cctx_) throw std::bad_alloc();
    for (const AppendPoint::Chunk &c : at.chunks)
        index_.push_back(IndexEntry{c.offset, c.shard, c.records, c.first_ts, c.last_ts});
    for (const AppendPoint::Chunk &c : at.event_chunks)
        event_index_.push_back(IndexEntry{c.offset, c.shard, c.records, c.first_ts, c.last_ts});
    for (const AppendPoint::Table &t : at.tables) table_index_.push_back(TableRef{t.offset, t.type, t.count});
    num_shards_ = at.num_shards;
    num_event_shards_ = at.num_event_shards;
    for (size_t id = 0; id < at.strings.size(); ++id)
        string_ids_.emplace(at.strings[id], static_cast<uint32_t>(id));
    string_ids_.emplace(std::string(), 0u);
    next_string_id_ = static_cast<uint32_t>(std::max<size_t>(at.strings.size(), 1));
    reopened_ = true;
    old_minor_ = at.minor;
    fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) {
        fail_locked(SONDE_STATUS_ERROR_IO, path + ": cannot open for writing: " + std::strerror(errno));
        return;
    }
    if (::lseek(fd_, static_cast<off_t>(at.resume_offset), SEEK_SET) < 0) {
        fail_locked(SONDE_STATUS_ERROR_IO, path + ": cannot seek: " + std::strerror(errno));
        return;
    }
    offset_ = at.resume_offset;
}

sonde_status_t TraceWriter::reopen(const std::string &path, std::unique_ptr<TraceWriter> *out,
                                   std::string *error) {
    AppendPoint at;
    const sonde_status_t s = read_append_point(path, &at, error);
    if (s != SONDE_STATUS_SUCCESS) return s;
    std::unique_ptr<TraceWriter> w(new TraceWriter(path, at));
    if (w->status() != SONDE_STATUS_SUCCESS) {
        *error = w->error();
        return w->status();
    }
    *out = std::move(w);
    return SONDE_STATUS_SUCCESS;
}

void TraceWriter::upgrade_header_locked() {
    unsigned char header[fmt::kHeaderSize];
    if (::pread(fd_, header, sizeof header, 0) != static_cast<ssize_t>(sizeof header)) {
        fail_locked(SONDE_STATUS_ERROR_IO,
                    fmt::at(path_, 0, std::string("cannot read the header: ") + std::strerror(errno)));
        return;
    }
    fmt::store32(header + 28, fmt::kMinorVersion);
    fmt::store64(header + 56, fmt::checksum64(header, 56));
    if (::pwrite(fd_, header, sizeof header, 0) != static_cast<ssize_t>(sizeof header))
        fail_locked(SONDE_STATUS_ERROR_IO,
                    fmt::at(path_, 0, std::string("write failed: ") + std::strerror(errno)));
}

TraceWriter::~TraceWriter() { finish(); }

sonde_status_t TraceWriter::fail_locked(sonde_status_t s, const std::string &msg) {
    if (status_ == SONDE_STATUS_SUCCESS) {
        status_ = s;
        error_ = msg;
    }
    return s;
}

void TraceWriter::fail_nothrow_locked(sonde_status_t s, const char *what) noexcept {
    if (status_ != SONDE_STATUS_SUCCESS) return;
    status_ = s;
    try {
        error_ = path_ + ": " + what;
    } catch (...) {
        error_.clear();  // error() names the status instead
    }
}

uint64_t TraceWriter::lost_locked() const {
    return records_refused_ + (status_ != SONDE_STATUS_SUCCESS ? records_accepted_ - records_written_ : 0);
}

sonde_status_t TraceWriter::write_all_locked(const void *data, size_t size) {
    const auto *p = static_cast<const unsigned char *>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd_, p, size);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail_locked(SONDE_STATUS_ERROR_IO,
                               fmt::at(path_, offset_, std::string("write failed: ") + std::strerror(errno)));
        }
        p += n;
        size -= static_cast<size_t>(n);
        offset_ += static_cast<uint64_t>(n);
    }
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t TraceWriter::flush_shard_locked(uint32_t shard, std::vector<sonde_memref_t> &pending) {
    if (pending.empty()) return SONDE_STATUS_SUCCESS;
    const size_t raw = pending.size() * fmt::kRecordSize;
    if (columns_.size() < raw) columns_.resize(raw);
    fmt::encode_columns(pending.data(), pending.size(), columns_.data());
    const size_t bound = ZSTD_compressBound(raw);
    if (cbuf_.size() < fmt::kChunkHeaderSize + bound) cbuf_.resize(fmt::kChunkHeaderSize + bound);
    const size_t csize =
        ZSTD_compressCCtx(static_cast<ZSTD_CCtx *>(cctx_.get()), cbuf_.data() + fmt::kChunkHeaderSize, bound,
                          columns_.data(), raw, level_);
    fmt::throw_if_zstd_out_of_memory(csize);
    if (ZSTD_isError(csize))
        return fail_locked(SONDE_STATUS_ERROR_IO,
                           path_ + ": zstd compression failed: " + ZSTD_getErrorName(csize));
    fmt::ChunkHeader h;
    h.shard = shard;
    h.records = static_cast<uint32_t>(pending.size());
    h.compressed_size = static_cast<uint32_t>(csize);
    h.first_ts = pending.front().timestamp;
    h.last_ts = pending.back().timestamp;
    h.payload_checksum = fmt::checksum64(cbuf_.data() + fmt::kChunkHeaderSize, csize);
    fmt::encode_chunk_header(h, cbuf_.data());
    const IndexEntry e{offset_, shard, h.records, h.first_ts, h.last_ts};
    // Room for the entry first: once the chunk is on disk, nothing can fail.
    if (index_.size() == index_.capacity()) index_.reserve(2 * index_.size() + 16);
    const sonde_status_t s = write_all_locked(cbuf_.data(), fmt::kChunkHeaderSize + csize);
    if (s != SONDE_STATUS_SUCCESS) return s;
    index_.push_back(e);
    records_written_ += h.records;
    pending.clear();
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t TraceWriter::append_locked(uint32_t shard, const sonde_memref_t *memrefs, size_t count) {
    if (status_ != SONDE_STATUS_SUCCESS) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    if (finished_) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    if (shard >= num_shards_) num_shards_ = shard + 1;
    auto &pending = pending_[shard];
    if (pending.capacity() < chunk_records_) pending.reserve(chunk_records_);
    while (count > 0) {
        const size_t room = chunk_records_ - pending.size();
        const size_t n = count < room ? count : room;
        const size_t old = pending.size();
        pending.resize(old + n);
        std::memcpy(pending.data() + old, memrefs, n * sizeof(sonde_memref_t));
        records_accepted_ += n;
        memrefs += n;
        count -= n;
        if (pending.size() == chunk_records_) {
            const sonde_status_t s = flush_shard_locked(shard, pending);
            if (s != SONDE_STATUS_SUCCESS) return s;
        }
    }
    return SONDE_STATUS_SUCCESS;
}

template <typename F>
sonde_status_t TraceWriter::stop_on_throw_locked(const char *what, F &&body) {
    try {
        return body();
    } catch (const std::bad_alloc &) {
        fail_nothrow_locked(SONDE_STATUS_ERROR_OUT_OF_MEMORY, what);
        return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    }
}

sonde_status_t TraceWriter::write(uint32_t shard, const sonde_memref_t *memrefs, size_t count) {
    std::lock_guard<std::mutex> lock(mutex_);
    return stop_on_throw_locked("out of memory while appending records",
                                [&] { return append_locked(shard, memrefs, count); });
}

namespace {

// MEMREF records of a delivered span, up to its first invalid header (what consume_locked
// would take). Allocates nothing.
uint64_t count_memrefs(const sonde_record_header_t *begin, const sonde_record_header_t *end) {
    uint64_t n = 0;
    const auto *p = reinterpret_cast<const unsigned char *>(begin);
    const auto *e = reinterpret_cast<const unsigned char *>(end);
    while (p + sizeof(sonde_record_header_t) <= e) {
        const auto *rec = reinterpret_cast<const sonde_record_header_t *>(p);
        if (rec->size < sizeof(sonde_record_header_t) || rec->size % 8 != 0 ||
            rec->size > static_cast<size_t>(e - p))
            break;
        uint32_t psize = 0;
        if (rec->kind == SONDE_RECORD_KIND_MEMREF && sonde_record_payload(rec, &psize) != nullptr &&
            psize >= sizeof(sonde_memref_record_t))
            ++n;
        p += rec->size;
    }
    return n;
}

}  // namespace

void TraceWriter::consume(const sonde_record_header_t *begin, const sonde_record_header_t *end) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (begin == nullptr || end == nullptr) return;
    consumer_ = true;
    if (status_ != SONDE_STATUS_SUCCESS || finished_) {
        records_refused_ += count_memrefs(begin, end);
        return;
    }
    const uint64_t accepted_before = records_accepted_;
    try {
        consume_locked(begin, end);
    } catch (const std::bad_alloc &) {
        fail_nothrow_locked(SONDE_STATUS_ERROR_OUT_OF_MEMORY,
                            "out of memory while appending a delivered span");
    } catch (...) {
        fail_nothrow_locked(SONDE_STATUS_ERROR, "unexpected failure while appending a delivered span");
    }
    if (status_ != SONDE_STATUS_SUCCESS) {
        // What the span held beyond what was taken before the failure is not written.
        const uint64_t span = count_memrefs(begin, end), taken = records_accepted_ - accepted_before;
        records_refused_ += span > taken ? span - taken : 0;
    }
}

void TraceWriter::consume_locked(const sonde_record_header_t *begin, const sonde_record_header_t *end) {
    uint32_t shard = 0;
    bool have_thread = false;
    const auto *p = reinterpret_cast<const unsigned char *>(begin);
    const auto *e = reinterpret_cast<const unsigned char *>(end);
    sonde_memref_t batch[256];
    size_t n = 0;
    while (p + sizeof(sonde_record_header_t) <= e) {
        const auto *rec = reinterpret_cast<const sonde_record_header_t *>(p);
        if (rec->size < sizeof(sonde_record_header_t) || rec->size % 8 != 0 ||
            rec->size > static_cast<size_t>(e - p)) {
            fail_locked(
                SONDE_STATUS_ERROR_RECORD_CORRUPTED,
                path_ + ": delivered span holds a record with invalid size " + std::to_string(rec->size));
            break;
        }
        uint32_t psize = 0;
        const void *payload = sonde_record_payload(rec, &psize);
        if (rec->kind == SONDE_RECORD_KIND_THREAD && payload != nullptr &&
            psize >= sizeof(sonde_thread_record_t)) {
            if (n > 0 && have_thread) {
                if (append_locked(shard, batch, n) != SONDE_STATUS_SUCCESS) return;
                n = 0;
            }
            sonde_thread_record_t t;
            std::memcpy(&t, payload, sizeof t);
            auto it = thread_shards_.find(t.thread_id);
            if (it == thread_shards_.end())
                it = thread_shards_.emplace(t.thread_id, static_cast<uint32_t>(thread_shards_.size())).first;
            shard = it->second;
            have_thread = true;
        } else if (rec->kind == SONDE_RECORD_KIND_MEMREF && payload != nullptr &&
                   psize >= sizeof(sonde_memref_record_t)) {
            sonde_memref_record_t m;
            std::memcpy(&m, payload, sizeof m);
            if (m.type > SONDE_MEMREF_IFETCH) {
                fail_locked(SONDE_STATUS_ERROR_RECORD_CORRUPTED,
                            path_ + ": delivered span holds a MEMREF record of type " +
                                std::to_string(m.type) + " (a memory reference is of type 0 to 3)");
                break;
            }
            sonde_memref_t &out = batch[n++];
            out.address = m.address;
            out.pc = m.pc;
            out.timestamp = 0;
            if (rec->flags & SONDE_RECORD_FLAG_TIMESTAMP) sonde_record_timestamp(rec, &out.timestamp);
            out.shard = 0;
            out.type = static_cast<uint16_t>(m.type);
            out.size = static_cast<uint16_t>(m.size > 0xFFFFu ? 0xFFFFu : m.size);
            if (n == sizeof batch / sizeof batch[0]) {
                if (append_locked(shard, batch, n) != SONDE_STATUS_SUCCESS) return;
                n = 0;
            }
        }
        p += rec->size;
    }
    if (n > 0) append_locked(shard, batch, n);
}

sonde_status_t TraceWriter::finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return status_;
    finished_ = true;
    if (fd_ < 0) return status_;
    try {
        finish_locked();
    } catch (const std::bad_alloc &) {
        fail_nothrow_locked(SONDE_STATUS_ERROR_OUT_OF_MEMORY, "out of memory while writing the index");
    } catch (...) {
        fail_nothrow_locked(SONDE_STATUS_ERROR, "unexpected failure while writing the index");
    }
    // The descriptor is closed whatever happened above.
    if (::close(fd_) != 0 && status_ == SONDE_STATUS_SUCCESS) {
        const int e = errno;
        try {
            fail_locked(SONDE_STATUS_ERROR_IO, path_ + ": close failed: " + std::strerror(e));
        } catch (...) {
            fail_nothrow_locked(SONDE_STATUS_ERROR_IO, "close failed");
        }
    }
    fd_ = -1;
    pending_.clear();
    pending_events_.clear();
    return status_;
}

// The pending chunks and tables, the indexes and the footer; stops at the first failure.
void TraceWriter::finish_locked() {
    if (status_ == SONDE_STATUS_SUCCESS) {
        for (auto &kv : pending_)
            if (flush_shard_locked(kv.first, kv.second) != SONDE_STATUS_SUCCESS) break;
    }
    if (status_ == SONDE_STATUS_SUCCESS) {
        for (auto &kv : pending_events_)
            if (flush_events_locked(kv.first, kv.second) != SONDE_STATUS_SUCCESS) break;
    }
    if (status_ == SONDE_STATUS_SUCCESS) flush_tables_locked();
    uint64_t ext_offset = 0;
    if (status_ == SONDE_STATUS_SUCCESS && (!event_index_.empty() || !table_index_.empty()))
        write_ext_index_locked(&ext_offset);
    if (status_ == SONDE_STATUS_SUCCESS) {
        const uint64_t index_offset = offset_;
        std::vector<unsigned char> idx(fmt::kIndexHeaderSize + index_.size() * fmt::kIndexEntrySize + 8);
        std::memcpy(idx.data(), fmt::kIndexMagic, 8);
        fmt::store32(idx.data() + 8, static_cast<uint32_t>(index_.size()));
        fmt::store32(idx.data() + 12, num_shards_);
        fmt::store64(idx.data() + 16, ext_offset);  // 0: no extension index (a memref-only trace)
        unsigned char *q = idx.data() + fmt::kIndexHeaderSize;
        for (const IndexEntry &e : index_) {
            fmt::store64(q, e.offset);
            fmt::store32(q + 8, e.shard);
            fmt::store32(q + 12, e.records);
            fmt::store64(q + 16, e.first_ts);
            fmt::store64(q + 24, e.last_ts);
            q += fmt::kIndexEntrySize;
        }
        fmt::store64(q, fmt::checksum64(idx.data(), idx.size() - 8));
        if (write_all_locked(idx.data(), idx.size()) == SONDE_STATUS_SUCCESS) {
            unsigned char footer[fmt::kFooterSize];
            std::memcpy(footer, fmt::kFooterMagic, 8);
            fmt::store64(footer + 8, index_offset);
            fmt::store64(footer + 16, idx.size());
            fmt::store64(footer + 24, fmt::checksum64(footer, 24));
            write_all_locked(footer, sizeof footer);
        }
    }
    // A reopened trace: nothing of its old indexes may follow the new footer, and its header
    // names the format it now holds (last, so that a trace cut before keeps its old header).
    if (reopened_ && status_ == SONDE_STATUS_SUCCESS && ::ftruncate(fd_, static_cast<off_t>(offset_)) != 0)
        fail_locked(SONDE_STATUS_ERROR_IO, path_ + ": cannot truncate: " + std::strerror(errno));
    if (reopened_ && status_ == SONDE_STATUS_SUCCESS && old_minor_ < fmt::kMinorVersion)
        upgrade_header_locked();
}

sonde_status_t TraceWriter::writable_locked() const {
    if (status_ != SONDE_STATUS_SUCCESS || finished_) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t TraceWriter::write_events(uint32_t shard, const sonde_trace_event_t *events, size_t count) {
    std::lock_guard<std::mutex> lock(mutex_);
    const sonde_status_t st = writable_locked();
    if (st != SONDE_STATUS_SUCCESS) return st;
    return stop_on_throw_locked("out of memory while appending events",
                                [&] { return append_events_locked(shard, events, count); });
}

sonde_status_t TraceWriter::append_events_locked(uint32_t shard, const sonde_trace_event_t *events,
                                                 size_t count) {
    if (shard >= num_event_shards_) num_event_shards_ = shard + 1;
    auto &pending = pending_events_[shard];
    if (pending.capacity() < chunk_records_) pending.reserve(chunk_records_);
    while (count > 0) {
        const size_t room = chunk_records_ - pending.size();
        const size_t n = count < room ? count : room;
        pending.insert(pending.end(), events, events + n);
        events += n;
        count -= n;
        if (pending.size() == chunk_records_) {
            const sonde_status_t s = flush_events_locked(shard, pending);
            if (s != SONDE_STATUS_SUCCESS) return s;
        }
    }
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t TraceWriter::flush_events_locked(uint32_t shard, std::vector<sonde_trace_event_t> &pending) {
    if (pending.empty()) return SONDE_STATUS_SUCCESS;
    // The tables first: every id an event chunk uses is named before it in the file.
    sonde_status_t s = flush_tables_locked();
    if (s != SONDE_STATUS_SUCCESS) return s;
    const size_t raw = pending.size() * fmt::kEventSize;
    if (columns_.size() < raw) columns_.resize(raw);
    fmt::encode_event_columns(pending.data(), pending.size(), columns_.data());
    const size_t bound = ZSTD_compressBound(raw);
    if (cbuf_.size() < fmt::kChunkHeaderSize + bound) cbuf_.resize(fmt::kChunkHeaderSize + bound);
    const size_t csize =
        ZSTD_compressCCtx(static_cast<ZSTD_CCtx *>(cctx_.get()), cbuf_.data() + fmt::kChunkHeaderSize, bound,
                          columns_.data(), raw, level_);
    fmt::throw_if_zstd_out_of_memory(csize);
    if (ZSTD_isError(csize))
        return fail_locked(SONDE_STATUS_ERROR_IO,
                           path_ + ": zstd compression failed: " + ZSTD_getErrorName(csize));
    fmt::ChunkHeader h;
    h.magic = fmt::kEventMagic;
    h.shard = shard;
    h.records = static_cast<uint32_t>(pending.size());
    h.compressed_size = static_cast<uint32_t>(csize);
    h.first_ts = pending.front().timestamp;
    h.last_ts = pending.back().timestamp;
    h.payload_checksum = fmt::checksum64(cbuf_.data() + fmt::kChunkHeaderSize, csize);
    fmt::encode_chunk_header(h, cbuf_.data());
    const IndexEntry e{offset_, shard, h.records, h.first_ts, h.last_ts};
    s = write_all_locked(cbuf_.data(), fmt::kChunkHeaderSize + csize);
    if (s != SONDE_STATUS_SUCCESS) return s;
    event_index_.push_back(e);
    pending.clear();
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t TraceWriter::write_table_locked(uint32_t type, uint32_t count,
                                               const std::vector<unsigned char> &raw) {
    const size_t bound = ZSTD_compressBound(raw.size());
    std::vector<unsigned char> out(fmt::kChunkHeaderSize + bound);
    const size_t csize =
        ZSTD_compressCCtx(static_cast<ZSTD_CCtx *>(cctx_.get()), out.data() + fmt::kChunkHeaderSize, bound,
                          raw.data(), raw.size(), level_);
    fmt::throw_if_zstd_out_of_memory(csize);
    if (ZSTD_isError(csize))
        return fail_locked(SONDE_STATUS_ERROR_IO,
                           path_ + ": zstd compression failed: " + ZSTD_getErrorName(csize));
    fmt::ChunkHeader h;
    h.magic = fmt::kTableMagic;
    h.shard = type;
    h.records = count;
    h.compressed_size = static_cast<uint32_t>(csize);
    h.first_ts = raw.size();
    h.last_ts = 0;
    h.payload_checksum = fmt::checksum64(out.data() + fmt::kChunkHeaderSize, csize);
    fmt::encode_chunk_header(h, out.data());
    const TableRef ref{offset_, type, count};
    const sonde_status_t s = write_all_locked(out.data(), fmt::kChunkHeaderSize + csize);
    if (s != SONDE_STATUS_SUCCESS) return s;
    table_index_.push_back(ref);
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t TraceWriter::flush_tables_locked() {
    std::vector<unsigned char> raw;
    // Writes one table's new entries, then forgets them; false when the write failed.
    auto flush = [&](uint32_t type, auto &pending, auto encode) {
        if (pending.empty()) return true;
        raw.clear();
        encode(pending, &raw);
        if (write_table_locked(type, static_cast<uint32_t>(pending.size()), raw) != SONDE_STATUS_SUCCESS)
            return false;
        pending.clear();
        return true;
    };
    // Strings, modules, methods, threads, API functions, lines: each id is defined before the
    // tables that use it.
    if (!flush(fmt::kTableStrings, new_strings_, encode_strings) ||
        !flush(fmt::kTableModules, new_modules_, encode_modules) ||
        !flush(fmt::kTableMethods, new_methods_, encode_methods) ||
        !flush(fmt::kTableThreads, new_threads_, encode_threads) ||
        !flush(fmt::kTableApiFunctions, new_api_functions_, encode_api_functions) ||
        !flush(fmt::kTableLines, new_lines_, encode_lines))
        return status_;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t TraceWriter::write_ext_index_locked(uint64_t *offset) {
    *offset = offset_;
    std::vector<unsigned char> x(fmt::kExtIndexHeaderSize + event_index_.size() * fmt::kIndexEntrySize +
                                 table_index_.size() * fmt::kExtTableEntrySize + 8);
    std::memcpy(x.data(), fmt::kExtIndexMagic, 8);
    fmt::store32(x.data() + 8, static_cast<uint32_t>(event_index_.size()));
    fmt::store32(x.data() + 12, num_event_shards_);
    fmt::store32(x.data() + 16, static_cast<uint32_t>(table_index_.size()));
    fmt::store32(x.data() + 20, 0);
    unsigned char *q = x.data() + fmt::kExtIndexHeaderSize;
    for (const IndexEntry &e : event_index_) {
        fmt::store64(q, e.offset);
        fmt::store32(q + 8, e.shard);
        fmt::store32(q + 12, e.records);
        fmt::store64(q + 16, e.first_ts);
        fmt::store64(q + 24, e.last_ts);
        q += fmt::kIndexEntrySize;
    }
    for (const TableRef &t : table_index_) {
        fmt::store64(q, t.offset);
        fmt::store32(q + 8, t.type);
        fmt::store32(q + 12, t.count);
        q += fmt::kExtTableEntrySize;
    }
    fmt::store64(q, fmt::checksum64(x.data(), x.size() - 8));
    return write_all_locked(x.data(), x.size());
}

sonde_status_t TraceWriter::add_string(const std::string &text, uint32_t *id) {
    std::lock_guard<std::mutex> lock(mutex_);
    const sonde_status_t st = writable_locked();
    if (st != SONDE_STATUS_SUCCESS) return st;
    *id = intern_locked(text);
    return SONDE_STATUS_SUCCESS;
}

uint32_t TraceWriter::intern_locked(const std::string &text) {
    auto it = string_ids_.find(text);
    if (it != string_ids_.end()) return it->second;
    // All or nothing: what allocates comes before the string is known by its id.
    const uint32_t n = next_string_id_;
    StringEntry entry{n, text};
    if (new_strings_.size() == new_strings_.capacity()) new_strings_.reserve(2 * new_strings_.size() + 16);
    string_ids_.emplace(text, n);
    new_strings_.push_back(std::move(entry));  // room reserved: cannot fail
    ++next_string_id_;
    return n;
}

sonde_status_t TraceWriter::add_line(LineEntry e, const std::string &file) {
    std::lock_guard<std::mutex> lock(mutex_);
    const sonde_status_t st = writable_locked();
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (new_lines_.size() == new_lines_.capacity()) new_lines_.reserve(2 * new_lines_.size() + 16);
    e.file = intern_locked(file);
    new_lines_.push_back(e);  // room reserved: cannot fail
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t TraceWriter::add_method(MethodEntry e) {
    std::lock_guard<std::mutex> lock(mutex_);
    const sonde_status_t st = writable_locked();
    if (st != SONDE_STATUS_SUCCESS) return st;
    new_methods_.push_back(std::move(e));
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t TraceWriter::add_module(ModuleEntry e) {
    std::lock_guard<std::mutex> lock(mutex_);
    const sonde_status_t st = writable_locked();
    if (st != SONDE_STATUS_SUCCESS) return st;
    new_modules_.push_back(std::move(e));
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t TraceWriter::add_thread(ThreadEntry e) {
    std::lock_guard<std::mutex> lock(mutex_);
    const sonde_status_t st = writable_locked();
    if (st != SONDE_STATUS_SUCCESS) return st;
    new_threads_.push_back(std::move(e));
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t TraceWriter::add_api_function(ApiFunctionEntry e) {
    std::lock_guard<std::mutex> lock(mutex_);
    const sonde_status_t st = writable_locked();
    if (st != SONDE_STATUS_SUCCESS) return st;
    new_api_functions_.push_back(std::move(e));
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t TraceWriter::flush_tables() {
    std::lock_guard<std::mutex> lock(mutex_);
    const sonde_status_t st = writable_locked();
    if (st != SONDE_STATUS_SUCCESS) return st;
    return stop_on_throw_locked("out of memory while writing tables", [&] { return flush_tables_locked(); });
}

sonde_status_t TraceWriter::status() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return status_;
}

std::string TraceWriter::error() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string message = error_;
    if (message.empty() && status_ != SONDE_STATUS_SUCCESS)
        message = path_ + ": " + sonde_status_string(status_);
    const uint64_t lost = lost_locked();
    if (consumer_ && lost != 0)
        message += " (" + std::to_string(lost) + " memory reference" + (lost == 1 ? "" : "s") +
                   " delivered to the writer " + (lost == 1 ? "is" : "are") + " not in the file)";
    return message;
}

uint64_t TraceWriter::bytes_written() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return offset_;
}

}  // namespace sonde::trace
