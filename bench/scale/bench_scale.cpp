// bench/scale: how Sonde's paths scale with the cores of the machine it runs on. For every
// count N in 1, 2, 4, ... up to the number of online CPUs (and that number itself), it prints
// one line per case: records (or references) per second, the speed-up over N = 1, the
// efficiency (speed-up / N), the CPU time per record, and, where there is one, the floor's
// speed-up beside it. Every case checks that its answer does not depend on N.
//
// Cases (medians of 3 repetitions, 7 for cases 4 and 5, 11 for 5c and 5e; wall time for rates,
// getrusage for CPU; creating and destroying the sessions and buffers of cases 1-3 is left out: a
// buffer's pages are populated at creation, and case 2 creates a 64 MiB buffer per thread).
// Cases 4 and 5a-5f take their counts in turn within each repetition, and their speed-up is the
// median of each repetition's own ratio: on a shared VM whose speed drifts from one second to the
// next, a ratio taken between runs a second apart moves far less than one between runs taken
// minutes apart:
//   1. producers, one LOSSLESS buffer: N threads each emit the same number of 32-byte
//      timestamped records (16-byte payload) into one buffer whose callback reads every record
//      (sums a payload word). Floor: N threads doing rdtsc and a 32-byte store into a private
//      ring. Check: delivered = emitted, dropped = 0, the callback's sum is the expected one.
//  1b. the same with the buffer's CONCURRENT_CALLBACKS property (the callback is thread-safe):
//      the delivery pool's workers deliver different producers' spans at once. Same checks.
//   2. producers, one buffer per thread, LOSSLESS, the same callback: the pool delivers the
//      buffers at once. Same checks.
//   3. DISCARD under overload: N threads emit into a small DISCARD buffer whose callback blocks
//      until they are done; CPU per record (dropped or kept) beside case 1's at the same N (the
//      target is at most 1.2x). Check: delivered + dropped = emitted.
//   4. the analyzer over 16 equal in-memory shards, parallel with N workers: basic_counts and
//      cache_sim (one line each). Floor: N threads counting the same shards' writes and distinct
//      lines in tables of 64-line words of their own, without Sonde (shard_floor_run); its
//      own rates are printed under each tool's table, with the tool's time over the floor's.
//      Check: the results JSON is the same for every N, and so are the floor's counts.
//   5. reuse_distance over a real trace (tests/data/gzip-gpl3.lackey.zst, about 2 M data
//      references): the analyzer with the tool's exact parallel mode (jobs=N), as
//      `sonde analyze --tool reuse_distance --jobs N` runs it, and the stack-distance calculator
//      alone on the same lines in memory (sonde_stackdist_batch, N workers; then its serial path:
//      the calling thread's CPU time at N = 1, 2, 4, 8, 16), and (5c) the
//      `sonde analyze` command on the file end to end. Where clang built bench/scale/sort.c,
//      5d-5f do the same on a 20 M-reference trace recorded from it with `sonde record
//      --memory`. Check: the JSON (histogram) and the calculator's bins are the same for every N.
//  5g. the results' tail: `sonde analyze --tool reuse_distance --jobs N` on case 6's raw64
//      trace (about 1.9 M distinct distances), without and with `--json /dev/stdout`, and the
//      difference (the JSON's own cost; its arrays are formatted on the run's workers).
//   6. sonde analyze --mpi, 2 ranks against 1 (mpirun -np 2 and -np 1, the same command, taken
//      in turns; only when the build has MPI): reuse_distance on a 20 M-access raw64 trace and
//      cache_sim on a 10 M-reference lackey trace, both made here (deterministic) in TMPDIR,
//      plain files, so that each rank reads its byte range. Wall-time medians of 5, the ratio
//      (target >= 1.7x), and beside them two floors and the ratio net of each: the launch
//      (mpirun -np N of `sonde --version`) and the same command over an empty input (the launch
//      with MPI's start and end); the CPU time of all processes and the load average before and
//      after. One rank takes every core (its default threads); each of 2 ranks takes half of
//      them; so a second anchor, one rank with --jobs 1, shows how the ranks compare with one
//      process of one thread each, and a bound: the 2-rank launch plus half the one-thread
//      rank's work, what a split costing nothing (no MPI start, no exchange, no merge) would
//      take. Check: every run prints the same results.
//   0. thread placement, before the cases: how long a thread waits for its first run after its
//      creator starts it, or its waker wakes it, while that thread keeps running (it spins),
//      each time after every thread slept for 2 ms (the CPUs idle, as between a run's stages),
//      medians of 100 - plainly, and with core::WakeSpread (src/core/wake_spread.h) as the
//      decoding threads and the calculator's small pools use it. Where the kernel places a
//      started or woken thread on an idle CPU this takes tens of microseconds either way; where
//      it queues it behind the running one (a kernel that packs threads onto few vCPUs and
//      leaves idle ones halted) it takes up to a time slice, milliseconds, unless spread. With
//      more than 2 CPUs, also CPUs - 1 threads started at once, until the last has run: whether
//      larger groups (not spread) would need it. Only with 2 CPUs or more; no check.
// The machine (CPU model, online CPUs, the kernel and whether it packs threads onto few vCPUs)
// is printed first. It prints and never fails; a failed
// check is printed as "MISMATCH". SONDE_BENCH_SCALE=quick divides the work by 4;
// SONDE_BENCH_SCALE=mpi runs case 6 alone, SONDE_BENCH_SCALE=producers cases 1-3 alone,
// SONDE_BENCH_SCALE=shards case 4 alone,
// SONDE_BENCH_SCALE=reuse cases 5a-5f alone,
// SONDE_BENCH_SCALE=json case 5g alone. SONDE_BENCH_SONDE and SONDE_BENCH_SORT name the
// `sonde` executable and the instrumented sort program when they are not where the build put
// them; SONDE_SHARED_DATA the folder of the gzip trace.
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sonde/sonde.h>

#include "../common/spawn.h"
#include "core/wake_spread.h"

namespace {

constexpr int kReps = 3;
// Rounds of measure_counts (cases 4 and 5): its speed-ups are the figures the lines are
// read from, and on a shared VM a median of 3 paired ratios still moved by 0.3x between runs.
constexpr int kPairedReps = 7;
// Rounds of the end-to-end `sonde analyze` cases (5c, 5e): whole processes, whose start and page
// faults add to the drift, and the 2-core line is read from 5c. A median of 3 such ratios on a
// 2-vCPU VM moved between 1.31x and 1.75x from run to run; each round costs a fraction of a second.
constexpr int kCliReps = 11;

// A program the bench runs: the environment variable `name` when set (to run the bench on a
// machine where the build tree is elsewhere), else the path the build compiled in.
std::string program(const char *name, const char *built) {
    const char *e = getenv(name);
    return e != nullptr && *e != '\0' ? e : built;
}
std::string sonde_exe() { return program("SONDE_BENCH_SONDE", SONDE_BENCH_SONDE); }
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown CPU";
}

