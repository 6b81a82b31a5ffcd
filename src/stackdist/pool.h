// Worker threads of the stackdist parallel exact mode: started once by the first parallel
// batch, reused by every later one, joined when the pool is destroyed.
//
// A batch calls run() many times in a row (the chunks, then several steps of each of its k - 1
// merges: about 60 calls a batch at k = 16), each a short parallel step between short serial
// ones on the calling thread. Waking sleeping workers through the kernel for every step cost
// more than many steps themselves on a virtual machine, where a halted vCPU takes tens of
// microseconds or more to wake. So a worker that finishes a task waits for the next one by
// spinning for a short while (kSpin, with the CPU's pause hint) before it sleeps on the
// condition variable, and the calling thread waits for the workers the same way. The spin is
// bounded: a pool between batches, or on a machine with no spare core, sleeps after it.
//
// Only a pool of kSpinThreads threads or more (workers and the calling thread) spins. A pool of
// two or three has few steps a batch and one or two threads to wake for each, so spinning saves
// little, and it costs much where the pool shares its cores with the thread that feeds it: on a
// 2-vCPU VM, the analyzer over gzip's 2 M accesses in memory with two jobs (bench/scale case 5a:
// the analyzer's thread gathers the next batch while the calculator's two threads run) was
// 0.90-1.23x one job's speed with the spin and 1.04-1.48x without it (six alternated runs each;
// docs/performance.md). A small pool's threads sleep at once.
//
// A small pool's workers are woken through the kernel at every run, and the kernel may queue a
// woken worker behind its caller on one CPU while another idles; run() spreads them first, and
// the constructor starts them spread (core/wake_spread.h: the group is the workers, each its own
// slot, under mu_; the calling thread is not in it). A pool that spins has kSpinThreads threads
// or more, which core::WakeSpread leaves alone.
//
// Threads: run() is called by the one thread that owns the pool (the owner of the Reuse). A run
// is published in state_, one word: its generation and its task count. run() writes task_ and
// pending_ before it stores state_ (release); a worker that sees the new state (acquire) and
// whose id is below the count takes part: it reads task_, runs it and counts pending_ down.
// run() returns only once pending_ is 0, so task_ is not written again while a taker may read
// it, and no run is published before every taker of the last has seen it (a worker outside a
// run's count may miss it, and reads nothing of it but state_). Sleeping is Dekker-style: a
// worker counts itself in sleepers_ and then reads state_, run() stores state_ and then reads
// sleepers_ (all sequentially consistent), so one of them sees the other: run() notifies under
// mu_ when a worker may sleep, and a worker that saw the new state does not sleep. The calling
// thread's wait for the takers (pending_, caller_sleeping_) is the same. error_ is guarded by
// mu_.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/wake_spread.h"

namespace sonde::stackdist {

class Pool {
public:
    // Starts up to `workers` threads; fewer if the system refuses to create more.
    explicit Pool(unsigned workers);
    ~Pool();
    Pool(const Pool &) = delete;
    Pool &operator=(const Pool &) = delete;

    // Runs task(i) for every i in [0, n) and returns when all are done: task 0 and any task
    // beyond the started workers on the calling thread, task i on worker i otherwise. The
    // first exception a task throws is rethrown here, after every task has finished.
    void run(unsigned n, const std::function<void(unsigned)> &task);

    // How long a waiting thread of a pool of kSpinThreads threads or more spins before it
    // sleeps, in nanoseconds; the threads of a smaller pool sleep at once (see above).
    static constexpr uint64_t kSpin = 50000;
    static constexpr unsigned kSpinThreads = 4;

private:
    void loop(unsigned id);

    std::vector<std::thread> threads_;
    // kSpin, or 0 for a pool of fewer than kSpinThreads threads; set before any worker waits
    // (the constructor writes it before it starts them), read-only after.
    uint64_t spin_ns_ = 0;
    std::mutex mu_;
    std::condition_variable start_, done_;
    const std::function<void(unsigned)> *task_ = nullptr;  // the current run's; see above
    // The current run: its generation (bumped by every run) << kTaskBits | its task count.
    static constexpr unsigned kTaskBits = 16;
    // The most workers a pool starts: a run's task count (workers + 1) fits its field.
    static constexpr unsigned kMaxWorkers = (1u << kTaskBits) - 2;
    std::atomic<uint64_t> state_{0};
    std::atomic<unsigned> pending_{0};          // takers still running the current run
    std::atomic<unsigned> sleepers_{0};         // workers asleep or about to be
    std::atomic<bool> caller_sleeping_{false};  // run() asleep or about to be
    std::atomic<bool> stop_{false};
    std::exception_ptr error_;  // under mu_
    core::WakeSpread spread_;   // under mu_; slot i: worker i (slot 0 unused)
};

}  // namespace sonde::stackdist
