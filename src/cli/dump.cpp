// `sonde dump` (see dump.h): reads a trace through the public reader (sonde/trace.h) in
// batches and prints each record as one line of text; with --events, the program events of a
// Sonde trace (sonde/trace_events.h) instead. Memory stays bounded: one batch of records and one
// output buffer, written out whenever it fills.
//
// Threads: everything runs on the calling (main) thread; the reader and the output buffer are
// its own.
#include "cli/dump.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <sonde/trace.h>
#include <sonde/trace_events.h>

#include "cli/options.h"

namespace {

namespace cli = sonde::cli;

constexpr const char *kCommand = "sonde dump";
constexpr size_t kBatch = 4096;          // records or events read at a time
constexpr size_t kFlushBytes = 1 << 16;  // output written out once this much is pending

// Standard output through a buffer of our own, written with write(2) so that the error of a
// failed write is known exactly: EPIPE (the reader went away) ends the dump quietly, any other
// error is reported.
class Output {
public:
    Output() { buf_.reserve(kFlushBytes + 4096); }

    // False once a write has failed; the dump then stops.
    bool ok() const { return error_ == 0; }
    bool reader_gone() const { return error_ == EPIPE; }
    int error() const { return error_; }

    void text(const char *s) { buf_.append(s); }
    void text(const std::string &s) { buf_.append(s); }
    void ch(char c) { buf_.push_back(c); }
    void dec(uint64_t v) {
        char tmp[24];
        const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
        buf_.append(tmp, r.ptr);
    }
    void hex(uint64_t v) {
        char tmp[24];
        const auto r = std::to_chars(tmp, tmp + sizeof tmp, v, 16);
        buf_.append("0x");
        buf_.append(tmp, r.ptr);
    }
    // A string of the trace in double quotes: quote, backslash and control bytes escaped, so
    // that one record stays one line.
    void quoted(const char *s) {
        buf_.push_back('"');
        for (const unsigned char *p = reinterpret_cast<const unsigned char *>(s); *p != 0; ++p) {
            if (*p == '"' || *p == '\\') {
                buf_.push_back('\\');
                buf_.push_back(static_cast<char>(*p));
            } else if (*p == '\n') {
                buf_.append("\\n");
            } else if (*p < 0x20 || *p == 0x7f) {
                char tmp[8];
                std::snprintf(tmp, sizeof tmp, "\\x%02x", *p);
                buf_.append(tmp);
            } else {
                buf_.push_back(static_cast<char>(*p));
            }
        }
        buf_.push_back('"');
    }
    // Ends a line; writes the buffer out when it is full.
    void end_line() {
        buf_.push_back('\n');
        if (buf_.size() >= kFlushBytes) flush();
    }
    void flush() {
        size_t done = 0;
        while (done < buf_.size() && error_ == 0) {
            const ssize_t n = ::write(STDOUT_FILENO, buf_.data() + done, buf_.size() - done);
            if (n > 0)
                done += static_cast<size_t>(n);
            else if (n < 0 && errno != EINTR)
                error_ = errno;
            else if (n == 0)
                error_ = EIO;
        }
        buf_.clear();
    }

private:
    std::string buf_;
    int error_ = 0;
};

// The name of a memref type (sonde_memref_t::type) as dump prints it.
const char *type_name(uint32_t type) {
    switch (type) {
        case SONDE_MEMREF_READ: return "read";
        case SONDE_MEMREF_WRITE: return "write";
        case SONDE_MEMREF_MODIFY: return "modify";
        case SONDE_MEMREF_IFETCH: return "ifetch";
        case SONDE_MEMREF_MARKER: return "marker";
        case SONDE_MEMREF_INSTR_NO_FETCH: return "instr_no_fetch";
        case SONDE_MEMREF_INSTR_DIRECT_JUMP: return "direct_jump";
        case SONDE_MEMREF_INSTR_INDIRECT_JUMP: return "indirect_jump";
        case SONDE_MEMREF_INSTR_CONDITIONAL_JUMP: return "conditional_jump";
        case SONDE_MEMREF_INSTR_TAKEN_JUMP: return "taken_jump";
        case SONDE_MEMREF_INSTR_UNTAKEN_JUMP: return "untaken_jump";
        case SONDE_MEMREF_INSTR_DIRECT_CALL: return "direct_call";
        case SONDE_MEMREF_INSTR_INDIRECT_CALL: return "indirect_call";
        case SONDE_MEMREF_INSTR_RETURN: return "return";
        case SONDE_MEMREF_INSTR_SYSENTER: return "sysenter";
        case SONDE_MEMREF_INSTR_ENCODING: return "encoding";
        case SONDE_MEMREF_INSTR_FLUSH: return "instr_flush";
        case SONDE_MEMREF_DATA_FLUSH: return "data_flush";
        case SONDE_MEMREF_PREFETCH: return "prefetch";
        case SONDE_MEMREF_PREFETCH_READ_L1: return "prefetch_read_l1";
        case SONDE_MEMREF_PREFETCH_READ_L2: return "prefetch_read_l2";
        case SONDE_MEMREF_PREFETCH_READ_L3: return "prefetch_read_l3";
        case SONDE_MEMREF_PREFETCHNTA: return "prefetchnta";
        case SONDE_MEMREF_PREFETCH_READ: return "prefetch_read";
        case SONDE_MEMREF_PREFETCH_WRITE: return "prefetch_write";
        case SONDE_MEMREF_PREFETCH_INSTR: return "prefetch_instr";
        case SONDE_MEMREF_PREFETCH_HARDWARE: return "prefetch_hardware";
        case SONDE_MEMREF_PREFETCH_READ_L1_NT: return "prefetch_read_l1_nt";
        case SONDE_MEMREF_PREFETCH_READ_L2_NT: return "prefetch_read_l2_nt";
        case SONDE_MEMREF_PREFETCH_READ_L3_NT: return "prefetch_read_l3_nt";
        case SONDE_MEMREF_PREFETCH_INSTR_L1: return "prefetch_instr_l1";
        case SONDE_MEMREF_PREFETCH_INSTR_L1_NT: return "prefetch_instr_l1_nt";
        case SONDE_MEMREF_PREFETCH_INSTR_L2: return "prefetch_instr_l2";
        case SONDE_MEMREF_PREFETCH_INSTR_L2_NT: return "prefetch_instr_l2_nt";
        case SONDE_MEMREF_PREFETCH_INSTR_L3: return "prefetch_instr_l3";
        case SONDE_MEMREF_PREFETCH_INSTR_L3_NT: return "prefetch_instr_l3_nt";
        case SONDE_MEMREF_PREFETCH_WRITE_L1: return "prefetch_write_l1";
        case SONDE_MEMREF_PREFETCH_WRITE_L1_NT: return "prefetch_write_l1_nt";
        case SONDE_MEMREF_PREFETCH_WRITE_L2: return "prefetch_write_l2";
        case SONDE_MEMREF_PREFETCH_WRITE_L2_NT: return "prefetch_write_l2_nt";
        case SONDE_MEMREF_PREFETCH_WRITE_L3: return "prefetch_write_l3";
        case SONDE_MEMREF_PREFETCH_WRITE_L3_NT: return "prefetch_write_l3_nt";
        default: return nullptr;
    }
}

// The name of a marker type (sonde_memref_t::size of a marker), or nullptr for one without a name.
const char *marker_name(uint32_t marker) {
    switch (marker) {
        case SONDE_MARKER_TIMESTAMP: return "timestamp";
        case SONDE_MARKER_THREAD_SWITCH: return "thread_switch";
        case SONDE_MARKER_CPU_ID: return "cpu_id";
        case SONDE_MARKER_THREAD_ID: return "thread_id";
        case SONDE_MARKER_PROCESS_ID: return "process_id";
        case SONDE_MARKER_THREAD_EXIT: return "thread_exit";
        case SONDE_MARKER_SAMPLE_THRESHOLD: return "sample_threshold";
        case SONDE_MARKER_SAMPLE_SEED: return "sample_seed";
        case SONDE_MARKER_SAMPLE_LINE_SIZE: return "sample_line_size";
        case SONDE_MARKER_SAMPLE_SKIPPED: return "sample_skipped";
        case SONDE_MARKER_KERNEL_EVENT: return "kernel_event";
        case SONDE_MARKER_KERNEL_XFER: return "kernel_xfer";
        case SONDE_MARKER_FUNC_ID: return "func_id";
        case SONDE_MARKER_FUNC_RETADDR: return "func_retaddr";
        case SONDE_MARKER_FUNC_ARG: return "func_arg";
        case SONDE_MARKER_FUNC_RETVAL: return "func_retval";
        case SONDE_MARKER_FILETYPE: return "filetype";
        case SONDE_MARKER_CACHE_LINE_SIZE: return "cache_line_size";
        case SONDE_MARKER_VERSION: return "version";
        case SONDE_MARKER_PHYSICAL_ADDRESS: return "physical_address";
        case SONDE_MARKER_PHYSICAL_ADDRESS_NOT_AVAILABLE: return "physical_address_not_available";
        case SONDE_MARKER_VIRTUAL_ADDRESS: return "virtual_address";
        case SONDE_MARKER_PAGE_SIZE: return "page_size";
        case SONDE_MARKER_CHUNK_INSTR_COUNT: return "chunk_instr_count";
        case SONDE_MARKER_CHUNK_FOOTER: return "chunk_footer";
        case SONDE_MARKER_SYSCALL: return "syscall";
        case SONDE_MARKER_MAYBE_BLOCKING_SYSCALL: return "maybe_blocking_syscall";
        case SONDE_MARKER_BRANCH_TARGET: return "branch_target";
        case SONDE_MARKER_CORE_WAIT: return "core_wait";
        case SONDE_MARKER_CORE_IDLE: return "core_idle";
        case SONDE_MARKER_HARDWARE_EVENT: return "hardware_event";
        case SONDE_MARKER_HARDWARE_CONTEXT_RETURN: return "hardware_context_return";
        case SONDE_MARKER_SKIPPED_MEMREF: return "skipped_memref";
        default: return nullptr;
    }
}

// One memref line: SHARD TIMESTAMP TYPE ADDRESS SIZE PC. A marker's type is marker:NAME (or
// marker:drmemtrace+0xN, marker:0xN), its address column the marker's value and its size "-".
void print_memref(Output &out, const sonde_memref_t &m) {
    out.dec(m.shard);
    out.ch(' ');
    out.dec(m.timestamp);
    out.ch(' ');
    const char *type = type_name(m.type);
    if (type == nullptr) {
        out.text("type:");
        out.dec(m.type);
    } else {
        out.text(type);
    }
    if (m.type == SONDE_MEMREF_MARKER) {
        out.ch(':');
        const char *marker = marker_name(m.size);
        if (marker != nullptr) {
            out.text(marker);
        } else if (m.size >= SONDE_MARKER_DRMEMTRACE) {
            out.text("drmemtrace+");
            out.hex(m.size - SONDE_MARKER_DRMEMTRACE);
        } else {
            out.hex(m.size);
        }
        out.ch(' ');
        out.hex(m.address);
        out.text(" - ");
    } else {
        out.ch(' ');
        out.hex(m.address);
        out.ch(' ');
        out.dec(m.size);
        out.ch(' ');
    }
    out.hex(m.pc);
    out.end_line();
}

// Names of a trace's methods, strings and API functions for event lines, looked up as events
// refer to them (the reader owns the strings).
class EventNames {
public:
    explicit EventNames(const sonde_trace_reader_t *reader) : reader_(reader) {}

