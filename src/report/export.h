// Exports: sinks that write calls to a stream as the walker produces them, so that a trace of
// any length exports in bounded memory.
//   chrome  Trace Event Format JSON (Perfetto UI, chrome://tracing, speedscope): a complete
//           event ("ph":"X", ts and dur in microseconds with three decimals, i.e. exact
//           nanoseconds) per call, written when the call returns, so children come before
//           their parent; thread names as metadata events ("ph":"M"); marks as thread-scoped
//           instant events ("ph":"i"); warnings and the version under "otherData".
//   folded  collapsed stacks (flamegraph.pl, speedscope, inferno): "main;work;fibo 12345", one
//           line per distinct stack with a non-zero weight, the weight being the stack's self
//           time in nanoseconds, all threads merged. Lines come out at the end, sorted by
//           frame names; memory is bounded by the call tree. `;` in a name becomes `:`.
//   csv     one row per call, in the order the calls return:
//           thread,depth,name,begin_ns,duration_ns (thread is Sonde's thread id, depth 0 for a
//           call with no caller in the trace).
// A write error throws Error.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "report/call_tree.h"
#include "report/walker.h"

namespace sonde::report {

enum class ExportFormat { chrome, folded, csv };

// Parses "chrome", "folded", "csv"; false for anything else.
bool parse_export_format(const std::string &text, ExportFormat *format);

// Buffers output and hands it to the stream in large writes.
class StreamWriter : public Sink {
protected:
    explicit StreamWriter(std::ostream &out) : out_(out) { buf_.reserve(kFlushAt + 4096); }
    void maybe_flush() {
        if (buf_.size() >= kFlushAt) flush();
    }
    void flush();

    std::ostream &out_;
    std::string buf_;

private:
    static constexpr size_t kFlushAt = 1 << 16;
};

class ChromeWriter : public StreamWriter {
public:
    // `pid` labels every event (1 when the source does not know it); `version` goes into
    // otherData.sonde_version.
    ChromeWriter(const FunctionTable &functions, std::ostream &out, uint64_t pid, std::string version);

    void begin_thread(const ThreadInfo &info) override;
    void leave(const Call &c) override;
    void mark(std::string_view text, uint64_t ts) override;
    // A traced library call: an "X" event named after the function, category "api:LIBRARY",
    // whose args hold each argument by name and the return value as "ret".
    void api_call(const ApiCall &c) override;
    void finish(const std::vector<std::string> &warnings) override;

private:
    void separator();
    const std::string &name_json(uint32_t function);

    const FunctionTable &functions_;
    std::string version_;
    std::string pid_;                 // ,"pid":P
    std::string ids_;                 // ,"pid":P,"tid":T  for the current thread
    std::vector<std::string> names_;  // function id -> JSON string literal, filled lazily
    bool first_ = true;
};

class FoldedWriter : public StreamWriter {
public:
    FoldedWriter(const FunctionTable &functions, std::ostream &out)
        : StreamWriter(out), functions_(functions), builder_(&tree_) {}

    void begin_thread(const ThreadInfo &info) override { builder_.begin_thread(info); }
    void enter(uint32_t function, uint64_t ts, uint32_t depth) override {
        builder_.enter(function, ts, depth);
    }
    void leave(const Call &c) override { builder_.leave(c); }
    void finish(const std::vector<std::string> &warnings) override;

    const CallTree &tree() const { return tree_; }

private:
    const FunctionTable &functions_;
    CallTree tree_;
    TreeBuilder builder_;
};

class CsvWriter : public StreamWriter {
public:
    CsvWriter(const FunctionTable &functions, std::ostream &out);

    void begin_thread(const ThreadInfo &info) override;
    void leave(const Call &c) override;
    void finish(const std::vector<std::string> &warnings) override;

private:
    const FunctionTable &functions_;
    std::string thread_;              // "ID,"
    std::vector<std::string> names_;  // function id -> CSV field, filled lazily
};

// The name of a function as a folded-stack frame: `;` becomes `:`, line breaks spaces.
std::string folded_frame(const std::string &name);

}  // namespace sonde::report
