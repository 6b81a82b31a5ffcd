// Runtime and sessions: sonde_initialize/finalize, the session table, the buffer C entry points
// that need the tables, and the delivery thread (watermarks and interval flushes).
// See runtime.h for what each lock protects.
#include "core/runtime.h"

#include <dlfcn.h>
#include <pthread.h>

#include <system_error>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>

#include "core/abi_struct.h"
#include "core/guarded.h"
#include "core/clock.h"
#include "core/hooks.h"
#include "sonde/buffer.h"

namespace sonde::core {

namespace {

const LifecycleObserver *g_observers[8];
std::atomic<int> g_observer_count{0};

uint32_t slot_of(uint64_t handle) { return static_cast<uint32_t>(handle); }

// ---- delivery thread --------------------------------------------------------------------
// Wakes on request (a producer sealed past the watermark or waits for space) or at the next
// interval deadline, then delivers outside every runtime lock.
void delivery_main() {
    mark_internal_thread();
    Runtime &r = runtime();
    std::unique_lock<std::mutex> lk(r.dmu);
    uint64_t next_deadline = UINT64_MAX;
    for (;;) {
        if (r.dstop) return;
        if (!r.dpending) {
            if (next_deadline == UINT64_MAX) {
                r.dcv.wait(lk);
            } else {
                const uint64_t now = clock::monotonic_ns();
                if (next_deadline > now)
                    r.dcv.wait_for(lk, std::chrono::nanoseconds(next_deadline - now));
            }
        }
        if (r.dstop) return;
        r.dpending = false;
        lk.unlock();

        std::vector<std::shared_ptr<buffer::Buffer>> bufs;
        {
            std::lock_guard<std::mutex> g(r.mu);
            for (auto &b : r.buffers)
                if (b) bufs.push_back(b);
        }
        const uint64_t now = clock::monotonic_ns();
        next_deadline = UINT64_MAX;
        for (auto &b : bufs) {
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
            if (full || drain) buffer::deliver(*b, full);
        }
        bufs.clear();
        lk.lock();
    }
}

void *delivery_entry(void *) {
    delivery_main();
    return nullptr;
}

// The delivery thread is Sonde's own: it is created with the C library's pthread_create,
// looked up in libc itself so that an interposer (libsonde-instrument.so wraps pthread_create
// to report program threads) does not see it. Sanitizer builds keep the default lookup: their
// runtimes must intercept every thread creation (and are never combined with the preload).
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SONDE_SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SONDE_SANITIZED_BUILD 1
#endif
#endif
int create_internal_thread(pthread_t *t, void *(*fn)(void *)) {
    using create_fn = int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    create_fn create = pthread_create;
#ifndef SONDE_SANITIZED_BUILD
    if (void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD)) {
        if (void *real = dlsym(libc, "pthread_create")) std::memcpy(&create, &real, sizeof real);
        dlclose(libc);
    }
#endif
    return create(t, nullptr, fn, nullptr);
}

void start_delivery() {
    Runtime &r = runtime();
    {
        std::lock_guard<std::mutex> g(r.dmu);
        r.dstop = false;
        r.dpending = false;
    }
    const int rc = create_internal_thread(&r.delivery, delivery_entry);
    if (rc != 0) throw std::system_error(rc, std::generic_category());
    r.delivery_started = true;
}

void stop_delivery() {
    Runtime &r = runtime();
    {
        std::lock_guard<std::mutex> g(r.dmu);
        r.dstop = true;
    }
    r.dcv.notify_all();
    if (r.delivery_started) pthread_join(r.delivery, nullptr);
    r.delivery_started = false;
}

// Destroys a session's buffers: make them unreachable, then deliver and detach each.
sonde_status_t destroy_session_locked_then_drain(std::unique_lock<std::mutex> &lk, uint32_t slot) {
    Runtime &r = runtime();
    std::unique_ptr<Session> s = std::move(r.sessions[slot]);
    r.session_gen[slot]++;
    for (auto &b : s->buffers) {
        buffer::retire_slot(*b);
        r.buffers[slot_of(b->handle)].reset();
    }
    const bool was_active = s->active;
    const uint64_t handle = s->handle;
    lk.unlock();
    if (was_active) notify_session(handle, false);
    sonde_status_t result = SONDE_STATUS_SUCCESS;
    for (auto &b : s->buffers) {
        const sonde_status_t st = buffer::drain_and_detach(*b);
        if (st != SONDE_STATUS_SUCCESS && result == SONDE_STATUS_SUCCESS) result = st;
    }
    return result;
}

}  // namespace

Runtime &runtime() {
    static Runtime *r = new Runtime();  // never destroyed: threads may exit after main returns
    return *r;
}

namespace {
__thread bool t_internal_thread = false;
}  // namespace

void mark_internal_thread() { t_internal_thread = true; }
bool is_internal_thread() { return t_internal_thread; }

