// `sonde convert` (see convert.h): reads every shard of the input through the public reader
// of sonde/trace.h and writes them to a Sonde trace through the public writer. The trace is
// written to a temporary file next to the output and renamed onto it only when it is complete
// (output.h), so a failed or interrupted conversion leaves no output and an existing output is
// replaced (with --force) only by a complete one.
#include "cli/convert.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <sonde/trace.h>

#include "cli/options.h"
#include "cli/progress.h"
#include "cli/output.h"

namespace {

namespace cli = sonde::cli;

constexpr const char *kCommand = "sonde convert";

// The writer's messages name the file it writes, the temporary file: name the output instead.
std::string writer_message(const std::string &msg, const std::string &temp, const std::string &output) {
    if (msg.compare(0, temp.size(), temp) == 0) return output + msg.substr(temp.size());
    return msg.empty() ? output + ": write failed" : msg;
}

// Prints every warning line of the reader (truncated input recovered by scanning, ...).
// Returns how many there were.
size_t print_warnings(const sonde_trace_reader_t *reader) {
    const std::string text = sonde_trace_reader_warnings(reader);
    size_t count = 0, start = 0;
    while (start < text.size()) {
        size_t nl = text.find('\n', start);
        if (nl == std::string::npos) nl = text.size();
        if (nl > start) {
            std::fprintf(stderr, "%s: warning: %s\n", kCommand, text.substr(start, nl - start).c_str());
            ++count;
        }
        start = nl + 1;
    }
    return count;
}

}  // namespace

extern "C" int sonde_cli_convert(int argc, char **argv) {
    CLI::App app{
        "Convert a lackey, raw64 or DynamoRIO drmemtrace memory trace (or a Sonde trace) into a Sonde "
        "trace.\n"
        "The output appears only once it is complete; it must not exist unless --force is given.\n"
        "Exit status: 0 converted, 1 the input cannot be read or the output cannot be written,\n"
        "2 bad usage (nothing is read or written).",
        kCommand};
    std::string input;
    std::string output;
    std::string format = "auto";
    int level = 1;
    uint32_t chunk_records = 65536;
    bool force = false;
    bool strict = false;
    cli::add_version(app);
    app.add_option(
           "INPUT", input,
           "Input trace: lackey text (plain or .zst), raw64, Sonde, or a drmemtrace directory or file")
        ->required()
        ->check(cli::input_path(false));
    cli::add_format_option(app, &format,
                           "Input format: auto, sonde, lackey, raw64, drmemtrace (default auto)");
    app.add_option("-o,--output", output, "Output Sonde trace; its directory must exist")
        ->required()
        ->check(cli::output_file());
    app.add_option("--level", level, "zstd compression level (default 1)")->check(cli::unsigned_range(1, 19));
    app.add_option("--chunk-records", chunk_records, "Records per chunk (default 65536)")
        ->check(cli::unsigned_range(1, 1u << 20));
    app.add_flag("--force", force, "Replace an existing output (only once the new one is complete)");
    app.add_flag("--strict", strict, "Refuse an incomplete input (a truncated trace recovered by scanning)");
    const int parsed = cli::parse(app, argc, argv);
    if (parsed >= 0) return parsed;
    if (cli::same_file(input, output))
        return cli::usage_error(kCommand, "--output: " + output + " is the input " + input);

    const uint32_t fmt_value = cli::trace_format_value(format);
    // Refuse an existing output before reading anything.
    cli::AtomicOutput out;
    std::string error;
    const cli::AtomicOutput::Created created = out.create(output, force, &error);
    if (created == cli::AtomicOutput::Created::exists || created == cli::AtomicOutput::Created::refused)
        return cli::usage_error(kCommand, "--output: " + error);
    if (created != cli::AtomicOutput::Created::ok) {
        std::fprintf(stderr, "%s: %s\n", kCommand, error.c_str());
        return cli::kExitFailure;
    }
    // Every failure from here on: the message, then the temporary file goes and the output
    // stays as it was.
    auto failed = [&](const std::string &message) {
        std::fprintf(stderr, "%s: %s\n", kCommand, message.c_str());
        out.discard();
        std::fprintf(stderr, "%s: %s was not written\n", kCommand, output.c_str());
        return cli::kExitFailure;
    };
    char open_error[1024];
    sonde_trace_reader_t *reader = nullptr;
    sonde_status_t s =
        sonde_trace_reader_open(input.c_str(), fmt_value, open_error, sizeof open_error, &reader);
    if (s != SONDE_STATUS_SUCCESS) return failed(open_error);
    if (print_warnings(reader) > 0 && strict) {
        sonde_trace_reader_close(reader);
        return failed(input + " is incomplete (--strict)");
    }
    sonde_trace_writer_properties_t props{};
    props.struct_size = sizeof props;
    props.compression_level = level;
    props.chunk_records = chunk_records;
    sonde_trace_writer_t *writer = nullptr;
    s = sonde_trace_writer_create(out.temp_path().c_str(), &props, &writer);
    if (s != SONDE_STATUS_SUCCESS) {
        sonde_trace_reader_close(reader);
        return failed(output + ": cannot write the header (" + sonde_status_name(s) + ": " +
                      sonde_status_string(s) + ")");
    }
    uint32_t shards = 0;
    sonde_trace_reader_num_shards(reader, &shards);
    std::vector<sonde_memref_t> batch(65536);
    unsigned long long total = 0;
    std::string message;
    std::atomic<uint64_t> converted{0};  // records, read by the progress line's thread
    cli::ProgressLine line(kCommand, [reader, &converted] {
        cli::ProgressSample p;
        sonde_trace_reader_progress(reader, &p.done, &p.total);
        p.records = converted.load(std::memory_order_relaxed);
        return p;
    });
    for (uint32_t shard = 0; shard < shards && message.empty(); ++shard) {
        for (;;) {
            size_t n = 0;
            s = sonde_trace_reader_read_shard(reader, shard, batch.data(), batch.size(), &n);
            if (s != SONDE_STATUS_SUCCESS) {
                message = sonde_trace_reader_error(reader);
                break;
            }
            if (n == 0) break;
            s = sonde_trace_writer_write(writer, shard, batch.data(), n);
            if (s != SONDE_STATUS_SUCCESS) {
                message = writer_message(sonde_trace_writer_error(writer), out.temp_path(), output);
                break;
            }
            total += n;
            converted.store(total, std::memory_order_relaxed);
        }
    }
    line.finish();
    // A failure inside close (the last chunks, the index, the footer) has no message of its own
    // once the writer is freed: report the status against the output.
    const std::string before_close = sonde_trace_writer_error(writer);
    s = sonde_trace_writer_close(writer);
    sonde_trace_reader_close(reader);
    if (s != SONDE_STATUS_SUCCESS && message.empty())
        message = before_close.empty()
                      ? output + ": writing the last chunks, the index and the footer failed (" +
                            sonde_status_name(s) + ")"
                      : writer_message(before_close, out.temp_path(), output);
    if (!message.empty()) return failed(message);
    if (!out.commit(&error)) return failed(error);
    std::printf("converted %llu records in %u shard(s) from %s to %s\n", total, shards, input.c_str(),
                output.c_str());
    return cli::kExitOk;
}
