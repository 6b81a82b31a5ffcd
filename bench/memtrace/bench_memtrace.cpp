// bench_memtrace: what recording a program's memory references costs, on a -O1 matrix multiply
// (matmul.c, about 3 N^3 data references), whole runs timed wall-clock, all in one run:
//   native                 the program built without instrumentation (the floor)
//   counting callbacks     built with -fsanitize-coverage=trace-pc-guard,trace-loads,
//                          trace-stores, linked with callbacks that only count (the anchor of
//                          the idle cost)
//   sonde, not recording   the same build linked with libsonde-instrument.so, no SONDE_MEMTRACE
//   sonde, recording       SONDE_MEMTRACE set: every reference into a compressed trace
//   sonde record --memory  the command, including its summary (which reads the trace back)
//   sonde, sampled 1/100   SONDE_MEMTRACE with SONDE_MEMTRACE_SAMPLE_RATE=0.01 (what
//                          `sonde record --memory --sample-rate 0.01` sets): SHARDS at the source
//   cachegrind             valgrind --tool=cachegrind on the native build (a peer)
//   lackey                 valgrind --tool=lackey --trace-mem=yes on the native build, at a smaller
//                          size (LACKEY_N), its time scaled by the N^3 ratio (the peer of the
//                          30x target)
//   sonde analyze --live   sonde analyze --live --tool cache_sim: the run simulated through
//                          cachegrind's cache model as it runs, no trace file (its peer is
//                          cachegrind, printed beside it with the ratio)
// Each variant runs REPS times, interleaved; medians are printed with the ratios the targets are
// stated in (docs/memory-traces.md); the live run's ratio to cachegrind is also the median of
// the ratios of each repetition's pair, which a machine shared with other work disturbs less.
// All clang builds use -fno-sanitize-link-runtime so that no sanitizer runtime of clang's is
// linked beside the callbacks measured.
//
// usage: bench_memtrace SONDE NATIVE COUNTING SONDE_BUILD [N] [REPS] [LACKEY_N]
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "../common/spawn.h"

namespace {

double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Seconds one run of args takes (environment: this one without SONDE_MEMTRACE, plus env), or
// -1 when it fails.
double time_run(const std::vector<std::string> &args, const std::vector<std::string> &env_extra) {
    std::vector<std::string> envs;
    for (char **e = environ; *e != nullptr; ++e) {
        const std::string s(*e);
        if (s.rfind("SONDE_MEMTRACE", 0) == 0) continue;
        envs.push_back(s);
    }
    for (const auto &e : env_extra) envs.push_back(e);
    std::vector<char *> envp;
    for (auto &e : envs) envp.push_back(const_cast<char *>(e.c_str()));
    envp.push_back(nullptr);
    const double t0 = now_s();
    const sonde_bench::ChildOutput child = sonde_bench::run_child(args, envp.data());
    const double t = now_s() - t0;
    return child.ran ? t : -1;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: %s SONDE NATIVE COUNTING SONDE_BUILD [N] [REPS] [LACKEY_N]\n", argv[0]);
        return 2;
    }
    const std::string sonde = argv[1], native = argv[2], counting = argv[3], build = argv[4];
    const std::string n = argc > 5 ? argv[5] : "230";
    const int reps = argc > 6 ? std::atoi(argv[6]) : 5;
    const std::string lackey_n = argc > 7 ? argv[7] : "80";
    const double nn = std::atof(n.c_str()), ln = std::atof(lackey_n.c_str());
    if (nn <= 0 || ln <= 0 || reps <= 0) return 2;
    char tmpl[] = "/tmp/sonde-bench-memtrace-XXXXXX";
    const char *tmp = mkdtemp(tmpl);
    if (tmp == nullptr) return 1;
    const std::string trace = std::string(tmp) + "/mem.sonde";
    const std::string lackey_log = std::string(tmp) + "/lackey.log";
    const std::string sampled_trace = std::string(tmp) + "/sampled.sonde";
    const bool have_valgrind = system("command -v valgrind >/dev/null 2>&1") == 0;

