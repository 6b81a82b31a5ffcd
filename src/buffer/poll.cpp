// Poll delivery (SONDE_BUFFER_DELIVERY_POLL): the consumer's own thread takes the records in
// sonde_poll_buffer, the way LTTng and Perfetto consumers read on a thread of their choosing.
// The poller delivers exactly as a delivery pool worker would (deliver_locked, consumer.cpp),
// with the callback it was given; between looks it waits on Buffer::poll_cv with no lock
// held. Ownership and lock order are in buffer.h.
#include <algorithm>
#include <chrono>
#include <mutex>

#include "buffer/internal.h"
#include "core/clock.h"

namespace sonde::buffer {

namespace {

// Commits do not signal (the hot path takes no lock), so a waiting poller looks again after
// this long at most: a record committed into a chunk still being filled waits about this long
// before a waiting poller sees it.
constexpr uint64_t kPollSliceNs = 1000000;

}  // namespace

void poll_wake_locked(Buffer &b) {
    b.poll_seq++;
    b.poll_cv.notify_all();
}

void poll_wake(Buffer &b) {
    std::lock_guard<std::mutex> g(b.mu);
    poll_wake_locked(b);
}

sonde_status_t poll(Buffer &b, uint64_t timeout_ns, sonde_buffer_callback_t cb, void *user_data) {
    const uint64_t start = clock::monotonic_ns();
    const uint64_t deadline = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
    for (;;) {
        uint64_t seq;
        {
            std::lock_guard<std::mutex> g(b.mu);
            if (b.dead) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
            seq = b.poll_seq;
        }
        {
            std::lock_guard<std::shared_mutex> dg(b.deliver_mu);
            {
                std::lock_guard<std::mutex> g(b.mu);
                if (b.dead) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
            }
            uint64_t spans = 0;
            const sonde_status_t st = deliver_locked(b, true, cb, user_data, &spans);
            if (st != SONDE_STATUS_SUCCESS) return st;
            if (spans != 0) return SONDE_STATUS_SUCCESS;
        }
        const uint64_t now = clock::monotonic_ns();
        if (now >= deadline) return SONDE_STATUS_ERROR_TIMEOUT;
        const uint64_t wait = std::min(deadline - now, kPollSliceNs);
        std::unique_lock<std::mutex> lk(b.mu);
        b.poll_cv.wait_for(lk, std::chrono::nanoseconds(wait), [&] { return b.poll_seq != seq || b.dead; });
    }
}

}  // namespace sonde::buffer
