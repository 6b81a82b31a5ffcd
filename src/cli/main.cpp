// The `sonde` executable: dispatches `analyze`, `convert`, `run` and `record` to their
// implementations and answers --help and --version.
#include <cstdio>
#include <cstring>

#include <sonde/defs.h>

#include "cli/analyze.h"
#include "cli/convert.h"
#include "cli/record.h"
#include "cli/run.h"

namespace {

void usage(FILE *f) {
    std::fprintf(
        f,
        "usage: sonde COMMAND [OPTIONS]\n"
        "\n"
        "commands:\n"
        "  analyze INPUT...   run analysis tools over traces (sonde analyze --help)\n"
        "  convert INPUT      turn a lackey or raw64 trace into a Sonde trace (sonde convert --help)\n"
        "  run --client C -- PROGRAM ARGS\n"
        "                     run a program under client plugins (sonde run --help)\n"
        "  record [-o FILE] -- PROGRAM ARGS\n"
        "                     record a program's call graph into a trace (sonde record --help)\n"
        "\n"
        "options:\n"
        "  -h, --help         this help\n"
        "  --version          the library version\n");
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (std::strcmp(cmd, "-h") == 0 || std::strcmp(cmd, "--help") == 0 || std::strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (std::strcmp(cmd, "--version") == 0) {
        uint32_t major = 0, minor = 0, patch = 0;
        sonde_get_version(&major, &minor, &patch);
        std::printf("sonde %u.%u.%u\n", major, minor, patch);
        return 0;
    }
    if (std::strcmp(cmd, "analyze") == 0) return sonde_cli_analyze(argc - 1, argv + 1);
    if (std::strcmp(cmd, "convert") == 0) return sonde_cli_convert(argc - 1, argv + 1);
    if (std::strcmp(cmd, "run") == 0) return sonde_cli_run(argc - 1, argv + 1);
    if (std::strcmp(cmd, "record") == 0) return sonde_cli_record(argc - 1, argv + 1);
    std::fprintf(stderr, "sonde: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
