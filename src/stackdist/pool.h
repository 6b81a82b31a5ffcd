// Worker threads of the stackdist parallel exact mode: started once by the first parallel
// batch, reused by every later one, joined when the pool is destroyed. Idle workers sleep on a
// condition variable (no spinning: the machine may have no spare core).
//
// Threads: run() is called by the one thread that owns the pool (the owner of the Reuse).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

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

private:
    void loop(unsigned id);

    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::condition_variable start_, done_;
    const std::function<void(unsigned)> *task_ = nullptr;
    unsigned tasks_ = 0;       // n of the current run
    unsigned pending_ = 0;     // workers still running the current run
    uint64_t generation_ = 0;  // bumped by every run
    bool stop_ = false;
    std::exception_ptr error_;
};

}  // namespace sonde::stackdist