// The kernel's release, and whether its command line asks it to pack a guest's threads onto
// few vCPUs (sched_vcpu_pack, seen on the 2-vCPU VMs this tree is tested on): there a woken
// thread may wait behind its waker while another vCPU idles, which core::WakeSpread works
// around for small groups only (docs/performance.md, "Threads that wait on one vCPU").
std::string kernel_line() {
    utsname u{};
    std::string line = uname(&u) == 0 ? std::string("kernel ") + u.release : "kernel unknown";
    std::ifstream in("/proc/cmdline");
    std::string word;
    while (in >> word)
        if (word.rfind("sched_vcpu_pack", 0) == 0)
            return line + "; its command line packs threads onto few vCPUs (" + word + ")";
    return line;
}

// Case 0: the delay of a thread's first run after it is started (kind 0: a new thread) or woken
// (kind 1) by a thread that then spins, in ms, the median of `reps`; kind 2: `threads` - 1 new
// threads started at once, until the last of them has run. `spread`: through core::WakeSpread,
// as the decoding threads and the calculator's small pools do (a group of `threads`, which
// spreads only below core::WakeSpread::kMaxThreads).
double placement_delay(int kind, bool spread, int reps, unsigned threads = 2) {
    std::vector<double> delays;
    const unsigned started = kind == 2 ? threads - 1 : 1;
    for (int r = 0; r < reps; ++r) {
        std::mutex mu;
        std::condition_variable cv;
        sonde::core::WakeSpread group(kind == 2 ? threads : 2);
        // ns from t0 to each thread's first run after its start
        std::vector<std::atomic<int64_t>> ran(started);
        for (auto &x : ran) x.store(0);
        bool go = false, waiting = false;
        Clock::time_point t0;
        std::vector<std::thread> t;
        // Every thread asleep for a while first, as between a run's stages: the CPUs go idle.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::unique_lock<std::mutex> lk(mu);
        if (kind != 1) {
            t0 = Clock::now();
            for (unsigned i = 0; i < started; ++i) {
                t.emplace_back([&, i] {
                    {
                        std::lock_guard<std::mutex> g(mu);
                        group.began(i + 1);
                    }
                    ran[i].store(std::max<int64_t>(1, (Clock::now() - t0).count()));
                });
                if (spread) group.started(i + 1, t.back());
            }
        } else {
            t.emplace_back([&] {
                std::unique_lock<std::mutex> w(mu);
                waiting = true;
                cv.notify_all();
                group.waiting(1);
                cv.wait(w, [&] { return go; });
                group.woke(1);
                w.unlock();
                ran[0].store(std::max<int64_t>(1, (Clock::now() - t0).count()));
            });
            cv.wait(lk, [&] { return waiting; });
            lk.unlock();
            std::this_thread::sleep_for(std::chrono::milliseconds(2));  // it sleeps in its wait
            lk.lock();
            t0 = Clock::now();
            go = true;
            if (spread) group.spread();
            cv.notify_all();
        }
        lk.unlock();
        // The starting thread keeps its CPU busy until every thread has run (50 ms at most).
        auto all_ran = [&] {
            for (auto &x : ran)
                if (x.load() == 0) return false;
            return true;
        };
        while (!all_ran() && Clock::now() - t0 < std::chrono::milliseconds(50)) {
        }
        for (std::thread &x : t) x.join();
        int64_t last = 0;
        for (auto &x : ran) last = std::max(last, x.load());
        delays.push_back(static_cast<double>(last) / 1e6);
    }
    return median(delays);
}

struct Figure {
    double rate = 0;     // records (or references) per second, median
    double cpu_ns = 0;   // CPU ns per record, median
    double speedup = 0;  // measure_counts: the median of each round's rate over its first count's
};

// Set-up a body leaves out of its figures (creating and destroying buffers: a 64 MiB buffer's
// pages are populated at creation), wall and CPU seconds; the body adds to it.
struct Excluded {
    double wall = 0, cpu = 0;
};
Excluded g_excluded;

// Runs `f` and adds its wall and CPU time to g_excluded.
template <typename F>
void excluded(F f) {
    const double c0 = cpu_seconds();
    const auto t0 = Clock::now();
    f();
    g_excluded.wall += std::chrono::duration<double>(Clock::now() - t0).count();
    g_excluded.cpu += cpu_seconds() - c0;
}

// Runs `body` (which returns the records it handled) kReps times.
Figure measure(const std::function<uint64_t()> &body) {
    std::vector<double> rates, cpu;
    for (int r = 0; r < kReps; ++r) {
        g_excluded = Excluded{};
        const double c0 = cpu_seconds();
        const auto t0 = Clock::now();
        const uint64_t n = body();
        const double wall = std::chrono::duration<double>(Clock::now() - t0).count() - g_excluded.wall;
        rates.push_back(n / wall);
        cpu.push_back((cpu_seconds() - c0 - g_excluded.cpu) * 1e9 / n);
    }
    return {median(rates), median(cpu)};
}

// Runs body(i) for every counts[i], kPairedReps rounds, the counts in turn within each round, so that a
// machine whose speed drifts (a shared VM) slows every count of a round alike; body returns the
// records it handled. Figure i holds the medians for counts[i], and its speed-up the median over
// rounds of the round's rate at counts[i] over the round's rate at counts[0].
std::vector<Figure> measure_counts(const std::vector<unsigned> &counts,
                                   const std::function<uint64_t(size_t)> &body) {
    std::vector<std::vector<double>> rates(counts.size()), cpu(counts.size()), ratios(counts.size());
    for (int r = 0; r < kPairedReps; ++r) {
        for (size_t i = 0; i < counts.size(); ++i) {
            g_excluded = Excluded{};
            const double c0 = cpu_seconds();
            const auto t0 = Clock::now();
            const uint64_t n = body(i);
            const double wall = std::chrono::duration<double>(Clock::now() - t0).count() - g_excluded.wall;
            rates[i].push_back(n / wall);
            cpu[i].push_back((cpu_seconds() - c0 - g_excluded.cpu) * 1e9 / n);
            ratios[i].push_back(rates[i].back() / rates[0].back());
        }
    }
    std::vector<Figure> out;
    for (size_t i = 0; i < counts.size(); ++i)
        out.push_back({median(rates[i]), median(cpu[i]), median(ratios[i])});
    return out;
}

void header(const char *title, const char *unit) {
    std::printf("\n%s\n  %4s %14s %9s %11s %12s %s\n", title, "N", unit, "speed-up", "efficiency",
                "CPU ns/rec", "floor speed-up");
}

