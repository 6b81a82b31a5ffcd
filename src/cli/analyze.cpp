// `sonde analyze`: parses the command line (CLI11), builds an analyzer through the public C API
// (sonde/analysis.h), runs it, prints the human summary on stdout and writes the JSON results.
// The readers' warnings (a truncated trace, an input without records) go to stderr as
// "sonde analyze: warning: ..."; --strict refuses an incomplete input before any tool runs.
// On a terminal, a progress line on stderr appears for runs that take more than a second.
// `sonde analyze --live [OPTIONS] -- PROGRAM ARGS` runs an instrumented program (built as for
// `sonde record --memory`) with SONDE_MEMTRACE_LIVE naming one end of a socket pair, and
// analyses the other end as a live input (sonde_analyzer_add_live_input) while the program runs;
// its exit status is the program's (docs/memory-traces.md, "Analysing live").
//
// Threads: the progress tool's counter is an atomic written by the analyzer's workers and read
// by the progress thread; everything else runs on the main thread (and, during a live run, the
// analyzer's workers, which read the socket; the program is another process).
#include "cli/analyze.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <sonde/analysis.h>

#include "cli/instrumented.h"
#include "cli/launch.h"
#include "cli/metadata.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "mpi/ranks.h"

namespace {

// `--jobs N` with reuse_distance's parallel exact mode: the run is serial (one global stack), and
// two stages work at once, each with threads of its own: the analyzer's threads decoding the
// input (sonde_analyzer_set_workers) and the calculator's workers (the tool's jobs=). Each stage
// is given N threads while both together fit the CPUs (2N <= cpus) or N < 4: a small N's
// stages take turns more than they overlap, and on 2 CPUs two of each was the faster split for
// lackey text. Beyond, each stage gets half of max(N, cpus), so that the two together keep
// the CPUs busy without crowding them: on 16 CPUs, --jobs 16 runs 8 decoding threads and 8
// calculator workers, which took 0.108 s on a 20 M-access Sonde trace where 16 and 16 took
// 0.132 s, and 0.123 s on gzip's lackey trace where 16 and 16 took 0.198 s
// (docs/performance.md). The results do not depend on the split.
uint32_t reuse_stage_threads(uint32_t jobs, unsigned cpus) {
    if (jobs < 4 || 2 * uint64_t(jobs) <= cpus) return jobs;
    return (std::max<uint32_t>(jobs, cpus) + 1) / 2;
}

// The results JSON's text, copied out of the analyzer before it is written: a private anonymous
// mapping advised for transparent huge pages when large, so that the copy faults it in 2 MiB at
// a time (a histogram of 1.9 M distances makes 100 MB of text: 25 K small faults, a quarter of a
// second on a VM where one costs 10 us). Plain memory when small or when the mapping fails.
class JsonBuffer {
public:
    explicit JsonBuffer(size_t n) : n_(n) {
        if (n >= (size_t{1} << 21)) {
            void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p != MAP_FAILED) {
                madvise(p, n, MADV_HUGEPAGE);  // a hint
                mapped_ = static_cast<char *>(p);
                return;
            }
        }
        plain_.reset(new char[n]);
    }
    ~JsonBuffer() {
        if (mapped_ != nullptr) munmap(mapped_, n_);
    }
    JsonBuffer(const JsonBuffer &) = delete;
    JsonBuffer &operator=(const JsonBuffer &) = delete;
    char *get() const { return mapped_ != nullptr ? mapped_ : plain_.get(); }

private:
    size_t n_;
    char *mapped_ = nullptr;
    std::unique_ptr<char[]> plain_;
};

namespace cli = sonde::cli;

constexpr const char *kCommand = "sonde analyze";

// A tool that only counts records, for the progress line. It has no results.
struct Progress {
    std::atomic<uint64_t> records{0};
};

bool progress_batch(void *tool, const sonde_memref_t *, size_t count) {
    static_cast<Progress *>(tool)->records.fetch_add(count, std::memory_order_relaxed);
    return true;
}
bool progress_one(void *tool, const sonde_memref_t *m) { return progress_batch(tool, m, 1); }
bool progress_shard_batch(void *tool, void *, const sonde_memref_t *m, size_t count) {
    return progress_batch(tool, m, count);
}
bool progress_shard_one(void *tool, void *, const sonde_memref_t *m) { return progress_batch(tool, m, 1); }
bool progress_supported(void *) { return true; }
uint32_t progress_model(void *) { return SONDE_MEMREF_MODEL_1_2; }  // counts every record

sonde_tool_ops_t progress_ops() {
    sonde_tool_ops_t o = {};
    o.struct_size = sizeof(o);
    o.name = "sonde-cli-progress";
    o.process_memref = progress_one;
    o.process_memrefs = progress_batch;
    o.parallel_shard_supported = progress_supported;
    o.parallel_shard_memref = progress_shard_one;
    o.parallel_shard_memrefs = progress_shard_batch;
    o.memref_model = progress_model;
    return o;
}

