// Runtime: the process-wide state behind sonde_initialize/finalize and the session table.
//
// Runtime::mu protects the table and the initialized flag's transitions; it is never held
// while a user callback runs or while waiting for producers.
//
// Runtime::lifecycle_mu serialises starting and stopping the runtime: sonde_initialize holds it
// from its check to the end of SessionResources::start_runtime, sonde_finalize from clearing
// the flag to the end of stop_runtime (which joins the delivery pool's workers, so Runtime::mu cannot
// be held then). Without it an initialise that ran between a finalise's flag and its
// stop_runtime started a delivery pool that the finalise then stopped or lost. It comes
// first in the lock order. A callback that calls sonde_initialize only tries it (the holder may
// be waiting for that very callback).
//
// fork(): the core's pthread_atfork child handler (runtime.cpp) leaves the child not
// initialised, re-creates both locks in place (a parent thread may have held them), marks the
// session table inherited (the child's next sonde_initialize frees those sessions without any
// delivery; their generations stay, so the parent's ids stay stale), bumps the fork epoch and
// calls SessionResources::forked_child. Every call that needs the runtime then answers
// NOT_INITIALIZED in the child until it calls sonde_initialize. Lock order: Runtime::mu is taken
// before any lock of the concepts built on the core (the buffer table's, see buffer/table.h);
// SessionResources::set_active_locked runs under it, nothing else does.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <sonde/session.h>

namespace sonde::core {

constexpr uint32_t kMaxSessions = 256;

struct Session {
    uint64_t handle = 0;
    std::string name;
    bool active = false;
};

struct Runtime {
    std::mutex lifecycle_mu;
    std::mutex mu;
    std::atomic<bool> initialized{false};
    bool inherited = false;  // a forked child's table: the sessions are the parent's
    uint32_t session_gen[kMaxSessions] = {};
    std::unique_ptr<Session> sessions[kMaxSessions];
};

Runtime &runtime();

inline bool initialized() { return runtime().initialized.load(std::memory_order_acquire); }

// Counts the forks this process came out of as a child (0 in the original process). Code that
// runs a user callback compares it before and after: a change means the callback forked and
// the calling thread is now the child's only thread.
extern std::atomic<uint64_t> g_fork_epoch;
inline uint64_t fork_epoch() { return g_fork_epoch.load(std::memory_order_relaxed); }

// Whether `handle` names a live session (takes Runtime::mu).
bool session_exists(uint64_t handle);

// Runs fn(active) with Runtime::mu held if the runtime is initialised and `handle` names a live
// session, and returns its status; else NOT_INITIALIZED or SESSION_NOT_FOUND. What fn does is
// atomic with respect to session start, stop and destroy.
template <typename F>
sonde_status_t with_session(uint64_t handle, F &&fn);

// ---- implementation -------------------------------------------------------------------------
Session *find_session_locked(uint64_t handle);  // Runtime::mu held

template <typename F>
sonde_status_t with_session(uint64_t handle, F &&fn) {
    Runtime &r = runtime();
    std::lock_guard<std::mutex> g(r.mu);
    if (!r.initialized.load(std::memory_order_relaxed)) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    Session *s = find_session_locked(handle);
    if (s == nullptr) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
    return fn(s->active);
}

}  // namespace sonde::core
