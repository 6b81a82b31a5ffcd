// Buffer slow paths: creation, chunk hand-over (seal/refill), delivery, destroy, thread exit.
// The hot path is in emit.cpp; the ownership rules are in buffer.h.
#include "buffer/buffer.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <new>

#include "buffer/internal.h"
#include "core/clock.h"
#include "core/runtime.h"

namespace sonde::buffer {

std::atomic<uint64_t> g_slot_state[kMaxBuffers];
Writer g_detached_writer;
__thread ThreadState *tls_thread __attribute__((tls_model("initial-exec"))) = nullptr;
__thread Span *tls_span __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

uint32_t g_slot_gen[kMaxBuffers];  // Runtime::mu
std::atomic<uint64_t> g_next_thread_id{1};
pthread_key_t g_thread_key;
std::once_flag g_key_once;

enum class BarrierKind { kPrivateExpedited, kGlobal, kMprotect };
BarrierKind g_barrier = BarrierKind::kMprotect;
void *g_barrier_page = nullptr;
std::mutex g_barrier_mu;

void thread_key_destructor(void *p) { thread_exit(static_cast<ThreadState *>(p)); }

}  // namespace

// ---- process-wide barrier ----------------------------------------------------------------
void barrier_init() {
    static std::once_flag once;
    std::call_once(once, [] {
        const long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
        if (q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
            syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
            g_barrier = BarrierKind::kPrivateExpedited;
        } else if (q > 0 && (q & MEMBARRIER_CMD_GLOBAL)) {
            g_barrier = BarrierKind::kGlobal;
        } else {
            // Changing a locked page's protection makes the kernel shoot down its TLB entry
            // on every CPU running this process, which serialises them: a full barrier.
            g_barrier_page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (g_barrier_page != MAP_FAILED) mlock(g_barrier_page, 4096);
        }
    });
}

void process_barrier() {
#if defined(SONDE_TSAN)
    // Under ThreadSanitizer both sides of the handshake are seq_cst atomics (buffer.h).
    (void)g_barrier_mu;
#else
    switch (g_barrier) {
    case BarrierKind::kPrivateExpedited:
        if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return;
        break;
    case BarrierKind::kGlobal:
        if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0) return;
        break;
    case BarrierKind::kMprotect:
        break;
    }
    std::lock_guard<std::mutex> g(g_barrier_mu);
    if (g_barrier_page && g_barrier_page != MAP_FAILED) {
        static_cast<volatile char *>(g_barrier_page)[0] = 1;
        mprotect(g_barrier_page, 4096, PROT_READ);
        mprotect(g_barrier_page, 4096, PROT_READ | PROT_WRITE);
    }
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// ---- slots -------------------------------------------------------------------------------
uint64_t claim_slot(uint32_t slot) {
    const uint32_t gen = ++g_slot_gen[slot] == 0 ? ++g_slot_gen[slot] : g_slot_gen[slot];
    const uint64_t handle = static_cast<uint64_t>(gen) << 32 | slot;
    g_slot_state[slot].store(stopped_state(handle), std::memory_order_release);
    return handle;
}

void set_active(uint64_t handle, bool active) {
    const uint32_t slot = static_cast<uint32_t>(handle);
    g_slot_state[slot].store(active ? active_state(handle) : stopped_state(handle),
                             std::memory_order_seq_cst);
}

void retire_slot(Buffer &b) {
    const uint32_t slot = static_cast<uint32_t>(b.handle);
    g_slot_state[slot].store((b.handle >> 32) << 2, std::memory_order_seq_cst);
    std::lock_guard<std::mutex> g(b.mu);
    b.dead = true;
    b.space_cv.notify_all();
}

// ---- creation ----------------------------------------------------------------------------
Buffer::~Buffer() {
    if (mapping) munmap(mapping, mapping_size);
}

