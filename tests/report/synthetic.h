// Synthetic event streams for the tests of src/report: a source that serves threads of events
// held in vectors, a few events at a time (so that batch boundaries fall everywhere), and an
// ostream that only counts what it is given.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "report/event.h"

namespace synthetic {

using sonde::report::Event;
using sonde::report::EventKind;
using sonde::report::MethodInfo;
using sonde::report::ThreadInfo;

struct Thread {
    ThreadInfo info;
    std::vector<Event> events;
    std::vector<std::string> texts;  // mark texts, owned here

    Thread &enter(uint64_t ts, uint32_t m) { return add(EventKind::enter, ts, m); }
    Thread &leave(uint64_t ts, uint32_t m) { return add(EventKind::leave, ts, m); }
    Thread &start(uint64_t ts) { return add(EventKind::thread_start, ts, 0); }
    Thread &end(uint64_t ts) { return add(EventKind::thread_end, ts, 0); }
    Thread &mark(uint64_t ts, const std::string &text) {
        texts.push_back(text);
        return add(EventKind::mark, ts, static_cast<uint32_t>(texts.size() - 1));
    }

private:
    Thread &add(EventKind k, uint64_t ts, uint32_t m) {
        Event e;
        e.kind = k;
        e.ts = ts;
        e.method = m;  // for marks: index into texts until read() sets text
        events.push_back(e);
        return *this;
    }
};

class VectorSource : public sonde::report::EventSource {
public:
    explicit VectorSource(size_t batch = 3) : batch_(batch) {}

    void method(uint32_t index, const std::string &name, const std::string &file = "", uint32_t line = 0) {
        MethodInfo m;
        m.name = name;
        m.module = "prog";
        m.file = file;
        m.line = line;
        methods_[index] = m;
    }
    Thread &thread(uint64_t id, uint64_t tid, const std::string &name) {
        threads_.emplace_back();
        threads_.back().info = ThreadInfo{id, tid, name};
        return threads_.back();
    }

    bool next_thread(ThreadInfo *t) override {
        if (next_ >= threads_.size()) return false;
        current_ = next_++;
        pos_ = 0;
        *t = threads_[current_].info;
        return true;
    }
    size_t read(Event *out, size_t max) override {
        const Thread &t = threads_[current_];
        size_t n = 0;
        while (n < max && n < batch_ && pos_ < t.events.size()) {
            Event e = t.events[pos_++];
            if (e.kind == EventKind::mark) e.text = t.texts[e.method];
            out[n++] = e;
        }
        return n;
    }
    const MethodInfo *method(uint32_t index) override {
        const auto it = methods_.find(index);
        return it == methods_.end() ? nullptr : &it->second;
    }
    uint64_t pid() const override { return 4242; }

private:
    size_t batch_;
    std::map<uint32_t, MethodInfo> methods_;
    std::vector<Thread> threads_;
    size_t next_ = 0, current_ = 0, pos_ = 0;
};

// An ostream that discards what it is given and counts the bytes.
class CountingBuf : public std::streambuf {
public:
    uint64_t bytes = 0;

protected:
    std::streamsize xsputn(const char *, std::streamsize n) override {
        bytes += static_cast<uint64_t>(n);
        return n;
    }
    int_type overflow(int_type c) override {
        if (c != traits_type::eof()) ++bytes;
        return traits_type::not_eof(c);
    }
};

}  // namespace synthetic
