// The consumer side: hands committed spans to a buffer's callback (a THREAD marker in front of
// every span), returns delivered chunks to the free list, drains a buffer that is going away,
// and reads its counters. Runs on whichever thread delivers: a delivery pool worker, or one that
// flushes, stops, destroys or exits; for a poll buffer, the polling thread (poll.cpp).
// Buffer::deliver_mu serialises them per buffer (per writer for a concurrent buffer).
#include <sched.h>

#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "buffer/internal.h"
#include "core/runtime.h"

namespace sonde::buffer {

__thread Span *tls_span __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

struct Sink {
    sonde_buffer_callback_t cb;
    void *user_data;
    uint64_t spans;
};

sonde_status_t invoke(Buffer &b, Sink &sink, const char *begin, const char *end) {
    Span span{b.session_handle, b.handle, begin, end};
    Span *saved = tls_span;
    tls_span = &span;
    sonde_status_t st = SONDE_STATUS_SUCCESS;
    try {
        sink.cb(reinterpret_cast<const sonde_record_header_t *>(begin),
                reinterpret_cast<const sonde_record_header_t *>(end), sonde_session_id_t{b.session_handle},
                sonde_buffer_id_t{b.handle}, sink.user_data);
    } catch (...) {
        b.failures.fetch_add(1, std::memory_order_relaxed);
        st = SONDE_STATUS_ERROR_CALLBACK_FAILED;
    }
    tls_span = saved;
    sink.spans++;
    b.callbacks.fetch_add(1, std::memory_order_relaxed);
    b.bytes_delivered.fetch_add(static_cast<uint64_t>(end - begin), std::memory_order_relaxed);
    return st;
}

// Delivers what the chunk has committed beyond what was delivered (deliver_mu held; for a
// concurrent buffer, shared, with the chunk's writer's deliver_mu).
sonde_status_t deliver_chunk(Buffer &b, Sink &sink, Chunk *c) {
    const uint64_t cw = c->commit.load(std::memory_order_acquire);
    const uint32_t bytes = static_cast<uint32_t>(cw);
    const uint32_t records = static_cast<uint32_t>(cw >> 32);
    uint64_t guard;
    std::memcpy(&guard, c->data + b.capacity, 8);
    if (bytes > b.capacity || (bytes & 7) != 0 || bytes < c->delivered_bytes) {
        return SONDE_STATUS_ERROR_CORRUPTED_SESSION_BUFFER;
    }
    sonde_status_t st = SONDE_STATUS_SUCCESS;
    // A poll returns SUCCESS only for spans with something in them: a chunk just taken holds
    // its THREAD marker alone until the producer's record is committed.
    const bool marker_only = c->delivered_bytes == 0 && bytes == kThreadRecordSize;
    if (bytes > c->delivered_bytes && !(marker_only && b.delivery == SONDE_BUFFER_DELIVERY_POLL)) {
        if (c->delivered_bytes == 0) {
            st = invoke(b, sink, c->data, c->data + bytes);
        } else {
            // A later part of a chunk: a THREAD marker goes in front so that every span names
            // its thread. It is written in place, over the last bytes already delivered (the
            // chunk's own marker came first, so there are at least kThreadRecordSize of them;
            // the producer only writes past the commit): no copy of the span.
            char *s = c->data + c->delivered_bytes - kThreadRecordSize;
            const sonde_record_header_t h{kThreadRecordSize, SONDE_RECORD_KIND_THREAD, 0};
            const sonde_thread_record_t rec{c->thread_id, c->os_tid};
            std::memcpy(s, &h, sizeof h);
            std::memcpy(s + sizeof h, &rec, sizeof rec);
            st = invoke(b, sink, s, c->data + bytes);
        }
        b.delivered.fetch_add(records - c->delivered_records, std::memory_order_relaxed);
        c->delivered_bytes = bytes;
        c->delivered_records = records;
    }
    if (guard != kGuard) {
        std::memcpy(c->data + b.capacity, &kGuard, 8);
        if (st == SONDE_STATUS_SUCCESS) st = SONDE_STATUS_ERROR_CORRUPTED_SESSION_BUFFER;
    }
    return st;
}

}  // namespace

