// `sonde record [-o FILE] [--force] [--api SPEC [--api-prototypes FILE]] -- PROGRAM ARGS`: runs
// PROGRAM with libsonde-instrument.so preloaded and SONDE_RECORD set to FILE (absolute), so that
// libsonde records its call graph (src/record, docs/recording.md) and, with --api, the calls
// into the named library functions (SONDE_API, SONDE_API_PROTOTYPES; docs/api-tracing.md),
// waits for it, then prints one summary line read back from the trace. API tracing that cannot
// start (a bad spec or prototype file, a missing function, no signature) ends the program
// before it runs; the recorder says why on a pipe (SONDE_RECORD_STATUS_FD) and this command
// prints it and exits 2. The exit status is otherwise the program's (128 + N when signal N ended
// it), 127 when it cannot be started, 2 on bad usage or when FILE exists without --force, 1 when
// FILE cannot be written. Uses only the public API.
// `sonde record --memory [-o FILE] [--force] -- PROGRAM ARGS` runs PROGRAM, which must be built
// with clang's sanitizer coverage and linked with libsonde-instrument.so (docs/memory-traces.md),
// with SONDE_MEMTRACE set to FILE: its loads and stores are recorded into a Sonde memref trace,
// one shard per thread (src/memtrace). A program without the load and store callbacks is refused
// before it runs (exit 2), with the flags that build it.
#include "cli/record.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <sonde/trace.h>
#include <sonde/trace_events.h>

#include "cli/instrumented.h"
#include "cli/launch.h"
#include "cli/options.h"
#include "cli/symbolize.h"

namespace {

using sonde::cli::store_symbols;
using sonde::cli::symbolize;
using sonde::cli::Symbolized;
using sonde::cli::trace_modules;
using sonde::cli::TraceModule;

// FILE made absolute (the program may change directory), without resolving the file itself.
std::string absolute(const std::string &path) {
    if (!path.empty() && path[0] == '/') return path;
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == nullptr) return path;
    return std::string(cwd) + "/" + path;
}

std::string human_size(uint64_t bytes) {
    char buf[64];
    if (bytes < 1024)
        std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
    else if (bytes < (1u << 20))
        std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
    else
        std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
    return buf;
}

// Opens the trace just written and prints its reader's warnings; nullptr (said why) when it
// cannot be read.
sonde_trace_reader_t *open_recorded(const std::string &path) {
    char error[512];
    sonde_trace_reader_t *r = nullptr;
    if (sonde_trace_reader_open(path.c_str(), SONDE_TRACE_FORMAT_SONDE, error, sizeof error, &r) !=
        SONDE_STATUS_SUCCESS) {
        std::fprintf(stderr, "sonde record: the trace cannot be read: %s\n", error);
        return nullptr;
    }
    const char *warnings = sonde_trace_reader_warnings(r);
    if (*warnings != '\0') std::fprintf(stderr, "sonde record: %s\n", warnings);
    return r;
}

// Reads the trace back: the summary line, the reader's warnings, and the warning for a program
// that reported no call.
void summarise(const std::string &path, const std::string &program, bool api) {
    sonde_trace_reader_t *r = open_recorded(path);
    if (r == nullptr) return;
    sonde_trace_event_info_t info{};
    info.struct_size = sizeof info;
    sonde_trace_reader_event_info(r, &info);
    uint32_t api_functions = 0;
    sonde_trace_reader_num_api_functions(r, &api_functions);
    sonde_trace_reader_close(r);
    struct stat st {};
    stat(path.c_str(), &st);
    // With --api an uninstrumented program is expected: its library calls are what is recorded.
    if (info.num_methods == 0 && !api) warn_uninstrumented("sonde record", program);
    std::string api_part;
    if (api) api_part = ", " + std::to_string(api_functions) + " API functions";
    std::fprintf(stderr, "sonde record: %llu events, %u threads, %u methods%s, %s in %s\n",
                 static_cast<unsigned long long>(info.num_events), info.num_threads, info.num_methods,
                 api_part.c_str(), human_size(static_cast<uint64_t>(st.st_size)).c_str(), path.c_str());
}