void row(unsigned n, const Figure &f, const Figure &one, double floor_speedup, bool ok) {
    const double s = f.speedup > 0 ? f.speedup : f.rate / one.rate;
    std::printf("  %4u %14.3e %8.2fx %10.0f%% %12.2f", n, f.rate, s, 100 * s / n, f.cpu_ns);
    if (floor_speedup > 0) std::printf(" %13.2fx", floor_speedup);
    std::printf("%s\n", ok ? "" : "   MISMATCH");
}

// Runs `fn(i)` on `n` threads started together; returns when all are done.
void on_threads(unsigned n, const std::function<void(unsigned)> &fn) {
    std::vector<std::thread> threads;
    std::atomic<unsigned> ready{0};
    std::atomic<bool> go{false};
    for (unsigned i = 0; i < n; ++i)
        threads.emplace_back([&, i] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            fn(i);
        });
    while (ready.load() < n) std::this_thread::yield();
    go.store(true, std::memory_order_release);
    for (std::thread &t : threads) t.join();
}

// ---- producers ----------------------------------------------------------------------------

std::atomic<uint64_t> g_sum{0};      // what the callbacks read
std::atomic<bool> g_release{false};  // the blocking callback waits for it

void read_cb(const sonde_record_header_t *b, const sonde_record_header_t *e, sonde_session_id_t,
             sonde_buffer_id_t, void *) {
    uint64_t sum = 0;
    for (const char *p = reinterpret_cast<const char *>(b); p < reinterpret_cast<const char *>(e);) {
        const auto *h = reinterpret_cast<const sonde_record_header_t *>(p);
        if (h->kind == SONDE_RECORD_KIND_USER) {
            uint64_t v;
            std::memcpy(&v, p + 16, 8);  // after the header and the timestamp
            sum += v;
        }
        p += h->size;
    }
    g_sum.fetch_add(sum, std::memory_order_relaxed);
}

void blocking_cb(const sonde_record_header_t *b, const sonde_record_header_t *e, sonde_session_id_t s,
                 sonde_buffer_id_t bu, void *u) {
    while (!g_release.load(std::memory_order_acquire))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    read_cb(b, e, s, bu, u);
}

sonde_buffer_id_t make_buffer(sonde_session_id_t s, uint64_t size, uint64_t chunk, uint64_t policy,
                              sonde_buffer_callback_t cb, bool concurrent = false) {
    const sonde_buffer_property_t props[3] = {{SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, chunk},
                                              {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, policy},
                                              {SONDE_BUFFER_PROPERTY_KIND_CONCURRENT_CALLBACKS, 0, 1}};
    sonde_buffer_id_t b{};
    if (sonde_create_buffer(s, size, cb, nullptr, props, concurrent ? 3 : 2, &b) != SONDE_STATUS_SUCCESS) {
        std::printf("cannot create a buffer\n");
        std::exit(0);
    }
    return b;
}

struct Stats {
    uint64_t emitted = 0, delivered = 0, dropped = 0;
};

Stats stats(sonde_session_id_t s, sonde_buffer_id_t b) {
    sonde_buffer_stats_t st{};
    st.struct_size = sizeof st;
    sonde_get_buffer_stats(s, b, &st);
    return {st.records_emitted, st.records_delivered, st.records_dropped};
}

void emit_loop(sonde_buffer_id_t b, uint64_t n) {
    uint64_t p[2] = {1, 0};
    for (uint64_t i = 0; i < n; ++i) {
        p[1] = i;
        sonde_emit_timestamped(b, SONDE_RECORD_KIND_USER, p, 16);
    }
}

// One run of case 1 (shared = one buffer; `concurrent`: with CONCURRENT_CALLBACKS) or 2 (one
// buffer per thread); false in *ok when a record is lost or misread.
uint64_t producers_run(unsigned n, uint64_t per_thread, bool shared, bool *ok, bool concurrent = false) {
    sonde_session_id_t s{};
    std::vector<sonde_buffer_id_t> buffers(shared ? 1 : n);
    excluded([&] {
        sonde_create_session(nullptr, &s);
        for (sonde_buffer_id_t &b : buffers)
            b = make_buffer(s, 64u << 20, 1u << 20, SONDE_BUFFER_POLICY_LOSSLESS, read_cb, concurrent);
    });
    g_sum = 0;
    sonde_start_session(s);
    on_threads(n, [&](unsigned i) { emit_loop(buffers[shared ? 0 : i], per_thread); });
    sonde_stop_session(s);  // delivers everything emitted before it
    uint64_t emitted = 0, delivered = 0, dropped = 0;
    for (sonde_buffer_id_t b : buffers) {
        const Stats st = stats(s, b);
        emitted += st.emitted;
        delivered += st.delivered;
        dropped += st.dropped;
    }
    const uint64_t total = per_thread * n;
    if (emitted != total || delivered != total || dropped != 0 || g_sum.load() != total) *ok = false;
    excluded([&] { sonde_destroy_session(s); });
    return total;
}

uint64_t discard_run(unsigned n, uint64_t per_thread, bool *ok) {
    sonde_session_id_t s{};
    sonde_buffer_id_t b{};
    excluded([&] {
        sonde_create_session(nullptr, &s);
        b = make_buffer(s, 1u << 20, 64u << 10, SONDE_BUFFER_POLICY_DISCARD, blocking_cb);
    });
    g_release = false;
    g_sum = 0;
    sonde_start_session(s);
    // The consumer stays blocked until every producer has emitted all its records; the last
    // one to finish releases it (a thread's exit waits for its records to be delivered).
    std::atomic<unsigned> done{0};
    on_threads(n, [&](unsigned) {
        emit_loop(b, per_thread);
        if (done.fetch_add(1) + 1 == n) g_release = true;
    });
    sonde_stop_session(s);
    const Stats st = stats(s, b);
    const uint64_t total = per_thread * n;
    if (st.emitted + st.dropped != total && st.emitted != total) *ok = false;
    if (st.delivered + st.dropped != total || g_sum.load() != st.delivered) *ok = false;
    excluded([&] { sonde_destroy_session(s); });
    return total;
}

thread_local uint64_t (*tl_ring)[4];

uint64_t floor_run(unsigned n, uint64_t per_thread) {
    on_threads(n, [&](unsigned) {
        if (tl_ring == nullptr) tl_ring = static_cast<uint64_t(*)[4]>(aligned_alloc(64, 1u << 20));
        std::memset(tl_ring, 0, 1u << 20);
        const uint64_t mask = (1u << 20) / 32 - 1;
        for (uint64_t i = 0; i < per_thread; ++i) {
            uint64_t *q = tl_ring[i & mask];
            q[0] = __rdtsc();
            q[1] = 1;
            q[2] = i;
            q[3] = 0;
            __asm__ volatile("" ::"r"(q) : "memory");
        }
    });
    return per_thread * n;
}

