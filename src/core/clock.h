// Clock: the timestamp source for records. Owns the TSC calibration.
//
// When the CPU has an invariant TSC (CPUID 0x80000007 EDX bit 8) and SONDE_CLOCK is not
// "monotonic", timestamps are rdtsc converted to nanoseconds of CLOCK_MONOTONIC with a
// fixed-point multiply: ns = ns0 + ((tsc - tsc0) * mult) >> 32. Calibration runs once per process
// (first sonde_initialize) over about 10 ms; its error is a few ppm. Otherwise clock_gettime.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <x86intrin.h>

namespace sonde::clock {

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

struct Params {
    uint64_t tsc0;
    uint64_t ns0;
    uint64_t mult;  // ns per tick << 32
};

extern Params g_params;  // written once before g_use_tsc is published
extern std::atomic<bool> g_use_tsc;

void calibrate();  // idempotent, thread-safe
bool using_tsc();

inline uint64_t monotonic_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Hot path: rdtsc, a subtraction and a 64x64->128 multiply. No lock, no system call.
inline uint64_t now_ns() {
    if (__builtin_expect(g_use_tsc.load(std::memory_order_acquire), 1)) {
        const int64_t d = static_cast<int64_t>(__rdtsc() - g_params.tsc0);
        const i128 scaled = static_cast<i128>(d) * static_cast<i128>(g_params.mult);
        return g_params.ns0 + static_cast<uint64_t>(static_cast<int64_t>(scaled >> 32));
    }
    return monotonic_ns();
}

// Hot path of recorders that convert later: the raw counter, TSC ticks when timestamps come
// from the TSC, else nanoseconds. One load and an rdtsc; no multiply.
inline uint64_t ticks() {
    if (__builtin_expect(g_use_tsc.load(std::memory_order_relaxed), 1)) return __rdtsc();
    return monotonic_ns();
}

// Whether ticks() reads the TSC (then it is __rdtsc()), for hot paths that inline the read.
inline bool ticks_are_tsc() { return g_use_tsc.load(std::memory_order_relaxed); }

// Nanoseconds of a value of ticks(), as now_ns() would have returned at that moment.
inline uint64_t ticks_to_ns(uint64_t ticks) {
    if (!g_use_tsc.load(std::memory_order_acquire)) return ticks;
    const int64_t d = static_cast<int64_t>(ticks - g_params.tsc0);
    const i128 scaled = static_cast<i128>(d) * static_cast<i128>(g_params.mult);
    return g_params.ns0 + static_cast<uint64_t>(static_cast<int64_t>(scaled >> 32));
}

}  // namespace sonde::clock
