// The `sonde` executable: dispatches `analyze`, `annotate`, `convert`, `dump`, `export`, `record`, `report` and `run`
// to their implementations and answers --help and --version. Every command exits 2 on bad usage, with a
// message naming the option (options.h), and has --help and --version of its own.
#include <cstdio>
#include <cstring>

#include "cli/analyze.h"
#include "cli/annotate.h"
#include "cli/convert.h"
#include "cli/dump.h"
#include "cli/export.h"
#include "cli/options.h"
#include "cli/record.h"
#include "cli/report.h"
#include "cli/run.h"

namespace {

void usage(FILE *f) {
    std::fprintf(
        f,
        "usage: sonde COMMAND [OPTIONS]\n"
        "\n"
        "commands:\n"
        "  analyze INPUT...   run analysis tools over traces (sonde analyze --help)\n"
        "  analyze --live -- PROGRAM ARGS\n"
        "                     the same over a program's memory references as it runs\n"
        "  annotate FILE      accesses and cache misses per function and source line\n"
        "                     (sonde annotate --help)\n"
        "  convert INPUT -o OUTPUT\n"
        "                     turn a lackey or raw64 trace into a Sonde trace (sonde convert --help)\n"
        "  dump INPUT         print a trace's records as text, one per line (sonde dump --help)\n"
        "  export FILE --format chrome|folded|csv -o OUT\n"
        "                     calls for Perfetto UI, speedscope, flame graphs (sonde export --help)\n"
        "  report FILE        functions, threads, call tree; JSON and HTML (sonde report --help)\n"
        "  run --client C -- PROGRAM ARGS\n"
        "                     run a program under client plugins (sonde run --help)\n"
        "  record [-o FILE] -- PROGRAM ARGS\n"
        "                     record a program's call graph into a trace (sonde record --help)\n"
        "\n"
        "options:\n"
        "  -h, --help         this help\n"
        "  --version          the library version\n"
        "\n"
        "Every command exits 2 on bad usage, before it reads, writes or runs anything.\n");
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "sonde: no command given\n\n");
        usage(stderr);
        return sonde::cli::kExitUsage;
    }
    const char *cmd = argv[1];
    if (std::strcmp(cmd, "-h") == 0 || std::strcmp(cmd, "--help") == 0 || std::strcmp(cmd, "help") == 0) {
        usage(stdout);
        return sonde::cli::kExitOk;
    }
    if (std::strcmp(cmd, "--version") == 0) {
        std::printf("%s\n", sonde::cli::version_string().c_str());
        return sonde::cli::kExitOk;
    }
    if (std::strcmp(cmd, "analyze") == 0) return sonde_cli_analyze(argc - 1, argv + 1);
    if (std::strcmp(cmd, "annotate") == 0) return sonde_cli_annotate(argc - 1, argv + 1);
    if (std::strcmp(cmd, "convert") == 0) return sonde_cli_convert(argc - 1, argv + 1);
    if (std::strcmp(cmd, "dump") == 0) return sonde_cli_dump(argc - 1, argv + 1);
    if (std::strcmp(cmd, "export") == 0) return sonde_cli_export(argc - 1, argv + 1);
    if (std::strcmp(cmd, "report") == 0) return sonde_cli_report(argc - 1, argv + 1);
    if (std::strcmp(cmd, "run") == 0) return sonde_cli_run(argc - 1, argv + 1);
    if (std::strcmp(cmd, "record") == 0) return sonde_cli_record(argc - 1, argv + 1);
    std::fprintf(stderr, "sonde: unknown %s '%s'\n\n", cmd[0] == '-' ? "option" : "command", cmd);
    usage(stderr);
    return sonde::cli::kExitUsage;
}