// ---- analysis -----------------------------------------------------------------------------

std::string results_json(sonde_analyzer_t *a) {
    size_t need = 0;
    sonde_analyzer_results_json(a, nullptr, 0, &need);
    std::string text(need, '\0');
    sonde_analyzer_results_json(a, &text[0], text.size(), &need);
    return text;
}

// The analyzer over the shards with `tool`; returns the records handled, the JSON in *json.
uint64_t analyzer_run(const std::vector<std::vector<sonde_memref_t>> &shards, const char *tool,
                      const char *options, unsigned workers, std::string *json) {
    sonde_analyzer_t *a = nullptr;
    sonde_analyzer_create(&a);
    sonde_analyzer_add_tool(a, tool, options);
    uint64_t n = 0;
    for (const auto &s : shards) {
        sonde_analyzer_add_memory_shard(a, s.data(), s.size(), nullptr);
        n += s.size();
    }
    sonde_analyzer_set_parallel(a, true);
    sonde_analyzer_set_workers(a, workers);
    if (sonde_analyzer_run(a) != SONDE_STATUS_SUCCESS) std::printf("analyzer: %s\n", sonde_analyzer_error(a));
    *json = results_json(a);
    sonde_analyzer_destroy(a);
    return n;
}

// Case 4's floor: the shards' work without Sonde, what basic_counts does at its core. N threads
// take the shards in turn; each counts a shard's reads and writes and sets its lines' bits in an
// open-addressing table of 64-line words of its own (2^14 slots of {word, bits}, cleared for each
// shard), as basic_counts' DenseSet keeps them, prefetching the records 64 ahead as the tool
// does. It moves as many bytes and misses as many cache lines as the tool's per-shard work, so
// its speed-up is what the machine gives such work at N threads. *check: the shards' distinct
// lines and writes, the same for every N.
uint64_t shard_floor_run(const std::vector<std::vector<sonde_memref_t>> &shards, unsigned workers,
                         uint64_t *check) {
    std::atomic<size_t> next{0};
    std::atomic<uint64_t> sum{0};
    uint64_t n = 0;
    for (const auto &s : shards) n += s.size();
    on_threads(workers, [&](unsigned) {
        const size_t slots = size_t{1} << 14;  // case 4's 32 MiB are 8 Ki words: at most half full
        struct Slot {
            uint64_t word, bits;
        };
        std::vector<Slot> set(slots);
        uint64_t mine = 0;
        for (size_t k; (k = next.fetch_add(1)) < shards.size();) {
            std::fill(set.begin(), set.end(), Slot{0, 0});
            uint64_t writes = 0;
            const std::vector<sonde_memref_t> &shard = shards[k];
            for (size_t i = 0; i < shard.size(); ++i) {
                // The records 64 ahead, as basic_counts prefetches them (kRecordsAhead).
                if (i + 64 < shard.size()) __builtin_prefetch(&shard[i + 64]);
                const sonde_memref_t &m = shard[i];
                writes += m.type == SONDE_MEMREF_WRITE;
                const uint64_t line = m.address >> 6;
                const uint64_t word = (line >> 6) + 1;  // 0 marks an empty slot
                size_t h = (word * 0x9E3779B97F4A7C15ull) >> 50;
                while (set[h].word != 0 && set[h].word != word) h = (h + 1) & (slots - 1);
                set[h].word = word;
                set[h].bits |= uint64_t{1} << (line & 63);
            }
            uint64_t distinct = 0;
            for (const Slot &e : set) distinct += static_cast<uint64_t>(__builtin_popcountll(e.bits));
            mine += distinct + (writes << 32);
        }
        sum.fetch_add(mine);
    });
    *check = sum.load();
    return n;
}

// The data references of a trace's first shard, as memrefs.
bool load_trace(const std::string &path, uint32_t format, std::vector<sonde_memref_t> *refs) {
    char err[512];
    sonde_trace_reader_t *r = nullptr;
    if (sonde_trace_reader_open(path.c_str(), format, err, sizeof err, &r) != SONDE_STATUS_SUCCESS)
        return false;
    std::vector<sonde_memref_t> buf(65536);
    size_t got = 0;
    while (sonde_trace_reader_read_shard(r, 0, buf.data(), buf.size(), &got) == SONDE_STATUS_SUCCESS &&
           got > 0)
        for (size_t i = 0; i < got; ++i)
            if (buf[i].type == SONDE_MEMREF_READ || buf[i].type == SONDE_MEMREF_WRITE ||
                buf[i].type == SONDE_MEMREF_MODIFY)
                refs->push_back(buf[i]);
    sonde_trace_reader_close(r);
    return !refs->empty();
}

std::vector<uint64_t> histogram_bins(sonde_histogram_t *h) {
    uint32_t n = 0;
    sonde_histogram_get_bins(h, SONDE_HISTOGRAM_BINS_EXACT, 0, nullptr, 0, &n);
    std::vector<sonde_histogram_bin_t> bins(n);
    sonde_histogram_get_bins(h, SONDE_HISTOGRAM_BINS_EXACT, 0, bins.data(), n, &n);
    std::vector<uint64_t> out;
    for (const sonde_histogram_bin_t &b : bins) {
        out.push_back(b.first);
        out.push_back(b.reads);
        out.push_back(b.writes);
    }
    return out;
}

// Case 5g's and 6's inputs: `n` line addresses, 70% over 64 Ki hot lines and 30% over 4 Mi cold ones.
std::vector<uint64_t> mpi_addresses(size_t n) {
    std::vector<uint64_t> a(n);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const uint64_t line = (x % 10 < 7) ? (x >> 20) % (1u << 16) : (1u << 20) + (x >> 24) % (1u << 22);
        a[i] = 0x10000000 + line * 64 + (x >> 8) % 56;
    }
    return a;
}

bool write_raw64(const std::string &path, size_t n) {
    const std::vector<uint64_t> a = mpi_addresses(n);
    FILE *f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return false;
    const bool ok = std::fwrite(a.data(), 8, a.size(), f) == a.size();
    return std::fclose(f) == 0 && ok;
}

#ifdef SONDE_BENCH_MPIRUN
// Lackey text: an instruction fetch before every data access, reads, writes and modifies.
bool write_lackey(const std::string &path, size_t n) {
    const std::vector<uint64_t> a = mpi_addresses(n);
    FILE *f = std::fopen(path.c_str(), "w");
    if (f == nullptr) return false;
    for (size_t i = 0; i < n; ++i) {
        if (i % 2 == 0) {
            std::fprintf(f, "I  %08llx,4\n", static_cast<unsigned long long>(0x400000 + (a[i] >> 4) % 65536));
            continue;
        }
        const char kind = "LLLSM"[a[i] % 5];
        std::fprintf(f, " %c %08llx,8\n", kind, static_cast<unsigned long long>(a[i]));
    }
    return std::fclose(f) == 0;
}