// Prints the warnings of input `input` after the first `*printed` ones, each on its own line
// of stderr, and counts them in *printed; returns whether the input is complete.
bool print_warnings(sonde_analyzer_t *a, uint32_t input, size_t *printed) {
    bool complete = true;
    const char *text = "";
    if (sonde_analyzer_input_warnings(a, input, &complete, &text) != SONDE_STATUS_SUCCESS) return true;
    size_t line = 0;
    for (const char *p = text; *p != '\0'; ++line) {
        const char *end = std::strchr(p, '\n');
        const size_t len = end != nullptr ? static_cast<size_t>(end - p) : std::strlen(p);
        if (line >= *printed)
            std::fprintf(stderr, "sonde analyze: warning: %.*s\n", static_cast<int>(len), p);
        p += len + (end != nullptr ? 1 : 0);
    }
    *printed = std::max(*printed, line);
    return complete;
}

// The message of the last failure, for the other ranks of an --mpi run (main thread only).
std::string last_failure;

int fail(const char *what, sonde_status_t st, sonde_analyzer_t *a) {
    last_failure = std::string(what) + ": " + sonde_analyzer_error(a) + " (" + sonde_status_name(st) + ")";
    std::fprintf(stderr, "sonde analyze: %s\n", last_failure.c_str());
    sonde_analyzer_destroy(a);
    return 1;
}

// An --mpi run: its ranks, whether this rank has entered the route collective of the protocol
// (src/mpi/ranks.h), and whether it is done with the protocol (it entered the exchange, or a
// collective stopped every rank).
struct Mpi {
    std::unique_ptr<sonde::mpi::Ranks> ranks;
    bool routed = false;
    bool done = false;
};

// Waits for MPI and for the ranks' agreement on the command line; false (the reason printed,
// the protocol done) when they disagree or MPI did not start: then every rank stops, exit 2.
bool agreed(Mpi *mpi) {
    std::string why;
    if (mpi->ranks->agreed(&why)) return true;
    mpi->done = true;
    std::fprintf(stderr, "sonde analyze: --mpi: %s\n", why.c_str());
    return false;
}

// Bytes the analyzer gives through `get(buffer, size, &actual_size)`: their size, then them.
template <class Get>
sonde_status_t take_bytes(Get get, std::string *out) {
    size_t need = 0;
    const sonde_status_t st = get(nullptr, 0, &need);
    if (st != SONDE_STATUS_ERROR_BUFFER_TOO_SHORT && st != SONDE_STATUS_SUCCESS) return st;
    out->resize(need);
    return get(need != 0 ? &(*out)[0] : nullptr, out->size(), &need);
}

// 64-bit FNV-1a of the command line, arguments separated by NUL: ranks compare it.
uint64_t command_hash(int argc, char **argv) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < argc; ++i)
        for (const char *p = argv[i];; ++p) {
            h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001b3ull;
            if (*p == '\0') break;
        }
    return h;
}

// A live run's program: its command line, and once it ended, its wait status.
struct Live {
    std::vector<std::string> command;
    int status = 0;
};

int analyze(int argc, char **argv, Mpi *mpi);
int report(sonde_analyzer_t *a, const std::vector<std::string> &inputs, std::vector<size_t> *printed,
           const std::string &ranks_text, const std::string &json_path, const std::string &format,
           const std::vector<std::string> &tools, const std::vector<std::string> &analyzer_options,
           bool serial, uint32_t jobs, bool strict, const std::string &start_time, const Live *live);
int run_live(sonde_analyzer_t *a, char **program, const sonde::cli::Environment &env,
             const std::function<sonde_status_t()> &run, Live *live);

}  // namespace

// With --mpi, every rank goes through the protocol of src/mpi/ranks.h: agreement on the command
// line (made while the analysis runs), then the routes and the exchange, also when this rank
// failed before its analysis ended (then its exit code and message reach the others, which stop
// too). --help and --version never start MPI.
int sonde_cli_analyze(int argc, char **argv) {
    bool want_mpi = false, info = false;
    for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
        want_mpi = want_mpi || std::strcmp(argv[i], "--mpi") == 0;
        info = info || std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0 ||
               std::strcmp(argv[i], "--version") == 0;
    }
    if (!want_mpi || info) return analyze(argc, argv, nullptr);
    Mpi mpi;
    std::string why;
    mpi.ranks = sonde::mpi::start(command_hash(argc, argv), &why);
    if (!mpi.ranks) {
        std::fprintf(stderr, "sonde analyze: --mpi: %s\n", why.c_str());
        // A build without MPI: a usage error; a build with it whose module is missing: a failure.
        return sonde::mpi::available() ? 1 : 2;
    }
    const int rc = analyze(argc, argv, &mpi);
    if (mpi.done) return rc;
    if (!agreed(&mpi)) return 2;
    // This rank stopped before its exchange (its own message is printed): tell the others in
    // the next collective they wait in.
    std::vector<std::string> bytes;
    int first = 0;
    const std::string message = !last_failure.empty()
                                    ? last_failure
                                    : "stopped with exit status " + std::to_string(rc) + " (bad usage)";
    if (!mpi.routed)
        mpi.ranks->route(rc != 0 ? rc : 1, message, std::vector<std::string>(), &bytes, &first, &why);
    else
        mpi.ranks->exchange(rc != 0 ? rc : 1, message, std::string(), &bytes, &first, &why);
    return rc != 0 ? rc : 1;
}