    struct Variant {
        const char *name = "";
        std::vector<std::string> args, env;
        double scale = 1;  // time multiplied by this (lackey's smaller size)
        std::vector<double> s;
    };
    std::vector<Variant> v;
    auto add = [&v](const char *name, std::vector<std::string> args, std::vector<std::string> env,
                    double scale) {
        Variant x;
        x.name = name;
        x.args = std::move(args);
        x.env = std::move(env);
        x.scale = scale;
        v.push_back(std::move(x));
    };
    add("native", {native, n}, {}, 1);
    add("counting callbacks", {counting, n}, {}, 1);
    add("sonde, not recording", {build, n}, {}, 1);
    add("sonde, recording", {build, n}, {"SONDE_MEMTRACE=" + trace}, 1);
    add("sonde record --memory", {sonde, "record", "--memory", "--force", "-o", trace, "--", build, n}, {},
        1);
    add("sonde, sampled 1/100", {build, n},
        {"SONDE_MEMTRACE=" + sampled_trace, "SONDE_MEMTRACE_SAMPLE_RATE=0.01"}, 1);
    const size_t sampled = v.size() - 1;
    if (have_valgrind) {
        add("cachegrind",
            {"valgrind", "--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file=/dev/null", native,
             n},
            {}, 1);
        add("lackey (scaled)",
            {"valgrind", "--tool=lackey", "--trace-mem=yes", "--log-file=" + lackey_log, native, lackey_n},
            {}, (nn * nn * nn) / (ln * ln * ln));
    }
    add("sonde analyze --live", {sonde, "analyze", "--live", "--tool", "cache_sim", "--", build, n}, {}, 1);
    const size_t live = v.size() - 1;
    for (int r = 0; r < reps; ++r)
        for (auto &x : v) {
            const double t = time_run(x.args, x.env);
            if (t < 0) {
                std::fprintf(stderr, "%s: run failed\n", x.name);
                return 1;
            }
            x.s.push_back(t * x.scale);
        }
    struct stat full_st {
    }, sampled_st{};
    const bool sizes = stat(trace.c_str(), &full_st) == 0 && stat(sampled_trace.c_str(), &sampled_st) == 0;
    const std::string cleanup = std::string("rm -rf ") + tmp;
    if (system(cleanup.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", tmp);

    std::printf("matrix multiply, N = %s (about %.1f M data references); medians of %d runs, wall clock\n",
                n.c_str(), 3 * nn * nn * nn / 1e6, reps);
    std::printf("%-28s %12s %12s\n", "variant", "ms", "x native");
    std::vector<double> m(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        m[i] = median(v[i].s);
        std::printf("%-28s %12.1f %12.1f\n", v[i].name, m[i] * 1e3, m[i] / m[0]);
    }
    std::printf("\nnot recording / counting callbacks: %.2fx (target <= 1.5x)   %s\n", m[2] / m[1],
                m[2] / m[1] <= 1.5 ? "met" : "missed");
    std::printf("sampled 1/100 / recording:          %.2fx the time", m[sampled] / m[3]);
    if (sizes)
        std::printf(", %.1f%% of the trace (%lld of %lld bytes)",
                    100.0 * sampled_st.st_size / full_st.st_size, static_cast<long long>(sampled_st.st_size),
                    static_cast<long long>(full_st.st_size));
    std::printf("\n");
    if (have_valgrind) {
        const size_t cg = sampled + 1, lk = sampled + 2;
        std::printf("lackey / sonde, recording:          %.1fx (target >= 30x)   %s\n", m[lk] / m[3],
                    m[lk] / m[3] >= 30 ? "met" : "missed");
        std::printf("lackey / sonde record --memory:     %.1fx\n", m[lk] / m[4]);
        std::printf("cachegrind / sonde, recording:      %.1fx\n", m[cg] / m[3]);
        std::printf(
            "(lackey ran at N = %s and is scaled by (N / %s)^3 = %.1f; it also traces instruction "
            "fetches)\n",
            lackey_n.c_str(), lackey_n.c_str(), v[lk].scale);
        std::vector<double> paired;
        for (size_t r = 0; r < v[live].s.size(); ++r) paired.push_back(v[live].s[r] / v[cg].s[r]);
        std::printf("\nsonde analyze --live --tool cache_sim: %.1f ms   cachegrind: %.1f ms\n", m[live] * 1e3,
                    m[cg] * 1e3);
        std::printf("live / cachegrind: %.2fx (medians), %.2fx (median of paired runs) (goal <= 1x)   %s\n",
                    m[live] / m[cg], median(paired), median(paired) <= 1 ? "met" : "missed");
        std::printf(
            "(cachegrind also simulates the instruction fetches through I1; the live run's program is "
            "the -O1 instrumented build, its data references through D1 and LL)\n");
    } else {
        std::printf("valgrind: not installed, no peer figures\n");
    }
    return 0;
}
