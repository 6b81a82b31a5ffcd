// Worker threads of the stackdist parallel exact mode (see pool.h).
#include "stackdist/pool.h"

#include <algorithm>
#include <system_error>

namespace sonde::stackdist {

Pool::Pool(unsigned workers) {
    threads_.reserve(workers);
    try {
        for (unsigned i = 1; i <= workers; ++i) threads_.emplace_back([this, i] { loop(i); });
    } catch (const std::system_error &) {
        // No more threads: run() gives their tasks to the calling thread.
    }
}

Pool::~Pool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    start_.notify_all();
    for (std::thread &t : threads_) t.join();
}

void Pool::loop(unsigned id) {
    uint64_t seen = 0;
    for (;;) {
        const std::function<void(unsigned)> *task;
        {
            std::unique_lock<std::mutex> lock(mu_);
            start_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            if (id >= tasks_) continue;
            task = task_;
        }
        std::exception_ptr error;
        try {
            (*task)(id);
        } catch (...) {
            error = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(mu_);
        if (error && !error_) error_ = error;
        if (--pending_ == 0) done_.notify_one();
    }
}

void Pool::run(unsigned n, const std::function<void(unsigned)> &task) {
    const unsigned started = static_cast<unsigned>(threads_.size());
    const unsigned on_workers = n > 1 ? std::min(n - 1, started) : 0;
    if (on_workers > 0) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            task_ = &task;
            tasks_ = on_workers + 1;
            pending_ = on_workers;
            ++generation_;
        }
        start_.notify_all();
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
        std::unique_lock<std::mutex> lock(mu_);
        done_.wait(lock, [&] { return pending_ == 0; });
        if (!error) error = error_;
        error_ = nullptr;
        task_ = nullptr;
    }
    if (error) std::rethrow_exception(error);
}

}  // namespace sonde::stackdist