namespace {

int analyze(int argc, char **argv, Mpi *mpi) {
    CLI::App app{
        "Run analysis tools over memory-reference traces, or with --live over the memory references\n"
        "of a program as it runs (built as for sonde record --memory), without a trace file.\n"
        "Exit status: 0 success, 1 an input or a tool fails while running, 2 bad usage\n"
        "(refused before anything runs). With --live: the program's exit status (128 + N when\n"
        "signal N ended it, a crash included: the results of what arrived are printed first),\n"
        "127 when it cannot be started, 1 when the analysis fails, 2 on bad usage or a program\n"
        "that is not instrumented.",
        kCommand};
    // --live takes the program after "--": what comes before it are the options.
    const int split = cli::live_split(argc, argv);
    cli::set_usage(app,
                   "sonde analyze [OPTIONS] INPUT... | sonde analyze --live [OPTIONS] -- PROGRAM [ARGS...]");
    std::vector<std::string> inputs;
    std::string format = "auto";
    std::vector<std::string> tools;
    uint32_t jobs = 0;
    bool serial = false;
    std::string cache;
    uint32_t line_size = 0;
    double sample_rate = 0;
    uint64_t sample_size = 0;
    bool per_shard = false;
    std::string json_path;
    std::vector<std::string> tool_lists;
    bool strict = false;
    std::string cache_model = "cachegrind";
    std::string reuse_model = "gem5";
    std::string reuse_options;
    cli::add_version(app);
    app.add_option(
           "INPUT", inputs,
           "Trace files or drmemtrace trace directories (each must exist and be readable); - reads "
           "standard input (lackey or raw64 streamed, a Sonde trace copied to a temporary file first)")
        ->check(cli::input_path(true));
    bool live = false, blocks = false;
    app.add_flag("--live", live,
                 "Run PROGRAM (after --) and analyse its memory references as it runs, without a trace "
                 "file: the same results as sonde record --memory followed by sonde analyze of that "
                 "trace. PROGRAM must be built with clang -fsanitize-coverage=trace-pc-guard,trace-loads,"
                 "trace-stores and $(pkg-config --libs sonde-instrument); its threads are the shards");
    app.add_flag("--blocks", blocks,
                 "With --live: also each basic block entered (a trace-pc-guard hit) as an instruction fetch "
                 "at the block's address (as sonde record --memory --blocks)");
    cli::add_format_option(app, &format, "Input format: auto, sonde, lackey, raw64, drmemtrace")
        ->capture_default_str();
    app.add_option(
           "--tool", tool_lists,
           "Tools, comma-separated, each once: basic_counts, cache_sim, reuse_distance, or the path of "
           "a tool shared object, with its options after '=' (PATH=OPTIONS; they run to the end of the "
           "value) (default basic_counts, or cache_sim with --cache)")
        ->allow_extra_args(false);  // one list per --tool: the inputs after it stay inputs
    auto *jobs_opt =
        app.add_option("--jobs,-j", jobs,
                       "Threads: parallel workers; in a serial run, the threads that decode a lackey "
                       "input and reuse_distance's workers, split between the two when both would not fit "
                       "the CPUs (default: the number of cores)")
            ->check(cli::unsigned_range(1, 1024));
    app.add_flag("--serial", serial, "One stream interleaved by timestamp instead of parallel shards");
    // --cache is checked after parsing: what it holds depends on --cache-model.
    auto *cache_opt = app.add_option(
        "--cache", cache,
        "cache_sim levels NAME:SIZE:WAYS:LINE[:POLICY],...: SIZE in bytes or with K, M, G, at most 4G; WAYS "
        "1..1024 and at most the level's lines; LINE a power of two 1..65536; SIZE / (WAYS * LINE) a power "
        "of two; POLICY lru, fifo or random; at most 16 levels. With --cache-model drcachesim: KEY=VALUE,... "
        "of cores, line_size, L1I_size, L1I_assoc, L1D_size, L1D_assoc, LL_size, LL_assoc, data_prefetcher "
        "(nextline, none), cpu_scheduling (0, 1), inclusive (0, 1)");
    auto *cache_model_opt =
        app.add_option(
               "--cache-model", cache_model,
               "cache_sim: cachegrind (default: the levels of --cache, or I1, D1 and LL) or drcachesim "
               "(DynamoRIO drcachesim's hierarchy: per core L1I and L1D, a shared LL, a next-line "
               "prefetcher, traced cpus mapped to cores)")
            ->check(CLI::IsMember({"cachegrind", "drcachesim"}))
            ->capture_default_str();
    auto *reuse_model_opt =
        app.add_option("--reuse-model", reuse_model,
                       "reuse_distance: gem5 (default: data references, one global stack) or drcachesim "
                       "(instructions too, one stack per thread, summed)")
            ->check(CLI::IsMember({"gem5", "drcachesim"}))
            ->capture_default_str();
    auto *reuse_options_opt = app.add_option(
        "--reuse-options", reuse_options,
        "reuse_distance with --reuse-model drcachesim: KEY=VALUE,... of distance_threshold (drcachesim's "
        "-reuse_distance_threshold, default 100), distance_limit (-reuse_distance_limit, default 0: none; "
        "else above the threshold), report_top (-report_top, default 10)");
    auto *line_opt =
        app.add_option("--line-size", line_size, "Line size of basic_counts and reuse_distance (default 64)")
            ->check(cli::power_of_two(1, 1u << 20));
    auto *rate = app.add_option("--sample-rate", sample_rate,
                                "reuse_distance: SHARDS fixed-rate sampling, a finite rate; with --live, "
                                "sampling at the source as sonde record --memory --sample-rate does (every "
                                "tool then sees the sample; reuse_distance reads it at that rate)")
                     ->check(cli::real_range(1e-9, 1.0));
    uint64_t sample_seed = 0;
    app.add_option("--sample-seed", sample_seed,
                   "reuse_distance: the SHARDS hash's seed (default 0; a trace sampled at the source "
                   "brings its own)");
    auto *size_opt = app.add_option("--sample-size", sample_size,
                                    "reuse_distance: SHARDS fixed-size sampling, most lines kept")
                         ->check(cli::unsigned_range(1, UINT64_MAX))
                         ->excludes(rate);
    auto *shard_opt = app.add_flag("--per-shard", per_shard,
                                   "reuse_distance: also one stack per shard (\"shards\" in JSON)");
    app.add_option("--json", json_path,
                   "Also write the results as JSON to this file (its directory must exist; not an input)")
        ->check(cli::output_file());
    app.add_flag("--strict", strict, "Refuse an incomplete input (a truncated trace) instead of warning");
    bool mpi_flag = false;
    app.add_flag(
        "--mpi", mpi_flag,
        "Run as one rank of an MPI job (mpirun -np N sonde analyze --mpi ...): each rank analyses its "
        "part of the inputs and rank 0 prints and writes the merged results, equal to one process's; "
        "without mpirun, one rank");
    const std::string start_time = cli::utc_now();
    const int parsed = cli::parse(app, split, argv);
    if (parsed >= 0) return parsed;
    if (live) {
        const char *refused =
            inputs.empty() ? nullptr : "INPUT: --live runs the program after -- instead of reading traces";
        if (refused == nullptr && split + 1 >= argc) refused = "--live: no program given (put it after --)";
        if (refused == nullptr && app.count("--format") > 0)
            refused = "--format: a live run reads the program's stream, not a trace";
        if (refused == nullptr && strict)
            refused = "--strict: whether a live input is complete is known only when the program ends";
        if (refused == nullptr && mpi_flag) refused = "--mpi: a live run analyses one program in one process";
        if (refused != nullptr) return cli::usage_error(kCommand, refused);
    } else {
        if (inputs.empty())
            return cli::usage_error(kCommand, "INPUT is required (or --live -- PROGRAM ARGS)");
        if (blocks) return cli::usage_error(kCommand, "--blocks: only a --live run records basic blocks");
    }
    // With --live, --sample-rate (with --sample-seed and --line-size) is the source's sampling.
    const bool source_sampling = live && rate->count() > 0;
    std::vector<std::string> tool_options;  // an external tool's options, "" for the others
    for (const std::string &list : tool_lists) {
        // An external tool's options run from the first '=' to the end of the value:
        // "a,./x.so=k=1,j=2" is a and ./x.so with "k=1,j=2"; the tool before '=' comes last.
        const size_t eq = list.find('=');
        const std::string options = eq == std::string::npos ? std::string() : list.substr(eq + 1);
        const std::vector<std::string> items = cli::split_list(list.substr(0, eq));  // never empty
        if (eq != std::string::npos && items.back().find('/') == std::string::npos)
            return cli::usage_error(kCommand,
                                    "--tool: '" + items.back() + list.substr(eq, list.find(',', eq) - eq) +
                                        "': only a tool shared object (a path) takes options after '='; "
                                        "the built-in tools take theirs from --cache, --line-size and the "
                                        "others");
        for (size_t k = 0; k < items.size(); ++k) {
            const std::string &t = items[k];
            if (t.empty()) return cli::usage_error(kCommand, "--tool: '" + list + "' has an empty item");
            for (const std::string &seen : tools)
                if (seen == t) return cli::usage_error(kCommand, "--tool: '" + t + "' is given twice");
            if (t.find('/') != std::string::npos) {
                const std::string why = cli::check_input_file(t, false);
                if (!why.empty()) return cli::usage_error(kCommand, "--tool: " + why);
            }
            tools.push_back(t);
            tool_options.push_back(k + 1 == items.size() ? options : std::string());
        }
    }
    const bool dr_cache = cache_model == "drcachesim";
    if (tools.empty()) {
        tools.push_back(cache.empty() && !dr_cache ? "basic_counts" : "cache_sim");
        tool_options.emplace_back();
    }
    // An option that no chosen tool reads would be ignored silently: refuse it.
    auto chosen = [&tools](const char *name) {
        for (const std::string &t : tools)
            if (t == name) return true;
        return false;
    };
    if (cache_opt->count() > 0 && !chosen("cache_sim"))
        return cli::usage_error(kCommand, "--cache: only cache_sim reads it, and it is not among the tools");
    if (cache_model_opt->count() > 0 && !chosen("cache_sim"))
        return cli::usage_error(kCommand,
                                "--cache-model: only cache_sim reads it, and it is not among the tools");
    if (reuse_model_opt->count() > 0 && !chosen("reuse_distance"))
        return cli::usage_error(kCommand,
                                "--reuse-model: only reuse_distance reads it, and it is not among the tools");
    if (cache_opt->count() > 0 && !dr_cache) {
        const std::string why = cli::check_cache_levels(cache);
        if (!why.empty()) return cli::usage_error(kCommand, "--cache: " + why);
    }
    if (reuse_options_opt->count() > 0) {
        if (reuse_model != "drcachesim")
            return cli::usage_error(kCommand, "--reuse-options: only --reuse-model drcachesim reads it");
        for (const std::string &item : cli::split_list(reuse_options)) {
            const std::string key = item.substr(0, item.find('='));
            if (item.find('=') == std::string::npos ||
                (key != "distance_threshold" && key != "distance_limit" && key != "report_top"))
                return cli::usage_error(kCommand, "--reuse-options: '" + item +
                                                      "' is not distance_threshold=N, distance_limit=N or "
                                                      "report_top=N");
        }
    }
    if (reuse_model == "drcachesim")
        for (const CLI::Option *o : {rate, size_opt, shard_opt})
            if (o->count() > 0 && !(o == rate && source_sampling))
                return cli::usage_error(kCommand, o->get_name() +
                                                      ": only the gem5 model of reuse_distance reads it "
                                                      "(--reuse-model drcachesim keeps a stack per thread)");
    if (line_opt->count() > 0 && !chosen("basic_counts") && !chosen("reuse_distance") && !source_sampling)
        return cli::usage_error(
            kCommand,
            "--line-size: only basic_counts and reuse_distance read it, and neither is among "
            "the tools");
    for (const CLI::Option *o : {rate, size_opt, shard_opt})
        if (o->count() > 0 && !chosen("reuse_distance") && !(o == rate && source_sampling))
            return cli::usage_error(
                kCommand, o->get_name() + ": only reuse_distance reads it, and it is not among the tools");
    if (live && jobs_opt->count() > 0 && !chosen("reuse_distance"))
        return cli::usage_error(kCommand,
                                "--jobs: a live run gives each of the program's threads its own worker (only "
                                "reuse_distance reads --jobs in a live run)");
    if (live) {
        // The check of sonde record --memory, before anything runs.
        const std::string why = memtrace_refusal(argv[split + 1], blocks);
        if (!why.empty()) {
            std::fprintf(stderr, "sonde analyze: %s\n", why.c_str());
            return cli::kExitUsage;
        }
    }
    for (const std::string &in : inputs)
        if (!json_path.empty() && cli::same_file(in, json_path))
            return cli::usage_error(kCommand, "--json: " + json_path + " is the input " + in);

    sonde_analyzer_t *a = nullptr;
    sonde_status_t st = sonde_analyzer_create(&a);
    if (st != SONDE_STATUS_SUCCESS) {
        std::fprintf(stderr, "sonde analyze: %s\n", sonde_status_string(st));
        return 1;
    }
    // Threads of each stage of a parallel reuse_distance run (reuse_stage_threads); the command's
    // --jobs N everywhere else. A live run gives each program thread its own worker instead.
    const uint32_t stage_jobs = !live && jobs > 1 && reuse_model == "gem5" && chosen("reuse_distance")
                                    ? reuse_stage_threads(jobs, sonde::mpi::usable_cpus())
                                    : jobs;
    std::vector<std::string> analyzer_options;  // what each tool is given, for the metadata
    for (size_t k = 0; k < tools.size(); ++k) {
        const std::string &t = tools[k];
        if (t.find('/') != std::string::npos) {
            st = sonde_analyzer_load_tool(a, t.c_str(), tool_options[k].c_str());
            analyzer_options.push_back(tool_options[k]);
        } else {
            std::string options;
            if (t == "cache_sim")
                options = dr_cache ? "model=drcachesim" + (cache.empty() ? "" : "," + cache) : cache;
            if (t == "basic_counts" && line_size != 0) options = "line_size=" + std::to_string(line_size);
            if (t == "reuse_distance") {
                // --jobs drives its parallel exact mode: it needs one global stack, so the run is serial.
                char rate_text[64];
                std::snprintf(rate_text, sizeof rate_text, "%.17g", sample_rate);
                options = "line_size=" + std::to_string(line_size != 0 ? line_size : 64);
                if (reuse_model == "drcachesim") options += ",model=drcachesim";
                if (!reuse_options.empty()) options += "," + reuse_options;
                // A live run's sample comes with its markers, which the tool reads.
                if (sample_rate > 0 && !source_sampling) options += std::string(",sample_rate=") + rate_text;
                if (sample_size > 0) options += ",sample_size=" + std::to_string(sample_size);
                if (app.count("--sample-seed") > 0 && !source_sampling)
                    options += ",seed=" + std::to_string(sample_seed);
                // The drcachesim model keeps a stack per shard: --jobs is its parallel workers only.
                if (jobs > 1 && reuse_model == "gem5") options += ",jobs=" + std::to_string(stage_jobs);
                if (per_shard) options += ",per_shard=1";
            }
            // The metadata names the options the command gave; a rank's thread count for the
            // merge at rank 0 is the machine's, not the command's, and changes no result.
            analyzer_options.push_back(options);
            if (t == "reuse_distance" && mpi != nullptr && reuse_model == "gem5")
                options += ",merge_jobs=" + std::to_string(sonde::mpi::merge_threads());
            st = sonde_analyzer_add_tool(a, t.c_str(), options.c_str());
        }
        if (st == SONDE_STATUS_ERROR_OUT_OF_MEMORY) return fail(("tool " + t).c_str(), st, a);
        if (st != SONDE_STATUS_SUCCESS) {
            // A tool that cannot be made is refused before anything runs: a usage error.
            const std::string why = sonde_analyzer_error(a);
            sonde_analyzer_destroy(a);
            if (t == "cache_sim" && dr_cache && !cache.empty())
                return cli::usage_error(kCommand, "--cache: " + why);
            if (t == "reuse_distance" && !reuse_options.empty())
                return cli::usage_error(kCommand, "--reuse-options: " + why);
            return cli::usage_error(kCommand, "--tool " + t + ": " + why);
        }
    }
    // Only rank 0 of an --mpi run prints the readers' warnings (every rank reads the same inputs).
    const bool quiet = mpi != nullptr && mpi->ranks->rank() != 0;
    std::vector<size_t> printed(live ? 1 : inputs.size(), 0);
    for (uint32_t i = 0; i < inputs.size(); ++i) {
        const std::string path = inputs[i] == "-" ? "/dev/stdin" : inputs[i];
        st = sonde_analyzer_add_input(a, path.c_str(), cli::trace_format_value(format));
        if (st != SONDE_STATUS_SUCCESS) return fail("input", st, a);
        bool complete = true;
        if (quiet) {
            sonde_analyzer_input_warnings(a, i, &complete, nullptr);
        } else {
            complete = print_warnings(a, i, &printed[i]);
        }
        if (!complete && strict) {
            last_failure = "input " + path + " is incomplete (--strict); nothing was analysed";
            std::fprintf(stderr, "sonde analyze: %s\n", last_failure.c_str());
            sonde_analyzer_destroy(a);
            return 1;
        }
    }
    sonde_analyzer_set_parallel(a, !serial);
    // An --mpi rank shares its node with the others: by default it takes its share of the cores.
    sonde_analyzer_set_workers(a, jobs != 0 || mpi == nullptr ? stage_jobs : sonde::mpi::threads_per_rank());
    if (mpi != nullptr) {
        st = sonde_analyzer_set_partition(a, mpi->ranks->rank(), mpi->ranks->size());
        if (st != SONDE_STATUS_SUCCESS) return fail("--mpi", st, a);
    }

    Progress progress;
    if (isatty(STDERR_FILENO) && mpi == nullptr) {
        const sonde_tool_ops_t ops = progress_ops();
        st = sonde_analyzer_add_tool_ops(a, &ops, &progress);
        if (st != SONDE_STATUS_SUCCESS) return fail("progress", st, a);
    }
    auto run = [a, &progress] {
        cli::ProgressLine line(kCommand, [a, &progress] {
            cli::ProgressSample s;
            sonde_analyzer_progress(a, &s.done, &s.total);
            s.records = progress.records.load(std::memory_order_relaxed);
            return s;
        });
        return sonde_analyzer_run(a);
    };
    Live live_run;
    if (live) {
        for (int i = split + 1; i < argc; ++i) live_run.command.emplace_back(argv[i]);
        const int rc = run_live(a, argv + split + 1,
                                cli::memtrace_sampling(blocks, source_sampling ? sample_rate : 1, sample_seed,
                                                       line_size != 0 ? line_size : 64),
                                run, &live_run);
        if (rc >= 0) return rc;
        st = SONDE_STATUS_SUCCESS;
    } else {
        st = run();
    }
    if (st != SONDE_STATUS_SUCCESS) return fail("run", st, a);
    std::string ranks_text;
    if (mpi != nullptr) {
        // The routes: what this rank's tools send each other rank (a run split by byte ranges
        // sends cache_sim's references to the ranks that simulate their sets; most runs send
        // nothing), merged by each rank before its state is made.
        const uint32_t me = mpi->ranks->rank(), nranks = mpi->ranks->size();
        std::vector<std::string> routes(nranks), received;
        for (uint32_t r = 0; r < nranks; ++r) {
            if (r == me) continue;
            st = take_bytes([&](void *b, size_t n,
                                size_t *need) { return sonde_analyzer_export_routes(a, r, b, n, need); },
                            &routes[r]);
            if (st != SONDE_STATUS_SUCCESS) return fail("--mpi: routes", st, a);
        }
        if (!agreed(mpi)) {
            sonde_analyzer_destroy(a);
            return 2;
        }
        int first = 0;
        std::string why;
        mpi->routed = true;
        if (!mpi->ranks->route(0, std::string(), routes, &received, &first, &why)) {
            mpi->done = true;
            std::fprintf(stderr, "sonde analyze: --mpi: stopped because %s\n", why.c_str());
            sonde_analyzer_destroy(a);
            return first;
        }
        std::vector<std::string>().swap(routes);
        for (uint32_t r = 0; r < nranks; ++r) {
            if (r == me) continue;
            st = sonde_analyzer_merge_routes(a, r, received[r].data(), received[r].size());
            if (st != SONDE_STATUS_SUCCESS)
                return fail(("--mpi: routes of rank " + std::to_string(r)).c_str(), st, a);
            std::string().swap(received[r]);
        }
        // The exchange: this rank's state to rank 0 (whose own state stays in its results),
        // which merges every other rank's into its results; the other ranks are done, and
        // answer rank 0's final exit status.
        std::string state;
        if (me != 0) {
            st = take_bytes(
                [&](void *b, size_t n, size_t *need) { return sonde_analyzer_export_state(a, b, n, need); },
                &state);
            if (st != SONDE_STATUS_SUCCESS) return fail("--mpi: export", st, a);
        }
        std::vector<std::string> states;
        mpi->done = true;
        if (!mpi->ranks->exchange(0, std::string(), state, &states, &first, &why)) {
            std::fprintf(stderr, "sonde analyze: --mpi: stopped because %s\n", why.c_str());
            sonde_analyzer_destroy(a);
            return first;
        }
        if (mpi->ranks->rank() != 0) {
            sonde_analyzer_destroy(a);
            return mpi->ranks->finish(0);
        }
        for (size_t r = 1; r < states.size(); ++r) {
            st = sonde_analyzer_merge_state(a, states[r].data(), states[r].size());
            if (st != SONDE_STATUS_SUCCESS)
                return mpi->ranks->finish(fail(("--mpi: merging rank " + std::to_string(r)).c_str(), st, a));
        }
        ranks_text = std::to_string(mpi->ranks->size()) + " MPI rank(s), ";
    }
    const int rc = report(a, inputs, &printed, ranks_text, json_path, format, tools, analyzer_options, serial,
                          jobs, strict, start_time, live ? &live_run : nullptr);
    if (live)
        return rc != 0 ? rc
                       : cli::program_exit_status(kCommand, argv[split + 1], live_run.status,
                                                  "; the results above cover the references made before it");
    return mpi != nullptr ? mpi->ranks->finish(rc) : rc;
}

// A live run: a socket pair, the analyzer's live input on one end, the program started with the
// other (SONDE_MEMTRACE_LIVE; the references travel through the shared ring its runtime hands
// over on it) and `run` while it runs; then the wait for the program. Returns
// -1 after a successful run (live->status is the program's wait status), else the exit status
// (the analyzer destroyed): 127 when the program cannot start, 1 when the analysis failed.
int run_live(sonde_analyzer_t *a, char **program, const cli::Environment &env,
             const std::function<sonde_status_t()> &run, Live *live) {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        std::fprintf(stderr, "sonde analyze: socketpair: %s\n", std::strerror(errno));
        sonde_analyzer_destroy(a);
        return 1;
    }
    sonde_status_t st = sonde_analyzer_add_live_input(a, fds[0], program[0]);
    if (st != SONDE_STATUS_SUCCESS) {
        close(fds[0]);
        close(fds[1]);
        return fail("--live", st, a);
    }
    cli::Environment with_stream = env;
    with_stream.emplace_back("SONDE_MEMTRACE_LIVE", std::to_string(fds[1]));
    std::string why;
    const pid_t pid = cli::start_program(program, with_stream, {fds[1]}, &why);
    close(fds[1]);  // the program's end: EOF comes when the program (and only it) is gone
    if (pid < 0) {
        std::fprintf(stderr, "sonde analyze: %s\n", why.c_str());
        close(fds[0]);
        sonde_analyzer_destroy(a);
        return 127;
    }
    {
        const cli::IgnoreInterrupts interrupts;
        st = run();
        // After a failed run the program is still running: the closed socket tells its runtime,
        // which stops sending, and the program goes on to its end.
        close(fds[0]);
        live->status = cli::wait_program(pid);
    }
    if (st != SONDE_STATUS_SUCCESS) {
        const int rc = fail("run", st, a);
        cli::program_exit_status(kCommand, program[0], live->status, "");
        return rc;
    }
    return -1;
}