sonde_status_t create_buffer(uint64_t session_handle, uint64_t size, sonde_buffer_callback_t cb,
                             void *user_data, const sonde_buffer_property_t *props, uint32_t n,
                             std::shared_ptr<Buffer> &out) {
    auto b = std::make_shared<Buffer>();
    b->session_handle = session_handle;
    b->callback = cb;
    b->user_data = user_data;
    bool seen[5] = {};
    uint64_t chunk_size = 0;
    bool have_watermark = false;
    for (uint32_t i = 0; i < n; ++i) {
        const sonde_buffer_property_t &p = props[i];
        if (p.reserved != 0 || p.kind > SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE || seen[p.kind])
            return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        seen[p.kind] = true;
        switch (p.kind) {
        case SONDE_BUFFER_PROPERTY_KIND_INTERVAL_FLUSH:
            if (p.value != 0 && p.value < 100000) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
            b->interval_ns = p.value;
            break;
        case SONDE_BUFFER_PROPERTY_KIND_POLICY:
            if (p.value != SONDE_BUFFER_POLICY_LOSSLESS && p.value != SONDE_BUFFER_POLICY_DISCARD)
                return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
            b->policy = static_cast<uint32_t>(p.value);
            break;
        case SONDE_BUFFER_PROPERTY_KIND_WATERMARK:
            b->watermark = p.value;
            have_watermark = true;
            break;
        case SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT:
            b->lossless_timeout_ns = p.value;
            break;
        case SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE:
            if (p.value < 4096 || p.value > (64u << 20) || (p.value & (p.value - 1)) != 0)
                return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
            chunk_size = p.value;
            break;
        }
    }
    if (size < 8192 || size > (uint64_t{1} << 40)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (chunk_size == 0) {
        chunk_size = 65536;
        while (chunk_size > 4096 && chunk_size > size / 4) chunk_size >>= 1;
    }
    const uint64_t count = size / chunk_size;
    if (count < 2) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (have_watermark && b->watermark > size) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (!have_watermark) b->watermark = size / 2;
    b->chunk_size = static_cast<uint32_t>(chunk_size);
    b->capacity = static_cast<uint32_t>(chunk_size - 8);
    b->chunk_count = static_cast<uint32_t>(count);
    b->mapping_size = count * chunk_size;
    void *m = mmap(nullptr, b->mapping_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (m == MAP_FAILED) return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    b->mapping = m;
    b->chunks = std::vector<Chunk>(count);
    for (uint64_t i = 0; i < count; ++i) {
        Chunk &c = b->chunks[i];
        c.data = static_cast<char *>(m) + i * chunk_size;
        std::memcpy(c.data + b->capacity, &kGuard, 8);
        c.next = i + 1 < count ? &b->chunks[i + 1] : nullptr;
    }
    b->free_head = &b->chunks[0];
    b->staging.resize(chunk_size + kThreadRecordSize);
    out = std::move(b);
    return SONDE_STATUS_SUCCESS;
}

// ---- producer slow paths -----------------------------------------------------------------
ThreadState *thread_state() {
    ThreadState *t = tls_thread;
    if (t) return t;
    std::call_once(g_key_once, [] { pthread_key_create(&g_thread_key, thread_key_destructor); });
    t = new ThreadState();
    for (auto &w : t->writers) w = &g_detached_writer;
    t->thread_id = g_next_thread_id.fetch_add(1, std::memory_order_relaxed);
    t->os_tid = static_cast<uint64_t>(syscall(SYS_gettid));
    tls_thread = t;
    pthread_setspecific(g_thread_key, t);
    return t;
}

sonde_status_t attach(uint64_t handle, Writer **out) {
    if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    const uint32_t slot = static_cast<uint32_t>(handle);
    if (slot >= kMaxBuffers) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
    ThreadState *t = thread_state();
    Writer *w = t->writers[slot];
    if (w == &g_detached_writer) {
        w = new Writer();
        w->thread = t;
        w->slot = slot;
        t->writers[slot] = w;
    }
    if (w->handle.load(std::memory_order_relaxed) == handle) {
        *out = w;
        return SONDE_STATUS_SUCCESS;
    }
    core::Runtime &r = core::runtime();
    std::lock_guard<std::mutex> g(r.mu);
    if (!r.initialized.load(std::memory_order_relaxed)) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    const std::shared_ptr<Buffer> &b = r.buffers[slot];
    if (!b || b->handle != handle) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
    std::lock_guard<std::mutex> bg(b->mu);
    if (b->dead) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
    w->buffer = b.get();
    w->pos = w->end = w->base = w->real_end = nullptr;
    w->chunk = nullptr;
    w->records = 0;
    w->reserve_need = 0;
    w->loss_count = 0;
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

void count_drop(Writer *w) {
    const uint64_t now = clock::now_ns();
    w->emitted.store(w->emitted.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    w->dropped.store(w->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (w->loss_count++ == 0) w->loss_first = now;
    w->loss_last = now;
}

// Moves the writer's current chunk to its sealed list (Buffer::mu held). Returns true when the
// sealed bytes reach the watermark.
bool seal_locked(Buffer &b, Writer *w) {
    Chunk *c = w->chunk;
    if (!c) return false;
    c->next = nullptr;
    // The chunk's records move from the commit word into the writer's running count.
    w->emitted.store(w->emitted.load(std::memory_order_relaxed) +
                         (c->commit.load(std::memory_order_relaxed) >> 32),
                     std::memory_order_relaxed);
    if (w->sealed_tail) w->sealed_tail->next = c; else w->sealed_head = c;
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
        const sonde_loss_record_t rec{w->loss_count, t->thread_id, w->loss_first, w->loss_last};
        std::memcpy(c->data + off, &h, sizeof h);
        std::memcpy(c->data + off + sizeof h, &rec, sizeof rec);
        off += kLossRecordSize;
        w->loss_count = 0;
    }
    c->commit.store(off, std::memory_order_release);
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
    bool wake = false;
    std::unique_lock<std::mutex> lk(b.mu);
    if (b.dead) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
    wake = seal_locked(b, w);
    Chunk *c = b.free_head;
    if (!c && b.policy == SONDE_BUFFER_POLICY_LOSSLESS && b.lossless_timeout_ns > 0 &&
        !in_callback_of(b)) {
        const auto deadline = std::chrono::steady_clock::now() +
                              std::chrono::nanoseconds(b.lossless_timeout_ns);
        while (!(c = b.free_head) && !b.dead) {
            b.drain_requested.store(true, std::memory_order_release);
            lk.unlock();
            core::wake_delivery();
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
        lk.unlock();
        count_drop(w);
        if (wake) {
            b.drain_requested.store(true, std::memory_order_release);
            core::wake_delivery();
        }
        return SONDE_STATUS_ERROR_BUFFER_FULL;
    }
    take_chunk_locked(b, w, c);
    lk.unlock();
    if (wake) {
        b.drain_requested.store(true, std::memory_order_release);
        core::wake_delivery();
    }
    return SONDE_STATUS_SUCCESS;
}

// ---- delivery ----------------------------------------------------------------------------
namespace {

sonde_status_t invoke(Buffer &b, const char *begin, const char *end) {
    Span span{b.session_handle, b.handle, begin, end};
    Span *saved = tls_span;
    tls_span = &span;
    sonde_status_t st = SONDE_STATUS_SUCCESS;
    try {
        b.callback(reinterpret_cast<const sonde_record_header_t *>(begin),
                   reinterpret_cast<const sonde_record_header_t *>(end),
                   sonde_session_id_t{b.session_handle}, sonde_buffer_id_t{b.handle}, b.user_data);
    } catch (...) {
        b.failures.fetch_add(1, std::memory_order_relaxed);
        st = SONDE_STATUS_ERROR_CALLBACK_FAILED;
    }
    tls_span = saved;
    b.callbacks.fetch_add(1, std::memory_order_relaxed);
    b.bytes_delivered.fetch_add(static_cast<uint64_t>(end - begin), std::memory_order_relaxed);
    return st;
}

// Delivers what the chunk has committed beyond what was delivered (deliver_mu held).
sonde_status_t deliver_chunk(Buffer &b, Chunk *c) {
    const uint64_t cw = c->commit.load(std::memory_order_acquire);
    const uint32_t bytes = static_cast<uint32_t>(cw);
    const uint32_t records = static_cast<uint32_t>(cw >> 32);
    uint64_t guard;
    std::memcpy(&guard, c->data + b.capacity, 8);
    if (bytes > b.capacity || (bytes & 7) != 0 || bytes < c->delivered_bytes) {
        return SONDE_STATUS_ERROR_CORRUPTED_SESSION_BUFFER;
    }
    sonde_status_t st = SONDE_STATUS_SUCCESS;
    if (bytes > c->delivered_bytes) {
        if (c->delivered_bytes == 0) {
            st = invoke(b, c->data, c->data + bytes);
        } else {
            // A later part of a chunk: put a THREAD marker in front so that every span
            // names its thread.
            char *s = b.staging.data();
            const sonde_record_header_t h{kThreadRecordSize, SONDE_RECORD_KIND_THREAD, 0};
            const sonde_thread_record_t rec{c->thread_id, c->os_tid};
            std::memcpy(s, &h, sizeof h);
            std::memcpy(s + sizeof h, &rec, sizeof rec);
            const uint32_t n = bytes - c->delivered_bytes;
            std::memcpy(s + kThreadRecordSize, c->data + c->delivered_bytes, n);
            st = invoke(b, s, s + kThreadRecordSize + n);
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

struct Pending {
    Chunk *sealed;
    Chunk *current;
};

sonde_status_t deliver_locked(Buffer &b, bool partial) {
    std::vector<Pending> work;
    {
        std::lock_guard<std::mutex> g(b.mu);
        for (Writer *w = b.writers; w; w = w->next_in_buffer) {
            Pending p{w->sealed_head, partial ? w->chunk : nullptr};
            w->sealed_head = w->sealed_tail = nullptr;
            if (p.sealed || p.current) work.push_back(p);
        }
        b.sealed_bytes = 0;
    }
    sonde_status_t result = SONDE_STATUS_SUCCESS;
    Chunk *done_head = nullptr;
    for (Pending &p : work) {
        for (Chunk *c = p.sealed; c;) {
            Chunk *next = c->next;
            const sonde_status_t st = deliver_chunk(b, c);
            if (result == SONDE_STATUS_SUCCESS) result = st;
            if (c == p.current) p.current = nullptr;
            c->next = done_head;
            done_head = c;
            c = next;
        }
        if (p.current) {
            const sonde_status_t st = deliver_chunk(b, p.current);
            if (result == SONDE_STATUS_SUCCESS) result = st;
        }
    }
    if (done_head) {
        std::lock_guard<std::mutex> g(b.mu);
        for (Chunk *c = done_head; c;) {
            Chunk *next = c->next;
            c->commit.store(0, std::memory_order_relaxed);
            c->delivered_bytes = 0;
            c->delivered_records = 0;
            c->next = b.free_head;
            b.free_head = c;
            c = next;
        }
        b.space_cv.notify_all();
    }
    return result;
}

}  // namespace

sonde_status_t deliver(Buffer &b, bool partial) {
    std::lock_guard<std::mutex> g(b.deliver_mu);
    {
        std::lock_guard<std::mutex> bg(b.mu);
        if (b.dead) return SONDE_STATUS_SUCCESS;  // drain_and_detach delivers it
    }
    return deliver_locked(b, partial);
}

sonde_status_t drain_and_detach(Buffer &b) {
    process_barrier();
    std::vector<Writer *> ws;
    {
        std::lock_guard<std::mutex> g(b.mu);
        for (Writer *w = b.writers; w; w = w->next_in_buffer) ws.push_back(w);
    }
    // Wait for emissions in progress (busy handshake, buffer.h). A reservation left open by
    // this very thread can never be committed now: cancel it.
    for (Writer *w : ws) {
        if (w->thread == tls_thread && w->reserve_need != 0) {
            w->reserve_need = 0;
            w->end = w->real_end;
            w->busy.store(0, std::memory_order_release);
        }
        while (w->busy.load(std::memory_order_acquire) != 0) sched_yield();
    }
    std::lock_guard<std::mutex> dg(b.deliver_mu);
    const sonde_status_t st = deliver_locked(b, true);
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

// ---- thread exit -------------------------------------------------------------------------
// Delivers what this thread emitted into each buffer, then detaches its writers. Once a
// buffer is dead only its destroyer detaches writers, so this thread waits for that instead.
void thread_exit(ThreadState *t) {
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
            std::shared_ptr<Buffer> b;
            {
                core::Runtime &r = core::runtime();
                std::lock_guard<std::mutex> g(r.mu);
                if (r.buffers[slot] && r.buffers[slot]->handle == handle) b = r.buffers[slot];
            }
            if (b) {
                std::lock_guard<std::mutex> dg(b->deliver_mu);
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
                }
                if (live) {
                    deliver_locked(*b, false);
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
        delete w;
    }
    tls_thread = nullptr;
    delete t;
}

}  // namespace sonde::buffer