    void method(Output &out, uint32_t index) const {
        sonde_trace_method_t m{};
        m.struct_size = sizeof m;
        const sonde_status_t s = sonde_trace_reader_get_method(reader_, index, &m);
        if (s == SONDE_STATUS_SUCCESS && m.full_name[0] != '\0')
            out.text(m.full_name);
        else if (s == SONDE_STATUS_SUCCESS && m.name[0] != '\0')
            out.text(m.name);
        else
            unnamed(out, "method#", index);
    }
    void string(Output &out, uint32_t id) const {
        const char *text = nullptr;
        if (sonde_trace_reader_get_string(reader_, id, &text) == SONDE_STATUS_SUCCESS)
            out.quoted(text);
        else
            unnamed(out, "string#", id);
    }
    void api_function(Output &out, uint32_t index) const {
        sonde_trace_api_function_t f{};
        f.struct_size = sizeof f;
        if (sonde_trace_reader_get_api_function(reader_, index, &f) == SONDE_STATUS_SUCCESS &&
            f.name[0] != '\0') {
            if (f.library[0] != '\0') {
                out.text(f.library);
                out.ch(':');
            }
            out.text(f.name);
        } else {
            unnamed(out, "api#", index);
        }
    }

private:
    static void unnamed(Output &out, const char *what, uint32_t index) {
        out.text(what);
        out.dec(index);
    }
    const sonde_trace_reader_t *reader_;
};

// An API argument's or return value's bits, and its copied text when it has one.
void api_value(Output &out, const EventNames &names, const sonde_trace_event_t &e) {
    out.text(" value=");
    out.hex(e.value);
    if ((e.aux & SONDE_TRACE_API_TEXT) != 0) {
        out.text(" text=");
        names.string(out, e.id);
        if ((e.aux & SONDE_TRACE_API_TRUNCATED) != 0) out.text(" truncated");
    }
}

// One event line: SHARD TIMESTAMP KIND DETAILS (docs/trace-format.md, "sonde dump").
void print_event(Output &out, const EventNames &names, const sonde_trace_event_t &e) {
    out.dec(e.shard);
    out.ch(' ');
    out.dec(e.timestamp);
    out.ch(' ');
    switch (e.kind) {
        case SONDE_TRACE_EVENT_METHOD_ENTER:
        case SONDE_TRACE_EVENT_METHOD_LEAVE:
            out.text(e.kind == SONDE_TRACE_EVENT_METHOD_ENTER ? "method_enter " : "method_leave ");
            names.method(out, e.id);
            break;
        case SONDE_TRACE_EVENT_THREAD_START:
        case SONDE_TRACE_EVENT_THREAD_END:
            out.text(e.kind == SONDE_TRACE_EVENT_THREAD_START ? "thread_start tid=" : "thread_end tid=");
            out.dec(e.value);
            break;
        case SONDE_TRACE_EVENT_THREAD_NAME:
            out.text("thread_name ");
            names.string(out, e.id);
            break;
        case SONDE_TRACE_EVENT_MARK:
            out.text("mark ");
            names.string(out, e.id);
            break;
        case SONDE_TRACE_EVENT_RANGE_PUSH:
        case SONDE_TRACE_EVENT_RANGE_POP:
            out.text(e.kind == SONDE_TRACE_EVENT_RANGE_PUSH ? "range_push " : "range_pop ");
            names.string(out, e.id);
            out.text(" depth=");
            out.dec(e.aux);
            break;
        case SONDE_TRACE_EVENT_LOSS:
            out.text("loss lost=");
            out.dec(e.value);
            break;
        case SONDE_TRACE_EVENT_API_CALL:
            out.text("api_call ");
            names.api_function(out, e.id);
            out.text(" args=");
            out.dec(e.aux);
            out.text(" begin=");
            out.dec(e.value);
            break;
        case SONDE_TRACE_EVENT_API_ARG:
            out.text("api_arg pos=");
            out.dec(e.aux & SONDE_TRACE_API_POSITION_MASK);
            api_value(out, names, e);
            break;
        case SONDE_TRACE_EVENT_API_RETURN:
            out.text("api_return");
            api_value(out, names, e);
            break;
        case SONDE_TRACE_EVENT_API_END:
            out.text("api_end ");
            names.api_function(out, e.id);
            out.text(" correlation=");
            out.dec(e.value);
            out.text(" depth=");
            out.dec(e.aux);
            break;
        default:  // a kind of a later writer: its fields as they are
            out.text("kind:");
            out.dec(e.kind);
            out.text(" id=");
            out.dec(e.id);
            out.text(" aux=");
            out.dec(e.aux);
            out.text(" value=");
            out.hex(e.value);
            break;
    }
    out.end_line();
}

// Prints every warning line of the reader (a truncated trace recovered by scanning, ...).
void print_warnings(const sonde_trace_reader_t *reader) {
    const std::string text = sonde_trace_reader_warnings(reader);
    size_t start = 0;
    while (start < text.size()) {
        size_t nl = text.find('\n', start);
        if (nl == std::string::npos) nl = text.size();
        if (nl > start)
            std::fprintf(stderr, "%s: warning: %s\n", kCommand, text.substr(start, nl - start).c_str());
        start = nl + 1;
    }
}

// What the dump does, decided from the options before the input is opened.
struct Request {
    bool has_shard = false;
    uint32_t shard = 0;
    uint64_t limit = UINT64_MAX;  // lines of records or events at most
    bool events = false;
};

// Dumps memrefs: one shard with --shard, else the serial view (every shard interleaved by
// timestamp, as serial analysis tools see it). Returns "" or the reader's error message.
std::string dump_memrefs(sonde_trace_reader_t *reader, const Request &req, Output &out) {
    std::vector<sonde_memref_t> batch(kBatch);
    uint64_t left = req.limit;
    out.text("# shard timestamp type address size pc");
    out.end_line();
    while (left > 0 && out.ok()) {
        const size_t want = left < kBatch ? static_cast<size_t>(left) : kBatch;
        size_t n = 0;
        const sonde_status_t s =
            req.has_shard ? sonde_trace_reader_read_shard(reader, req.shard, batch.data(), want, &n)
                          : sonde_trace_reader_read(reader, batch.data(), want, &n);
        if (s != SONDE_STATUS_SUCCESS) {
            const std::string msg = sonde_trace_reader_error(reader);
            return msg.empty() ? std::string(sonde_status_name(s)) + ": " + sonde_status_string(s) : msg;
        }
        if (n == 0) break;
        for (size_t i = 0; i < n; ++i) print_memref(out, batch[i]);
        left -= n;
    }
    return "";
}

// Dumps program events shard by shard (or the one shard of --shard), each shard in the order
// its thread produced them. Returns "" or the reader's error message.
std::string dump_events(sonde_trace_reader_t *reader, const Request &req, uint32_t num_shards, Output &out) {
    std::vector<sonde_trace_event_t> batch(kBatch);
    const EventNames names(reader);
    uint64_t left = req.limit;
    out.text("# shard timestamp event details");
    out.end_line();
    const uint32_t first = req.has_shard ? req.shard : 0;
    const uint32_t last = req.has_shard ? req.shard + 1 : num_shards;
    for (uint32_t shard = first; shard < last && left > 0 && out.ok(); ++shard) {
        while (left > 0 && out.ok()) {
            const size_t want = left < kBatch ? static_cast<size_t>(left) : kBatch;
            size_t n = 0;
            const sonde_status_t s = sonde_trace_reader_read_events(reader, shard, batch.data(), want, &n);
            if (s != SONDE_STATUS_SUCCESS) {
                const std::string msg = sonde_trace_reader_error(reader);
                return msg.empty() ? std::string(sonde_status_name(s)) + ": " + sonde_status_string(s) : msg;
            }
            if (n == 0) break;
            for (size_t i = 0; i < n; ++i) print_event(out, names, batch[i]);
            left -= n;
        }
    }
    return "";
}

}  // namespace

