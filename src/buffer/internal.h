// Declarations shared by the buffer hot path (emit.cpp), its slow paths (producer.cpp), the
// consumer side (consumer.cpp) and record reading (record.cpp). Not installed.
#pragma once

#include "buffer/buffer.h"
#include "core/clock.h"

namespace sonde::buffer {

// The span a callback on this thread is receiving; sonde_next_record validates against it.
struct Span {
    uint64_t session;
    uint64_t buffer;
    const char *begin;
    const char *end;
};

// Initial-exec TLS: one load from %fs, no __tls_get_addr call on the hot path. Small enough
// to fit glibc's static TLS surplus when libsonde is dlopen'ed.
extern __thread ThreadState *tls_thread __attribute__((tls_model("initial-exec")));
extern __thread Span *tls_span __attribute__((tls_model("initial-exec")));
extern Writer g_detached_writer;

ThreadState *thread_state();
// Slow path: attaches the calling thread's writer for `handle` (creating thread state).
sonde_status_t attach(uint64_t handle, Writer **out);
// Counts a drop in the writer (its thread only): relaxed loads and stores, and the raw clock
// (rdtsc where timestamps come from the TSC), converted once when the LOSS record is written.
inline void count_drop(Writer *w) {
    const uint64_t now = clock::ticks();
    w->emitted.store(w->emitted.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    w->dropped.store(w->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (w->loss_count++ == 0) w->loss_first = now;
    w->loss_last = now;
}

// With busy held and the buffer active: a DISCARD writer that found no free chunk, with none
// returned since (Buffer::free_gen unchanged), drops and counts without the lock. False when
// it must look under the lock (see "Dropping" in buffer.h).
inline bool starved_drop(Writer *w, const Buffer &b) {
    if (!w->starved || w->starved_gen != b.free_gen.load(std::memory_order_relaxed)) return false;
    count_drop(w);
    return true;
}

// Slow path with busy held: seals the current chunk and takes a free one (waiting under
// LOSSLESS), or drops and counts. On success the writer has room for `need` bytes.
sonde_status_t refill(Writer *w, uint32_t need);

// Delivers orphaned and sealed chunks (and with `partial` the committed prefix of current
// ones) to `cb` and returns delivered chunks to the free list (consumer.cpp;
// Buffer::deliver_mu held exclusively, or shared with `shared` for a concurrent buffer, see
// there). Adds the number of spans handed over to *spans when given. A poll buffer's spans that
// hold only a THREAD marker are not handed over.
sonde_status_t deliver_locked(Buffer &b, bool partial, sonde_buffer_callback_t cb, void *user_data,
                              uint64_t *spans = nullptr, bool shared = false, bool wait = true);

}  // namespace sonde::buffer