// The 1-minute load average: other programs on the machine take cores from the ranks.
double load_average() {
    double l[1] = {0};
    return getloadavg(l, 1) == 1 ? l[0] : 0;
}

#endif  // SONDE_BENCH_MPIRUN

double children_cpu_seconds();

// 5c (and 5e): `sonde analyze INPUT --format FORMAT --tool reuse_distance --jobs N --json
// /dev/stdout` end to end (reading and decoding the input, gathering, the calculation), wall
// time of the child, medians; the JSON's results (metadata aside) must not depend on N.
void cli_reuse_case(const std::string &title, const std::string &path, const char *format,
                    const std::vector<unsigned> &counts) {
    header(title.c_str(), "runs/s");
    // The counts in turn within each round, as measure_counts takes them.
    std::vector<std::vector<double>> wall(counts.size()), cpu(counts.size()), ratios(counts.size());
    std::vector<std::string> results(counts.size());
    bool ran = true;
    for (int r = 0; r < kCliReps; ++r) {
        for (size_t i = 0; i < counts.size(); ++i) {
            const double c0 = children_cpu_seconds();
            const auto t0 = Clock::now();
            const sonde_bench::ChildOutput child = sonde_bench::run_child(
                {sonde_exe(), "analyze", path, "--format", format, "--tool", "reuse_distance", "--jobs",
                 std::to_string(counts[i]), "--json", "/dev/stdout"});
            wall[i].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
            cpu[i].push_back(children_cpu_seconds() - c0);
            ratios[i].push_back(wall[0].back() / wall[i].back());
            ran = ran && child.ran;
            const size_t at = child.out.find("\"reuse_distance\":");  // the results, after the metadata
            results[i] = at == std::string::npos ? std::string() : child.out.substr(at);
        }
    }
    for (size_t i = 0; i < counts.size(); ++i) {
        const Figure f{1.0 / median(wall[i]), median(cpu[i]) * 1e9, median(ratios[i])};
        row(counts[i], f, f, 0, ran && !results[i].empty() && results[i] == results[0]);
    }
    std::printf("       (rate: whole runs per second; CPU ns/rec column: CPU ns per run)\n");
}