extern "C" int sonde_cli_dump(int argc, char **argv) {
    CLI::App app{
        "Print the records of a memory-reference trace as text, one line per record:\n"
        "SHARD TIMESTAMP TYPE ADDRESS SIZE PC (with --events, the program events of a Sonde trace).\n"
        "Exit status: 0 success (also when the reader of the output goes away), 1 the input cannot\n"
        "be read or has no such shard, 2 bad usage (nothing is read).",
        kCommand};
    std::string input;
    std::string format = "auto";
    std::string shard_text;
    uint64_t limit = 0;
    bool events = false;
    cli::add_version(app);
    app.add_option(
           "INPUT", input,
           "Input trace: Sonde, lackey text (plain or .zst), raw64, a drmemtrace directory or "
           "file, or - for standard input (lackey or raw64 streamed, a Sonde trace copied to a temporary "
           "file first)")
        ->required()
        ->check(cli::input_path(true));
    cli::add_format_option(app, &format,
                           "Input format: auto, sonde, lackey, raw64, drmemtrace (default auto)");
    app.add_option("--shard", shard_text, "Print only this shard (thread), 0..65535")
        ->check(cli::unsigned_range(0, 65535));
    app.add_option("--limit", limit, "Stop after N records (or events) in all, 1..2^63")
        ->check(cli::unsigned_range(1, uint64_t{1} << 63));
    app.add_flag("--events", events,
                 "Print the program events of a Sonde trace (method enter and leave, marks, ranges, API "
                 "calls) instead of its memory references");
    const int parsed = cli::parse(app, argc, argv);
    if (parsed >= 0) return parsed;

    Request req;
    req.events = events;
    if (limit != 0) req.limit = limit;
    if (!shard_text.empty()) {
        uint64_t v = 0;
        cli::check_unsigned(shard_text, 0, 65535, &v);
        req.has_shard = true;
        req.shard = static_cast<uint32_t>(v);
    }
    const std::string path = input == "-" ? "/dev/stdin" : input;
    char open_error[1024];
    sonde_trace_reader_t *reader = nullptr;
    if (sonde_trace_reader_open(path.c_str(), cli::trace_format_value(format), open_error, sizeof open_error,
                                &reader) != SONDE_STATUS_SUCCESS) {
        std::fprintf(stderr, "%s: %s\n", kCommand, open_error);
        return cli::kExitFailure;
    }
    print_warnings(reader);
    uint32_t num_shards = 0;
    if (req.events) {
        sonde_trace_event_info_t info{};
        info.struct_size = sizeof info;
        sonde_trace_reader_event_info(reader, &info);
        num_shards = info.num_shards;
        if (num_shards == 0)
            std::fprintf(stderr, "%s: warning: %s has no program events\n", kCommand, input.c_str());
    } else {
        sonde_trace_reader_num_shards(reader, &num_shards);
    }
    if (req.has_shard && req.shard >= num_shards) {
        std::fprintf(stderr, "%s: --shard %u: %s has %u %sshard(s)\n", kCommand, req.shard, input.c_str(),
                     num_shards, req.events ? "event " : "");
        sonde_trace_reader_close(reader);
        return cli::kExitFailure;
    }
    // A reader of the output that goes away must end the dump with EPIPE, not kill it.
    ::signal(SIGPIPE, SIG_IGN);
    Output out;
    const std::string message =
        req.events ? dump_events(reader, req, num_shards, out) : dump_memrefs(reader, req, out);
    sonde_trace_reader_close(reader);
    out.flush();
    if (out.reader_gone()) return cli::kExitOk;
    if (!out.ok()) {
        std::fprintf(stderr, "%s: standard output: %s\n", kCommand, std::strerror(out.error()));
        return cli::kExitFailure;
    }
    if (!message.empty()) {
        std::fprintf(stderr, "%s: %s\n", kCommand, message.c_str());
        return cli::kExitFailure;
    }
    return cli::kExitOk;
}
