// The walker (see walker.h): one pass over an EventSource, thread by thread, with a shadow
// stack per thread. Hot path: walk_thread()'s loop runs once per event; it does not allocate
// once the stack and the per-function counters have grown to the trace's depth and size.
#include "report/walker.h"

#include <algorithm>
#include <array>

namespace sonde::report {

uint32_t FunctionTable::find(uint32_t index) const {
    if (index < kDirect) return index < direct_.size() && direct_[index] != 0 ? direct_[index] - 1 : none;
    const auto it = far_.find(index);
    return it == far_.end() ? none : it->second;
}

uint32_t FunctionTable::intern(uint32_t index, EventSource &source) {
    const uint32_t found = find(index);
    if (found != none) return found;
    const uint32_t id = static_cast<uint32_t>(infos_.size());
    const MethodInfo *m = source.method(index);
    if (m != nullptr && !m->name.empty()) {
        infos_.push_back(*m);
    } else {
        MethodInfo unknown = m != nullptr ? *m : MethodInfo{};
        unknown.name = "method#" + std::to_string(index);
        infos_.push_back(std::move(unknown));
        ++unknown_;
    }
    indices_.push_back(index);
    if (index < kDirect) {
        if (index >= direct_.size()) direct_.resize(std::max<size_t>(index + 1, direct_.size() * 2), 0);
        direct_[index] = id + 1;
    } else {
        far_.emplace(index, id);
    }
    return id;
}

std::string thread_label(const ThreadInfo &t) {
    std::string s = "thread " + std::to_string(t.id) + " (tid " + std::to_string(t.tid);
    if (!t.name.empty()) s += ", " + t.name;
    return s + ")";
}

void Walker::run() {
    ThreadInfo info;
    while (source_.next_thread(&info)) walk_thread(info);
    const std::vector<std::string> from_source = source_.warnings();
    warnings_.insert(warnings_.begin(), from_source.begin(), from_source.end());
    if (functions_.unknown() != 0)
        warnings_.push_back(std::to_string(functions_.unknown()) +
                            " method index(es) missing from the method table, named method#INDEX");
    for (Sink *s : sinks_) s->finish(warnings_);
}

// Closes the top frame at `ts` (>= its begin, since timestamps are kept monotonic).
void Walker::pop(uint64_t ts) {
    const Frame f = stack_.back();
    stack_.pop_back();
    Call c;
    c.function = f.function;
    c.depth = static_cast<uint32_t>(stack_.size());
    c.begin = f.begin;
    c.end = ts;
    const uint64_t dur = ts - f.begin;
    c.self_ns = dur - std::min(dur, f.child_ns);
    c.outermost = active_[f.function] == 1;
    --active_[f.function];
    if (!stack_.empty()) stack_.back().child_ns += dur;
    ++calls_;
    for (Sink *s : sinks_) s->leave(c);
}

void Walker::walk_thread(const ThreadInfo &info) {
    for (Sink *s : sinks_) s->begin_thread(info);
    ThreadSummary t;
    t.info = info;
    Anomalies a;
    calls_ = 0;
    uint64_t last = 0;
    std::array<Event, 4096> batch;
    for (;;) {
        const size_t n = source_.read(batch.data(), batch.size());
        if (n == 0) break;
        for (size_t i = 0; i < n; ++i) {
            const Event &e = batch[i];
            uint64_t ts = e.ts;
            if (!t.has_events) {
                t.has_events = true;
                t.begin = ts;
            } else if (ts < last) {
                ++a.backwards;
                a.max_backwards_ns = std::max(a.max_backwards_ns, last - ts);
                ts = last;
            }
            last = ts;
            switch (e.kind) {
                case EventKind::enter: {
                    const size_t before = functions_.size();
                    const uint32_t id = functions_.intern(e.method, source_);
                    if (functions_.size() != before) active_.resize(functions_.size(), 0);
                    for (Sink *s : sinks_) s->enter(id, ts, static_cast<uint32_t>(stack_.size()));
                    stack_.push_back(Frame{id, ts, 0});
                    ++active_[id];
                    break;
                }
                case EventKind::leave: {
                    const uint32_t id = functions_.find(e.method);
                    if (id == FunctionTable::none || active_[id] == 0) {
                        if (a.unmatched_leaves++ == 0) a.first_unmatched_ts = ts;
                        break;
                    }
                    if (stack_.back().function != id) {
                        ++a.unwinds;
                        while (stack_.back().function != id) {
                            pop(ts);
                            ++a.unwound_frames;
                        }
                    }
                    pop(ts);
                    break;
                }
                case EventKind::mark:
                    ++t.marks;
                    for (Sink *s : sinks_) s->mark(e.text, ts);
                    break;
                case EventKind::api_call:
                    if (e.api == nullptr) break;
                    ++t.api_calls;
                    for (Sink *s : sinks_) s->api_call(*e.api);
                    break;
                case EventKind::thread_start:
                case EventKind::thread_end: break;
            }
        }
    }
    t.end = last;
    if (!stack_.empty()) {
        a.open_at_end = stack_.size();
        a.deepest_open = stack_.back().function;
        while (!stack_.empty()) pop(last);
    }
    t.calls = calls_;
    report(t, a);
    for (Sink *s : sinks_) s->end_thread(t);
}

void Walker::report(const ThreadSummary &t, const Anomalies &a) {
    const std::string who = thread_label(t.info) + ": ";
    if (a.unmatched_leaves != 0)
        warnings_.push_back(who + std::to_string(a.unmatched_leaves) +
                            " LEAVE event(s) without a matching ENTER ignored (the first at " +
                            std::to_string(a.first_unmatched_ts) + " ns)");
    if (a.unwinds != 0)
        warnings_.push_back(who + std::to_string(a.unwinds) +
                            " LEAVE event(s) of a method below the top of the stack (longjmp or "
                            "exception); " +
                            std::to_string(a.unwound_frames) + " frame(s) above it closed at its timestamp");
    if (a.open_at_end != 0)
        warnings_.push_back(
            who + std::to_string(a.open_at_end) +
            " call(s) still open at the end of the thread (innermost: " + functions_.name(a.deepest_open) +
            ") closed at its last timestamp, " + std::to_string(t.end) + " ns");
    if (a.backwards != 0)
        warnings_.push_back(who + std::to_string(a.backwards) +
                            " timestamp(s) earlier than the previous event (by up to " +
                            std::to_string(a.max_backwards_ns) + " ns) taken as equal to it");
}

}  // namespace sonde::report
