// Keeping woken threads off their waker's CPU (src/core): the reuse_distance calculator's small
// pools (stackdist/pool.h), the tool's pipeline of two threads (analysis/reuse_distance.cpp) and
// the threads of a block decoder (trace/block_decode.h).
//
// Why: a thread woken through a condition variable is queued by the kernel on a CPU of its
// choosing, often its waker's, and some kernels pack a process's threads onto few CPUs on
// purpose (virtual machines whose guest kernel packs vCPUs to spare the host). When the other
// CPU then goes idle it does not always take the queued thread over: on a 2-vCPU VM, perf sched
// showed the two threads of a stage taking turns on one vCPU in 4 ms slices for 15-30 ms while
// the other vCPU idled, at the start of a run (the reading thread and its decoding worker) and
// at its end (the calculator's two threads) - 5c, gzip's lackey trace at two jobs, up to a
// quarter of the run. A user who asks for two jobs asks for two CPUs, so a small group spreads
// its threads at each wake-up: the waker narrows each waiting thread's CPUs to those it had less
// the one the waker is running on, so that the kernel places the thread elsewhere as it wakes,
// and the thread widens them again to what they were as soon as it runs.
// Nothing stays pinned: between those two moments a thread is only kept off its waker's CPU, and
// the kernel balances it freely after. Measured in docs/performance.md ("Threads that wait on
// one vCPU").
//
// Only groups of fewer than kMaxThreads threads spread: there one misplaced thread stalls half
// a stage, and the calls are few. A large group's wakes are many (every waiting thread would be
// narrowed and widened, two system calls, at every notification), and one misplaced thread of
// many costs a fraction. A thread whose CPUs are one CPU, or only its waker's, is not narrowed;
// where the system refuses, the first refusal turns the group's spreading off. A thread widens
// to the CPUs it had when it began to wait, so a caller's thread that waits in a group ends its
// wait with its own CPUs (only a change made to them by another thread while it waited would be
// undone).
//
// A new thread starts where the kernel puts it, which on such a kernel is its creator's CPU, and
// stays there while it finds work: the same VM ran a run's reading thread and its new decoding
// worker on one vCPU for its first 8 ms, and a new calculator thread with its pool's new worker
// for 8 ms more. So the group's threads are started spread too: the creator narrows a new
// thread's CPUs to its own less the one it runs on, and the thread widens them to what it
// inherited as it begins.
//
// Use: a group of threads that wait on condition variables of one mutex, each with a slot of
// its own (0 .. threads - 1). Under that mutex: a thread waits through wait(slot, cv, lock) (or
// calls waiting(slot) before its own wait and woke(slot) when it returns); a thread about to
// notify calls spread() and then must wake every waiting thread (notify_all), so that every
// thread narrowed widens again. A thread that creates one of the group's threads calls
// started(slot, thread) under the mutex, held from before the thread was created, and the new
// thread calls began(slot) under the mutex before anything else.
// Threads: every member is read and written under the group's mutex.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#endif

namespace sonde::core {

class WakeSpread {
public:
    static constexpr unsigned kMaxThreads = 4;

    explicit WakeSpread(unsigned threads) : slots_(threads), on_(threads > 1 && threads < kMaxThreads) {}

    // The thread of `slot` is about to wait.
    void waiting(unsigned slot) {
        Slot &s = slots_[slot];
        s.waiting = true;
        ++waiting_;
#if defined(__linux__)
        if (!on_) return;
        if (s.tid == 0) s.tid = static_cast<int>(gettid());
        s.known = sched_getaffinity(0, sizeof s.own, &s.own) == 0;
#endif
    }
    // The thread of `slot` is awake again: its CPUs as they were if spread() narrowed them.
    void woke(unsigned slot) {
        Slot &s = slots_[slot];
        s.waiting = false;
        --waiting_;
        widen(s);
    }
    // The thread of `slot` waits on `cv` (`lock` holds the group's mutex), with `until` as
    // std::condition_variable::wait takes it if given: waiting(), the wait, woke().
    template <typename... Until>
    void wait(unsigned slot, std::condition_variable &cv, std::unique_lock<std::mutex> &lock,
              Until... until) {
        waiting(slot);
        cv.wait(lock, until...);
        woke(slot);
    }
    // The calling thread has just created `t`, the thread of `slot`, which inherited its CPUs:
    // keeps it off the calling thread's CPU until it begins.
    void started(unsigned slot, std::thread &t) {
#if defined(__linux__)
        Slot &s = slots_[slot];
        if (!on_ || s.narrowed) return;
        cpu_set_t elsewhere;
        if (sched_getaffinity(0, sizeof s.own, &s.own) != 0 || !off(s.own, sched_getcpu(), &elsewhere))
            return;
        if (pthread_setaffinity_np(t.native_handle(), sizeof elsewhere, &elsewhere) != 0) {
            on_ = false;
            return;
        }
        s.narrowed = true;
#else
        (void)slot;
        (void)t;
#endif
    }
    // The thread of `slot` begins: its inherited CPUs back if started() narrowed them.
    void began(unsigned slot) { widen(slots_[slot]); }
    // Before a notify_all: keeps every waiting thread off the calling thread's CPU.
    void spread() {
#if defined(__linux__)
        if (!on_ || waiting_ == 0) return;
        const int cpu = sched_getcpu();
        for (Slot &s : slots_) {
            cpu_set_t elsewhere;
            if (!s.waiting || !s.known || s.narrowed || !off(s.own, cpu, &elsewhere)) continue;
            if (sched_setaffinity(s.tid, sizeof elsewhere, &elsewhere) != 0) {
                on_ = false;  // refused (a sandbox, a policy): the group no longer spreads
                return;
            }
            s.narrowed = true;
        }
#endif
    }
    // Whether the group spreads (false for one thread, a large group, or after a refusal).
    bool on() const { return on_; }

private:
    struct Slot {
        bool waiting = false;
        bool narrowed = false;  // spread() narrowed its CPUs; it widens them in woke()
#if defined(__linux__)
        bool known = false;  // own holds the CPUs it had when it began to wait
        int tid = 0;         // the slot's thread, once it has waited
        cpu_set_t own{};
#endif
    };
#if defined(__linux__)
    // `own` less `cpu` in *out; false when `cpu` is not among them (or unknown) or nothing is left.
    static bool off(const cpu_set_t &own, int cpu, cpu_set_t *out) {
        if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &own)) return false;
        *out = own;
        CPU_CLR(cpu, out);
        return CPU_COUNT(out) != 0;
    }
#endif
    // The calling thread, of slot `s`: its own CPUs back if they were narrowed.
    static void widen(Slot &s) {
        if (!s.narrowed) return;
        s.narrowed = false;
#if defined(__linux__)
        sched_setaffinity(0, sizeof s.own, &s.own);
#endif
    }

    std::vector<Slot> slots_;
    unsigned waiting_ = 0;
    bool on_;
};

}  // namespace sonde::core
