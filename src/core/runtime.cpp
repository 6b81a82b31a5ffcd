// Runtime and sessions: sonde_initialize/finalize and the session table. What a session holds
// (buffers) belongs to the concept registered as SessionResources (hooks.h); the core only
// tells it when the runtime starts and stops and when a session changes state or goes away.
// See runtime.h for what the lock protects.
#include "core/runtime.h"

#include <pthread.h>

#include <cstring>
#include <new>

#include "core/abi_struct.h"
#include "core/clock.h"
#include "core/guarded.h"
#include "core/hooks.h"

namespace sonde::core {

std::atomic<uint64_t> g_fork_epoch{0};

namespace {

const SessionResources *g_resources = nullptr;
const LifecycleObserver *g_observers[8];
std::atomic<int> g_observer_count{0};

uint32_t slot_of(uint64_t handle) { return static_cast<uint32_t>(handle); }

// Calls f on every observer. An observer that throws does not stop the others or the core's
// own work; the first failure is returned (OUT_OF_MEMORY for std::bad_alloc, else ERROR).
template <typename F>
sonde_status_t for_each_observer(F &&f) noexcept {
    sonde_status_t result = SONDE_STATUS_SUCCESS;
    const int n = g_observer_count.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
        try {
            f(*g_observers[i]);
        } catch (const std::bad_alloc &) {
            if (result == SONDE_STATUS_SUCCESS) result = SONDE_STATUS_ERROR_OUT_OF_MEMORY;
        } catch (...) {
            if (result == SONDE_STATUS_SUCCESS) result = SONDE_STATUS_ERROR;
        }
    }
    return result;
}

void notify_session(uint64_t session, bool started) {
    for_each_observer([&](const LifecycleObserver &o) {
        auto fn = started ? o.on_session_start : o.on_session_stop;
        if (fn) fn(session);
    });
}

// Removes a session from the table (Runtime::mu held, released on return), then lets the
// resource owner retire and drain what it held.
sonde_status_t destroy_session(std::unique_lock<std::mutex> &lk, uint32_t slot) {
    Runtime &r = runtime();
    std::unique_ptr<Session> s = std::move(r.sessions[slot]);
    r.session_gen[slot]++;
    if (s->active) g_resources->set_active_locked(s->handle, false);
    lk.unlock();
    if (s->active) notify_session(s->handle, false);
    return g_resources->destroyed(s->handle);
}

// Starts or stops a session; a stop then delivers what was emitted before it.
sonde_status_t set_session_state(uint64_t handle, bool active) {
    if (!initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    if (!active && g_resources->in_callback()) return SONDE_STATUS_ERROR_IN_CALLBACK;
    Runtime &r = runtime();
    {
        std::lock_guard<std::mutex> g(r.mu);
        Session *s = find_session_locked(handle);
        if (!s) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
        if (s->active == active)
            return active ? SONDE_STATUS_ERROR_SESSION_ACTIVE : SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE;
        s->active = active;
        g_resources->set_active_locked(handle, active);
    }
    notify_session(handle, active);
    if (active) return SONDE_STATUS_SUCCESS;
    return g_resources->stopped(handle);
}

sonde_status_t first_error(sonde_status_t a, sonde_status_t b) { return a != SONDE_STATUS_SUCCESS ? a : b; }

// Marks the runtime finalised, destroys every session (delivering their buffers) and stops
// the resource owner's runtime. The observers' on_finalize has run before.
sonde_status_t shut_down() {
    Runtime &r = runtime();
    std::lock_guard<std::mutex> lifecycle(r.lifecycle_mu);
    sonde_status_t result = SONDE_STATUS_SUCCESS;
    {
        std::unique_lock<std::mutex> lk(r.mu);
        if (!r.initialized.load(std::memory_order_relaxed)) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        r.initialized.store(false, std::memory_order_release);
        for (uint32_t slot = 0; slot < kMaxSessions; ++slot) {
            if (!lk.owns_lock()) lk.lock();
            if (!r.sessions[slot]) continue;
            result = first_error(result, destroy_session(lk, slot));
        }
    }
    g_resources->stop_runtime();
    return result;
}

// The pthread_atfork child handler: the only thread of a child just forked. No lock is taken
// (a parent thread may have held Runtime::mu) and nothing is allocated; see runtime.h.
void forked_child() {
    Runtime &r = runtime();
    new (&r.lifecycle_mu) std::mutex();
    new (&r.mu) std::mutex();
    r.inherited = true;
    r.initialized.store(false, std::memory_order_release);
    g_fork_epoch.fetch_add(1, std::memory_order_relaxed);
    if (g_resources != nullptr) g_resources->forked_child();
}

struct RegisterFork {
    RegisterFork() {
        runtime();  // made at load time, so that the child handler never allocates
        pthread_atfork(nullptr, nullptr, forked_child);
    }
} g_register_fork;

}  // namespace

Runtime &runtime() {
    static Runtime *r = new Runtime();  // never destroyed: threads may exit after main returns
    return *r;
}

void set_session_resources(const SessionResources *resources) { g_resources = resources; }

void add_lifecycle_observer(const LifecycleObserver *observer) {
    const int i = g_observer_count.load(std::memory_order_relaxed);
    if (i >= 8 || observer == nullptr) return;
    g_observers[i] = observer;
    g_observer_count.store(i + 1, std::memory_order_release);
}

Session *find_session_locked(uint64_t handle) {
    Runtime &r = runtime();
    const uint32_t slot = slot_of(handle);
    if (slot >= kMaxSessions || !r.sessions[slot] || r.sessions[slot]->handle != handle) return nullptr;
    return r.sessions[slot].get();
}

bool session_exists(uint64_t handle) {
    Runtime &r = runtime();
    std::lock_guard<std::mutex> g(r.mu);
    return find_session_locked(handle) != nullptr;
}

}  // namespace sonde::core