void add_lifecycle_observer(const LifecycleObserver *observer) {
    const int i = g_observer_count.load(std::memory_order_relaxed);
    if (i >= 8 || observer == nullptr) return;
    g_observers[i] = observer;
    g_observer_count.store(i + 1, std::memory_order_release);
}

void notify_session(uint64_t session, bool started) {
    const int n = g_observer_count.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
        auto fn = started ? g_observers[i]->on_session_start : g_observers[i]->on_session_stop;
        if (fn) fn(session);
    }
}

Session *find_session(uint64_t handle) {
    Runtime &r = runtime();
    const uint32_t slot = slot_of(handle);
    if (slot >= kMaxSessions || !r.sessions[slot] || r.sessions[slot]->handle != handle) return nullptr;
    return r.sessions[slot].get();
}

std::shared_ptr<buffer::Buffer> find_buffer(uint64_t session, uint64_t buf, sonde_status_t *status) {
    Runtime &r = runtime();
    if (!find_session(session)) {
        *status = SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
        return nullptr;
    }
    const uint32_t slot = slot_of(buf);
    if (slot >= buffer::kMaxBuffers || !r.buffers[slot] || r.buffers[slot]->handle != buf ||
        r.buffers[slot]->session_handle != session) {
        *status = SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
        return nullptr;
    }
    return r.buffers[slot];
}

void wake_delivery() {
    Runtime &r = runtime();
    {
        std::lock_guard<std::mutex> g(r.dmu);
        r.dpending = true;
    }
    r.dcv.notify_one();
}

}  // namespace sonde::core

using namespace sonde;
using sonde::core::Runtime;
using sonde::core::runtime;

namespace {

std::vector<std::shared_ptr<buffer::Buffer>> session_buffers(core::Session &s) { return s.buffers; }

sonde_status_t first_error(sonde_status_t a, sonde_status_t b) {
    return a != SONDE_STATUS_SUCCESS ? a : b;
}

}  // namespace

extern "C" {

SONDE_API sonde_status_t sonde_initialize(void) {
    return guarded([]() -> sonde_status_t {
        Runtime &r = runtime();
        {
            std::lock_guard<std::mutex> g(r.mu);
            if (r.initialized.load(std::memory_order_relaxed))
                return SONDE_STATUS_ERROR_ALREADY_INITIALIZED;
            clock::calibrate();
            buffer::barrier_init();
            core::start_delivery();
            r.initialized.store(true, std::memory_order_release);
        }
        const int n = core::g_observer_count.load(std::memory_order_acquire);
        for (int i = 0; i < n; ++i)
            if (core::g_observers[i]->on_initialize) core::g_observers[i]->on_initialize();
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API sonde_status_t sonde_finalize(void) {
    return guarded([]() -> sonde_status_t {
        Runtime &r = runtime();
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (buffer::in_callback()) return SONDE_STATUS_ERROR_IN_CALLBACK;
        const int n = core::g_observer_count.load(std::memory_order_acquire);
        for (int i = 0; i < n; ++i)
            if (core::g_observers[i]->on_finalize) core::g_observers[i]->on_finalize();
        sonde_status_t result = SONDE_STATUS_SUCCESS;
        {
            std::unique_lock<std::mutex> lk(r.mu);
            if (!r.initialized.load(std::memory_order_relaxed)) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
            r.initialized.store(false, std::memory_order_release);
            for (uint32_t slot = 0; slot < core::kMaxSessions; ++slot) {
                if (!lk.owns_lock()) lk.lock();
                if (!r.sessions[slot]) continue;
                result = first_error(result, core::destroy_session_locked_then_drain(lk, slot));
            }
        }
        core::stop_delivery();
        return result;
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
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        Runtime &r = runtime();
        {
            std::lock_guard<std::mutex> g(r.mu);
            core::Session *s = core::find_session(session.handle);
            if (!s) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
            if (s->active) return SONDE_STATUS_ERROR_SESSION_ACTIVE;
            s->active = true;
            for (auto &b : s->buffers) buffer::set_active(b->handle, true);
        }
        core::notify_session(session.handle, true);
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API sonde_status_t sonde_stop_session(sonde_session_id_t session) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (buffer::in_callback()) return SONDE_STATUS_ERROR_IN_CALLBACK;
        Runtime &r = runtime();
        std::vector<std::shared_ptr<buffer::Buffer>> bufs;
        {
            std::lock_guard<std::mutex> g(r.mu);
            core::Session *s = core::find_session(session.handle);
            if (!s) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
            if (!s->active) return SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE;
            s->active = false;
            for (auto &b : s->buffers) buffer::set_active(b->handle, false);
            bufs = session_buffers(*s);
        }
        core::notify_session(session.handle, false);
        sonde_status_t result = SONDE_STATUS_SUCCESS;
        for (auto &b : bufs) result = first_error(result, buffer::deliver(*b, true));
        return result;
    });
}

SONDE_API sonde_status_t sonde_destroy_session(sonde_session_id_t session) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (buffer::in_callback()) return SONDE_STATUS_ERROR_IN_CALLBACK;
        Runtime &r = runtime();
        std::unique_lock<std::mutex> lk(r.mu);
        if (!core::find_session(session.handle)) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
        return core::destroy_session_locked_then_drain(lk, static_cast<uint32_t>(session.handle));
    });
}

SONDE_API sonde_status_t sonde_session_is_active(sonde_session_id_t session, bool *active) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (active == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
        Runtime &r = runtime();
        std::lock_guard<std::mutex> g(r.mu);
        core::Session *s = core::find_session(session.handle);
        if (!s) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
        *active = s->active;
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API uint64_t sonde_get_timestamp(void) { return clock::now_ns(); }

SONDE_API sonde_status_t sonde_create_buffer(sonde_session_id_t session, uint64_t size,
                                             sonde_buffer_callback_t callback, void *user_data,
                                             const sonde_buffer_property_t *properties,
                                             uint32_t num_properties, sonde_buffer_id_t *out) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (out == nullptr || callback == nullptr || (properties == nullptr && num_properties != 0))
            return SONDE_STATUS_ERROR_NULL_POINTER;
        Runtime &r = runtime();
        {
            std::lock_guard<std::mutex> g(r.mu);
            if (!core::find_session(session.handle)) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
        }
        std::shared_ptr<buffer::Buffer> b;
        sonde_status_t st = buffer::create_buffer(session.handle, size, callback, user_data,
                                                  properties, num_properties, b);
        if (st != SONDE_STATUS_SUCCESS) return st;
        std::lock_guard<std::mutex> g(r.mu);
        if (!r.initialized.load(std::memory_order_relaxed)) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        core::Session *s = core::find_session(session.handle);
        if (!s) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
        for (uint32_t slot = 0; slot < buffer::kMaxBuffers; ++slot) {
            if (r.buffers[slot]) continue;
            b->handle = buffer::claim_slot(slot);
            r.buffers[slot] = b;
            s->buffers.push_back(b);
            if (s->active) buffer::set_active(b->handle, true);
            out->handle = b->handle;
            if (b->interval_ns != 0) core::wake_delivery();  // schedule its first interval
            return SONDE_STATUS_SUCCESS;
        }
        return SONDE_STATUS_ERROR_LIMIT;
    });
}

