// The event text format: a line-oriented file of call events that people and tests can write
// by hand, read through the EventSource interface. It is a test input and fixture format for
// `sonde report` and `sonde export`, not what `sonde record` writes.
//
//   sonde-events 1                          first line, always
//   # a comment; blank lines are ignored
//   pid 4242                                optional: the recorded process id
//   method INDEX MODULE FILE LINE NAME...   a method table entry; MODULE and FILE are one word
//                                           each, '-' when unknown; LINE is 0 when unknown;
//                                           NAME is the rest of the line (spaces allowed)
//   thread ID TID [NAME...]                 starts a thread; the events after it are its own
//   enter TS METHOD                         TS in nanoseconds, METHOD a method index
//   leave TS METHOD
//   start TS                                the thread starts
//   end TS                                  the thread ends
//   mark TS [TEXT...]                       a user mark; TEXT is the rest of the line
//
// `pid` and `method` lines come before the first `thread` line; thread ids are unique; words
// are separated by single spaces or tabs. A line that breaks these rules stops reading with
// an Error that names the file and line. Events may name methods the table lacks (they are
// reported as method#INDEX).
#pragma once

#include <cstdio>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "report/event.h"

namespace sonde::report {

class TextEventSource : public EventSource {
public:
    // Opens `path` and reads its header and method table. Throws Error.
    explicit TextEventSource(const std::string &path);
    ~TextEventSource() override;
    TextEventSource(const TextEventSource &) = delete;
    TextEventSource &operator=(const TextEventSource &) = delete;

    // True when the file starts with the "sonde-events 1" line.
    static bool recognizes(const std::string &path);

    bool next_thread(ThreadInfo *thread) override;
    size_t read(Event *out, size_t max) override;
    const MethodInfo *method(uint32_t index) override;
    uint64_t pid() const override { return pid_; }

private:
    void read_header();  // the magic line, pid and method lines, up to the first thread
    bool next_line();    // reads the next non-blank, non-comment line into line_; false at EOF
    [[noreturn]] void malformed(const std::string &message) const;

    std::string path_;
    std::FILE *file_ = nullptr;
    char *buf_ = nullptr;
    size_t cap_ = 0;
    std::string_view line_;  // the current line, without its newline
    uint64_t lineno_ = 0;
    bool pending_thread_ = false;  // line_ is a `thread` line not yet handed out
    bool in_thread_ = false;
    bool eof_ = false;
    uint64_t pid_ = 0;
    std::unordered_map<uint32_t, MethodInfo> methods_;
    std::unordered_set<uint64_t> thread_ids_;
    std::deque<std::string> texts_;  // mark texts of the last read() batch
};

}  // namespace sonde::report
