// core/wake_spread.h (an internal header): what a group's threads' CPUs are at each step. A
// waiting thread that spread() narrowed is kept off the waker's CPU and keeps the rest of its
// own; woke() gives it back exactly the CPUs it had, a restricted set included; a new thread
// that started() narrowed is kept off its creator's CPU until began() gives back what it
// inherited. A group of one thread or of kMaxThreads or more, and a thread whose only CPU is the
// waker's, are left alone. The main thread is pinned to one CPU so that "the waker's CPU" is
// known; on a machine where this process may use fewer than two CPUs there is nothing to spread,
// and the test says so and passes.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "check.hpp"
#include "core/wake_spread.h"

using sonde::core::WakeSpread;
using sonde_test::check;

namespace {

bool same(const cpu_set_t &a, const cpu_set_t &b) { return CPU_EQUAL(&a, &b) != 0; }

cpu_set_t mask_of(pid_t tid) {
    cpu_set_t m;
    CPU_ZERO(&m);
    if (sched_getaffinity(tid, sizeof m, &m) != 0) std::perror("sched_getaffinity");
    return m;
}

// One waiting thread of a group: it waits in `slot` until told to stop, and records its CPUs
// after each wake-up.
struct Waiter {
    std::mutex &mu;
    std::condition_variable &cv;
    WakeSpread &spread;
    unsigned slot;
    bool waiting = false, go = false, stop = false;
    pid_t tid = 0;
    cpu_set_t after{};
    unsigned wakes = 0;

    void run(const cpu_set_t *own) {
        if (own != nullptr) sched_setaffinity(0, sizeof *own, own);
        std::unique_lock<std::mutex> lk(mu);
        tid = gettid();
        while (!stop) {
            waiting = true;
            cv.notify_all();
            spread.waiting(slot);
            cv.wait(lk, [&] { return go || stop; });
            spread.woke(slot);
            waiting = false;
            go = false;
            after = mask_of(0);
            ++wakes;
            cv.notify_all();
        }
    }
};

// Waits until the waiter is waiting (in its group) again.
void until_waiting(std::unique_lock<std::mutex> &lk, std::condition_variable &cv, Waiter &w) {
    cv.wait(lk, [&] { return w.waiting; });
}

}  // namespace

