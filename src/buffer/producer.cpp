// The producer's slow paths: a thread's state, attaching a writer to a buffer, chunk hand-over
// (seal, take, refill, drop counting) and thread exit. The hot path is in emit.cpp; the
// ownership rules are in buffer.h. Runs on producer threads only (thread_exit on the exiting
// thread).
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <new>

#include "buffer/internal.h"
#include "buffer/table.h"
#include "core/clock.h"
#include "core/runtime.h"

namespace sonde::buffer {

Writer g_detached_writer;
__thread ThreadState *tls_thread __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

std::atomic<uint64_t> g_next_thread_id{1};
pthread_key_t g_thread_key;
std::once_flag g_key_once;
std::atomic<bool> g_key_made{false};
// Every thread state, live or (in a forked child) the parent's: those are kept, never used,
// so that nothing of the parent is delivered or freed in the child, and stay reachable.
std::mutex g_states_mu;
ThreadState *g_states = nullptr;
// Writers at rest (see alloc_writer), linked through next_retired.
std::mutex g_writers_mu;
Writer *g_free_writers = nullptr;

void link_state(ThreadState *t) {
    std::lock_guard<std::mutex> g(g_states_mu);
    t->next_state = g_states;
    if (g_states != nullptr) g_states->prev_state = t;
    g_states = t;
}

void unlink_state(ThreadState *t) {
    std::lock_guard<std::mutex> g(g_states_mu);
    if (t->prev_state != nullptr)
        t->prev_state->next_state = t->next_state;
    else
        g_states = t->next_state;
    if (t->next_state != nullptr) t->next_state->prev_state = t->prev_state;
}

// Thread states at rest (see ThreadState): every writer cell detached, no owner.
ThreadState *g_free_states = nullptr;  // g_states_mu

ThreadState *take_free_state() {
    std::lock_guard<std::mutex> g(g_states_mu);
    ThreadState *t = g_free_states;
    if (t != nullptr) {
        g_free_states = t->next_free;
        t->next_free = nullptr;
        t->prev_state = t->next_state = nullptr;
    }
    return t;
}

void give_free_state(ThreadState *t) {
    std::lock_guard<std::mutex> g(g_states_mu);
    t->next_free = g_free_states;
    g_free_states = t;
}

void thread_key_destructor(void *p) { thread_exit(static_cast<ThreadState *>(p)); }

}  // namespace

ThreadState *thread_state() {
    ThreadState *t = tls_thread;
    if (t) return t;
    std::call_once(g_key_once, [] {
        if (pthread_key_create(&g_thread_key, thread_key_destructor) == 0)
            g_key_made.store(true, std::memory_order_release);
    });
    // Without the key the thread's exit could not deliver its records: refuse, as for memory.
    if (!g_key_made.load(std::memory_order_acquire)) throw std::bad_alloc();
    t = take_free_state();
    if (t == nullptr) {
        t = new ThreadState();
        for (auto &w : t->writers) w = &g_detached_writer;
    }
    if (pthread_setspecific(g_thread_key, t) != 0) {
        give_free_state(t);
        throw std::bad_alloc();
    }
    t->thread_id = g_next_thread_id.fetch_add(1, std::memory_order_relaxed);
    t->os_tid = static_cast<uint64_t>(syscall(SYS_gettid));
    link_state(t);
    tls_thread = t;
    return t;
}

void thread_forked_child() {
    // The list's lock may have been held by a parent thread; the states stay in the list. Their
    // writers keep their owners: a parent's producer used in the child finds its buffer's state
    // word refusing (table.cpp) and goes to sonde_emit, which answers NOT_INITIALIZED.
    new (&g_states_mu) std::mutex();
    new (&g_writers_mu) std::mutex();
    if (tls_thread == nullptr) return;
    tls_thread = nullptr;
    if (g_key_made.load(std::memory_order_acquire)) pthread_setspecific(g_thread_key, nullptr);
}