// Distinct pcs, with a small direct-mapped filter in front of the set: the pcs of a loop repeat,
// so most records cost a load and a compare.
class PcSet {
public:
    void add(uint64_t pc) {
        uint64_t &slot = recent_[(pc * 0x9E3779B97F4A7C15ull) >> 56];
        if (slot == pc) return;
        slot = pc;
        pcs_.push_back(pc);
        if (pcs_.size() >= std::max(kCompact, 2 * compacted_)) compact();
    }
    // The pcs, sorted and distinct.
    std::vector<uint64_t> take() {
        compact();
        return std::move(pcs_);
    }

private:
    static constexpr size_t kCompact = 1u << 20;
    void compact() {
        std::sort(pcs_.begin(), pcs_.end());
        pcs_.erase(std::unique(pcs_.begin(), pcs_.end()), pcs_.end());
        compacted_ = pcs_.size();
    }
    uint64_t recent_[256] = {};
    std::vector<uint64_t> pcs_;
    size_t compacted_ = 0;
};

// Names the pcs of a memory trace from the modules the program mapped and stores the names in
// the trace (symbolize.h), saying what could not be named.
void name_pcs(const std::string &path, const std::vector<TraceModule> &modules,
              const std::vector<uint64_t> &pcs) {
    if (modules.empty()) {
        std::fprintf(stderr, "sonde record: warning: the trace has no module table; its pcs stay unnamed\n");
        return;
    }
    const Symbolized named = symbolize(modules, pcs);
    for (const std::string &note : named.notes)
        std::fprintf(stderr, "sonde record: note: %s\n", note.c_str());
    const std::string why = store_symbols(path, named);
    if (!why.empty()) {
        std::fprintf(stderr, "sonde record: warning: the names of the pcs were not stored: %s\n",
                     why.c_str());
        return;
    }
    std::fprintf(stderr, "sonde record: %zu of %zu pcs named: %zu functions, %zu source lines\n",
                 named.lines.size(), pcs.size(), named.functions.size(), named.lines.size());
}

// The summary of a memory trace: shards (threads), records, file size; and, for a complete
// trace, the names of its pcs stored into it.
void summarise_memory(const std::string &path) {
    sonde_trace_reader_t *r = open_recorded(path);
    if (r == nullptr) return;
    const bool complete = *sonde_trace_reader_warnings(r) == '\0';
    uint32_t shards = 0;
    sonde_trace_reader_num_shards(r, &shards);
    uint64_t refs = 0;
    PcSet pcs;
    std::vector<sonde_memref_t> batch(65536);
    for (uint32_t s = 0; s < shards; ++s) {
        size_t n = 0;
        while (sonde_trace_reader_read_shard(r, s, batch.data(), batch.size(), &n) == SONDE_STATUS_SUCCESS &&
               n != 0)
            for (size_t i = 0; i < n; ++i) {
                if (batch[i].type == SONDE_MEMREF_MARKER) continue;
                ++refs;
                pcs.add(batch[i].pc);
            }
    }
    const std::vector<TraceModule> modules = trace_modules(r);
    sonde_trace_reader_close(r);
    if (refs != 0 && complete) name_pcs(path, modules, pcs.take());
    struct stat st {};
    stat(path.c_str(), &st);
    if (refs == 0)
        std::fprintf(stderr,
                     "sonde record: warning: no memory reference was recorded (is the program linked with "
                     "$(pkg-config --libs sonde-instrument)?)\n");
    std::fprintf(stderr, "sonde record: %llu memory references, %u threads, %s in %s\n",
                 static_cast<unsigned long long>(refs), shards,
                 human_size(static_cast<uint64_t>(st.st_size)).c_str(), path.c_str());
}

}  // namespace

