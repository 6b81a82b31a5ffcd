// The HTML report: one self-contained page (inline CSS and JavaScript, no network access, no
// external library) with
//   - a flame graph of all threads (SVG; callers above callees; hover shows name, time and
//     share, click zooms into a frame, "Reset zoom" goes back),
//   - the top-functions table, the same numbers as the JSON report, per thread on request,
//   - the threads, with their time span,
//   - the warnings, and
//   - analysis results when given: the object `sonde analyze --json` writes, shown as a
//     cache_sim table, a miss-ratio curve plotted from reuse_distance's "mrc", basic_counts,
//     and any other tool's JSON as text.
// Every name goes into the page escaped: as HTML text through html_escape(), and inside the
// embedded JSON with `<`, `>` and `&` as \u escapes, so a name can never close a tag.
#pragma once

#include <ostream>
#include <string>

#include "report/profile.h"

namespace sonde::report {

struct HtmlOptions {
    std::string title;    // shown in the heading (e.g. the trace's file name)
    std::string version;  // Sonde's version, shown in the footer and the embedded data
    SortKey sort = SortKey::self;
    std::string analysis;  // `sonde analyze --json` output, or empty
};

// Throws Error when `text` is not a JSON object (the shape `sonde analyze --json` writes).
void check_analysis_json(const std::string &text);

// Writes the page. The profile must keep trees (Profile(functions, true)). Throws Error on an
// invalid analysis object.
void write_html(const Profile &profile, const HtmlOptions &options, std::ostream &out);

}  // namespace sonde::report