namespace {

// What a writer's owner holds (buffer.h, sonde_writer_state_t): its thread's thread pointer,
// which sonde_emit_inline compares with the caller's. Where the header cannot read the thread
// pointer it gives 0, and an owner of ~0 keeps every record on the out-of-line path.
uint64_t owner_token() {
    const uint64_t tp = sonde_thread_pointer_();
    return tp != 0 ? tp : ~uint64_t{0};
}

// Writers, like thread states, are never freed: a producer used on another thread may read a
// writer (its handle and owner) that its thread is retiring at that moment. A writer at rest
// has owner 0, so that read sends the record to sonde_emit.
Writer *alloc_writer() {
    {
        std::lock_guard<std::mutex> g(g_writers_mu);
        if (Writer *w = g_free_writers) {
            g_free_writers = w->next_retired;
            w->~Writer();
            return new (w) Writer();
        }
    }
    return new Writer();
}

void free_writer(Writer *w) {
    w->owner.store(0, std::memory_order_relaxed);
    std::lock_guard<std::mutex> g(g_writers_mu);
    w->next_retired = g_free_writers;
    g_free_writers = w;
}

// A writer cell is written by its thread only; a producer used on another thread reads it
// (sonde_emit_inline's atomic load), so the stores are atomic too.
void set_cell(ThreadState *t, uint32_t slot, Writer *w) {
    __atomic_store_n(&t->writers[slot], w, __ATOMIC_RELEASE);
}

// Frees the retired writers that their buffer's drain has detached (handle 0).
void free_retired(ThreadState *t) {
    for (Writer **pp = &t->retired; *pp != nullptr;) {
        Writer *w = *pp;
        if (w->handle.load(std::memory_order_acquire) != 0) {
            pp = &w->next_retired;
            continue;
        }
        *pp = w->next_retired;
        free_writer(w);
    }
}

}  // namespace

sonde_status_t attach(uint64_t handle, Writer **out) {
    if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    const uint32_t slot = static_cast<uint32_t>(handle);
    if (slot >= kMaxBuffers) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
    ThreadState *t = thread_state();
    free_retired(t);
    Writer *w = t->writers[slot];
    if (w != &g_detached_writer) {
        const uint64_t old = w->handle.load(std::memory_order_acquire);
        if (old != 0 && old != handle) {
            // Still linked into the slot's previous buffer, which was retired (the slot holds
            // another one now) and whose drain has not detached it yet: relinking it here
            // would splice the two buffers' writer lists. Leave it to that drain.
            w->next_retired = t->retired;
            t->retired = w;
            set_cell(t, slot, &g_detached_writer);
            w = &g_detached_writer;
        }
    }
    if (w == &g_detached_writer) {
        w = alloc_writer();
        w->owner.store(owner_token(), std::memory_order_relaxed);
        w->thread = t;
        w->slot = slot;
        set_cell(t, slot, w);
    }
    if (w->handle.load(std::memory_order_relaxed) == handle) {
        *out = w;
        return SONDE_STATUS_SUCCESS;
    }
    const std::shared_ptr<Buffer> b = find(handle);
    if (!b) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
    std::lock_guard<std::mutex> bg(b->mu);
    if (b->dead) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
    w->buffer = b.get();
    w->pos = w->end = w->base = w->real_end = nullptr;
    w->chunk = nullptr;
    w->records = 0;
    w->reserve_need = 0;
    w->loss_count = 0;
    w->starved = false;
    w->emitted.store(0, std::memory_order_relaxed);
    w->dropped.store(0, std::memory_order_relaxed);
    w->next_in_buffer = b->writers;
    b->writers = w;
    w->handle.store(handle, std::memory_order_relaxed);
    *out = w;
    return SONDE_STATUS_SUCCESS;
}

