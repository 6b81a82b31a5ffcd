// The C entry points of sonde/trace.h: argument checks, exception guard, and the opaque
// reader and writer objects around sonde::trace::Input, SerialReader and TraceWriter.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <sonde/trace.h>

#include "core/abi_struct.h"
#include "core/guarded.h"
#include "trace/source.h"
#include "trace/trace_format.h"
#include "trace/trace_writer.h"

struct sonde_trace_reader_t {
    std::unique_ptr<sonde::trace::Input> input;
    std::vector<std::unique_ptr<sonde::trace::ShardReader>> shards;  // opened on first read
    std::unique_ptr<sonde::trace::SerialReader> serial;
    std::string error;
    std::string warnings;
};

struct sonde_trace_writer_t {
    std::unique_ptr<sonde::trace::TraceWriter> writer;
    std::string error;  // copy returned by sonde_trace_writer_error
};

namespace {

void copy_error(const std::string &msg, char *error, size_t error_size) {
    if (error == nullptr || error_size == 0) return;
    const size_t n = msg.size() < error_size - 1 ? msg.size() : error_size - 1;
    std::memcpy(error, msg.data(), n);
    error[n] = '\0';
}

}  // namespace

extern "C" {

SONDE_API sonde_status_t sonde_trace_reader_open(const char *path, uint32_t format, char *error,
                                                 size_t error_size, sonde_trace_reader_t **out) {
    if (error != nullptr && error_size > 0) error[0] = '\0';
    if (out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *out = nullptr;
    if (path == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    return sonde::guarded([&]() -> sonde_status_t {
        auto r = std::make_unique<sonde_trace_reader_t>();
        std::string msg;
        const sonde_status_t s = sonde::trace::Input::open(path, format, &r->input, &msg);
        if (s != SONDE_STATUS_SUCCESS) {
            copy_error(msg, error, error_size);
            return s;
        }
        r->shards.resize(r->input->num_shards());
        for (const std::string &w : r->input->warnings()) {
            if (!r->warnings.empty()) r->warnings += '\n';
            r->warnings += w;
        }
        *out = r.release();
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API sonde_status_t sonde_trace_reader_num_shards(const sonde_trace_reader_t *reader,
                                                       uint32_t *num_shards) {
    if (reader == nullptr || num_shards == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *num_shards = static_cast<uint32_t>(reader->input->num_shards());
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_trace_reader_format(const sonde_trace_reader_t *reader, uint32_t *format) {
    if (reader == nullptr || format == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *format = reader->input->format();
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_trace_reader_read_shard(sonde_trace_reader_t *reader, uint32_t shard,
                                                       sonde_memref_t *memrefs, size_t max,
                                                       size_t *num_read) {
    if (num_read != nullptr) *num_read = 0;
    if (reader == nullptr || memrefs == nullptr || num_read == nullptr)
        return SONDE_STATUS_ERROR_NULL_POINTER;
    if (shard >= reader->shards.size() || max == 0) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    return sonde::guarded([&]() -> sonde_status_t {
        auto &sr = reader->shards[shard];
        if (!sr) sr = reader->input->open_shard(shard, shard);
        const size_t n = sr->read(memrefs, max);
        if (n == 0 && sr->status() != SONDE_STATUS_SUCCESS) {
            reader->error = sr->error();
            return sr->status();
        }
        *num_read = n;
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API sonde_status_t sonde_trace_reader_read(sonde_trace_reader_t *reader, sonde_memref_t *memrefs,
                                                 size_t max, size_t *num_read) {
    if (num_read != nullptr) *num_read = 0;
    if (reader == nullptr || memrefs == nullptr || num_read == nullptr)
        return SONDE_STATUS_ERROR_NULL_POINTER;
    if (max == 0) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    return sonde::guarded([&]() -> sonde_status_t {
        if (!reader->serial) {
            const std::vector<const sonde::trace::Input *> inputs{reader->input.get()};
            reader->serial = std::make_unique<sonde::trace::SerialReader>(inputs);
        }
        const size_t n = reader->serial->read(memrefs, max);
        if (n == 0 && reader->serial->status() != SONDE_STATUS_SUCCESS) {
            reader->error = reader->serial->error();
            return reader->serial->status();
        }
        *num_read = n;
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API const char *sonde_trace_reader_error(const sonde_trace_reader_t *reader) {
    return reader == nullptr ? "" : reader->error.c_str();
}

SONDE_API const char *sonde_trace_reader_warnings(const sonde_trace_reader_t *reader) {
    return reader == nullptr ? "" : reader->warnings.c_str();
}

SONDE_API sonde_status_t sonde_trace_reader_close(sonde_trace_reader_t *reader) {
    delete reader;
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_trace_writer_create(const char *path,
                                                   const sonde_trace_writer_properties_t *properties,
                                                   sonde_trace_writer_t **out) {
    if (out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *out = nullptr;
    if (path == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    sonde_trace_writer_properties_t props{};
    if (properties != nullptr) {
        const sonde_status_t s =
            sonde::read_abi_struct(properties, SONDE_TRACE_WRITER_PROPERTIES_SIZE_1_0, &props);
        if (s != SONDE_STATUS_SUCCESS) return s;
    }
    if (props.reserved != 0 || props.compression_level < 0 || props.compression_level > 19 ||
        props.chunk_records > sonde::trace::fmt::kMaxChunkRecords)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    const int level =
        props.compression_level == 0 ? sonde::trace::fmt::kDefaultLevel : props.compression_level;
    const uint32_t chunk =
        props.chunk_records == 0 ? sonde::trace::fmt::kDefaultChunkRecords : props.chunk_records;
    return sonde::guarded([&]() -> sonde_status_t {
        auto w = std::make_unique<sonde_trace_writer_t>();
        w->writer = std::make_unique<sonde::trace::TraceWriter>(path, level, chunk);
        const sonde_status_t s = w->writer->status();
        if (s != SONDE_STATUS_SUCCESS) return s;
        *out = w.release();
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API sonde_status_t sonde_trace_writer_write(sonde_trace_writer_t *writer, uint32_t shard,
                                                  const sonde_memref_t *memrefs, size_t count) {
    if (writer == nullptr || (memrefs == nullptr && count > 0)) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (shard > sonde::trace::fmt::kMaxShard) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    // Only what the readers accept: known memref and marker types.
    if (count > 0 && sonde::trace::fmt::first_invalid(memrefs, count) != SIZE_MAX)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    return sonde::guarded([&]() -> sonde_status_t { return writer->writer->write(shard, memrefs, count); });
}

SONDE_API const char *sonde_trace_writer_error(const sonde_trace_writer_t *writer) {
    if (writer == nullptr) return "";
    auto *w = const_cast<sonde_trace_writer_t *>(writer);
    try {
        w->error = writer->writer->error();
    } catch (...) {
        return "";
    }
    return w->error.c_str();
}

SONDE_API sonde_status_t sonde_trace_writer_close(sonde_trace_writer_t *writer) {
    if (writer == nullptr) return SONDE_STATUS_SUCCESS;
    const sonde_status_t s = sonde::guarded([&]() -> sonde_status_t { return writer->writer->finish(); });
    delete writer;
    return s;
}

SONDE_API void sonde_trace_buffer_consumer(const sonde_record_header_t *begin,
                                           const sonde_record_header_t *end, sonde_session_id_t session,
                                           sonde_buffer_id_t buffer, void *user_data) {
    (void)session;
    (void)buffer;
    if (user_data == nullptr) return;
    auto *w = static_cast<sonde_trace_writer_t *>(user_data);
    try {
        w->writer->consume(begin, end);
    } catch (...) {
        // An allocation failure drops this span; the writer keeps running.
    }
}

}  // extern "C"
