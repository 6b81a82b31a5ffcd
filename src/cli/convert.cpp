// `sonde convert` (see convert.h): reads every shard of the input through the public reader
// of sonde/trace.h and writes them to a Sonde trace through the public writer.
#include "cli/convert.h"

#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <sonde/trace.h>

extern "C" int sonde_cli_convert(int argc, char **argv) {
    CLI::App app{"Convert a lackey, raw64 or drmemtrace memory trace into a Sonde trace", "sonde convert"};
    std::string input;
    std::string output;
    std::string format = "auto";
    int level = 1;
    uint32_t chunk_records = 65536;
    app.add_option("INPUT", input,
                   "Input trace (lackey text plain or .zst, raw64, Sonde, or a drmemtrace directory or file)")
        ->required();
    app.add_option("--format", format, "Input format: auto, sonde, lackey, raw64, drmemtrace")
        ->check(CLI::IsMember({"auto", "sonde", "lackey", "raw64", "drmemtrace"}));
    app.add_option("-o,--output", output, "Output Sonde trace")->required();
    app.add_option("--level", level, "zstd compression level (1-19)")->check(CLI::Range(1, 19));
    app.add_option("--chunk-records", chunk_records, "Records per chunk (1-1048576)")
        ->check(CLI::Range(1u, 1u << 20));
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e);
    }
    const uint32_t fmt_value = format == "sonde"        ? SONDE_TRACE_FORMAT_SONDE
                               : format == "lackey"     ? SONDE_TRACE_FORMAT_LACKEY
                               : format == "raw64"      ? SONDE_TRACE_FORMAT_RAW64
                               : format == "drmemtrace" ? SONDE_TRACE_FORMAT_DRMEMTRACE
                                                        : SONDE_TRACE_FORMAT_AUTO;
    char error[1024];
    sonde_trace_reader_t *reader = nullptr;
    sonde_status_t s = sonde_trace_reader_open(input.c_str(), fmt_value, error, sizeof error, &reader);
    if (s != SONDE_STATUS_SUCCESS) {
        std::fprintf(stderr, "sonde convert: %s\n", error);
        return 1;
    }
    const std::string warnings = sonde_trace_reader_warnings(reader);
    if (!warnings.empty()) std::fprintf(stderr, "sonde convert: warning: %s\n", warnings.c_str());
    sonde_trace_writer_properties_t props{};
    props.struct_size = sizeof props;
    props.compression_level = level;
    props.chunk_records = chunk_records;
    sonde_trace_writer_t *writer = nullptr;
    s = sonde_trace_writer_create(output.c_str(), &props, &writer);
    if (s != SONDE_STATUS_SUCCESS) {
        std::fprintf(stderr, "sonde convert: %s: cannot create (%s)\n", output.c_str(),
                     sonde_status_string(s));
        sonde_trace_reader_close(reader);
        return 1;
    }
    uint32_t shards = 0;
    sonde_trace_reader_num_shards(reader, &shards);
    std::vector<sonde_memref_t> batch(65536);
    unsigned long long total = 0;
    int rc = 0;
    for (uint32_t shard = 0; shard < shards && rc == 0; ++shard) {
        for (;;) {
            size_t n = 0;
            s = sonde_trace_reader_read_shard(reader, shard, batch.data(), batch.size(), &n);
            if (s != SONDE_STATUS_SUCCESS) {
                std::fprintf(stderr, "sonde convert: %s\n", sonde_trace_reader_error(reader));
                rc = 1;
                break;
            }
            if (n == 0) break;
            s = sonde_trace_writer_write(writer, shard, batch.data(), n);
            if (s != SONDE_STATUS_SUCCESS) {
                std::fprintf(stderr, "sonde convert: %s\n", sonde_trace_writer_error(writer));
                rc = 1;
                break;
            }
            total += n;
        }
    }
    const std::string werr = sonde_trace_writer_error(writer);
    if (sonde_trace_writer_close(writer) != SONDE_STATUS_SUCCESS && rc == 0) {
        std::fprintf(stderr, "sonde convert: %s\n", werr.empty() ? output.c_str() : werr.c_str());
        rc = 1;
    }
    sonde_trace_reader_close(reader);
    if (rc == 0)
        std::printf("converted %llu records in %u shard(s) from %s to %s\n", total, shards, input.c_str(),
                    output.c_str());
    return rc;
}
