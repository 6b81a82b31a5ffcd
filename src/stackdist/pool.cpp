// Worker threads of the stackdist parallel exact mode (see pool.h).
#include "stackdist/pool.h"

#include <algorithm>
#include <chrono>
#include <system_error>

namespace sonde::stackdist {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

// Spins until done() or `spin_ns` nanoseconds have passed; done()'s last answer.
template <typename Done>
bool spin_until(Done done, uint64_t spin_ns) {
    if (done()) return true;
    if (spin_ns == 0) return false;
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(spin_ns);
    for (;;) {
        for (int i = 0; i < 64; ++i) {
            cpu_relax();
            if (done()) return true;
        }
        if (std::chrono::steady_clock::now() >= until) return done();
    }
}

}  // namespace

Pool::Pool(unsigned workers) : spread_(std::min(workers, kMaxWorkers) + 1) {
    static_assert(kSpinThreads == core::WakeSpread::kMaxThreads,
                  "a pool spreads exactly when it does not spin");
    workers = std::min(workers, kMaxWorkers);
    // Decided on the threads asked for: a worker may start waiting before the last is created,
    // and the few a system may refuse only make run() give their tasks to the calling thread.
    spin_ns_ = workers + 1 >= kSpinThreads ? kSpin : 0;
    threads_.reserve(workers);
    std::lock_guard<std::mutex> lock(mu_);  // each worker begins once spread_ has its start
    try {
        for (unsigned i = 1; i <= workers; ++i) {
            threads_.emplace_back([this, i] { loop(i); });
            spread_.started(i, threads_.back());
        }
    } catch (const std::system_error &) {
        // No more threads: run() gives their tasks to the calling thread.
    }
}

Pool::~Pool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_.store(true);
    }
    start_.notify_all();
    for (std::thread &t : threads_) t.join();
}

void Pool::loop(unsigned id) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        spread_.began(id);
    }
    uint64_t seen = 0;
    for (;;) {
        auto changed = [&] { return stop_.load() || state_.load() != seen; };
        if (!spin_until(changed, spin_ns_)) {
            std::unique_lock<std::mutex> lock(mu_);
            sleepers_.fetch_add(1);
            spread_.wait(id, start_, lock, changed);
            sleepers_.fetch_sub(1);
        }
        if (stop_.load()) return;
        seen = state_.load(std::memory_order_acquire);
        if (id >= (seen & ((uint64_t{1} << kTaskBits) - 1))) continue;  // not a taker of this run
        const std::function<void(unsigned)> *task = task_;
        std::exception_ptr error;
        try {
            (*task)(id);
        } catch (...) {
            error = std::current_exception();
        }
        if (error) {
            std::lock_guard<std::mutex> lock(mu_);
            if (!error_) error_ = error;
        }
        if (pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
            std::lock_guard<std::mutex> lock(mu_);
            done_.notify_one();
        }
    }
}

void Pool::run(unsigned n, const std::function<void(unsigned)> &task) {
    const unsigned started = static_cast<unsigned>(threads_.size());
    const unsigned on_workers = n > 1 ? std::min(n - 1, started) : 0;
    if (on_workers > 0) {
        // Every taker of the last run has finished with it (pending_ was 0): none reads these.
        task_ = &task;
        pending_.store(on_workers, std::memory_order_relaxed);
        const uint64_t generation = (state_.load(std::memory_order_relaxed) >> kTaskBits) + 1;
        // Sequentially consistent: a release, and ordered before the load of sleepers_.
        state_.store(generation << kTaskBits | (on_workers + 1));
        if (sleepers_.load() > 0) {
            std::lock_guard<std::mutex> lock(mu_);
            spread_.spread();
            start_.notify_all();
        }
    }
    std::exception_ptr error;
    for (unsigned i = 0; i < n; i = i == 0 ? on_workers + 1 : i + 1) {
        try {
            task(i);
        } catch (...) {
            if (!error) error = std::current_exception();
        }
    }
    if (on_workers > 0) {
        auto finished = [&] { return pending_.load() == 0; };
        if (!spin_until(finished, spin_ns_)) {
            std::unique_lock<std::mutex> lock(mu_);
            caller_sleeping_.store(true);
            done_.wait(lock, finished);
            caller_sleeping_.store(false);
        }
        std::lock_guard<std::mutex> lock(mu_);
        if (!error) error = error_;
        error_ = nullptr;
        task_ = nullptr;
    }
    if (error) std::rethrow_exception(error);
}

}  // namespace sonde::stackdist