int main() {
    const cpu_set_t all = mask_of(0);
    if (CPU_COUNT(&all) < 2) {
        std::printf("wake_spread: one CPU allowed, nothing to spread: skipped\n");
        return 0;
    }
    int pin = -1;  // the main thread's one CPU from here on: the lowest allowed
    for (int c = 0; c < CPU_SETSIZE && pin < 0; ++c)
        if (CPU_ISSET(c, &all)) pin = c;
    int other = -1;  // another allowed CPU
    for (int c = pin + 1; c < CPU_SETSIZE && other < 0; ++c)
        if (CPU_ISSET(c, &all)) other = c;

    cpu_set_t only_pin;
    CPU_ZERO(&only_pin);
    CPU_SET(pin, &only_pin);
    cpu_set_t all_but_pin = all;
    CPU_CLR(pin, &all_but_pin);
    cpu_set_t pin_and_other;
    CPU_ZERO(&pin_and_other);
    CPU_SET(pin, &pin_and_other);
    CPU_SET(other, &pin_and_other);
    cpu_set_t only_other;
    CPU_ZERO(&only_other);
    CPU_SET(other, &only_other);

    // A group of two: spread() narrows the waiting thread off the waker's CPU; woke() widens.
    {
        std::mutex mu;
        std::condition_variable cv;
        WakeSpread spread(2);
        check(spread.on(), "a group of two spreads", 0);
        Waiter w{mu, cv, spread, 1};
        std::thread t([&] { w.run(nullptr); });
        std::unique_lock<std::mutex> lk(mu);
        until_waiting(lk, cv, w);
        sched_setaffinity(0, sizeof only_pin, &only_pin);  // the waker runs on `pin` only
        spread.spread();
        check(same(mask_of(w.tid), all_but_pin), "a waiting thread is narrowed off the waker's CPU", 0);
        spread.spread();  // again, while it still waits: nothing changes
        check(same(mask_of(w.tid), all_but_pin), "a second spread leaves it as it is", 0);
        w.go = true;
        cv.notify_all();
        cv.wait(lk, [&] { return w.wakes == 1; });
        check(same(w.after, all), "it widens to its own CPUs as it wakes", 0);
        until_waiting(lk, cv, w);
        // Woken without a spread: its CPUs are untouched.
        w.go = true;
        cv.notify_all();
        cv.wait(lk, [&] { return w.wakes == 2; });
        check(same(w.after, all), "a wake without spread leaves its CPUs", 0);
        until_waiting(lk, cv, w);
        w.stop = true;
        cv.notify_all();
        lk.unlock();
        t.join();
        sched_setaffinity(0, sizeof all, &all);
    }

    // A waiting thread with CPUs of its own (pin and one other) gets exactly those back; one whose
    // only CPU is the waker's is not narrowed.
    {
        std::mutex mu;
        std::condition_variable cv;
        WakeSpread spread(3);
        Waiter a{mu, cv, spread, 1}, b{mu, cv, spread, 2};
        std::thread ta([&] { a.run(&pin_and_other); });
        std::thread tb([&] { b.run(&only_pin); });
        std::unique_lock<std::mutex> lk(mu);
        until_waiting(lk, cv, a);
        until_waiting(lk, cv, b);
        sched_setaffinity(0, sizeof only_pin, &only_pin);
        spread.spread();
        check(same(mask_of(a.tid), only_other), "a restricted thread keeps its other CPU only", 0);
        check(same(mask_of(b.tid), only_pin), "a thread with the waker's CPU only is left alone", 0);
        check(spread.on(), "a thread left alone does not turn spreading off", 0);
        a.go = b.go = true;
        cv.notify_all();
        cv.wait(lk, [&] { return a.wakes == 1 && b.wakes == 1; });
        check(same(a.after, pin_and_other), "the restricted thread widens to its own two CPUs", 0);
        check(same(b.after, only_pin), "the one-CPU thread keeps its CPU", 0);
        a.stop = b.stop = true;
        cv.notify_all();
        lk.unlock();
        ta.join();
        tb.join();
        sched_setaffinity(0, sizeof all, &all);
    }

    // started() keeps a new thread off its creator's CPU until began().
    {
        std::mutex mu;
        WakeSpread spread(2);
        cpu_set_t before_began{}, after_began{};
        std::unique_lock<std::mutex> lk(mu);
        std::thread t([&] {
            std::lock_guard<std::mutex> g(mu);
            before_began = mask_of(0);
            spread.began(1);
            after_began = mask_of(0);
        });
        // The CPU the creator runs on as it narrows (the kernel may move it: then unchecked).
        const int c1 = sched_getcpu();
        spread.started(1, t);
        const int c2 = sched_getcpu();
        cpu_set_t seen;
        CPU_ZERO(&seen);
        pthread_getaffinity_np(t.native_handle(), sizeof seen, &seen);
        lk.unlock();
        t.join();
        if (c1 == c2 && c1 >= 0) {
            cpu_set_t off = all;
            CPU_CLR(c1, &off);
            check(same(seen, off), "a new thread is kept off its creator's CPU", 0);
            check(same(before_began, off), "it runs off that CPU until it begins", 0);
        }
        check(same(after_began, all), "it begins with the CPUs it inherited", 0);
    }

    // Groups that do not spread: one thread, and kMaxThreads or more.
    {
        check(!WakeSpread(1).on(), "a group of one does not spread", 0);
        check(!WakeSpread(WakeSpread::kMaxThreads).on(), "a group of kMaxThreads does not spread", 0);
        std::mutex mu;
        std::condition_variable cv;
        WakeSpread spread(WakeSpread::kMaxThreads);
        Waiter w{mu, cv, spread, 1};
        std::thread t([&] { w.run(nullptr); });
        std::unique_lock<std::mutex> lk(mu);
        until_waiting(lk, cv, w);
        sched_setaffinity(0, sizeof only_pin, &only_pin);
        spread.spread();
        check(same(mask_of(w.tid), all), "a large group's waiting thread keeps its CPUs", 0);
        w.stop = true;
        cv.notify_all();
        lk.unlock();
        t.join();
        sched_setaffinity(0, sizeof all, &all);
    }
    return sonde_test::finish("wake_spread");
}
