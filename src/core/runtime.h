// Runtime: the process-wide state behind sonde_initialize/finalize. Owns the session table,
// the buffer table (shared_ptrs; the hot-path slot states live in buffer.h) and the delivery
// thread that serves watermarks and interval flushes.
//
// Runtime::mu protects the tables and is never held while a user callback runs or while
// waiting for producers. The delivery thread owns nothing but its wake-up state (dmu).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <string>
#include <thread>
#include <vector>

#include "buffer/buffer.h"
#include "sonde/session.h"

namespace sonde::core {

constexpr uint32_t kMaxSessions = 256;

struct Session {
    uint64_t handle = 0;
    std::string name;
    bool active = false;
    std::vector<std::shared_ptr<buffer::Buffer>> buffers;
};

struct Runtime {
    std::mutex mu;
    std::atomic<bool> initialized{false};
    uint32_t session_gen[kMaxSessions] = {};
    std::unique_ptr<Session> sessions[kMaxSessions];
    std::shared_ptr<buffer::Buffer> buffers[buffer::kMaxBuffers];

    // Delivery thread wake-up state.
    pthread_t delivery{};  // created past any pthread_create interposer (runtime.cpp)
    bool delivery_started = false;
    std::mutex dmu;
    std::condition_variable dcv;
    bool dstop = false;
    bool dpending = false;
};

Runtime &runtime();

inline bool initialized() { return runtime().initialized.load(std::memory_order_acquire); }

// Looks up a live session (Runtime::mu held).
Session *find_session(uint64_t handle);
// Looks up a live buffer of a session (Runtime::mu held). Sets *status on failure.
std::shared_ptr<buffer::Buffer> find_buffer(uint64_t session, uint64_t buffer, sonde_status_t *status);

// Asks the delivery thread to look at buffers that requested draining.
void wake_delivery();

void notify_session(uint64_t session, bool started);

}  // namespace sonde::core
