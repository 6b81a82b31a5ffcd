// The delivery thread: serves watermarks (a producer sealed past it or waits for space) and
// interval flushes, for every buffer of every session. It owns its wake-up state (Delivery::mu)
// and each buffer's next_interval_flush; it delivers with no lock of its own held.
#include <cerrno>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <system_error>

#include "buffer/buffer.h"
#include "buffer/table.h"
#include "core/clock.h"
#include "core/runtime.h"
#include "core/thread.h"

namespace sonde::buffer {

namespace {

struct Delivery {
    pthread_t thread{};  // created past any pthread_create interposer (core/thread.h)
    bool started = false;
    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
    bool pending = false;
};

Delivery &delivery() {
    static Delivery *d = new Delivery();  // never destroyed: see table()
    return *d;
}

// Wakes on request or at the next interval deadline, then delivers outside every lock.
// Allocates nothing. In a child forked by one of its callbacks it returns, ending the thread:
// the child has no delivery thread to go back to, and the buffers are the parent's.
void delivery_main() {
    core::mark_internal_thread();
    const uint64_t epoch = core::fork_epoch();
    Delivery &d = delivery();
    std::unique_lock<std::mutex> lk(d.mu);
    uint64_t next_deadline = UINT64_MAX;
    for (;;) {
        if (d.stop || core::fork_epoch() != epoch) return;
        if (!d.pending) {
            if (next_deadline == UINT64_MAX) {
                d.cv.wait(lk);
            } else {
                const uint64_t now = clock::monotonic_ns();
                if (next_deadline > now) d.cv.wait_for(lk, std::chrono::nanoseconds(next_deadline - now));
            }
        }
        if (d.stop) return;
        d.pending = false;
        lk.unlock();

        const uint64_t now = clock::monotonic_ns();
        next_deadline = UINT64_MAX;
        uint32_t slot = 0;
        while (std::shared_ptr<Buffer> b = next_buffer(0, &slot)) {
            if (core::fork_epoch() != epoch) return;
            bool full = false;
            if (b->interval_ns != 0) {
                if (b->next_interval_flush == 0) b->next_interval_flush = now + b->interval_ns;
                if (now >= b->next_interval_flush) {
                    full = true;
                    b->next_interval_flush = now + b->interval_ns;
                }
                next_deadline = std::min(next_deadline, b->next_interval_flush);
            }
            const bool drain = b->drain_requested.exchange(false, std::memory_order_acq_rel);
            if (full || drain) deliver(*b, full);
        }
        if (core::fork_epoch() != epoch) return;
        lk.lock();
    }
}

void *delivery_entry(void *) {
    delivery_main();
    return nullptr;
}

}  // namespace

sonde_status_t delivery_start() {
    Delivery &d = delivery();
    {
        std::lock_guard<std::mutex> g(d.mu);
        d.stop = false;
        d.pending = false;
    }
    const int rc = core::create_internal_thread(&d.thread, delivery_entry, nullptr);
    if (rc != 0) return rc == ENOMEM || rc == EAGAIN ? SONDE_STATUS_ERROR_OUT_OF_MEMORY : SONDE_STATUS_ERROR;
    d.started = true;
    return SONDE_STATUS_SUCCESS;
}

void delivery_stop() {
    Delivery &d = delivery();
    {
        std::lock_guard<std::mutex> g(d.mu);
        d.stop = true;
    }
    d.cv.notify_all();
    if (d.started) pthread_join(d.thread, nullptr);
    d.started = false;
}

void delivery_make() { delivery(); }

void delivery_forked_child() {
    Delivery &d = delivery();
    new (&d.mu) std::mutex();
    new (&d.cv) std::condition_variable();
    d.started = false;
    d.stop = false;
    d.pending = false;
}

void delivery_wake() {
    Delivery &d = delivery();
    {
        std::lock_guard<std::mutex> g(d.mu);
        d.pending = true;
    }
    d.cv.notify_one();
}

}  // namespace sonde::buffer
