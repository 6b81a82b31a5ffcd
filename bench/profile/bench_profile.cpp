// bench/profile: the cost of one counter increment through the profile-array inline helper
// (sonde_profile_view_add_u64 into the calling thread's bucket), with 1 and 2 threads, next
// to the two anchors measured in the same run:
//  - floor: a plain thread_local uint64_t updated with the same relaxed load/add/store, its
//    address taken once before the loop (as the helper takes its view once);
//  - peer:  one shared std::atomic<uint64_t> updated with fetch_add (what counters without
//           buckets need).
// Every variant does exactly one non-mergeable memory update per iteration (relaxed atomics
// are never combined by the compiler), so the loops differ only in how the counter is
// addressed. A fourth line shows the thread_local addressed through %fs on every iteration
// (what `++tls_counter` compiles to): many cores forward a store to the next load more slowly
// through a segment-relative address, so that form is not the floor. Figures are medians over repetitions; the program never fails on a figure.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include <sonde/profile.h>

namespace {

constexpr int kReps = 11;
constexpr uint64_t kFastIters = 10'000'000;   // per thread, floor and helper
constexpr uint64_t kAtomicIters = 1'000'000;  // per thread, shared atomic (slow when contended)

thread_local uint64_t t_floor_counter = 0;
alignas(64) std::atomic<uint64_t> g_shared_counter{0};

sonde_profile_buffer_t *g_pb = nullptr;
sonde_profile_array_t *g_arr = nullptr;

enum class Variant { kFloor, kHelper, kAtomic, kTlsDirect };

void pin_to_cpu(unsigned cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % std::max(1u, std::thread::hardware_concurrency()), &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// The measured loops. noinline keeps each one a separate, comparable function.
__attribute__((noinline)) void loop_floor(uint64_t *counter, uint64_t n) {
    asm("" : "+r"(counter));  // the compiler must not turn this back into %fs addressing
    for (uint64_t i = 0; i < n; ++i)
        __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

__attribute__((noinline)) void loop_tls_direct(uint64_t n) {
    for (uint64_t i = 0; i < n; ++i)
        __atomic_store_n(&t_floor_counter, __atomic_load_n(&t_floor_counter, __ATOMIC_RELAXED) + 1,
                         __ATOMIC_RELAXED);
}

__attribute__((noinline)) void loop_helper(const sonde_profile_view_t *view, uint64_t n) {
    const sonde_profile_view_t v = *view;
    for (uint64_t i = 0; i < n; ++i) sonde_profile_view_add_u64(&v, 1, 8, 1);
}

__attribute__((noinline)) void loop_atomic(uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) g_shared_counter.fetch_add(1, std::memory_order_relaxed);
}

struct Result {
    double ns_per_incr;  // per thread: elapsed / iterations (the slowest thread)
    double total_rate;   // increments per ns over all threads
};

// One repetition: `threads` threads start together and run `iters` increments each.
Result run_once(Variant variant, unsigned threads, uint64_t iters) {
    std::atomic<unsigned> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> elapsed(threads, 0.0);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            pin_to_cpu(t);
            sonde_profile_set_thread_index(t);  // thread t counts in bucket t
            sonde_profile_view_t view;
            std::memset(&view, 0, sizeof view);
            view.struct_size = sizeof view;
            if (sonde_profile_array_view(g_arr, g_pb, &view) != SONDE_STATUS_SUCCESS) return;
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) {
            }
            const auto begin = std::chrono::steady_clock::now();
            switch (variant) {
                case Variant::kFloor: loop_floor(&t_floor_counter, iters); break;
                case Variant::kTlsDirect: loop_tls_direct(iters); break;
                case Variant::kHelper: loop_helper(&view, iters); break;
                case Variant::kAtomic: loop_atomic(iters); break;
            }
            const auto end = std::chrono::steady_clock::now();
            elapsed[t] = std::chrono::duration<double, std::nano>(end - begin).count();
        });
    }
    while (ready.load() != threads) {
    }
    go.store(true, std::memory_order_release);
    for (auto &th : pool) th.join();
    const double worst = *std::max_element(elapsed.begin(), elapsed.end());
    return {worst / static_cast<double>(iters), static_cast<double>(threads * iters) / worst};
}