namespace {

void write_thread_marker(char *p, const ThreadState *t) {
    const sonde_record_header_t h{kThreadRecordSize, SONDE_RECORD_KIND_THREAD, 0};
    const sonde_thread_record_t rec{t->thread_id, t->os_tid};
    std::memcpy(p, &h, sizeof h);
    std::memcpy(p + sizeof h, &rec, sizeof rec);
}

// Moves the writer's current chunk to its sealed list (Buffer::mu held). Returns true when the
// sealed bytes reach the watermark.
bool seal_locked(Buffer &b, Writer *w) {
    Chunk *c = w->chunk;
    if (!c) return false;
    c->next = nullptr;
    // The chunk's records move from the commit word into the writer's running count.
    w->emitted.store(
        w->emitted.load(std::memory_order_relaxed) + (c->commit.load(std::memory_order_relaxed) >> 32),
        std::memory_order_relaxed);
    if (w->sealed_tail)
        w->sealed_tail->next = c;
    else
        w->sealed_head = c;
    w->sealed_tail = c;
    b.sealed_bytes += static_cast<uint32_t>(c->commit.load(std::memory_order_relaxed));
    w->chunk = nullptr;
    w->pos = w->end = w->base = nullptr;
    w->records = 0;
    return b.sealed_bytes >= b.watermark;
}

// Gives chunk `c` (just unlinked from the free list or not) to the writer: THREAD marker,
// then a LOSS record for drops not yet reported (Buffer::mu held).
void take_chunk_locked(Buffer &b, Writer *w, Chunk *c) {
    b.free_head = c->next;
    c->next = nullptr;
    const ThreadState *t = w->thread;
    c->thread_id = t->thread_id;
    c->os_tid = t->os_tid;
    uint32_t off = kThreadRecordSize;
    write_thread_marker(c->data, t);
    if (w->loss_count != 0) {
        const sonde_record_header_t h{kLossRecordSize, SONDE_RECORD_KIND_LOSS, 0};
        const sonde_loss_record_t rec{w->loss_count, t->thread_id, clock::ticks_to_ns(w->loss_first),
                                      clock::ticks_to_ns(w->loss_last)};
        std::memcpy(c->data + off, &h, sizeof h);
        std::memcpy(c->data + off + sizeof h, &rec, sizeof rec);
        off += kLossRecordSize;
        w->loss_count = 0;
    }
    c->commit.store(off, std::memory_order_release);
    w->starved = false;
    w->chunk = c;
    w->base = c->data;
    w->pos = c->data + off;
    w->end = c->data + b.capacity;
    w->records = 0;
}

bool in_callback_of(const Buffer &b) { return tls_span != nullptr && tls_span->buffer == b.handle; }

}  // namespace

sonde_status_t refill(Writer *w, uint32_t need) {
    if (w->reserve_need != 0) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    Buffer &b = *w->buffer;
    if (need > b.capacity - kChunkOverhead) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    // DISCARD, no chunk returned since this writer last found none: drop without the lock
    // (no convoy of dropping producers on Buffer::mu; see "Dropping" in buffer.h).
    if (starved_drop(w, b)) return SONDE_STATUS_ERROR_BUFFER_FULL;
    bool wake = false;
    std::unique_lock<std::mutex> lk(b.mu);
    if (b.dead) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
    wake = seal_locked(b, w);
    Chunk *c = b.free_head;
    if (!c && b.policy == SONDE_BUFFER_POLICY_LOSSLESS && b.lossless_timeout_ns > 0 && !in_callback_of(b)) {
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::nanoseconds(b.lossless_timeout_ns);
        while (!(c = b.free_head) && !b.dead) {
            lk.unlock();
            request_delivery(b);
            lk.lock();
            if ((c = b.free_head) != nullptr || b.dead) break;
            if (b.space_cv.wait_until(lk, deadline) == std::cv_status::timeout) {
                c = b.free_head;
                break;
            }
        }
    }
    if (b.dead) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
    if (!c) {
        if (b.policy == SONDE_BUFFER_POLICY_DISCARD) {
            w->starved = true;
            w->starved_gen = b.free_gen.load(std::memory_order_relaxed);
        }
        lk.unlock();
        count_drop(w);
        if (wake) request_delivery(b);
        return SONDE_STATUS_ERROR_BUFFER_FULL;
    }
    take_chunk_locked(b, w, c);
    lk.unlock();
    if (wake) request_delivery(b);
    return SONDE_STATUS_SUCCESS;
}

