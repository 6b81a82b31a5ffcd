// src/report: the call-event model behind `sonde report` and `sonde export`. It turns per-thread
// streams of method enter/leave events into per-function statistics, call trees, exports
// (Chrome trace JSON, folded stacks, CSV) and an HTML page, and traced library calls (API calls)
// into per-function counts and Chrome events. It knows nothing of how the events
// are stored: a reader implements EventSource (below) and the model pulls from it. The folder
// uses only the standard library and nlohmann-json, and is compiled into the `sonde` program,
// not into libsonde. Everything here runs on the thread that calls it; no object is shared.
//
// This header is the input side: events, the method table, threads, and the source interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sonde::report {

// A failure of a source (I/O, a malformed input) or of an output. The message names the file
// and, where there is one, the line or offset.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class EventKind : uint8_t {
    enter,         // a method starts: `method`, `ts`
    leave,         // a method returns: `method`, `ts`
    thread_start,  // the thread starts: `ts`
    thread_end,    // the thread ends: `ts`
    mark,          // a user mark: `text`, `ts`
    api_call,      // a traced call into a shared library: `api`, `ts` (its end)
};

// How an API value's 64 bits read: the pinned values of sonde_trace_api_value_class.
enum ApiClass : uint32_t {
    api_void = 0,
    api_signed = 1,
    api_unsigned = 2,
    api_double = 3,  // the bits of a double
    api_pointer = 4,
    api_string = 5,  // an address, and its text when it was copied
};

// A function traced by `sonde record --api`: its library and signature (ApiClass values).
struct ApiFunctionInfo {
    std::string library;
    std::string name;
    std::string return_type;
    uint32_t return_class = 0;
    std::vector<std::string> arg_names;
    std::vector<std::string> arg_types;
    std::vector<uint32_t> arg_classes;
};

// One argument or return value of a traced call: its 64 bits and, for a `const char *`, the
// copied text (`truncated`: only the string's first bytes were kept).
struct ApiValue {
    uint64_t bits = 0;
    bool has_text = false;
    bool truncated = false;
    std::string_view text;
};

// One traced call. `function` stays valid until the source is destroyed, the texts until the
// next call of EventSource::read() or next_thread().
struct ApiCall {
    const ApiFunctionInfo *function = nullptr;
    uint64_t begin = 0;  // ns
    uint64_t end = 0;    // ns
    uint64_t correlation = 0;
    uint32_t depth = 0;  // traced calls of the thread open around it
    std::vector<ApiValue> args;
    ApiValue ret;
};

// One event of one thread. `text` is set for marks only and stays valid until the next call
// of EventSource::read() or next_thread().
struct Event {
    EventKind kind = EventKind::enter;
    uint32_t method = 0;  // index into the method table (enter, leave)
    uint64_t ts = 0;      // nanoseconds, one clock for all threads
    std::string_view text;
    const ApiCall *api = nullptr;  // api_call only; valid as `text` is
};

// An entry of the method table: what an instrumented function is. Empty strings and line 0
// mean unknown.
struct MethodInfo {
    std::string name;  // demangled
    std::string module;
    std::string file;
    uint32_t line = 0;
};

// A thread of the recorded program: Sonde's thread id, the OS thread id, its name (may be
// empty).
struct ThreadInfo {
    uint64_t id = 0;
    uint64_t tid = 0;
    std::string name;
};

// Where events come from. The model calls next_thread() and then read() until it returns 0,
// thread after thread, and never holds more than one read() batch. Each thread's events come
// in the order they happened. Errors are thrown as Error.
class EventSource {
public:
    virtual ~EventSource() = default;

    // Moves to the next thread and describes it; false when there is none left.
    virtual bool next_thread(ThreadInfo *thread) = 0;

    // Fills up to `max` events of the current thread; 0 at the end of the thread.
    virtual size_t read(Event *out, size_t max) = 0;

    // The method table entry of `index`, or nullptr when the table has none. Called the first
    // time an event names the index; the entry must stay valid until the source is destroyed.
    virtual const MethodInfo *method(uint32_t index) = 0;

    // The recorded process id, 0 when unknown.
    virtual uint64_t pid() const { return 0; }

    // What the source could not vouch for (a truncated file recovered by scanning, events the
    // recorder lost), one sentence each; complete once read() has returned 0 for the last
    // thread. The walker adds them to its own warnings.
    virtual std::vector<std::string> warnings() const { return {}; }
};

}  // namespace sonde::report
