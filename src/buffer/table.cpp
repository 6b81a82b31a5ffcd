// The buffer table, slot states and generations, and the hooks through which the core's
// sessions start, stop and destroy their buffers. See table.h for the lock.
#include "buffer/table.h"

#include <new>

#include "buffer/internal.h"
#include "core/hooks.h"
#include "core/runtime.h"

namespace sonde::buffer {

std::atomic<uint64_t> g_slot_state[kMaxBuffers];

Table &table() {
    static Table *t = new Table();  // never destroyed: threads may exit after main returns
    return *t;
}

namespace {

uint32_t slot_of(uint64_t handle) { return static_cast<uint32_t>(handle); }

void set_state(uint64_t handle, bool active) {
    g_slot_state[slot_of(handle)].store(active ? active_state(handle) : stopped_state(handle),
                                        std::memory_order_seq_cst);
}

}  // namespace

std::shared_ptr<Buffer> find(uint64_t handle) {
    const uint32_t slot = slot_of(handle);
    if (slot >= kMaxBuffers) return nullptr;
    Table &t = table();
    std::lock_guard<std::mutex> g(t.mu);
    const std::shared_ptr<Buffer> &b = t.buffers[slot];
    return b && b->handle == handle ? b : nullptr;
}

std::shared_ptr<Buffer> find_in_session(uint64_t session, uint64_t buffer, sonde_status_t *status) {
    std::shared_ptr<Buffer> b = find(buffer);
    if (b && b->session_handle == session) return b;
    *status = core::session_exists(session) ? SONDE_STATUS_ERROR_BUFFER_NOT_FOUND
                                            : SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
    return nullptr;
}

std::shared_ptr<Buffer> next_buffer(uint64_t session, uint32_t *slot) {
    Table &t = table();
    std::lock_guard<std::mutex> g(t.mu);
    for (uint32_t i = *slot; i < kMaxBuffers; ++i) {
        const std::shared_ptr<Buffer> &b = t.buffers[i];
        if (b && (session == 0 || b->session_handle == session)) {
            *slot = i + 1;
            return b;
        }
    }
    *slot = kMaxBuffers;
    return nullptr;
}

sonde_status_t insert(const std::shared_ptr<Buffer> &b, bool active) {
    Table &t = table();
    std::lock_guard<std::mutex> g(t.mu);
    for (uint32_t slot = 0; slot < kMaxBuffers; ++slot) {
        if (t.buffers[slot]) continue;
        const uint32_t gen = ++t.gen[slot] == 0 ? ++t.gen[slot] : t.gen[slot];
        b->handle = static_cast<uint64_t>(gen) << 32 | slot;
        t.buffers[slot] = b;
        set_state(b->handle, active);
        return SONDE_STATUS_SUCCESS;
    }
    return SONDE_STATUS_ERROR_LIMIT;
}

namespace {

// Table::mu held.
void retire_locked(Table &t, const std::shared_ptr<Buffer> &b) {
    const uint32_t slot = slot_of(b->handle);
    g_slot_state[slot].store((b->handle >> 32) << 2, std::memory_order_seq_cst);
    t.buffers[slot].reset();
    std::lock_guard<std::mutex> g(b->mu);
    b->dead = true;
    b->space_cv.notify_all();
    poll_wake_locked(*b);  // pollers waiting on it see it dead and return
}

}  // namespace

bool retire(const std::shared_ptr<Buffer> &b) {
    Table &t = table();
    std::lock_guard<std::mutex> g(t.mu);
    if (t.buffers[slot_of(b->handle)] != b) return false;
    retire_locked(t, b);
    return true;
}

std::shared_ptr<Buffer> retire_next(uint64_t session) {
    Table &t = table();
    std::lock_guard<std::mutex> g(t.mu);
    for (auto &slot : t.buffers)
        if (slot && (session == 0 || slot->session_handle == session)) {
            std::shared_ptr<Buffer> b = slot;
            retire_locked(t, b);
            return b;
        }
    return nullptr;
}

void park_inherited() {
    Table &t = table();
    std::lock_guard<std::mutex> g(t.mu);
    if (!t.inherited) return;
    for (auto &slot : t.buffers) {
        if (!slot) continue;
        slot->parked_next = std::move(t.parked);
        t.parked = std::move(slot);
    }
    t.inherited = false;
}

// ---- the session hooks ---------------------------------------------------------------------
namespace {

sonde_status_t first_error(sonde_status_t a, sonde_status_t b) { return a != SONDE_STATUS_SUCCESS ? a : b; }

sonde_status_t start_runtime() {
    park_inherited();
    barrier_init();
    return delivery_start();
}

void set_active_locked(uint64_t session, bool active) {
    Table &t = table();
    std::lock_guard<std::mutex> g(t.mu);
    for (auto &b : t.buffers)
        if (b && b->session_handle == session) set_state(b->handle, active);
}

sonde_status_t stopped(uint64_t session) {
    sonde_status_t result = SONDE_STATUS_SUCCESS;
    uint32_t slot = 0;
    while (std::shared_ptr<Buffer> b = next_buffer(session, &slot))
        result = first_error(result, deliver(*b, true));
    return result;
}

sonde_status_t destroyed(uint64_t session) {
    sonde_status_t result = SONDE_STATUS_SUCCESS;
    while (std::shared_ptr<Buffer> b = retire_next(session))
        result = first_error(result, drain_and_detach(*b));
    return result;
}

// pthread_atfork child handler (through the core): the only thread of a child just forked.
// Allocates nothing and takes no lock: another thread of the parent may have held any of them.
void forked_child() {
    for (auto &state : g_slot_state)  // every id of the parent now refuses producers
        state.store(state.load(std::memory_order_relaxed) & ~uint64_t{3}, std::memory_order_relaxed);
    Table &t = table();
    new (&t.mu) std::mutex();
    t.inherited = true;
    thread_forked_child();
    delivery_forked_child();
    barrier_forked_child();
}

const core::SessionResources kResources = {start_runtime, delivery_stop, set_active_locked, stopped,
                                           destroyed,     in_callback,   forked_child};

struct Register {
    Register() {
        // Made at load time, so that the fork handler never allocates.
        table();
        delivery_make();
        core::set_session_resources(&kResources);
    }
} g_register;

}  // namespace

}  // namespace sonde::buffer
