// The walker: reads an EventSource thread by thread, keeps each thread's shadow stack, and
// hands balanced calls to sinks (statistics, call trees, exports). It is where real traces are
// made consistent, so that every sink sees the same calls:
//   - a LEAVE with no matching ENTER on the stack (events from before recording started) is
//     ignored;
//   - a LEAVE of a method below the top of the stack (longjmp, exceptions through
//     uninstrumented frames) closes the frames above it at the LEAVE's timestamp, then its own;
//   - calls still open at the end of a thread (a crash, exit() from a deep frame) are closed at
//     the thread's last timestamp;
//   - a timestamp below the previous one of its thread is taken as equal to it.
// Each of these is counted and reported once per thread in warnings(). Memory: the stack of
// the current thread, one batch of events and a few words per function and per thread; never
// the events themselves.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "report/event.h"

namespace sonde::report {

// The functions seen in events, numbered densely in order of first appearance ("function
// ids"); each keeps a copy of its method table entry.
class FunctionTable {
public:
    static constexpr uint32_t none = UINT32_MAX;

    // The function id of method `index`, adding it (and its table entry from `source`) if new.
    uint32_t intern(uint32_t index, EventSource &source);
    // The function id of method `index`, or `none` if no event has entered it.
    uint32_t find(uint32_t index) const;

    size_t size() const { return infos_.size(); }
    const MethodInfo &info(uint32_t id) const { return infos_[id]; }
    const std::string &name(uint32_t id) const { return infos_[id].name; }
    uint32_t method_index(uint32_t id) const { return indices_[id]; }
    // How many entered method indices the source's table had no name for.
    size_t unknown() const { return unknown_; }

private:
    static constexpr uint32_t kDirect = 1u << 22;  // indices below this map through `direct_`
    std::vector<uint32_t> direct_;                 // index -> id + 1, 0 = not seen
    std::unordered_map<uint32_t, uint32_t> far_;   // larger (unusual) indices
    std::vector<MethodInfo> infos_;
    std::vector<uint32_t> indices_;
    size_t unknown_ = 0;
};

// One completed call, as sinks see it. Times are nanoseconds on the trace's clock.
struct Call {
    uint32_t function = 0;   // function id
    uint32_t depth = 0;      // 0 for a call with no caller in the trace
    uint64_t begin = 0;      // ENTER timestamp
    uint64_t end = 0;        // LEAVE timestamp (end >= begin)
    uint64_t self_ns = 0;    // end - begin minus the time of its direct callees
    bool outermost = false;  // no other call of the same function is below it on the stack
};

// What the walker knows of a thread when it ends.
struct ThreadSummary {
    ThreadInfo info;
    uint64_t begin = 0;  // first timestamp (THREAD_START or the first event), 0 if none
    uint64_t end = 0;    // last timestamp
    uint64_t calls = 0;  // completed calls, closed ones included
    uint64_t marks = 0;
    uint64_t api_calls = 0;
    bool has_events = false;
};

// A consumer of calls. Within a thread, enter() and leave() calls are balanced and nested:
// every enter() is matched by one leave() of the same function, innermost first.
class Sink {
public:
    virtual ~Sink() = default;
    virtual void begin_thread(const ThreadInfo &) {}
    virtual void enter(uint32_t /*function*/, uint64_t /*ts*/, uint32_t /*depth*/) {}
    virtual void leave(const Call &) {}
    virtual void mark(std::string_view /*text*/, uint64_t /*ts*/) {}
    // A traced library call of the current thread (it does not enter the call stack).
    virtual void api_call(const ApiCall & /*call*/) {}
    virtual void end_thread(const ThreadSummary &) {}
    // After the last thread; `warnings` are the walker's, complete.
    virtual void finish(const std::vector<std::string> & /*warnings*/) {}
};

class Walker {
public:
    explicit Walker(EventSource &source) : source_(source) {}

    // Sinks are called in the order they were added; the walker does not own them.
    void add(Sink *sink) { sinks_.push_back(sink); }

    // Reads the whole source. Throws Error from the source or a sink.
    void run();

    const FunctionTable &functions() const { return functions_; }
    const std::vector<std::string> &warnings() const { return warnings_; }

private:
    struct Frame {
        uint32_t function;
        uint64_t begin;
        uint64_t child_ns;
    };
    struct Anomalies {
        uint64_t unmatched_leaves = 0;
        uint64_t first_unmatched_ts = 0;
        uint64_t unwinds = 0;         // LEAVEs that skipped frames
        uint64_t unwound_frames = 0;  // frames they closed
        uint64_t backwards = 0;       // timestamps below their predecessor
        uint64_t max_backwards_ns = 0;
        uint64_t open_at_end = 0;  // frames closed at the end of the thread
        uint32_t deepest_open = FunctionTable::none;
    };

    void walk_thread(const ThreadInfo &info);
    void pop(uint64_t ts);
    void report(const ThreadSummary &t, const Anomalies &a);

    EventSource &source_;
    std::vector<Sink *> sinks_;
    FunctionTable functions_;
    std::vector<Frame> stack_;
    std::vector<uint32_t> active_;  // per function: how many of its calls are on the stack
    std::vector<std::string> warnings_;
    uint64_t calls_ = 0;
};

// "thread 2 (tid 1235, worker)": how warnings and text output name a thread.
std::string thread_label(const ThreadInfo &t);

}  // namespace sonde::report