void request_delivery(Buffer &b) {
    if (b.delivery == SONDE_BUFFER_DELIVERY_POLL) {
        poll_wake(b);
        return;
    }
    b.drain_requested.store(true, std::memory_order_release);
    schedule(b);
}

// ---- thread exit -------------------------------------------------------------------------
// Delivers what this thread emitted into each buffer, then detaches its writers. Once a
// buffer is dead only its destroyer detaches writers, so this thread waits for that instead.
// A poll buffer's callback is called by its pollers only: the thread's sealed chunks move to
// the buffer's orphan list, where the next poll delivers them.
void thread_exit(ThreadState *t) {
    const uint64_t epoch = core::fork_epoch();
    for (uint32_t slot = 0; slot < kMaxBuffers; ++slot) {
        Writer *w = t->writers[slot];
        if (w == &g_detached_writer) continue;
        if (w->reserve_need != 0) {  // an open reservation can never be committed now
            w->reserve_need = 0;
            w->end = w->real_end;
            w->busy.store(0, std::memory_order_release);
        }
        const uint64_t handle = w->handle.load(std::memory_order_acquire);
        if (handle != 0) {
            const std::shared_ptr<Buffer> b = find(handle);
            if (b) {
                std::lock_guard<std::shared_mutex> dg(b->deliver_mu);
                bool live;
                {
                    std::lock_guard<std::mutex> g(b->mu);
                    live = !b->dead;
                    if (live && w->loss_count != 0) {
                        // Drops after the last record: report them in-stream if a chunk is
                        // free (never wait at thread exit).
                        seal_locked(*b, w);
                        if (b->free_head) take_chunk_locked(*b, w, b->free_head);
                    }
                    if (live) seal_locked(*b, w);
                    if (live && b->delivery == SONDE_BUFFER_DELIVERY_POLL && w->sealed_head) {
                        if (b->orphan_tail)
                            b->orphan_tail->next = w->sealed_head;
                        else
                            b->orphan_head = w->sealed_head;
                        b->orphan_tail = w->sealed_tail;
                        w->sealed_head = w->sealed_tail = nullptr;
                        poll_wake_locked(*b);
                    }
                }
                if (live) {
                    if (b->delivery == SONDE_BUFFER_DELIVERY_THREAD)
                        deliver_locked(*b, false, b->callback, b->user_data);
                    // A callback forked: this is the child, where t is parked; stop here.
                    if (core::fork_epoch() != epoch) return;
                    std::lock_guard<std::mutex> g(b->mu);
                    if (!b->dead) {
                        Writer **pp = &b->writers;
                        while (*pp != w) pp = &(*pp)->next_in_buffer;
                        *pp = w->next_in_buffer;
                        b->retired_emitted += writer_emitted_locked(w);
                        b->retired_dropped += w->dropped.load(std::memory_order_relaxed);
                        w->handle.store(0, std::memory_order_release);
                    }
                }
            }
            while (w->handle.load(std::memory_order_acquire) != 0) sched_yield();
        }
        set_cell(t, slot, &g_detached_writer);
        free_writer(w);
    }
    // Retired writers belong to buffers already being drained: wait for their detach.
    while (Writer *w = t->retired) {
        while (w->handle.load(std::memory_order_acquire) != 0) sched_yield();
        t->retired = w->next_retired;
        free_writer(w);
    }
    tls_thread = nullptr;
    unlink_state(t);
    give_free_state(t);
}

}  // namespace sonde::buffer