Result median_of(Variant variant, unsigned threads, uint64_t iters) {
    std::vector<Result> rs;
    for (int r = 0; r < kReps; ++r) rs.push_back(run_once(variant, threads, iters));
    std::sort(rs.begin(), rs.end(),
              [](const Result &a, const Result &b) { return a.ns_per_incr < b.ns_per_incr; });
    return rs[rs.size() / 2];
}

}  // namespace

int main() {
    if (sonde_profile_buffer_create(1 << 16, &g_pb) != SONDE_STATUS_SUCCESS ||
        sonde_profile_array_create(16, 4, 2, 64, &g_arr) != SONDE_STATUS_SUCCESS ||
        sonde_profile_array_allocate(g_arr, g_pb) != SONDE_STATUS_SUCCESS ||
        sonde_profile_array_initialize(g_arr, g_pb) != SONDE_STATUS_SUCCESS) {
        std::fprintf(stderr, "bench_profile: cannot set up the profile array\n");
        return 0;
    }
    std::printf(
        "bench/profile: ns per counter increment, median of %d runs "
        "(%llu increments per thread; shared atomic %llu), %u CPUs\n",
        kReps, static_cast<unsigned long long>(kFastIters), static_cast<unsigned long long>(kAtomicIters),
        std::thread::hardware_concurrency());
    std::printf("%-34s %8s %12s %16s\n", "variant", "threads", "ns/incr", "Mincr/s (all)");
    Result res[4][2];
    const char *names[4] = {"thread_local via pointer (floor)", "profile view helper",
                            "shared std::atomic fetch_add", "thread_local via %fs each time"};
    const Variant variants[4] = {Variant::kFloor, Variant::kHelper, Variant::kAtomic, Variant::kTlsDirect};
    for (int v = 0; v < 4; ++v)
        for (unsigned t = 1; t <= 2; ++t) {
            res[v][t - 1] = median_of(variants[v], t, v == 2 ? kAtomicIters : kFastIters);
            std::printf("%-34s %8u %12.3f %16.1f\n", names[v], t, res[v][t - 1].ns_per_incr,
                        res[v][t - 1].total_rate * 1000.0);
        }
    // Check that the helper's increments landed (and keep its stores observable).
    uint64_t sum = 0;
    sonde_profile_array_sum_u64(g_arr, g_pb, 1, 8, &sum);
    const uint64_t expect = static_cast<uint64_t>(kReps) * kFastIters * 3;
    std::printf("helper increments counted: %llu (expected %llu)\n", static_cast<unsigned long long>(sum),
                static_cast<unsigned long long>(expect));
    const Result &f1 = res[0][0], &f2 = res[0][1], &h1 = res[1][0], &h2 = res[1][1], &a2 = res[2][1],
                 &a1 = res[2][0];
    std::printf("ratio helper / floor, 1 thread:            %6.2fx  (target <= 1.5x)\n",
                h1.ns_per_incr / f1.ns_per_incr);
    std::printf("ratio helper / floor, 2 threads:           %6.2fx  (target <= 1.5x)\n",
                h2.ns_per_incr / f2.ns_per_incr);
    std::printf("ratio shared atomic / helper, 1 thread:    %6.2fx\n", a1.ns_per_incr / h1.ns_per_incr);
    std::printf("ratio shared atomic / helper, 2 threads:   %6.2fx  (target >= 10x)\n",
                a2.ns_per_incr / h2.ns_per_incr);
    std::printf("helper scaling, 2 threads vs 1 (total):    %6.2fx  (target >= 1.9x)\n",
                h2.total_rate / h1.total_rate);
    std::printf("floor scaling, 2 threads vs 1 (total):     %6.2fx\n", f2.total_rate / f1.total_rate);
    sonde_profile_array_destroy(g_arr);
    sonde_profile_buffer_destroy(g_pb);
    return 0;
}
