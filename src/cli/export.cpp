// `sonde export` (see export.h): parses the command line (CLI11), opens the input through
// open_event_source() and streams its calls into one writer of src/report/export.h, which
// writes to a temporary file renamed over OUT at the end. Memory stays bounded whatever the
// length of the trace. Runs on the main thread.
#include "cli/export.h"

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/event_source.h"
#include "cli/options.h"
#include "cli/output_file.h"
#include "report/export.h"
#include "report/walker.h"

namespace {

// Counts what went out, for the summary line.
class Count : public sonde::report::Sink {
public:
    void leave(const sonde::report::Call &) override { ++calls; }
    void end_thread(const sonde::report::ThreadSummary &) override { ++threads; }
    void api_call(const sonde::report::ApiCall &) override { ++api_calls; }
    unsigned long long calls = 0, threads = 0, api_calls = 0;
};

}  // namespace

int sonde_cli_export(int argc, char **argv) {
    CLI::App app{"Write the calls of a trace for Perfetto UI, speedscope, flame graphs or spreadsheets.",
                 "sonde export"};
    std::string input, format, output;
    bool force = false;
    sonde::cli::add_version(app);
    app.add_option("FILE", input, "Trace of call events (an event text file: see docs/recording.md)")
        ->required()
        ->check(sonde::cli::input_file(false));
    app.add_option("--format,-f", format,
                   "chrome (Trace Event JSON), folded (collapsed stacks) or csv (one row per call)")
        ->check(CLI::IsMember({"chrome", "folded", "csv"}))
        ->required();
    app.add_option("-o,--output", output, "Output file, - for stdout")->required();
    app.add_flag("--force", force, "Overwrite OUT if it exists");
    const int parsed = sonde::cli::parse(app, argc, argv);
    if (parsed >= 0) return parsed;
    sonde::report::ExportFormat fmt = sonde::report::ExportFormat::chrome;
    sonde::report::parse_export_format(format, &fmt);

    std::string error;
    std::unique_ptr<sonde::report::EventSource> source = open_event_source(input, &error);
    if (!source) {
        std::fprintf(stderr, "sonde export: %s\n", error.c_str());
        return 1;
    }
    OutputFile out;
    if (!out.open(output, force, &error)) {
        std::fprintf(stderr, "sonde export: %s\n", error.c_str());
        return 1;
    }
    const std::string version = sonde::cli::version_number();

    sonde::report::Walker walker(*source);
    std::unique_ptr<sonde::report::Sink> writer;
    switch (fmt) {
        case sonde::report::ExportFormat::chrome:
            writer = std::make_unique<sonde::report::ChromeWriter>(walker.functions(), out.stream(),
                                                                   source->pid(), version);
            break;
        case sonde::report::ExportFormat::folded:
            writer = std::make_unique<sonde::report::FoldedWriter>(walker.functions(), out.stream());
            break;
        case sonde::report::ExportFormat::csv:
            writer = std::make_unique<sonde::report::CsvWriter>(walker.functions(), out.stream());
            break;
    }
    Count count;
    walker.add(writer.get());
    walker.add(&count);
    try {
        walker.run();
    } catch (const sonde::report::Error &e) {
        const std::string what = e.what();  // writers say "write error", sources name their file
        std::fprintf(stderr, "sonde export: %s\n",
                     what == "write error" ? (output + ": " + what).c_str() : what.c_str());
        return 1;
    }
    for (const std::string &w : walker.warnings())
        std::fprintf(stderr, "sonde export: warning: %s\n", w.c_str());
    if (!out.commit(&error)) {
        std::fprintf(stderr, "sonde export: %s\n", error.c_str());
        return 1;
    }
    if (output != "-") {
        // API calls (sonde record --api) are named when there are any; only chrome shows them.
        std::string api;
        if (count.api_calls != 0)
            api = " and " + std::to_string(count.api_calls) + " API call(s)" +
                  (fmt == sonde::report::ExportFormat::chrome ? "" : " (not in this format)");
        std::printf("exported %llu call(s)%s of %llu thread(s) from %s to %s (%s)\n", count.calls,
                    api.c_str(), count.threads, input.c_str(), output.c_str(), format.c_str());
    }
    return 0;
}