// Prints the results (and the warnings found while reading) and writes the JSON file.
int report(sonde_analyzer_t *a, const std::vector<std::string> &inputs, std::vector<size_t> *printed,
           const std::string &ranks_text, const std::string &json_path, const std::string &format,
           const std::vector<std::string> &tools, const std::vector<std::string> &analyzer_options,
           bool serial, uint32_t jobs, bool strict, const std::string &start_time, const Live *live) {
    for (uint32_t i = 0; i < printed->size(); ++i) print_warnings(a, i, &(*printed)[i]);  // e.g. "no records"

    bool parallel = false;
    uint32_t workers = 0;
    sonde_analyzer_run_info(a, &parallel, &workers);
    std::string what = std::to_string(inputs.size()) + " input(s)";
    if (live != nullptr) {
        what = "live";
        for (const std::string &arg : live->command) what += " " + arg;
    }
    std::printf("sonde analyze: %s, %s%s\n", what.c_str(), ranks_text.c_str(),
                parallel ? ("parallel, " + std::to_string(workers) + " worker(s)").c_str() : "serial");
    sonde_status_t st = sonde_analyzer_print_results(a, stdout);
    if (st != SONDE_STATUS_SUCCESS) return fail("results", st, a);
    if (!json_path.empty()) {
        size_t need = 0;
        sonde_analyzer_results_json(a, nullptr, 0, &need);
        // Not zeroed first: a large histogram's text is hundreds of megabytes.
        JsonBuffer text(need);
        st = sonde_analyzer_results_json(a, text.get(), need, &need);
        if (st != SONDE_STATUS_SUCCESS) return fail("results", st, a);
        nlohmann::ordered_json options;
        options["format"] = format;
        nlohmann::ordered_json tool_list = nlohmann::ordered_json::array();
        for (size_t k = 0; k < tools.size(); ++k)
            tool_list.push_back({{"name", tools[k]}, {"options", analyzer_options[k]}});
        options["tools"] = tool_list;
        options["serial"] = serial;
        options["jobs"] = jobs;
        options["strict"] = strict;
        nlohmann::ordered_json block = cli::metadata("analyze", inputs, options, start_time);
        if (live != nullptr) {
            // The input was the program itself: its command line and how it ended.
            nlohmann::ordered_json program;
            program["command"] = live->command;
            program["exit_status"] = WIFEXITED(live->status)
                                         ? nlohmann::ordered_json(WEXITSTATUS(live->status))
                                         : nlohmann::ordered_json(nullptr);
            program["signal"] = WIFSIGNALED(live->status) ? nlohmann::ordered_json(WTERMSIG(live->status))
                                                          : nlohmann::ordered_json(nullptr);
            block["live"] = std::move(program);
        }
        FILE *f = std::fopen(json_path.c_str(), "w");
        const bool written = f != nullptr && cli::write_with_metadata(f, block, text.get(), need - 1);
        if (f == nullptr || std::fclose(f) != 0 || !written) {
            std::fprintf(stderr, "sonde analyze: cannot write %s\n", json_path.c_str());
            sonde_analyzer_destroy(a);
            return 1;
        }
    }
    sonde_analyzer_destroy(a);
    return 0;
}

}  // namespace
