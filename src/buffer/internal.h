// Declarations shared by the buffer hot path (emit.cpp), its slow paths (producer.cpp), the
// consumer side (consumer.cpp) and record reading (record.cpp). Not installed.
#pragma once

#include "buffer/buffer.h"

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
