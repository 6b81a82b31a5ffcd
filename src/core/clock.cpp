// TSC calibration against CLOCK_MONOTONIC (see clock.h).
#include "core/clock.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace sonde::clock {

Params g_params{};
std::atomic<bool> g_use_tsc{false};

namespace {

std::once_flag g_once;

bool invariant_tsc() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return false;
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d)) return false;
    return (d & (1u << 8)) != 0;
}

// One (tsc, ns) pair whose two rdtsc reads bracket clock_gettime as tightly as possible.
void sample(uint64_t &tsc, uint64_t &ns) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 16; ++i) {
        const uint64_t t1 = __rdtsc();
        const uint64_t m = monotonic_ns();
        const uint64_t t2 = __rdtsc();
        if (t2 - t1 < best) {
            best = t2 - t1;
            tsc = t1 + (t2 - t1) / 2;
            ns = m;
        }
    }
}

void do_calibrate() {
    const char *env = std::getenv("SONDE_CLOCK");
    if (env && std::strcmp(env, "monotonic") == 0) return;
    if (!invariant_tsc()) return;
    uint64_t tsc_a = 0, ns_a = 0, tsc_b = 0, ns_b = 0;
    sample(tsc_a, ns_a);
    const uint64_t until = ns_a + 10'000'000;  // 10 ms
    while (monotonic_ns() < until) {
    }
    sample(tsc_b, ns_b);
    if (tsc_b <= tsc_a || ns_b <= ns_a) return;
    const u128 mult = (static_cast<u128>(ns_b - ns_a) << 32) / (tsc_b - tsc_a);
    g_params.tsc0 = tsc_b;
    g_params.ns0 = ns_b;
    g_params.mult = static_cast<uint64_t>(mult);
    g_use_tsc.store(true, std::memory_order_release);
}

}  // namespace

void calibrate() { std::call_once(g_once, do_calibrate); }

bool using_tsc() { return g_use_tsc.load(std::memory_order_acquire); }

}  // namespace sonde::clock