// One stack-distance batch over `lines` with `workers` workers: the histogram's bins, and the
// CPU time of the calling thread and of the whole process during the batch, in seconds.
std::vector<uint64_t> calculator_run(const std::vector<uint64_t> &lines, const std::vector<uint8_t> &writes,
                                     unsigned workers, double *thread_cpu, double *process_cpu) {
    sonde_stackdist_options_t o{};
    o.struct_size = sizeof o;
    o.workers = workers;
    sonde_stackdist_t *sd = nullptr;
    sonde_histogram_t *h = nullptr;
    sonde_stackdist_create(&o, &sd);
    sonde_histogram_create(&h);
    timespec t0{}, t1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    const double p0 = cpu_seconds();
    sonde_stackdist_batch(sd, lines.data(), writes.data(), lines.size(), h);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    *process_cpu = cpu_seconds() - p0;
    *thread_cpu =
        static_cast<double>(t1.tv_sec - t0.tv_sec) + static_cast<double>(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    std::vector<uint64_t> bins = histogram_bins(h);
    sonde_histogram_destroy(h);
    sonde_stackdist_destroy(sd);
    return bins;
}

// The calculator's serial path, measurable on a machine with fewer cores than workers: in
// the parallel exact mode the calling thread runs chunk 0, every merge's serial steps and its
// share of the merges' parallel ones, and the batch cannot end before that thread has run
// for its CPU time. So the process's CPU time with one worker over that thread's CPU time with
// N workers bounds the speed-up N cores could give (memory bandwidth and the other workers'
// chunks aside). For N = 1, 2, 4, ... 16 (or the CPU count when higher), paired rounds,
// medians; the workers beyond the CPUs share them, which costs them wall time, not CPU time.
void serial_path(const std::vector<uint64_t> &lines, const std::vector<uint8_t> &writes,
                 const std::vector<uint64_t> &bins) {
    std::vector<unsigned> ns;
    const unsigned top = std::max(16u, std::thread::hardware_concurrency());
    for (unsigned n = 1; n <= top; n *= 2) ns.push_back(n);
    if (ns.back() != top) ns.push_back(top);
    std::vector<std::vector<double>> thread_cpu(ns.size()), process_cpu(ns.size()), bound(ns.size());
    bool same = true;
    for (int r = 0; r < kPairedReps; ++r)
        for (size_t i = 0; i < ns.size(); ++i) {
            double t = 0, p = 0;
            same = calculator_run(lines, writes, ns[i], &t, &p) == bins && same;
            thread_cpu[i].push_back(t);
            process_cpu[i].push_back(p);
            bound[i].push_back(process_cpu[0].back() / t);
        }
    std::printf(
        "  serial path: the calling thread's CPU time with N workers (it runs chunk 0 and the\n"
        "  merges' serial steps), and the speed-up it leaves room for: CPU time with 1 worker / it\n");
    std::printf("  %4s %16s %16s %12s\n", "N", "thread CPU ms", "process CPU ms", "bound");
    for (size_t i = 0; i < ns.size(); ++i)
        std::printf("  %4u %16.1f %16.1f %11.2fx%s\n", ns[i], median(thread_cpu[i]) * 1e3,
                    median(process_cpu[i]) * 1e3, median(bound[i]), same ? "" : "   MISMATCH");
}

// 5b (and 5f): the stack-distance calculator alone (sonde_stackdist_batch, N workers) on the
// 64-byte lines of `refs` in memory. Check: the histogram's bins are the same for every N.
void calculator_case(const std::string &title, const std::vector<sonde_memref_t> &refs,
                     const std::vector<unsigned> &counts) {
    header(title.c_str(), "refs/s");
    std::vector<uint64_t> lines(refs.size());
    std::vector<uint8_t> writes(refs.size());
    for (size_t i = 0; i < refs.size(); ++i) {
        lines[i] = refs[i].address / 64;
        writes[i] = refs[i].type != SONDE_MEMREF_READ;
    }
    std::vector<std::vector<uint64_t>> bins(counts.size());
    const std::vector<Figure> f = measure_counts(counts, [&](size_t i) {
        double thread_cpu = 0, process_cpu = 0;
        bins[i] = calculator_run(lines, writes, counts[i], &thread_cpu, &process_cpu);
        return static_cast<uint64_t>(lines.size());
    });
    for (size_t i = 0; i < counts.size(); ++i)
        row(counts[i], f[i], f[0], 0, bins[i] == bins[0] && !bins[i].empty());
    serial_path(lines, writes, bins[0]);
}

#ifdef SONDE_BENCH_SORT
// 5d-5f: a trace of about 20 M data references (5 M with quick) recorded from a real program,
// bench/scale/sort.c (a merge sort built with clang's sanitizer coverage), by `sonde record
// --memory` into TMPDIR: 5d reads it back once (the recorded size), 5e runs `sonde analyze`
// on it end to end, 5f the calculator alone on its lines.
void sort_cases(const std::vector<unsigned> &counts, bool quick) {
    const char *tmp = getenv("TMPDIR");
    const std::string trace = std::string(tmp != nullptr ? tmp : "/tmp") + "/sonde-bench-scale-sort-" +
                              std::to_string(getpid()) + ".trace";
    const sonde_bench::ChildOutput rec =
        sonde_bench::run_child({sonde_exe(), "record", "--memory", "--force", "-o", trace, "--",
                                program("SONDE_BENCH_SORT", SONDE_BENCH_SORT), quick ? "60000" : "220000"});
    std::vector<sonde_memref_t> refs;
    if (!rec.ran || !load_trace(trace, SONDE_TRACE_FORMAT_SONDE, &refs)) {
        std::printf("\n5d. sonde record --memory of the sort program failed; 5d-5f skipped\n");
        std::remove(trace.c_str());
        return;
    }
    std::printf("\n5d. sort.c recorded by sonde record --memory: %zu data references, one shard\n",
                refs.size());
    cli_reuse_case("5e. sonde analyze sort.trace --tool reuse_distance --jobs N, end to end (Sonde trace)",
                   trace, "sonde", counts);
    calculator_case("5f. the stack-distance calculator alone, sort.trace's lines in memory, N workers", refs,
                    counts);
    std::remove(trace.c_str());
}
#endif

// 5g: the results' tail. `sonde analyze` of a 20 M-access raw64 trace whose histogram holds
// about 1.9 M distinct distances (case 6's input), --jobs N, without and with `--json
// /dev/stdout`: the JSON's cost on top of the run (its text is formatted on the run's workers).
void json_tail_case(const std::vector<unsigned> &counts, bool quick) {
    const char *tmp = getenv("TMPDIR");
    const std::string raw = std::string(tmp != nullptr ? tmp : "/tmp") + "/sonde-bench-scale-wide-" +
                            std::to_string(getpid()) + ".raw64";
    if (!write_raw64(raw, quick ? 5000000 : 20000000)) {
        std::printf("\n5g. cannot write %s; skipped\n", raw.c_str());
        return;
    }
    std::printf(
        "\n5g. sonde analyze --format raw64 --tool reuse_distance --jobs N on %s M accesses of about %s M "
        "distinct distances: the run, and the run with --json /dev/stdout (medians of %d)\n",
        quick ? "5" : "20", quick ? "0.8" : "1.9", kReps);
    std::printf("  %4s %10s %12s %10s %8s\n", "N", "run s", "with JSON s", "JSON s", "JSON MB");
    for (unsigned n : counts) {
        std::vector<double> plain, json;
        size_t bytes = 0;
        bool ran = true;
        for (int r = 0; r < kReps; ++r) {
            std::vector<std::string> cmd = {sonde_exe(),      "analyze", raw,
                                            "--format",       "raw64",   "--tool",
                                            "reuse_distance", "--jobs",  std::to_string(n)};
            auto t0 = Clock::now();
            ran = sonde_bench::run_child(cmd).ran && ran;
            plain.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
            cmd.insert(cmd.end(), {"--json", "/dev/stdout"});
            t0 = Clock::now();
            const sonde_bench::ChildOutput child = sonde_bench::run_child(cmd);
            json.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
            ran = ran && child.ran;
            bytes = child.out.size();
        }
        const double p = median(plain), j = median(json);
        std::printf("  %4u %10.3f %12.3f %10.3f %8.1f%s\n", n, p, j, j - p, bytes / 1e6,
                    ran ? "" : "   FAILED");
    }
    std::remove(raw.c_str());
}

double children_cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_CHILDREN, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

#ifdef SONDE_BENCH_MPIRUN

constexpr int kMpiReps = 5;

// One run of `mpirun -np ranks ARGS`: its wall seconds (0 when it failed), the CPU seconds of
// all its processes in *cpu, and in *out the results it printed (its first line, which names the
// ranks, left out).
double mpirun_once(unsigned ranks, const std::vector<std::string> &args, std::string *out, double *cpu) {
    std::vector<std::string> cmd = {
        SONDE_BENCH_MPIRUN,   "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np",
        std::to_string(ranks)};
    cmd.insert(cmd.end(), args.begin(), args.end());
    const auto t0 = Clock::now();
    const double c0 = children_cpu_seconds();
    const sonde_bench::ChildOutput child = sonde_bench::run_child(cmd);
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    *cpu = children_cpu_seconds() - c0;
    *out = child.out.substr(std::min(child.out.size(), child.out.find('\n') + 1));
    return child.ran ? wall : 0;
}

// Case 6: 1 and 2 ranks of the same command, taken in turns (so that other work on the machine
// weighs on both alike), kMpiReps times each; medians. Beside them the floors: mpirun of
// `sonde --version` (the launch), and of the same command over an empty input (the launch, MPI's
// start and end, reading nothing), and the ratio net of each.
void mpi_case(const char *title, const std::vector<std::string> &analyze,
              const std::vector<std::string> &empty) {
    std::printf("\n%s\n", title);
    std::string one, two, single, ignored;
    std::vector<double> t1, t2, c1, c2, l1, l2, e1, e2, s1, cs1;
    // The same command in one rank of one thread.
    std::vector<std::string> one_thread = analyze;
    one_thread.insert(one_thread.begin() + 2, {"--jobs", "1"});
    const double load_before = load_average();
    bool ran = true, same = true;
    for (int r = 0; r < kMpiReps && ran; ++r) {
        double c = 0;
        t1.push_back(mpirun_once(1, analyze, &one, &c));
        c1.push_back(c);
        t2.push_back(mpirun_once(2, analyze, &two, &c));
        c2.push_back(c);
        s1.push_back(mpirun_once(1, one_thread, &single, &c));
        cs1.push_back(c);
        ran = t1.back() > 0 && t2.back() > 0 && s1.back() > 0;
        same = same && one == two && one == single;
        l1.push_back(mpirun_once(1, {sonde_exe(), "--version"}, &ignored, &c));
        l2.push_back(mpirun_once(2, {sonde_exe(), "--version"}, &ignored, &c));
        e1.push_back(mpirun_once(1, empty, &ignored, &c));
        e2.push_back(mpirun_once(2, empty, &ignored, &c));
    }
    if (!ran) {
        std::printf("  a run failed; skipped\n");
        return;
    }
    const double m1 = median(t1), m2 = median(t2);
    std::printf("  1 rank %.3f s, 2 ranks %.3f s: %.2fx (target >= 1.7x)%s\n", m1, m2, m1 / m2,
                same ? "" : "   MISMATCH");
    const double f1 = median(l1), f2 = median(l2), g1 = median(e1), g2 = median(e2);
    std::printf("  launch floor (mpirun of sonde --version) %.3f s / %.3f s; net of it: %.2fx\n", f1, f2,
                (m1 - f1) / (m2 - f2));
    std::printf("  MPI floor (the same command over an empty input) %.3f s / %.3f s; net of it: %.2fx\n", g1,
                g2, (m1 - g1) / (m2 - g2));
    const double m0 = median(s1);
    std::printf("  1 rank of one thread (--jobs 1) %.3f s: 2 ranks %.2fx it; net of the MPI floor %.2fx\n",
                m0, m0 / m2, (m0 - g1) / (m2 - g2));
    // The best two ranks could do: the one-thread rank's work (its run less its launch) split
    // in two halves that cost nothing to divide or merge, after the 2-rank launch, with MPI's
    // start free. A ratio above this bound would mean the ranks did less work than one thread.
    const double bound = f2 + (m0 - f1) / 2;
    std::printf(
        "  bound: the 2-rank launch + half the one-thread rank's work, nothing else, %.3f s: at most %.2fx "
        "1 rank, %.2fx 1 rank of one thread\n",
        bound, m1 / bound, m0 / bound);
    std::printf(
        "  CPU of all processes: 1 rank %.3f s (%.3f s with --jobs 1), 2 ranks %.3f s (%.2fx the work); load "
        "average %.2f, then %.2f\n",
        median(c1), median(cs1), median(c2), median(c2) / median(c1), load_before, load_average());
}
#endif

// 6. (see the top of the file)
void mpi_cases(bool quick) {
#ifdef SONDE_BENCH_MPIRUN
    const char *tmp = getenv("TMPDIR");
    const std::string dir =
        std::string(tmp != nullptr ? tmp : "/tmp") + "/sonde-bench-mpi-" + std::to_string(getpid());
    const std::string raw = dir + "/reuse.raw64", lackey = dir + "/cache.lackey", empty = dir + "/empty";
    const size_t div = quick ? 4 : 1;
    if (mkdir(dir.c_str(), 0700) != 0 || !write_raw64(raw, 20000000 / div) ||
        !write_lackey(lackey, 10000000 / div) || !write_raw64(empty, 0)) {
        std::printf("\n6. sonde analyze --mpi: cannot write the inputs in %s; skipped\n", dir.c_str());
    } else {
        const std::vector<std::string> reuse = {sonde_exe(), "analyze", "--mpi",         "--format",
                                                "raw64",     "--tool",  "reuse_distance"};
        const std::vector<std::string> cache = {sonde_exe(), "analyze", "--mpi",    "--format",
                                                "lackey",    "--tool",  "cache_sim"};
        auto with = [](std::vector<std::string> v, const std::string &input) {
            v.push_back(input);
            return v;
        };
        mpi_case(quick
                     ? "6a. sonde analyze --mpi --tool reuse_distance, 5 M-access raw64 trace: 2 ranks vs 1"
                     : "6a. sonde analyze --mpi --tool reuse_distance, 20 M-access raw64 trace: 2 ranks vs 1",
                 with(reuse, raw), with(reuse, empty));
        mpi_case(quick
                     ? "6b. sonde analyze --mpi --tool cache_sim, 2.5 M-reference lackey trace: 2 ranks vs 1"
                     : "6b. sonde analyze --mpi --tool cache_sim, 10 M-reference lackey trace: 2 ranks vs 1",
                 with(cache, lackey), with(cache, empty));
    }
    std::remove(raw.c_str());
    std::remove(lackey.c_str());
    std::remove(empty.c_str());
    rmdir(dir.c_str());
#else
    (void)quick;
    std::printf("\n6. sonde analyze --mpi: this build has no MPI; skipped\n");
#endif
}

}  // namespace

