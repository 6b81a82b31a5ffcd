// The profile: per function, calls, inclusive ("total") and self time, per thread and for all
// threads, and optionally each thread's call tree. It is a Sink: add it to a Walker, run, then
// read it or hand it to the writers of report.h and html.h.
//
// Total time follows uftrace's rule for recursion: a call's duration counts only when no other
// call of the same function is below it on the stack, so f -> f -> f counts the outer call
// once. Self time is a call's duration minus its direct callees'. For all threads, the
// figures of the threads are summed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/call_tree.h"
#include "report/walker.h"

namespace sonde::report {

struct FunctionStats {
    uint32_t function = 0;
    uint64_t calls = 0;
    uint64_t total_ns = 0;
    uint64_t self_ns = 0;
};

// API calls of one traced function, over all threads.
struct ApiStats {
    const ApiFunctionInfo *function = nullptr;
    uint64_t calls = 0;
    uint64_t total_ns = 0;
};

struct ThreadProfile {
    ThreadSummary summary;
    std::vector<FunctionStats> functions;  // the functions it called, by first completed call
    CallTree tree;                         // empty unless the profile keeps trees
};

enum class SortKey { self, total, calls, name };

// Parses "self", "total", "calls", "name"; false for anything else.
bool parse_sort_key(const std::string &text, SortKey *key);

class Profile : public Sink {
public:
    Profile(const FunctionTable &functions, bool keep_trees)
        : functions_(functions), keep_trees_(keep_trees), builder_(nullptr) {}

    void begin_thread(const ThreadInfo &info) override;
    void enter(uint32_t function, uint64_t ts, uint32_t depth) override;
    void leave(const Call &c) override;
    void end_thread(const ThreadSummary &t) override;
    void api_call(const ApiCall &c) override;
    void finish(const std::vector<std::string> &warnings) override { warnings_ = warnings; }

    const FunctionTable &functions() const { return functions_; }
    bool has_trees() const { return keep_trees_; }
    const std::vector<ThreadProfile> &threads() const { return threads_; }
    // All threads together, in the order of the threads' lists.
    std::vector<FunctionStats> totals() const;
    const std::vector<std::string> &warnings() const { return warnings_; }
    // The traced library functions that were called, by library then function name.
    std::vector<ApiStats> api() const;

    // Sorts descending by the key (ascending for names), ties by name then function id.
    void sort(std::vector<FunctionStats> &list, SortKey key) const;

private:
    const FunctionTable &functions_;
    bool keep_trees_;
    TreeBuilder builder_;
    std::vector<ThreadProfile> threads_;
    std::vector<FunctionStats> current_;  // by function id, for the current thread
    std::vector<uint32_t> touched_;       // ids in current_ with calls, in first-call order
    std::vector<std::string> warnings_;
    std::vector<ApiStats> api_;  // in order of first call
};

}  // namespace sonde::report