SONDE_API sonde_status_t sonde_flush_data(sonde_session_id_t session, sonde_buffer_id_t buffer) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (buffer::in_callback()) return SONDE_STATUS_ERROR_IN_CALLBACK;
        Runtime &r = runtime();
        std::vector<std::shared_ptr<buffer::Buffer>> bufs;
        {
            std::lock_guard<std::mutex> g(r.mu);
            if (buffer.handle == 0) {
                core::Session *s = core::find_session(session.handle);
                if (!s) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
                bufs = session_buffers(*s);
            } else {
                sonde_status_t st = SONDE_STATUS_SUCCESS;
                auto b = core::find_buffer(session.handle, buffer.handle, &st);
                if (!b) return st;
                bufs.push_back(std::move(b));
            }
        }
        sonde_status_t result = SONDE_STATUS_SUCCESS;
        for (auto &b : bufs) result = first_error(result, buffer::deliver(*b, true));
        return result;
    });
}

SONDE_API sonde_status_t sonde_get_buffer_stats(sonde_session_id_t session, sonde_buffer_id_t buffer,
                                                sonde_buffer_stats_t *stats) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (stats == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
        if (stats->struct_size < SONDE_BUFFER_STATS_SIZE_1_0) return SONDE_STATUS_ERROR_INCOMPATIBLE_ABI;
        std::shared_ptr<buffer::Buffer> b;
        {
            Runtime &r = runtime();
            std::lock_guard<std::mutex> g(r.mu);
            sonde_status_t st = SONDE_STATUS_SUCCESS;
            b = core::find_buffer(session.handle, buffer.handle, &st);
            if (!b) return st;
        }
        sonde_buffer_stats_t s;
        std::memset(&s, 0, sizeof s);
        s.struct_size = sizeof s;
        buffer::fill_stats(*b, s);
        return write_abi_struct(s, SONDE_BUFFER_STATS_SIZE_1_0, stats);
    });
}

SONDE_API sonde_status_t sonde_destroy_buffer(sonde_session_id_t session, sonde_buffer_id_t buffer) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (buffer::in_callback()) return SONDE_STATUS_ERROR_IN_CALLBACK;
        Runtime &r = runtime();
        std::shared_ptr<buffer::Buffer> b;
        {
            std::lock_guard<std::mutex> g(r.mu);
            sonde_status_t st = SONDE_STATUS_SUCCESS;
            b = core::find_buffer(session.handle, buffer.handle, &st);
            if (!b) return st;
            core::Session *s = core::find_session(session.handle);
            s->buffers.erase(std::find(s->buffers.begin(), s->buffers.end(), b));
            buffer::retire_slot(*b);
            r.buffers[static_cast<uint32_t>(buffer.handle)].reset();
        }
        return buffer::drain_and_detach(*b);
    });
}

}  // extern "C"