int main() {
    const bool quick =
        getenv("SONDE_BENCH_SCALE") != nullptr && std::strcmp(getenv("SONDE_BENCH_SCALE"), "quick") == 0;
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    std::vector<unsigned> counts;
    for (unsigned n = 1; n < cpus; n *= 2) counts.push_back(n);
    counts.push_back(cpus);
    std::printf("bench/scale: %s, %u online CPU(s); medians of %d repetitions\n", cpu_model().c_str(), cpus,
                kReps);
    std::printf("  %s\n", kernel_line().c_str());
    if (cpus > 1) {
        std::printf(
            "\n0. thread placement: a thread's first run after it is started or woken by a thread that "
            "keeps running (medians of 100, ms)\n");
        std::printf("     %-12s %10s %22s\n", "", "plainly", "with core::WakeSpread");
        for (int kind = 0; kind < 2; ++kind) {
            const double plain = placement_delay(kind, false, 100);
            const double spread = placement_delay(kind, true, 100);
            std::printf("     %-12s %10.3f %22.3f\n", kind == 0 ? "started" : "woken", plain, spread);
        }
        if (cpus > 2) {
            // A group as large as the machine: its threads start at once; the last one's first run.
            const double plain = placement_delay(2, false, 100, cpus);
            char label[32];
            std::snprintf(label, sizeof label, "%u started", cpus - 1);
            if (cpus < sonde::core::WakeSpread::kMaxThreads)
                std::printf("     %-12s %10.3f %22.3f\n", label, plain, placement_delay(2, true, 100, cpus));
            else
                std::printf("     %-12s %10.3f %22s\n", label, plain, "(a group this large is not spread)");
        }
    }
    if (sonde_initialize() != SONDE_STATUS_SUCCESS) return 0;
    if (getenv("SONDE_BENCH_SCALE") != nullptr && std::strcmp(getenv("SONDE_BENCH_SCALE"), "mpi") == 0) {
        mpi_cases(false);  // case 6 alone
        sonde_finalize();
        return 0;
    }
    const bool shards_only =
        getenv("SONDE_BENCH_SCALE") != nullptr && std::strcmp(getenv("SONDE_BENCH_SCALE"), "shards") == 0;
    const bool reuse_only =
        getenv("SONDE_BENCH_SCALE") != nullptr && std::strcmp(getenv("SONDE_BENCH_SCALE"), "reuse") == 0;
    if (getenv("SONDE_BENCH_SCALE") != nullptr && std::strcmp(getenv("SONDE_BENCH_SCALE"), "json") == 0) {
        json_tail_case(counts, false);  // case 5g alone
        sonde_finalize();
        return 0;
    }
    const bool producers_only =
        getenv("SONDE_BENCH_SCALE") != nullptr && std::strcmp(getenv("SONDE_BENCH_SCALE"), "producers") == 0;

    // 1-3. Producers.
    const uint64_t per_thread = quick ? 2500000 : 10000000;
    // mode 2: one buffer; 1: one buffer with concurrent callbacks; 0: one buffer per thread.
    for (int mode = 2; mode >= 0 && !shards_only && !reuse_only; --mode) {
        header(mode == 2 ? "1. producers, one LOSSLESS buffer, callback reads every record (32-byte records)"
               : mode == 1 ? "1b. the same buffer with CONCURRENT_CALLBACKS (the callback is thread-safe)"
                           : "2. producers, one LOSSLESS buffer per thread, callback reads every record",
               "records/s");
        Figure one{}, floor_one{};
        for (unsigned n : counts) {
            bool ok = true;
            const Figure f = measure([&] { return producers_run(n, per_thread, mode != 0, &ok, mode == 1); });
            const Figure fl = measure([&] { return floor_run(n, per_thread); });
            if (n == 1) {
                one = f;
                floor_one = fl;
            }
            row(n, f, one, fl.rate / floor_one.rate, ok);
        }
    }
    if (!shards_only && !reuse_only) {
        header("3. DISCARD overloaded (consumer blocked), CPU per record beside case 1's (target <= 1.2x)",
               "records/s");
        Figure one{};
        for (unsigned n : counts) {
            bool ok = true, ok1 = true;
            const Figure d = measure([&] { return discard_run(n, per_thread / 2, &ok); });
            const Figure l = measure([&] { return producers_run(n, per_thread / 2, true, &ok1); });
            if (n == 1) one = d;
            row(n, d, one, 0, ok && ok1);
            std::printf("       CPU per record %.2f ns overloaded, %.2f ns recording: %.2fx\n", d.cpu_ns,
                        l.cpu_ns, d.cpu_ns / l.cpu_ns);
        }
    }

    if (producers_only) {
        sonde_finalize();
        return 0;
    }

    // 4. The analyzer over 16 equal in-memory shards.
    const size_t per_shard = quick ? 250000 : 1000000;
    std::vector<std::vector<sonde_memref_t>> shards(reuse_only ? 0 : 16);
    uint64_t x = 88172645463325252ull;
    for (auto &s : shards) {
        s.resize(per_shard);
        for (sonde_memref_t &m : s) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            std::memset(&m, 0, sizeof m);
            m.address = (x % (1u << 22)) * 8;  // 32 MiB of data: every cache level misses sometimes
            m.size = 8;
            m.type = x & 1 ? SONDE_MEMREF_READ : SONDE_MEMREF_WRITE;
        }
    }
    std::vector<double> shard_floor(counts.size());
    std::vector<Figure> floor_figures;  // the floor's own rates, printed under each tool's table
    if (!reuse_only) {
        std::vector<uint64_t> check(counts.size());
        floor_figures =
            measure_counts(counts, [&](size_t i) { return shard_floor_run(shards, counts[i], &check[i]); });
        for (size_t i = 0; i < counts.size(); ++i)
            shard_floor[i] = check[i] == check[0] ? floor_figures[i].speedup : -1;  // printed as a mismatch
    }
    for (const char *tool : {"basic_counts", "cache_sim"}) {
        if (reuse_only) break;
        std::string title = std::string("4. analyzer, 16 equal shards of ") + std::to_string(per_shard) +
                            " references, " + tool + ", N workers";
        header(title.c_str(), "refs/s");
        std::vector<std::string> json(counts.size());
        const std::vector<Figure> f = measure_counts(
            counts, [&](size_t i) { return analyzer_run(shards, tool, "", counts[i], &json[i]); });
        for (size_t i = 0; i < counts.size(); ++i)
            row(counts[i], f[i], f[0], std::max(0.0, shard_floor[i]),
                json[i] == json[0] && shard_floor[i] >= 0);
        // The floor's absolute figures beside the tool's: how far the tool's work a reference is
        // from the bare loop's, at one thread and at the most.
        const size_t last = counts.size() - 1;
        std::printf(
            "       floor: %.3e refs/s and %.2f CPU ns/rec at N = 1, %.3e refs/s at N = %u; %s / floor at "
            "N = 1: %.2fx the time\n",
            floor_figures[0].rate, floor_figures[0].cpu_ns, floor_figures[last].rate, counts[last], tool,
            floor_figures[0].rate / f[0].rate);
    }
    shards.clear();
    shards.shrink_to_fit();
    if (shards_only) {
        sonde_finalize();
        return 0;
    }

    // 5. reuse_distance over a real trace.
    const char *data = getenv("SONDE_SHARED_DATA");
    const std::string path =
        std::string(data != nullptr ? data : SONDE_TEST_DATA_DIR) + "/gzip-gpl3.lackey.zst";
    std::vector<sonde_memref_t> refs;
    if (!load_trace(path, SONDE_TRACE_FORMAT_LACKEY, &refs)) {
        std::printf("\n5. reuse_distance: %s cannot be read; skipped\n", path.c_str());
        if (!reuse_only) mpi_cases(quick);
        sonde_finalize();
        return 0;
    }
    if (quick) refs.resize(refs.size() / 4);
    {
        const std::string title =
            "5a. reuse_distance (exact, gem5's histogram) over " + std::to_string(refs.size()) +
            " data references of gzip-gpl3, analyzer with jobs=N (sonde analyze --jobs N)";
        header(title.c_str(), "refs/s");
        const std::vector<std::vector<sonde_memref_t>> one_shard{refs};
        std::vector<std::string> json(counts.size());
        const std::vector<Figure> f = measure_counts(counts, [&](size_t i) {
            const std::string options =
                "line_size=64" + (counts[i] > 1 ? ",jobs=" + std::to_string(counts[i]) : std::string());
            return analyzer_run(one_shard, "reuse_distance", options.c_str(), 1, &json[i]);
        });
        for (size_t i = 0; i < counts.size(); ++i) row(counts[i], f[i], f[0], 0, json[i] == json[0]);
    }
    calculator_case("5b. the stack-distance calculator alone, the same lines in memory, N workers", refs,
                    counts);
    refs.clear();
    refs.shrink_to_fit();
    cli_reuse_case("5c. sonde analyze " + path.substr(path.rfind('/') + 1) +
                       " --tool reuse_distance --jobs N, end to end (decoding in parallel)",
                   path, "lackey", counts);
#ifdef SONDE_BENCH_SORT
    sort_cases(counts, quick);
#endif
    if (!reuse_only) {
        json_tail_case(counts, quick);
        mpi_cases(quick);
    }
    sonde_finalize();
    return 0;
}
