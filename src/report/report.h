// Writers of a Profile: the text report (uftrace `report`), the call tree (uftrace `graph`) and
// the JSON report:
//   {"sonde_version": "1.2.0",
//    "functions": [{"name": ..., "calls": N, "total_ns": N, "self_ns": N,
//                   "module": ..., "file": ..., "line": N}],        (the last three when known)
//    "threads": [{"id": N, "tid": N, "name": ..., "begin_ns": N, "end_ns": N, "calls": N,
//                 "marks": N, "functions": [... same shape ...],
//                 "tree": [{"parent": I, "name": ..., "calls": N, "total_ns": N, "self_ns": N}]}],
//    "warnings": ["..."]}
// Function lists are sorted by the report's key. "tree" is present when asked for: the thread's
// call tree in depth-first order, children in first-call order, each node's "parent" the index
// of its parent in the same array (-1 for a call with no caller).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "report/profile.h"

namespace sonde::report {

struct ReportOptions {
    SortKey sort = SortKey::self;
    std::string version;      // the "sonde_version" of JSON output
    bool per_thread = false;  // text: also a function table per thread
    bool tree = false;        // JSON: each thread's "tree"
    uint32_t max_depth = 0;   // call tree: deepest level shown (1 = outermost calls), 0 = all
};

void write_text_report(const Profile &profile, const ReportOptions &options, std::ostream &out);
void write_text_tree(const Profile &profile, const ReportOptions &options, std::ostream &out);
// The JSON report, indented, with a final newline.
std::string report_json(const Profile &profile, const ReportOptions &options);

}  // namespace sonde::report