namespace {

// Gives delivered chunks back to the free list and wakes waiting producers: LOSSLESS ones
// on space_cv, DISCARD ones through the free generation (Buffer::mu held).
void free_chunks_locked(Buffer &b, Chunk *list) {
    if (!list) return;
    for (Chunk *c = list; c;) {
        Chunk *next = c->next;
        c->commit.store(0, std::memory_order_relaxed);
        c->delivered_bytes = 0;
        c->delivered_records = 0;
        c->next = b.free_head;
        b.free_head = c;
        c = next;
    }
    b.free_gen.fetch_add(1, std::memory_order_relaxed);
    b.space_cv.notify_all();
}

// Records of a chunk not handed over yet.
uint64_t undelivered(const Chunk *c) {
    return (c->commit.load(std::memory_order_acquire) >> 32) - c->delivered_records;
}

}  // namespace

// The orphans first (chunks of exited threads, poll delivery only), then writer by writer:
// take its sealed chunks and (partial) its current chunk under Buffer::mu, deliver them
// outside it, then give the sealed ones back to the free list. No allocation. The writer list
// cannot lose a member meanwhile: thread exit and drain_and_detach unlink writers only with
// deliver_mu held exclusively, and the caller holds it (shared at least); attach only prepends.
//
// `shared`: the caller holds a concurrent buffer's deliver_mu shared, so other threads may
// deliver other writers of the buffer at the same time; each writer's chunks are delivered with
// its Writer::deliver_mu held, waited for when `wait`, else a writer another thread delivers is
// skipped (its deliverer takes what was sealed before it let go, and later seals ask again).
sonde_status_t deliver_locked(Buffer &b, bool partial, sonde_buffer_callback_t cb, void *user_data,
                              uint64_t *spans, bool shared, bool wait) {
    const uint64_t epoch = core::fork_epoch();
    sonde_status_t result = SONDE_STATUS_SUCCESS;
    Sink sink{cb, user_data, 0};
    Writer *w;
    Chunk *orphans;
    {
        std::lock_guard<std::mutex> g(b.mu);
        w = b.writers;
        orphans = b.orphan_head;
        b.orphan_head = b.orphan_tail = nullptr;
        for (Chunk *c = orphans; c; c = c->next)
            b.sealed_bytes -= static_cast<uint32_t>(c->commit.load(std::memory_order_relaxed));
    }
    for (Chunk *c = orphans; c; c = c->next) {
        const sonde_status_t st = deliver_chunk(b, sink, c);
        if (result == SONDE_STATUS_SUCCESS) result = st;
    }
    if (core::fork_epoch() != epoch) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    if (orphans) {
        std::lock_guard<std::mutex> g(b.mu);
        free_chunks_locked(b, orphans);
    }
    while (w != nullptr) {
        std::unique_lock<std::mutex> claim;
        if (shared) {
            claim = std::unique_lock<std::mutex>(w->deliver_mu, std::defer_lock);
            if (wait) {
                claim.lock();
            } else if (!claim.try_lock()) {
                std::lock_guard<std::mutex> g(b.mu);
                w = w->next_in_buffer;
                continue;
            }
        }
        Chunk *sealed, *current;
        {
            std::lock_guard<std::mutex> g(b.mu);
            sealed = w->sealed_head;
            current = partial ? w->chunk : nullptr;
            w->sealed_head = w->sealed_tail = nullptr;
            for (Chunk *c = sealed; c; c = c->next)
                b.sealed_bytes -= static_cast<uint32_t>(c->commit.load(std::memory_order_relaxed));
        }
        for (Chunk *c = sealed; c; c = c->next) {
            const sonde_status_t st = deliver_chunk(b, sink, c);
            if (result == SONDE_STATUS_SUCCESS) result = st;
        }
        if (current) {
            const sonde_status_t st = deliver_chunk(b, sink, current);
            if (result == SONDE_STATUS_SUCCESS) result = st;
        }
        // A callback that called fork() returns into the child, where these chunks and locks
        // belong to the parent: touch nothing more.
        if (core::fork_epoch() != epoch) {
            if (spans) *spans += sink.spans;
            return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        }
        std::lock_guard<std::mutex> g(b.mu);
        free_chunks_locked(b, sealed);
        w = w->next_in_buffer;
    }
    if (spans) *spans += sink.spans;
    return result;
}

