// bench_apitrace: ns per traced call of zlib's crc32 (64 bytes) in an uninstrumented program,
// all in one run:
//   plain    the program alone (the anchor: what a call costs untraced)
//   sonde    `sonde record --api libz:crc32 --api-prototypes crc32.protos` (arguments and return
//            value of every call recorded into a trace)
//   uftrace  `uftrace record --force` (uftrace's library-call tracing through the PLT; the peer)
//   ltrace   `ltrace -e crc32` on fewer calls (LTRACE_CALLS; its cost is per call)
// Each variant runs REPS times, interleaved; the program times its own loop, so start-up and
// the tracers' set-up are not counted. Two figures per variant: wall time per call, and CPU
// time of the calling thread per call (what the tracer costs the traced thread itself, its
// own helper threads and processes left out; steadier on a loaded machine). Printed: the
// medians per call, each tracer's cost over plain, and the ratios the targets are stated in
// (uftrace / sonde >= 1.5, ltrace / sonde >= 100, on the cost over plain). A peer that is not
// installed is reported as such. Never fails.
//
// usage: bench_apitrace CRC_LOOP SONDE PROTOTYPES [N] [REPS] [LTRACE_CALLS]
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../common/spawn.h"

namespace {

struct Figure {
    double wall = -1;  // ns per call
    double cpu = -1;   // calling thread's CPU ns per call
};

// Runs argv (stderr to /dev/null); the ns per call the program printed ("calls N ns T cpu C"),
// negative when it did not run.
Figure run(const std::vector<std::string> &args) {
    const sonde_bench::ChildOutput child = sonde_bench::run_child(args);
    unsigned long long calls = 0;
    long long ns = 0, cpu = 0;
    const size_t at = child.out.find("calls ");
    if (!child.ran || at == std::string::npos ||
        std::sscanf(child.out.c_str() + at, "calls %llu ns %lld cpu %lld", &calls, &ns, &cpu) != 3 ||
        calls == 0)
        return {};
    return {static_cast<double>(ns) / static_cast<double>(calls),
            static_cast<double>(cpu) / static_cast<double>(calls)};
}

struct Series {
    std::vector<double> wall, cpu;
    void add(const Figure &f) {
        if (f.wall < 0) return;
        wall.push_back(f.wall);
        cpu.push_back(f.cpu);
    }
};

bool installed(const char *tool) {
    const std::string cmd = std::string("command -v ") + tool + " >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
}

double median(std::vector<double> v) {
    if (v.empty()) return -1;
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 != 0 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: bench_apitrace CRC_LOOP SONDE PROTOTYPES [N] [REPS] [LTRACE_CALLS]\n");
        return 0;
    }
    const std::string prog = argv[1], sonde = argv[2], protos = argv[3];
    const std::string n = argc > 4 ? argv[4] : "1000000";
    const int reps = argc > 5 ? std::max(1, std::atoi(argv[5])) : 5;
    const std::string ltrace_calls = argc > 6 ? argv[6] : "2000";
    char dir[] = "/tmp/bench_apitrace.XXXXXX";
    if (mkdtemp(dir) == nullptr) {
        std::perror("mkdtemp");
        return 0;
    }
    const std::string trace = std::string(dir) + "/crc.sonde", udata = std::string(dir) + "/uftrace.data";
    const bool have_uftrace = installed("uftrace"), have_ltrace = installed("ltrace");

    Series plain, sonde_s, uftrace_s, ltrace_s, plain_small;
    for (int r = 0; r < reps; ++r) {
        plain.add(run({prog, n}));
        sonde_s.add(run({sonde, "record", "--force", "-o", trace, "--api", "libz:crc32", "--api-prototypes",
                         protos, "--", prog, n}));
        if (have_uftrace) uftrace_s.add(run({"uftrace", "record", "--force", "-d", udata, prog, n}));
        if (have_ltrace) {
            ltrace_s.add(run({"ltrace", "-e", "crc32", "-o", "/dev/null", prog, ltrace_calls}));
            plain_small.add(run({prog, ltrace_calls}));
        }
    }
    const std::string rm = std::string("rm -rf '") + dir + "'";
    if (std::system(rm.c_str()) != 0) std::fprintf(stderr, "bench_apitrace: cannot remove %s\n", dir);

    std::printf("bench_apitrace: zlib crc32 (64 bytes), %s calls (ltrace: %s), medians of %d runs\n",
                n.c_str(), ltrace_calls.c_str(), reps);
    // One table per figure: wall time, then the calling thread's CPU time.
    for (int cpu = 0; cpu < 2; ++cpu) {
        auto med = [&](const Series &x) { return median(cpu != 0 ? x.cpu : x.wall); };
        const double p = med(plain), s = med(sonde_s), u = med(uftrace_s), l = med(ltrace_s),
                     ps = med(plain_small);
        std::printf("%s per call:\n", cpu != 0 ? "CPU time of the calling thread" : "wall time");
        std::printf("  %-34s %10.1f ns\n", "plain (anchor)", p);
        if (p < 0 || s < 0) {
            std::printf("  sonde record --api did not run\n");
            continue;
        }
        const double sonde_cost = std::max(s - p, 0.1);
        std::printf("  %-34s %10.1f ns  (+%.1f ns over plain)\n", "sonde record --api", s, s - p);
        if (u >= 0) {
            std::printf("  %-34s %10.1f ns  (+%.1f ns over plain)\n", "uftrace record --force (peer)", u,
                        u - p);
            std::printf("  ratio uftrace / sonde, cost over plain: %.2fx (target >= 1.5x)\n",
                        (u - p) / sonde_cost);
        } else {
            std::printf("  uftrace: %s\n", have_uftrace ? "did not run" : "not installed");
        }
        if (l >= 0 && ps >= 0) {
            std::printf("  %-34s %10.1f ns  (+%.1f ns over plain)\n", "ltrace -e crc32 (peer)", l, l - ps);
            std::printf("  ratio ltrace / sonde, cost over plain: %.0fx (target >= 100x)\n",
                        (l - ps) / sonde_cost);
        } else {
            std::printf("  ltrace: %s\n", have_ltrace ? "did not run" : "not installed");
        }
    }
    return 0;
}
