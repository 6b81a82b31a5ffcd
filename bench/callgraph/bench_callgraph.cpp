// bench_callgraph: ns added per call (enter + leave) by call-graph instrumentation, over the
// uninstrumented build of the same recursive fib, all in one run:
//   floor   -finstrument-functions with empty hooks
//   sonde   libsonde-instrument.so preloaded with one counting client (call_counter)
//   filter  the same with a client whose CALL_GRAPH filter rejects every method (class_filter)
//   sonde, no client
//   sonde record: SONDE_RECORD set, every enter and leave with its timestamp into a trace
//   uftrace `uftrace record --no-libcall` on the same instrumented binary (the peer)
// Each variant runs REPS times, interleaved (a round runs each once); the program times its own
// fib so start-up is not counted; medians are printed with the ratios the targets are stated
// in. Every figure is the cost over the floor (empty hooks), the peer's too, so the ratios
// compare what each tool adds. A ratio is the median over rounds of the round's own ratio, each
// variant's cost taken over the same round's floor, with the rounds' range beside it: a shared
// machine's speed drifts from one second to the next, and a ratio of medians taken over runs
// seconds apart moved by 10 % from one whole run to the next.
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

// Whether a client's report is at `path`: with fib_calls > 0, call_counter's, whose "fib" line
// counts at least that many calls; otherwise class_filter's, which names no method (it rejects
// them all).
bool client_ran(const std::string &path, double fib_calls) {
    std::FILE *f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return false;
    bool ok = fib_calls == 0;
    char line[512];
    while (std::fgets(line, sizeof line, f) != nullptr) {
        unsigned long long c = 0;
        char name[256];
        if (std::sscanf(line, "%llu %255s", &c, name) != 2) continue;
        if (fib_calls == 0) ok = false;  // class_filter counted a method it should have rejected
        if (std::strcmp(name, "fib") == 0 && static_cast<double>(c) >= fib_calls) ok = true;
    }
    std::fclose(f);
    return ok;
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
    const int reps = std::max(1, argc > 7 ? std::atoi(argv[7]) : 11);
    char tmpl[] = "/tmp/sonde-bench-callgraph-XXXXXX";
    const char *tmp = mkdtemp(tmpl);
    if (tmp == nullptr) return 1;
    const std::string uft = std::string(tmp) + "/uftrace.data";
    const std::string rec = std::string(tmp) + "/sonde.trace";
    const bool have_uftrace = system("command -v uftrace >/dev/null 2>&1") == 0;

    // The client variants (3 and 4) write their reports into these files at exit, which the
    // bench checks after each run: a client that failed to load leaves the program running
    // without it, and the figure would then be the one of no client.
    const std::string counts_path = std::string(tmp) + "/counts.txt";
    const std::string filtered_path = std::string(tmp) + "/filtered.txt";
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
         {"LD_PRELOAD=" + lib, "SONDE_CLIENTS=" + counter + "=out=" + counts_path},
         {}},
        {"sonde, method filtered out",
         {instr, n},
         {"LD_PRELOAD=" + lib, "SONDE_CLIENTS=" + filter + "=class=NoSuchClass,out=" + filtered_path},
         {}},
    };
    v.push_back({"sonde record", {instr, n}, {"LD_PRELOAD=" + lib, "SONDE_RECORD=" + rec}, {}});
    if (have_uftrace)
        v.push_back({"uftrace record --no-libcall",
                     {"uftrace", "record", "--no-libcall", "-d", uft, instr, n},
                     {},
                     {}});
    const std::string cleanup = std::string("rm -rf ") + tmp;
    auto remove_tmp = [&] {
        if (system(cleanup.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", tmp);
    };
    for (int r = 0; r < reps; ++r)
        for (size_t i = 0; i < v.size(); ++i) {
            Variant &x = v[i];
            const std::string out = i == 3 ? counts_path : i == 4 ? filtered_path : std::string();
            if (!out.empty()) std::remove(out.c_str());
            const Run res = run(x.args, x.env);
            if (!res.ok) {
                std::fprintf(stderr, "%s: run failed\n", x.name);
                remove_tmp();
                return 1;
            }
            if (!out.empty() && !client_ran(out, i == 3 ? res.calls : 0)) {
                std::fprintf(stderr, "%s: the client did not run (no report in %s, or a wrong count)\n",
                             x.name, out.c_str());
                remove_tmp();
                return 1;
            }
            x.ns.push_back(res.ns);
            x.calls = res.calls;
        }
    remove_tmp();

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
        // uftrace's cost over each round's floor, divided by variant den's over the same floor.
        auto print_ratio = [&](const char *what, size_t den, double target) {
            std::vector<double> q;
            for (int r = 0; r < reps; ++r)
                q.push_back((v[6].ns[r] - v[1].ns[r]) / (v[den].ns[r] - v[1].ns[r]));
            const double m = median(q);
            std::sort(q.begin(), q.end());
            std::printf("  uftrace / %-16s %5.1fx (target >= %.0fx)  %-6s  rounds: %.1f-%.1fx\n", what, m,
                        target, m >= target ? "met" : "missed", q.front(), q.back());
        };
        std::printf("ratios, medians of the %d rounds' own ratios:\n", reps);
        print_ratio("sonde record:", 5, 3);
        print_ratio("counting client:", 3, 10);
    } else {
        std::printf("uftrace: not installed, no peer figure\n");
    }
    return 0;
}
