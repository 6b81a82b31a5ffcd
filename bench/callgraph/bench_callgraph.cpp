// bench_callgraph: ns added per call (enter + leave) by call-graph instrumentation, over the
// uninstrumented build of the same recursive fib, all in one run:
//   floor   -finstrument-functions with empty hooks
//   sonde   libsonde-instrument.so preloaded with one counting client (call_counter)
//   filter  the same with a client whose CALL_GRAPH filter rejects every method (class_filter)
//   sonde, no client
//   sonde record: SONDE_RECORD set, every enter and leave with its timestamp into a trace
//   uftrace `uftrace record --no-libcall` on the same instrumented binary (the peer)
// Each variant runs REPS times, interleaved; the program times its own fib so start-up is not
// counted; medians are printed with the ratios the targets are stated in. Every figure is the
// cost over the floor (empty hooks), the peer's too, so the ratios compare what each tool adds.
//
// usage: bench_callgraph PLAIN INSTRUMENTED LIBSONDE_INSTRUMENT CALL_COUNTER CLASS_FILTER [N] [REPS]

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../common/spawn.h"

namespace {

struct Run {
    double ns = 0;
    double calls = 0;
    bool ok = false;
};

// Runs argv with extra environment entries; parses "calls N ns T" from its stdout.
Run run(const std::vector<std::string> &args, const std::vector<std::string> &env_extra) {
    std::vector<std::string> envs;
    for (char **e = environ; *e != nullptr; ++e) {
        std::string s(*e);
        if (s.rfind("LD_PRELOAD=", 0) == 0 || s.rfind("SONDE_CLIENTS=", 0) == 0 ||
            s.rfind("SONDE_RECORD=", 0) == 0)
            continue;
        envs.push_back(s);
    }
    for (const auto &e : env_extra) envs.push_back(e);
    std::vector<char *> envp;
    for (auto &e : envs) envp.push_back(const_cast<char *>(e.c_str()));
    envp.push_back(nullptr);
    const sonde_bench::ChildOutput child = sonde_bench::run_child(args, envp.data());
    Run r;
    unsigned long long calls = 0;
    long long ns = 0;
    const size_t at = child.out.find("calls ");
    if (at != std::string::npos &&
        std::sscanf(child.out.c_str() + at, "calls %llu ns %lld", &calls, &ns) == 2) {
        r.calls = static_cast<double>(calls);
        r.ns = static_cast<double>(ns);
        r.ok = child.ran;
    }
    return r;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 6) {
        std::fprintf(
            stderr, "usage: %s PLAIN INSTRUMENTED LIBSONDE_INSTRUMENT CALL_COUNTER CLASS_FILTER [N] [REPS]\n",
            argv[0]);
        return 2;
    }
    const std::string plain = argv[1], instr = argv[2], lib = argv[3], counter = argv[4], filter = argv[5];
    // fib(32): 7.0 M calls, 50-150 ms a run with hooks, long enough that a shared machine's
    // scheduling noise stays small against it.
    const std::string n = argc > 6 ? argv[6] : "32";
    const int reps = argc > 7 ? std::atoi(argv[7]) : 7;
    char tmpl[] = "/tmp/sonde-bench-callgraph-XXXXXX";
    const char *tmp = mkdtemp(tmpl);
    if (tmp == nullptr) return 1;
    const std::string uft = std::string(tmp) + "/uftrace.data";
    const std::string rec = std::string(tmp) + "/sonde.trace";
    const bool have_uftrace = system("command -v uftrace >/dev/null 2>&1") == 0;

    struct Variant {
        const char *name;
        std::vector<std::string> args, env;
        std::vector<double> ns;
        double calls = 0;
    };
    std::vector<Variant> v = {
        {"uninstrumented build", {plain, n}, {}, {}},
        {"floor: empty hooks", {instr, n}, {}, {}},
        {"sonde, no client", {instr, n}, {"LD_PRELOAD=" + lib}, {}},
        {"sonde, one counting client",
         {instr, n},
         {"LD_PRELOAD=" + lib, "SONDE_CLIENTS=" + counter + "=out=/dev/null"},
         {}},
        {"sonde, method filtered out",
         {instr, n},
         {"LD_PRELOAD=" + lib, "SONDE_CLIENTS=" + filter + "=class=NoSuchClass,out=/dev/null"},
         {}},
    };
    v.push_back({"sonde record", {instr, n}, {"LD_PRELOAD=" + lib, "SONDE_RECORD=" + rec}, {}});
    if (have_uftrace)
        v.push_back({"uftrace record --no-libcall",
                     {"uftrace", "record", "--no-libcall", "-d", uft, instr, n},
                     {},
                     {}});
    for (int r = 0; r < reps; ++r)
        for (auto &x : v) {
            const Run res = run(x.args, x.env);
            if (!res.ok) {
                std::fprintf(stderr, "%s: run failed\n", x.name);
                return 1;
            }
            x.ns.push_back(res.ns);
            x.calls = res.calls;
        }
    std::string cleanup = std::string("rm -rf ") + tmp;
    if (system(cleanup.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", tmp);

    const double calls = v[0].calls;
    const double base = median(v[0].ns);
    std::printf("recursive fib(%s): %.0f calls (each an enter and a leave); medians of %d runs\n", n.c_str(),
                calls, reps);
    std::printf("%-32s %12s %14s\n", "variant", "ms", "ns added/call");
    std::vector<double> added(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        const double m = median(v[i].ns);
        added[i] = (m - base) / calls;
        std::printf("%-32s %12.2f %14.2f\n", v[i].name, m / 1e6, i == 0 ? 0.0 : added[i]);
    }
    // Over the floor: what each variant adds to the empty hooks.
    const double floor = added[1], one = added[3] - floor, filtered = added[4] - floor,
                 record = added[5] - floor;
    std::printf("\nover the floor (empty hooks, %.2f ns/call):\n", floor);
    std::printf("counting client: %.2f ns/call (target <= 5)                          %s\n", one,
                one <= 5 ? "met" : "missed");
    const double per_event = filtered / 2;
    std::printf("method filtered out: %.2f ns/event (target <= 1)                     %s\n", per_event,
                per_event <= 1 ? "met" : "missed");
    std::printf("sonde record: %.2f ns/call (enter + leave with timestamps)\n", record);
    if (have_uftrace) {
        const double peer = added[6] - floor;
        std::printf("uftrace record: %.2f ns/call (the anchor)\n", peer);
        std::printf("  uftrace / sonde record:   %5.1fx (target >= 3x)   %s\n", peer / record,
                    peer / record >= 3 ? "met" : "missed");
        std::printf("  uftrace / counting client: %5.1fx (target >= 10x)  %s\n", peer / one,
                    peer / one >= 10 ? "met" : "missed");
    } else {
        std::printf("uftrace: not installed, no peer figure\n");
    }
    return 0;
}