int sonde_cli_record(int argc, char **argv) {
    int split = argc;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--") == 0) {
            split = i;
            break;
        }
    CLI::App app{
        "Run a program built with -finstrument-functions and record its call graph (every function\n"
        "enter and leave with its time, threads, marks and ranges, and the symbol table that names\n"
        "the functions) into a Sonde trace. With --api, also (or only: the program need not be\n"
        "instrumented) record every call into the named shared-library functions, with its\n"
        "arguments and return value.\n"
        "Exit status: the program's (128 + N when signal N ended it); 127 when it cannot be started;\n"
        "1 when FILE cannot be written; 2 on bad usage, when FILE exists without --force, or when\n"
        "API tracing cannot start (the program does not run then).\n"
        "With --memory, record instead every load and store of a program built with\n"
        "clang -fsanitize-coverage=trace-pc-guard,trace-loads,trace-stores and linked with\n"
        "$(pkg-config --libs sonde-instrument), one shard per thread (docs/memory-traces.md); a\n"
        "program without those callbacks is refused with exit status 2. --sample-rate R records\n"
        "only the references to lines whose hash is below R (SHARDS at the source); sonde analyze\n"
        "--tool reuse_distance then reads the trace as sampled at that rate.",
        "sonde record"};
    std::string output = "sonde.trace";
    bool force = false;
    sonde::cli::add_version(app);
    sonde::cli::set_usage(
        app, "sonde record [OPTIONS] [--memory | --api SPEC [--api-prototypes FILE]] -- PROGRAM [ARGS...]");
    app.add_option("-o,--output", output, "trace file to write (default: sonde.trace)");
    app.add_flag("--force", force, "overwrite FILE if it exists");
    bool memory = false;
    app.add_flag("--memory", memory,
                 "record the program's memory references (loads and stores) instead of its call graph");
    bool blocks = false;
    app.add_flag("--blocks", blocks,
                 "with --memory: also record each basic block entered (a trace-pc-guard hit) as an "
                 "instruction fetch at the block's address");
    double sample_rate = 1.0;
    uint64_t sample_seed = 0, line_size = 64;
    app.add_option("--sample-rate", sample_rate,
                   "with --memory: record only references to lines whose hash is below R, 0 < R <= 1 "
                   "(default 1: every reference)")
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--sample-seed", sample_seed, "with --memory: the sampling hash's seed (default 0)");
    app.add_option("--line-size", line_size, "with --memory: the line size the sampling hashes (default 64)");
    std::string api, prototypes;
    sonde::cli::add_api_options(app, &api, &prototypes, "trace calls into shared-library functions");
    try {
        app.parse(split, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    if (!prototypes.empty() && api.empty()) {
        std::fprintf(stderr, "sonde record: --api-prototypes: needs --api\n");
        return 2;
    }
    if (split + 1 >= argc) {
        std::fprintf(stderr, "sonde record: no program given (put it after --)\n");
        return 2;
    }
    if (memory && !api.empty()) {
        std::fprintf(stderr, "sonde record: --memory and --api cannot be combined\n");
        return 2;
    }
    const bool sampling_given =
        app.count("--sample-rate") + app.count("--sample-seed") + app.count("--line-size") > 0;
    if ((sampling_given || blocks) && !memory) {
        std::fprintf(stderr,
                     "sonde record: --blocks, --sample-rate, --sample-seed and --line-size need --memory\n");
        return 2;
    }
    if (!(sample_rate > 0)) {
        std::fprintf(stderr, "sonde record: --sample-rate: must be above 0 and at most 1\n");
        return 2;
    }
    if (line_size == 0 || (line_size & (line_size - 1)) != 0) {
        std::fprintf(stderr, "sonde record: --line-size: must be a power of two\n");
        return 2;
    }
    if (memory) {
        const std::string why = memtrace_refusal(argv[split + 1], blocks);
        if (!why.empty()) {
            std::fprintf(stderr, "sonde record: %s\n", why.c_str());
            return 2;
        }
    }
    const std::string path = absolute(output);
    struct stat st {};
    if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
        // A trace is written by seeking (its index goes at its end) and read back for the
        // summary: a pipe, a terminal or a device cannot hold one.
        std::fprintf(stderr,
                     "sonde record: %s is not a regular file; a trace is written to a file (it is read by "
                     "seeking)\n",
                     output.c_str());
        return 2;
    }
    if (stat(path.c_str(), &st) == 0 && !force) {
        std::fprintf(stderr, "sonde record: %s exists (use --force to overwrite it)\n", output.c_str());
        return 2;
    }
    // The output is created here, before the program runs, so that a bad path is reported now.
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        std::fprintf(stderr, "sonde record: cannot write %s: %s\n", output.c_str(), std::strerror(errno));
        return 1;
    }
    close(fd);
    // With --memory the program links the library itself: nothing is preloaded.
    const std::string lib = memory ? std::string() : instrument_library_path();
    if (!memory && lib.empty()) {
        std::fprintf(stderr,
                     "sonde record: libsonde-instrument.so not found (set SONDE_INSTRUMENT_LIBRARY)\n");
        unlink(path.c_str());
        return 127;
    }
    std::string preload = lib;
    const char *old = getenv("LD_PRELOAD");
    if (old != nullptr && *old != '\0') preload += std::string(":") + old;

    // The recorder's report on starting API tracing: an error message, or nothing.
    int statusfd[2] = {-1, -1};
    if (!api.empty() && pipe2(statusfd, O_CLOEXEC | O_NONBLOCK) != 0) {
        std::fprintf(stderr, "sonde record: pipe: %s\n", std::strerror(errno));
        return 1;
    }
    const std::string api_prototypes = prototypes.empty() ? std::string() : absolute(prototypes);
    sonde::cli::Environment env;
    std::vector<int> keep;
    if (memory) {
        // The program links libsonde-instrument.so itself (its callbacks are resolved at link
        // time): nothing is preloaded.
        env = sonde::cli::memtrace_sampling(blocks, sample_rate, sample_seed, line_size);
        env.emplace_back("SONDE_MEMTRACE", path);
    } else {
        env.emplace_back("LD_PRELOAD", preload);
        env.emplace_back("SONDE_RECORD", path);
    }
    if (!api.empty()) {
        env.emplace_back("SONDE_API", api);
        if (!api_prototypes.empty()) env.emplace_back("SONDE_API_PROTOTYPES", api_prototypes);
        // The write end stays open across exec (blocking, so that the message is whole).
        keep.push_back(statusfd[1]);
        env.emplace_back("SONDE_RECORD_STATUS_FD", std::to_string(statusfd[1]));
    }
    std::string why;
    const pid_t pid = sonde::cli::start_program(argv + split + 1, env, keep, &why);
    if (statusfd[1] >= 0) close(statusfd[1]);
    if (pid < 0) {
        std::fprintf(stderr, "sonde record: %s\n", why.c_str());
        if (statusfd[0] >= 0) close(statusfd[0]);
        unlink(path.c_str());
        return 127;
    }
    int status = 0;
    {
        // Like system(): an interrupt from the terminal goes to the program; this process waits
        // for it and still writes the summary.
        const sonde::cli::IgnoreInterrupts interrupts;
        status = sonde::cli::wait_program(pid);
    }
    if (statusfd[0] >= 0) {
        std::string message;
        char buf[512];
        ssize_t n;
        while ((n = read(statusfd[0], buf, sizeof buf)) > 0) message.append(buf, static_cast<size_t>(n));
        close(statusfd[0]);
        if (!message.empty()) {
            std::fprintf(stderr, "sonde record: --api: %s\n", message.c_str());
            unlink(path.c_str());
            return 2;
        }
    }
    if (memory)
        summarise_memory(path);
    else
        summarise(path, argv[split + 1], !api.empty());
    return sonde::cli::program_exit_status("sonde record", argv[split + 1], status, "");
}