sonde_status_t deliver(Buffer &b, bool partial, bool wait) {
    if (b.delivery == SONDE_BUFFER_DELIVERY_POLL) {  // everything committed is pollable already
        poll_wake(b);
        return SONDE_STATUS_SUCCESS;
    }
    if (b.concurrent) {
        std::shared_lock<std::shared_mutex> g(b.deliver_mu);
        {
            std::lock_guard<std::mutex> bg(b.mu);
            if (b.dead) return SONDE_STATUS_SUCCESS;  // drain_and_detach delivers it
        }
        return deliver_locked(b, partial, b.callback, b.user_data, nullptr, true, wait);
    }
    std::lock_guard<std::shared_mutex> g(b.deliver_mu);
    {
        std::lock_guard<std::mutex> bg(b.mu);
        if (b.dead) return SONDE_STATUS_SUCCESS;  // drain_and_detach delivers it
    }
    return deliver_locked(b, partial, b.callback, b.user_data);
}

namespace {

// Poll delivery at teardown: no callback may be called, so the records nobody polled are
// dropped and counted (deliver_mu held, no producer in progress). Returns how many.
uint64_t discard_locked(Buffer &b) {
    std::lock_guard<std::mutex> g(b.mu);
    uint64_t n = 0;
    for (Chunk *c = b.orphan_head; c; c = c->next) n += undelivered(c);
    free_chunks_locked(b, b.orphan_head);
    b.orphan_head = b.orphan_tail = nullptr;
    for (Writer *w = b.writers; w; w = w->next_in_buffer) {
        for (Chunk *c = w->sealed_head; c; c = c->next) n += undelivered(c);
        if (w->chunk) n += undelivered(w->chunk);
        free_chunks_locked(b, w->sealed_head);
        w->sealed_head = w->sealed_tail = nullptr;
    }
    b.sealed_bytes = 0;
    b.retired_dropped += n;
    return n;
}

}  // namespace

sonde_status_t drain_and_detach(Buffer &b, uint64_t *discarded) {
    const uint64_t epoch = core::fork_epoch();
    process_barrier();
    // The buffer is dead (retired under Buffer::mu): attach adds no writer and thread exit
    // unlinks none, so the list read here stays as it is until the detach below.
    Writer *head;
    {
        std::lock_guard<std::mutex> g(b.mu);
        head = b.writers;
    }
    // Wait for emissions in progress (busy handshake, buffer.h). A reservation left open by
    // this very thread can never be committed now: cancel it.
    for (Writer *w = head; w; w = w->next_in_buffer) {
        if (w->thread == tls_thread && w->reserve_need != 0) {
            w->reserve_need = 0;
            w->end = w->real_end;
            w->busy.store(0, std::memory_order_release);
        }
        while (w->busy.load(std::memory_order_acquire) != 0) sched_yield();
    }
    std::lock_guard<std::shared_mutex> dg(b.deliver_mu);
    sonde_status_t st = SONDE_STATUS_SUCCESS;
    if (b.delivery == SONDE_BUFFER_DELIVERY_POLL) {
        const uint64_t n = discard_locked(b);
        if (discarded) *discarded += n;
    } else {
        st = deliver_locked(b, true, b.callback, b.user_data);
        if (core::fork_epoch() != epoch) return st;  // a callback forked: this is the child
    }
    std::lock_guard<std::mutex> g(b.mu);
    for (Writer *w = b.writers; w;) {
        Writer *next = w->next_in_buffer;
        b.retired_emitted += writer_emitted_locked(w);
        b.retired_dropped += w->dropped.load(std::memory_order_relaxed);
        // The producer-owned window (pos, end, chunk, buffer, ...) is left alone: the
        // producer may read it before its busy handshake, and only ever uses it after seeing
        // a matching handle and state; attach() resets it on the producer's own thread.
        w->sealed_head = w->sealed_tail = nullptr;
        w->next_in_buffer = nullptr;
        w->handle.store(0, std::memory_order_release);
        w = next;
    }
    b.writers = nullptr;
    return st;
}

void fill_stats(Buffer &b, sonde_buffer_stats_t &s) {
    std::lock_guard<std::mutex> g(b.mu);
    uint64_t emitted = b.retired_emitted, dropped = b.retired_dropped;
    for (Writer *w = b.writers; w; w = w->next_in_buffer) {
        emitted += writer_emitted_locked(w);
        dropped += w->dropped.load(std::memory_order_relaxed);
    }
    s.records_emitted = emitted;
    s.records_dropped = dropped;
    s.records_delivered = b.delivered.load(std::memory_order_relaxed);
    s.bytes_delivered = b.bytes_delivered.load(std::memory_order_relaxed);
    s.callbacks = b.callbacks.load(std::memory_order_relaxed);
    s.callback_failures = b.failures.load(std::memory_order_relaxed);
}

bool in_callback() { return tls_span != nullptr; }

}  // namespace sonde::buffer
