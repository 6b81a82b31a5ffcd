// `sonde report` (see report.h): parses the command line (CLI11), opens the input through
// open_event_source(), walks it once into a profile, and writes the text report or call tree
// to stdout and the JSON and HTML files through temporary files. Runs on the main thread.
#include "cli/report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/event_source.h"
#include "cli/metadata.h"
#include "cli/options.h"
#include "cli/output_file.h"
#include "report/html.h"
#include "report/profile.h"
#include "report/report.h"
#include "report/walker.h"

namespace {

std::string base_name(const std::string &path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool write_file(const std::string &path, const std::string &what, const std::string &text) {
    OutputFile f;
    std::string error;
    if (f.open(path, true, &error)) {
        f.stream() << text;
        if (f.commit(&error)) return true;
    }
    std::fprintf(stderr, "sonde report: %s: %s\n", what.c_str(), error.c_str());
    return false;
}

// The most of `sonde analyze --json` results that --analysis takes: ten times the largest the
// benchmarks write (a histogram of 1.9 M distances, 100 MB), and more than a page can show.
constexpr size_t kMaxAnalysisBytes = size_t{1} << 30;

// Reads the --analysis file whole into *text. It must be a JSON object from its first byte on
// and hold at most kMaxAnalysisBytes, so that a device (/dev/zero) or a stream that never ends is
// refused as soon as it shows what it is, not read until memory runs out. "" or why not.
std::string read_analysis(const std::string &path, std::string *text) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::strerror(errno);
    char chunk[65536];
    while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
        text->append(chunk, static_cast<size_t>(in.gcount()));
        const size_t first = text->find_first_not_of(" \t\r\n");
        if (first != std::string::npos && (*text)[first] != '{')
            return "not the results of sonde analyze --json (they are a JSON object)";
        if (text->size() > kMaxAnalysisBytes)
            return "more than " + std::to_string(kMaxAnalysisBytes >> 30) +
                   " GiB: not the results of sonde analyze --json";
    }
    if (in.bad()) return std::strerror(errno);
    return "";
}

}  // namespace

int sonde_cli_report(int argc, char **argv) {
    CLI::App app{"Functions, threads and the call tree of a trace of call events.", "sonde report"};
    std::string input, sort = "self", json_path, html_path, analysis_path;
    bool tree = false, per_thread = false, quiet = false;
    uint32_t depth = 0;
    sonde::cli::add_version(app);
    app.add_option("FILE", input, "Trace of call events (an event text file: see docs/recording.md)")
        ->required()
        ->check(sonde::cli::input_file(false));
    app.add_option("--sort,-s", sort, "Sort functions by self, total, calls or name")
        ->check(CLI::IsMember({"self", "total", "calls", "name"}))
        ->capture_default_str();
    app.add_flag("--tree", tree, "Print the call tree of each thread instead of the function table");
    app.add_option("--depth", depth, "With --tree: show this many levels of calls (0: all)")
        ->check(sonde::cli::unsigned_range(0, UINT32_MAX));
    app.add_flag("--threads", per_thread, "Also print a function table per thread");
    app.add_option("--json", json_path, "Also write the report as JSON to this file (- for stdout)");
    app.add_option("--html", html_path, "Also write the report as one HTML page to this file (- for stdout)");
    app.add_option("--analysis", analysis_path,
                   "With --html: show these results of sonde analyze --json in the page")
        ->check(CLI::ExistingFile);
    app.add_flag("--quiet,-q", quiet, "Print nothing on stdout (with --json or --html)");
    const std::string start_time = sonde::cli::utc_now();
    const int parsed = sonde::cli::parse(app, argc, argv);
    if (parsed >= 0) return parsed;
    if (!analysis_path.empty() && html_path.empty()) {
        return sonde::cli::usage_error("sonde report", "--analysis: needs --html");
    }
    sonde::report::ReportOptions options;
    sonde::report::parse_sort_key(sort, &options.sort);
    options.version = sonde::cli::version_number();
    options.per_thread = per_thread;
    options.tree = tree;
    options.max_depth = depth;

    std::string analysis;
    if (!analysis_path.empty()) {
        const std::string why = read_analysis(analysis_path, &analysis);
        if (!why.empty()) {
            std::fprintf(stderr, "sonde report: %s: %s\n", analysis_path.c_str(), why.c_str());
            return 1;
        }
        try {
            sonde::report::check_analysis_json(analysis);
        } catch (const sonde::report::Error &e) {
            std::fprintf(stderr, "sonde report: %s: %s\n", analysis_path.c_str(), e.what());
            return 1;
        }
    }

    std::string error;
    std::unique_ptr<sonde::report::EventSource> source = open_event_source(input, &error);
    if (!source) {
        std::fprintf(stderr, "sonde report: %s\n", error.c_str());
        return 1;
    }
    sonde::report::Walker walker(*source);
    sonde::report::Profile profile(walker.functions(), tree || !html_path.empty());
    walker.add(&profile);
    try {
        walker.run();
    } catch (const sonde::report::Error &e) {
        std::fprintf(stderr, "sonde report: %s\n", e.what());
        return 1;
    }
    for (const std::string &w : profile.warnings())
        std::fprintf(stderr, "sonde report: warning: %s\n", w.c_str());

    if (!quiet) {
        if (tree)
            sonde::report::write_text_tree(profile, options, std::cout);
        else
            sonde::report::write_text_report(profile, options, std::cout);
        std::cout.flush();
        if (!std::cout) {
            std::fprintf(stderr, "sonde report: stdout: write error\n");
            return 1;
        }
    }
    if (!json_path.empty()) {
        nlohmann::ordered_json used;
        used["sort"] = sort;
        used["tree"] = tree;
        used["depth"] = depth;
        used["threads"] = per_thread;
        const std::string text =
            sonde::cli::with_metadata(sonde::cli::metadata("report", {input}, used, start_time),
                                      sonde::report::report_json(profile, options));
        if (!write_file(json_path, "--json", text)) return 1;
    }
    if (!html_path.empty()) {
        sonde::report::HtmlOptions html;
        html.title = base_name(input);
        html.version = options.version;
        html.sort = options.sort;
        html.analysis = analysis;
        std::ostringstream page;
        try {
            sonde::report::write_html(profile, html, page);
        } catch (const sonde::report::Error &e) {
            std::fprintf(stderr, "sonde report: --html: %s\n", e.what());
            return 1;
        }
        if (!write_file(html_path, "--html", page.str())) return 1;
    }
    return 0;
}
