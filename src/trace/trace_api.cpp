// The C entry points of sonde/trace.h: argument checks, exception guard, and the opaque
// reader and writer objects around sonde::trace::Input, SerialReader and TraceWriter.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include <sonde/trace.h>
#include <sonde/trace_events.h>

#include "core/abi_struct.h"
#include "core/guarded.h"
#include "trace/source.h"
#include "trace/trace_format.h"
#include "trace/trace_writer.h"

struct sonde_trace_reader_t {
    std::unique_ptr<sonde::trace::Input> input;
    std::vector<std::unique_ptr<sonde::trace::ShardReader>> shards;  // opened on first read
    std::unique_ptr<sonde::trace::SerialReader> serial;
    std::vector<std::unique_ptr<sonde::trace::EventReader>> events;  // opened on first read
    std::string error;
    std::string warnings;
};

struct sonde_trace_writer_t {
    std::unique_ptr<sonde::trace::TraceWriter> writer;
    std::string error;  // copy returned by sonde_trace_writer_error
};

namespace {

// The open readers, so that the functions of trace_events.h answer ILLEGAL_ID for a closed one
// without touching its memory.
std::mutex g_readers_mu;
std::unordered_set<const sonde_trace_reader_t *> *g_readers =
    new std::unordered_set<const sonde_trace_reader_t *>();

sonde_status_t check_reader(const sonde_trace_reader_t *reader) {
    if (reader == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    std::lock_guard<std::mutex> g(g_readers_mu);
    return g_readers->count(reader) != 0 ? SONDE_STATUS_SUCCESS : SONDE_STATUS_ERROR_ILLEGAL_ID;
}

const char *c_str(const std::string &s) { return s.c_str(); }

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
        r->events.resize(r->input->num_event_shards());
        for (const std::string &w : r->input->warnings()) {
            if (!r->warnings.empty()) r->warnings += '\n';
            r->warnings += w;
        }
        {
            std::lock_guard<std::mutex> g(g_readers_mu);
            g_readers->insert(r.get());
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

SONDE_API sonde_status_t sonde_trace_reader_progress(const sonde_trace_reader_t *reader, uint64_t *done,
                                                     uint64_t *total) {
    if (reader == nullptr || done == nullptr || total == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *done = reader->input->consumed_bytes();
    *total = reader->input->stored_bytes();
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
    if (reader != nullptr) {
        std::lock_guard<std::mutex> g(g_readers_mu);
        g_readers->erase(reader);
    }
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

SONDE_API sonde_status_t sonde_trace_writer_reopen(const char *path, char *error, size_t error_size,
                                                   sonde_trace_writer_t **out) {
    if (error != nullptr && error_size > 0) error[0] = '\0';
    if (out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *out = nullptr;
    if (path == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    return sonde::guarded([&]() -> sonde_status_t {
        auto w = std::make_unique<sonde_trace_writer_t>();
        std::string msg;
        const sonde_status_t s = sonde::trace::TraceWriter::reopen(path, &w->writer, &msg);
        if (s != SONDE_STATUS_SUCCESS) {
            copy_error(msg, error, error_size);
            return s;
        }
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
        // consume() handles its own failures (they stop the writer and are counted); only
        // taking the writer's lock could throw here.
    }
}

// ---- program events (trace_events.h) ----

SONDE_API sonde_status_t sonde_trace_reader_event_info(const sonde_trace_reader_t *reader,
                                                       sonde_trace_event_info_t *info) {
    const sonde_status_t st = check_reader(reader);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (info == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (info->struct_size < SONDE_TRACE_EVENT_INFO_SIZE_1_2) return SONDE_STATUS_ERROR_INCOMPATIBLE_ABI;
    const sonde::trace::Input &in = *reader->input;
    const sonde::trace::Tables &t = in.tables();
    sonde_trace_event_info_t v{};
    v.struct_size = sizeof v;
    v.num_shards = static_cast<uint32_t>(in.num_event_shards());
    for (size_t s = 0; s < in.num_event_shards(); ++s) v.num_events += in.event_shard_events(s);
    v.num_methods = static_cast<uint32_t>(t.methods.size());
    v.num_modules = static_cast<uint32_t>(t.modules.size());
    v.num_strings = static_cast<uint32_t>(t.strings.size());
    v.num_threads = static_cast<uint32_t>(std::max(t.threads.size(), in.num_event_shards()));
    in.event_time_range(&v.first_timestamp, &v.last_timestamp);
    return sonde::write_abi_struct(v, SONDE_TRACE_EVENT_INFO_SIZE_1_2, info);
}

SONDE_API sonde_status_t sonde_trace_reader_shard_events(const sonde_trace_reader_t *reader, uint32_t shard,
                                                         uint64_t *num_events) {
    if (num_events != nullptr) *num_events = 0;
    const sonde_status_t st = check_reader(reader);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (num_events == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (shard >= reader->events.size()) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    *num_events = reader->input->event_shard_events(shard);
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_trace_reader_read_events(sonde_trace_reader_t *reader, uint32_t shard,
                                                        sonde_trace_event_t *events, size_t max,
                                                        size_t *num_read) {
    if (num_read != nullptr) *num_read = 0;
    const sonde_status_t st = check_reader(reader);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (events == nullptr || num_read == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (shard >= reader->events.size() || max == 0) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    return sonde::guarded([&]() -> sonde_status_t {
        auto &er = reader->events[shard];
        if (!er) er = reader->input->open_event_shard(shard);
        const size_t n = er->read(events, max);
        if (n == 0 && er->status() != SONDE_STATUS_SUCCESS) {
            reader->error = er->error();
            return er->status();
        }
        *num_read = n;
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API sonde_status_t sonde_trace_reader_rewind_events(sonde_trace_reader_t *reader, uint32_t shard) {
    const sonde_status_t st = check_reader(reader);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (shard >= reader->events.size()) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    reader->events[shard].reset();
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_trace_reader_get_method(const sonde_trace_reader_t *reader, uint32_t index,
                                                       sonde_trace_method_t *method) {
    const sonde_status_t st = check_reader(reader);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (method == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (method->struct_size < SONDE_TRACE_METHOD_SIZE_1_2) return SONDE_STATUS_ERROR_INCOMPATIBLE_ABI;
    const auto &methods = reader->input->tables().methods;
    if (index >= methods.size()) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    const sonde::trace::MethodEntry &e = methods[index];
    sonde_trace_method_t v{};
    v.struct_size = sizeof v;
    v.index = index;
    v.name = c_str(e.name);
    v.class_name = c_str(e.class_name);
    v.full_name = c_str(e.full_name);
    v.mangled_name = c_str(e.mangled_name);
    v.source_file = c_str(e.source_file);
    v.source_line = e.source_line;
    v.module = e.present ? e.module : SONDE_TRACE_NO_MODULE;
    v.address = e.address;
    v.size = e.size;
    v.visibility = e.visibility;
    const sonde_status_t w = sonde::write_abi_struct(v, SONDE_TRACE_METHOD_SIZE_1_2, method);
    if (w != SONDE_STATUS_SUCCESS) return w;
    return e.present ? SONDE_STATUS_SUCCESS : SONDE_STATUS_PARTIAL_INFO;
}

SONDE_API sonde_status_t sonde_trace_reader_get_module(const sonde_trace_reader_t *reader, uint32_t index,
                                                       sonde_trace_module_t *module) {
    const sonde_status_t st = check_reader(reader);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (module == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (module->struct_size < SONDE_TRACE_MODULE_SIZE_1_2) return SONDE_STATUS_ERROR_INCOMPATIBLE_ABI;
    const auto &modules = reader->input->tables().modules;
    if (index >= modules.size()) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    const sonde::trace::ModuleEntry &e = modules[index];
    sonde_trace_module_t v{};
    v.struct_size = sizeof v;
    v.index = index;
    v.path = c_str(e.path);
    v.name = c_str(e.name);
    v.address = e.address;
    v.size = e.size;
    const sonde_status_t w = sonde::write_abi_struct(v, SONDE_TRACE_MODULE_SIZE_1_2, module);
    if (w != SONDE_STATUS_SUCCESS) return w;
    return e.name.empty() && e.path.empty() ? SONDE_STATUS_PARTIAL_INFO : SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_trace_reader_get_thread(const sonde_trace_reader_t *reader, uint32_t shard,
                                                       sonde_trace_thread_t *thread) {
    const sonde_status_t st = check_reader(reader);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (thread == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (thread->struct_size < SONDE_TRACE_THREAD_SIZE_1_2) return SONDE_STATUS_ERROR_INCOMPATIBLE_ABI;
    const auto &threads = reader->input->tables().threads;
    if (shard >= std::max(threads.size(), reader->input->num_event_shards()))
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    static const sonde::trace::ThreadEntry kNone{};
    const sonde::trace::ThreadEntry &e = shard < threads.size() ? threads[shard] : kNone;
    sonde_trace_thread_t v{};
    v.struct_size = sizeof v;
    v.shard = shard;
    v.os_thread_id = e.os_tid;
    v.name = c_str(e.name);
    const sonde_status_t w = sonde::write_abi_struct(v, SONDE_TRACE_THREAD_SIZE_1_2, thread);
    if (w != SONDE_STATUS_SUCCESS) return w;
    return e.present ? SONDE_STATUS_SUCCESS : SONDE_STATUS_PARTIAL_INFO;
}

SONDE_API sonde_status_t sonde_trace_reader_get_string(const sonde_trace_reader_t *reader, uint32_t id,
                                                       const char **text) {
    if (text != nullptr) *text = nullptr;
    const sonde_status_t st = check_reader(reader);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (text == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    const auto &strings = reader->input->tables().strings;
    if (id >= strings.size()) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    *text = strings[id].c_str();
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_trace_reader_num_api_functions(const sonde_trace_reader_t *reader,
                                                              uint32_t *count) {
    if (count != nullptr) *count = 0;
    const sonde_status_t st = check_reader(reader);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (count == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *count = static_cast<uint32_t>(reader->input->tables().api_functions.size());
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_trace_reader_get_api_function(const sonde_trace_reader_t *reader,
                                                             uint32_t index,
                                                             sonde_trace_api_function_t *function) {
    const sonde_status_t st = check_reader(reader);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (function == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (function->struct_size < SONDE_TRACE_API_FUNCTION_SIZE_1_2) return SONDE_STATUS_ERROR_INCOMPATIBLE_ABI;
    const auto &fns = reader->input->tables().api_functions;
    if (index >= fns.size()) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    const sonde::trace::ApiFunctionEntry &e = fns[index];
    static const char *const kNoStrings[1] = {""};
    static const uint32_t kNoClasses[1] = {0};
    const bool whole = e.present && e.arg_type_ptrs.size() == e.arg_classes.size() &&
                       e.arg_name_ptrs.size() == e.arg_classes.size();
    sonde_trace_api_function_t v{};
    v.struct_size = sizeof v;
    v.index = index;
    v.library = c_str(e.library);
    v.name = c_str(e.name);
    v.return_type = c_str(e.return_type);
    v.return_class = e.return_class;
    v.num_args = whole ? static_cast<uint32_t>(e.arg_classes.size()) : 0;
    v.arg_names = v.num_args != 0 ? e.arg_name_ptrs.data() : kNoStrings;
    v.arg_types = v.num_args != 0 ? e.arg_type_ptrs.data() : kNoStrings;
    v.arg_classes = v.num_args != 0 ? e.arg_classes.data() : kNoClasses;
    const sonde_status_t w = sonde::write_abi_struct(v, SONDE_TRACE_API_FUNCTION_SIZE_1_2, function);
    if (w != SONDE_STATUS_SUCCESS) return w;
    return e.present ? SONDE_STATUS_SUCCESS : SONDE_STATUS_PARTIAL_INFO;
}

SONDE_API sonde_status_t sonde_trace_reader_num_lines(const sonde_trace_reader_t *reader, uint32_t *count) {
    if (count != nullptr) *count = 0;
    const sonde_status_t st = check_reader(reader);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (count == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *count = static_cast<uint32_t>(std::min<size_t>(reader->input->tables().lines.size(), UINT32_MAX));
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_trace_reader_get_line(const sonde_trace_reader_t *reader, uint32_t index,
                                                     sonde_trace_line_t *line) {
    const sonde_status_t st = check_reader(reader);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (line == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (line->struct_size < SONDE_TRACE_LINE_SIZE_1_2) return SONDE_STATUS_ERROR_INCOMPATIBLE_ABI;
    const auto &lines = reader->input->tables().lines;
    if (index >= lines.size()) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    const sonde::trace::LineEntry &e = lines[index];
    sonde_trace_line_t v{};
    v.struct_size = sizeof v;
    v.module = e.module;
    v.address = e.address;
    v.size = e.size;
    v.file = e.file_text;
    v.line = e.line;
    v.column = e.column;
    return sonde::write_abi_struct(v, SONDE_TRACE_LINE_SIZE_1_2, line);
}

SONDE_API sonde_status_t sonde_trace_writer_write_events(sonde_trace_writer_t *writer, uint32_t shard,
                                                         const sonde_trace_event_t *events, size_t count) {
    if (writer == nullptr || (events == nullptr && count > 0)) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (shard > sonde::trace::fmt::kMaxShard) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    return sonde::guarded(
        [&]() -> sonde_status_t { return writer->writer->write_events(shard, events, count); });
}

SONDE_API sonde_status_t sonde_trace_writer_add_string(sonde_trace_writer_t *writer, const char *text,
                                                       uint32_t *id) {
    if (id != nullptr) *id = 0;
    if (writer == nullptr || text == nullptr || id == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (strnlen(text, sonde::trace::fmt::kMaxString + 1) > sonde::trace::fmt::kMaxString)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    return sonde::guarded([&]() -> sonde_status_t { return writer->writer->add_string(text, id); });
}

namespace {

// A string of a caller's table entry: NULL is "", longer than the format allows is refused.
bool take_string(const char *s, std::string *out) {
    if (s == nullptr) {
        out->clear();
        return true;
    }
    const size_t n = strnlen(s, sonde::trace::fmt::kMaxString + 1);
    if (n > sonde::trace::fmt::kMaxString) return false;
    out->assign(s, n);
    return true;
}

}  // namespace

SONDE_API sonde_status_t sonde_trace_writer_add_method(sonde_trace_writer_t *writer,
                                                       const sonde_trace_method_t *method) {
    if (writer == nullptr || method == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    sonde_trace_method_t m;
    const sonde_status_t st = sonde::read_abi_struct(method, SONDE_TRACE_METHOD_SIZE_1_2, &m);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (m.index >= sonde::trace::fmt::kMaxMethodIndex) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    return sonde::guarded([&]() -> sonde_status_t {
        sonde::trace::MethodEntry e;
        e.index = m.index;
        e.module = m.module;
        e.address = m.address;
        e.size = m.size;
        e.source_line = m.source_line;
        e.visibility = m.visibility;
        if (!take_string(m.name, &e.name) || !take_string(m.class_name, &e.class_name) ||
            !take_string(m.full_name, &e.full_name) || !take_string(m.mangled_name, &e.mangled_name) ||
            !take_string(m.source_file, &e.source_file))
            return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        return writer->writer->add_method(std::move(e));
    });
}

SONDE_API sonde_status_t sonde_trace_writer_add_module(sonde_trace_writer_t *writer,
                                                       const sonde_trace_module_t *module) {
    if (writer == nullptr || module == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    sonde_trace_module_t m;
    const sonde_status_t st = sonde::read_abi_struct(module, SONDE_TRACE_MODULE_SIZE_1_2, &m);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (m.index >= (1u << 20)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    return sonde::guarded([&]() -> sonde_status_t {
        sonde::trace::ModuleEntry e;
        e.index = m.index;
        e.address = m.address;
        e.size = m.size;
        if (!take_string(m.path, &e.path) || !take_string(m.name, &e.name))
            return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        return writer->writer->add_module(std::move(e));
    });
}

SONDE_API sonde_status_t sonde_trace_writer_add_thread(sonde_trace_writer_t *writer,
                                                       const sonde_trace_thread_t *thread) {
    if (writer == nullptr || thread == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    sonde_trace_thread_t t;
    const sonde_status_t st = sonde::read_abi_struct(thread, SONDE_TRACE_THREAD_SIZE_1_2, &t);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (t.shard > sonde::trace::fmt::kMaxShard) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    return sonde::guarded([&]() -> sonde_status_t {
        sonde::trace::ThreadEntry e;
        e.shard = t.shard;
        e.os_tid = t.os_thread_id;
        if (!take_string(t.name, &e.name)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        return writer->writer->add_thread(std::move(e));
    });
}

SONDE_API sonde_status_t sonde_trace_writer_add_line(sonde_trace_writer_t *writer,
                                                     const sonde_trace_line_t *line) {
    if (writer == nullptr || line == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    sonde_trace_line_t l;
    const sonde_status_t st = sonde::read_abi_struct(line, SONDE_TRACE_LINE_SIZE_1_2, &l);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (l.file == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (l.size == 0 || l.address + (l.size - 1) < l.address) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    return sonde::guarded([&]() -> sonde_status_t {
        std::string file;
        if (!take_string(l.file, &file)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        sonde::trace::LineEntry e;
        e.module = l.module;
        e.line = l.line;
        e.address = l.address;
        e.size = l.size;
        e.column = l.column;
        return writer->writer->add_line(e, file);
    });
}

}  // extern "C"