using namespace sonde;
using sonde::core::Runtime;
using sonde::core::runtime;

extern "C" {

SONDE_API sonde_status_t sonde_initialize(void) {
    return guarded([]() -> sonde_status_t {
        Runtime &r = runtime();
        {
            std::unique_lock<std::mutex> lifecycle(r.lifecycle_mu, std::defer_lock);
            if (!core::g_resources->in_callback()) {
                lifecycle.lock();
            } else if (!lifecycle.try_lock()) {
                // A finalise (or an initialise) is under way and may be waiting for this
                // callback to return.
                return core::initialized() ? SONDE_STATUS_ERROR_ALREADY_INITIALIZED
                                           : SONDE_STATUS_ERROR_IN_CALLBACK;
            }
            std::lock_guard<std::mutex> g(r.mu);
            if (r.initialized.load(std::memory_order_relaxed)) return SONDE_STATUS_ERROR_ALREADY_INITIALIZED;
            if (r.inherited) {
                // A forked child: the parent's sessions are dropped without delivering
                // anything (their buffers are parked by start_runtime); their generations
                // stay, so the parent's ids stay stale.
                for (auto &s : r.sessions) s.reset();
                r.inherited = false;
            }
            clock::calibrate();
            const sonde_status_t st = core::g_resources->start_runtime();
            if (st != SONDE_STATUS_SUCCESS) return st;
            r.initialized.store(true, std::memory_order_release);
        }
        const sonde_status_t st = core::for_each_observer([](const core::LifecycleObserver &o) {
            if (o.on_initialize) o.on_initialize();
        });
        if (st == SONDE_STATUS_SUCCESS) return st;
        // An observer could not take the new runtime in: undo, so that the answer is true.
        core::for_each_observer([](const core::LifecycleObserver &o) {
            if (o.on_finalize) o.on_finalize();
        });
        core::shut_down();
        return st;
    });
}

SONDE_API sonde_status_t sonde_finalize(void) {
    return guarded([]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (core::g_resources->in_callback()) return SONDE_STATUS_ERROR_IN_CALLBACK;
        // An observer that fails does not stop the finalisation: the runtime still shuts down
        // and the observer's failure is reported after any of the core's own.
        const sonde_status_t observers = core::for_each_observer([](const core::LifecycleObserver &o) {
            if (o.on_finalize) o.on_finalize();
        });
        return core::first_error(core::shut_down(), observers);
    });
}

SONDE_API bool sonde_is_initialized(void) { return core::initialized(); }

SONDE_API sonde_status_t sonde_create_session(const sonde_session_properties_t *props,
                                              sonde_session_id_t *out) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
        sonde_session_properties_t p;
        std::memset(&p, 0, sizeof p);
        if (props != nullptr) {
            const sonde_status_t st = read_abi_struct(props, SONDE_SESSION_PROPERTIES_SIZE_1_0, &p);
            if (st != SONDE_STATUS_SUCCESS) return st;
            if (p.flags != 0) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        }
        auto s = std::make_unique<core::Session>();
        if (p.name != nullptr) s->name.assign(p.name, strnlen(p.name, 63));
        Runtime &r = runtime();
        std::lock_guard<std::mutex> g(r.mu);
        if (!r.initialized.load(std::memory_order_relaxed)) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        for (uint32_t slot = 0; slot < core::kMaxSessions; ++slot) {
            if (r.sessions[slot]) continue;
            const uint32_t gen = ++r.session_gen[slot];
            s->handle = static_cast<uint64_t>(gen) << 32 | slot;
            out->handle = s->handle;
            r.sessions[slot] = std::move(s);
            return SONDE_STATUS_SUCCESS;
        }
        return SONDE_STATUS_ERROR_LIMIT;
    });
}

SONDE_API sonde_status_t sonde_start_session(sonde_session_id_t session) {
    return guarded([&] { return core::set_session_state(session.handle, true); });
}

SONDE_API sonde_status_t sonde_stop_session(sonde_session_id_t session) {
    return guarded([&] { return core::set_session_state(session.handle, false); });
}

SONDE_API sonde_status_t sonde_destroy_session(sonde_session_id_t session) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (core::g_resources->in_callback()) return SONDE_STATUS_ERROR_IN_CALLBACK;
        Runtime &r = runtime();
        std::unique_lock<std::mutex> lk(r.mu);
        if (!core::find_session_locked(session.handle)) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
        return core::destroy_session(lk, static_cast<uint32_t>(session.handle));
    });
}

SONDE_API sonde_status_t sonde_session_is_active(sonde_session_id_t session, bool *active) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (active == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
        Runtime &r = runtime();
        std::lock_guard<std::mutex> g(r.mu);
        core::Session *s = core::find_session_locked(session.handle);
        if (!s) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
        *active = s->active;
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API uint64_t sonde_get_timestamp(void) { return clock::now_ns(); }

}  // extern "C"
