// The call events of a Sonde trace written by `sonde record` (format 1.1, program events), read
// through the public reading API (sonde/trace_events.h) and handed to src/report as an
// EventSource: one thread per event shard, in shard order; method names from the trace's own
// method table, so a trace stays readable after its program is rebuilt or deleted.
//
// The four events of a traced library call (API_CALL, its API_ARGs, API_RETURN, API_END) become
// one api_call event. Event kinds the report does not model (thread names, ranges) are skipped; a LOSS event
// (events the recorder dropped) and the reader's recovery warnings (a trace cut short) become
// warnings, so that a report of incomplete data says so. Runs on the thread that calls it.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <sonde/trace_events.h>

#include "report/event.h"

class SondeTraceEventSource : public sonde::report::EventSource {
public:
    // Opens `path` as a Sonde trace. Throws sonde::report::Error naming the file when it cannot
    // be read or holds no program events (a memory-reference trace).
    explicit SondeTraceEventSource(const std::string &path);
    ~SondeTraceEventSource() override;
    SondeTraceEventSource(const SondeTraceEventSource &) = delete;
    SondeTraceEventSource &operator=(const SondeTraceEventSource &) = delete;

    bool next_thread(sonde::report::ThreadInfo *thread) override;
    size_t read(sonde::report::Event *out, size_t max) override;
    const sonde::report::MethodInfo *method(uint32_t index) override;
    std::vector<std::string> warnings() const override;

private:
    void read_tables();  // event counts and the reader's warnings, at open
    const sonde::report::ApiFunctionInfo *api_function(uint32_t index);
    // Adds one API event to the call being assembled; true when it completed the call (then
    // moved to calls_).
    bool take_api_event(const sonde_trace_event_t &e);
    [[noreturn]] void fail(sonde_status_t status, const std::string &what) const;

    std::string path_;
    sonde_trace_reader_t *reader_ = nullptr;
    sonde_trace_event_info_t info_{};
    int64_t shard_ = -1;  // the current thread's shard, -1 before the first
    std::vector<sonde_trace_event_t> batch_;
    std::unordered_map<uint32_t, std::unique_ptr<sonde::report::MethodInfo>> methods_;
    std::vector<std::string> modules_;  // module names by index, filled on first use
    std::vector<std::string> read_warnings_;
    std::unordered_map<uint32_t, std::unique_ptr<sonde::report::ApiFunctionInfo>> api_functions_;
    sonde::report::ApiCall pending_;  // the API call being assembled
    bool in_call_ = false;
    std::vector<sonde::report::ApiCall> calls_;  // completed calls of the current read()
    uint64_t lost_ = 0;
    uint32_t lost_threads_ = 0;
    bool lost_this_thread_ = false;
};
