// The producer hot path: sonde_emit, sonde_emit_timestamped, sonde_reserve, sonde_commit.
//
// Cost of an accepted record: one load of the slot state, one initial-exec TLS load, the
// writer's handle check, the busy handshake (a relaxed store and a compiler fence), a bounds
// check, the header/payload stores and a release store of the chunk's commit word (a plain
// store on x86-64; it also carries the record count, so there is no separate counter). No lock, no atomic read-modify-write, no allocation after the thread's
// first record into a buffer. A stopped session costs the slot-state load and one compare.
// Everything else (first use by a thread, full chunk, errors) is out of line: emit_slow below
// and producer.cpp. A record dropped under DISCARD because no chunk is free goes there too but
// takes no lock and makes no system call: until the consumer returns a chunk, refill only
// compares the buffer's free generation, reads the clock (rdtsc) and counts the drop in the
// writer (relaxed stores).
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "buffer/buffer.h"
#include "buffer/internal.h"
#include "core/clock.h"
#include "core/runtime.h"

namespace sonde::buffer {
namespace {

inline void busy_enter(Writer *w) {
#if defined(SONDE_TSAN)
    w->busy.store(1, std::memory_order_seq_cst);
#else
    w->busy.store(1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

inline void busy_exit(Writer *w) { w->busy.store(0, std::memory_order_release); }

inline uint64_t load_state(uint32_t slot) {
#if defined(SONDE_TSAN)
    return g_slot_state[slot].load(std::memory_order_seq_cst);
#else
    return g_slot_state[slot].load(std::memory_order_relaxed);
#endif
}

// Smallest payload of each Sonde kind; NONE, THREAD and LOSS are not for producers.
constexpr uint32_t kMinPayload[7] = {UINT32_MAX,
                                     UINT32_MAX,
                                     UINT32_MAX,
                                     sizeof(sonde_tracer_record_t),
                                     sizeof(sonde_profiler_record_t),
                                     sizeof(sonde_memref_record_t),
                                     sizeof(sonde_call_record_t)};

inline bool valid_kind(uint32_t kind, uint32_t size) {
    if (SONDE_LIKELY(kind - SONDE_RECORD_KIND_USER <= 0x7FFFu)) return true;
    return kind < 7 && size >= kMinPayload[kind];
}

__attribute__((noinline, cold)) sonde_status_t not_accepting(uint64_t h) {
    if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    const uint32_t slot = static_cast<uint32_t>(h);
    if (slot >= kMaxBuffers) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
    // The caller saw the buffer not recording; the state is read again here, and a session
    // started in between makes it active: the record was still refused for an inactive
    // session, so that too is SESSION_NOT_ACTIVE, not a missing buffer.
    const uint64_t state = g_slot_state[slot].load(std::memory_order_relaxed);
    return state == stopped_state(h) || state == active_state(h) ? SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE
                                                                 : SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
}

// The slow paths' first checks: the buffer records and the record is one a producer may write.
inline sonde_status_t check_accepting(uint64_t h, uint32_t kind, uint32_t size) {
    const uint32_t slot = static_cast<uint32_t>(h);
    if (slot >= kMaxBuffers) return not_accepting(h);
    const uint64_t state = g_slot_state[slot].load(std::memory_order_relaxed);
    if (state != active_state(h)) {
        if (state == stopped_state(h)) return SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE;
        return not_accepting(h);
    }
    if (!valid_kind(kind, size) || size > SONDE_RECORD_MAX_PAYLOAD)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    return SONDE_STATUS_SUCCESS;
}

inline void store64(char *p, uint64_t v) { std::memcpy(p, &v, 8); }

// Copies a payload; the last word is zero-padded so no stale bytes reach the consumer.
__attribute__((always_inline)) inline void copy_payload(char *d, const void *src, uint32_t size) {
    const char *s = static_cast<const char *>(src);
    if (size > 128) {
        std::memcpy(d, s, size);
        if (size & 7) std::memset(d + size, 0, 8 - (size & 7));
        return;
    }
    const uint32_t n8 = size & ~7u;
    for (uint32_t i = 0; i < n8; i += 8) {
        uint64_t v;
        std::memcpy(&v, s + i, 8);
        __asm__("" : "+r"(v));  // opaque to loop-idiom recognition: stays a word loop, no memcpy call
        std::memcpy(d + i, &v, 8);
    }
    if (size & 7) {
        uint64_t v = 0;
        char *vb = reinterpret_cast<char *>(&v);
        for (uint32_t i = 0; i < (size & 7); ++i) vb[i] = s[n8 + i];
        std::memcpy(d + n8, &v, 8);
    }
}

// Finds the calling thread's writer for an active buffer and enters the busy state with room
// for `need` bytes. On failure nothing is held.
inline sonde_status_t begin_record(uint64_t h, uint32_t slot, uint32_t need, Writer **out) {
    ThreadState *t = tls_thread;
    Writer *w = t ? t->writers[slot] : &g_detached_writer;
    if (SONDE_UNLIKELY(w->handle.load(std::memory_order_relaxed) != h)) {
        const sonde_status_t st = attach(h, &w);
        if (st != SONDE_STATUS_SUCCESS) return st;
    }
    busy_enter(w);
    if (SONDE_UNLIKELY(load_state(slot) != active_state(h))) {
        if (w->reserve_need == 0) busy_exit(w);
        return w->reserve_need ? static_cast<sonde_status_t>(SONDE_STATUS_ERROR_PHASE_FAILURE)
                               : not_accepting(h);
    }
    if (SONDE_UNLIKELY(static_cast<size_t>(w->end - w->pos) < need)) {
        const sonde_status_t st = refill(w, need);
        if (st != SONDE_STATUS_SUCCESS) {
            if (st != SONDE_STATUS_ERROR_PHASE_FAILURE) busy_exit(w);  // else the reservation keeps it
            return st;
        }
    }
    *out = w;
    return SONDE_STATUS_SUCCESS;
}

__attribute__((always_inline)) inline void publish(Writer *w, char *new_pos) {
    w->pos = new_pos;
    const uint32_t recs = ++w->records;
    w->chunk->commit.store(static_cast<uint64_t>(recs) << 32 | static_cast<uint32_t>(new_pos - w->base),
                           std::memory_order_release);
}

__attribute__((always_inline)) inline void write_record(Writer *w, uint32_t kind, const void *payload,
                                                        uint32_t size, uint32_t need, bool timestamp) {
    char *p = w->pos;
    store64(p, need | static_cast<uint64_t>(kind) << 32 |
                   static_cast<uint64_t>(timestamp ? SONDE_RECORD_FLAG_TIMESTAMP : 0) << 48);
    char *d = p + 8;
    if (timestamp) {
        store64(d, clock::now_ns());
        d += 8;
    }
    copy_payload(d, payload, size);
    publish(w, p + need);
}

// Everything the fast path does not handle: first record of a thread, full chunk, errors,
// large payloads, races with stop/destroy.
template <bool kTimestamp>
__attribute__((noinline)) sonde_status_t emit_slow(uint64_t h, uint32_t kind, const void *payload,
                                                   uint32_t size) {
    const uint32_t slot = static_cast<uint32_t>(h);
    const sonde_status_t accepting = check_accepting(h, kind, size);
    if (accepting != SONDE_STATUS_SUCCESS) return accepting;
    if (payload == nullptr && size != 0) return SONDE_STATUS_ERROR_NULL_POINTER;
    const uint32_t need = 8 + (kTimestamp ? 8 : 0) + ((size + 7) & ~7u);
    Writer *w = nullptr;
    sonde_status_t st;
    try {
        st = begin_record(h, slot, need, &w);  // may allocate the thread's state
    } catch (...) {
        return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    }
    if (st != SONDE_STATUS_SUCCESS) return st;
    write_record(w, kind, payload, size, need, kTimestamp);
    busy_exit(w);
    return SONDE_STATUS_SUCCESS;
}

// The writer's chunk has no room for a record emit_active accepted (the writer serves `h`):
// a DISCARD writer still starved of chunks drops here, after the busy handshake, without
// emit_slow's second pass over the checks; anything else goes to emit_slow. So a record
// dropped under overload costs less than one recorded (the clock read and the counters).
template <bool kTimestamp>
__attribute__((noinline)) sonde_status_t emit_no_room(uint64_t h, Writer *w, uint32_t kind,
                                                      const void *payload, uint32_t size) {
    if (w->starved && w->reserve_need == 0) {
        busy_enter(w);
        // Active after busy is set: the buffer, and so w->buffer, outlives this call (destroy
        // waits for busy == 0).
        if (SONDE_LIKELY(load_state(static_cast<uint32_t>(h)) == active_state(h))) {
            const uint32_t need = 8 + (kTimestamp ? 8 : 0) + ((size + 7) & ~7u);
            const Buffer &b = *w->buffer;
            if (need <= b.capacity - kChunkOverhead && starved_drop(w, b)) {
                busy_exit(w);
                return SONDE_STATUS_ERROR_BUFFER_FULL;
            }
        }
        busy_exit(w);
    }
    return emit_slow<kTimestamp>(h, kind, payload, size);
}

// The hot path for an active buffer: no call, no lock, no atomic read-modify-write. Any
// unusual case goes to emit_slow, which checks everything again (a full chunk first to
// emit_no_room).
template <bool kTimestamp>
__attribute__((noinline)) sonde_status_t emit_active(uint64_t h, uint32_t kind, const void *payload,
                                                     uint32_t size) {
    const uint32_t slot = static_cast<uint32_t>(h);
    ThreadState *t = tls_thread;
    if (SONDE_UNLIKELY(t == nullptr || kind - SONDE_RECORD_KIND_USER > 0x7FFFu || size > 128 ||
                       (payload == nullptr && size != 0)))
        return emit_slow<kTimestamp>(h, kind, payload, size);
    Writer *w = t->writers[slot];
    const uint32_t need = 8 + (kTimestamp ? 8 : 0) + ((size + 7) & ~7u);
    // Room is checked before the busy flag: an open reservation leaves no room.
    if (SONDE_UNLIKELY(w->handle.load(std::memory_order_relaxed) != h ||
                       static_cast<size_t>(w->end - w->pos) < need))
        return w->handle.load(std::memory_order_relaxed) == h
                   ? emit_no_room<kTimestamp>(h, w, kind, payload, size)
                   : emit_slow<kTimestamp>(h, kind, payload, size);
    busy_enter(w);
    if (SONDE_UNLIKELY(load_state(slot) != active_state(h))) {
        busy_exit(w);
        return emit_slow<kTimestamp>(h, kind, payload, size);
    }
    write_record(w, kind, payload, size, need, kTimestamp);
    busy_exit(w);
    return SONDE_STATUS_SUCCESS;
}

// Entry: one load of the slot state decides. A stopped session returns here, before any
// register is saved; an active one tail-calls emit_active.
template <bool kTimestamp>
inline sonde_status_t emit_impl(uint64_t h, uint32_t kind, const void *payload, uint32_t size) {
    const uint32_t slot = static_cast<uint32_t>(h);
    if (SONDE_UNLIKELY(slot >= kMaxBuffers)) return emit_slow<kTimestamp>(h, kind, payload, size);
    const uint64_t state = g_slot_state[slot].load(std::memory_order_relaxed);
    if (SONDE_LIKELY(state == active_state(h))) return emit_active<kTimestamp>(h, kind, payload, size);
    if (state == stopped_state(h)) return SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE;
    return emit_slow<kTimestamp>(h, kind, payload, size);
}

}  // namespace
}  // namespace sonde::buffer

using namespace sonde::buffer;

extern "C" {

SONDE_API sonde_status_t sonde_emit(sonde_buffer_id_t buffer, uint32_t kind, const void *payload,
                                    uint32_t size) {
    return emit_impl<false>(buffer.handle, kind, payload, size);
}

SONDE_API sonde_status_t sonde_emit_timestamped(sonde_buffer_id_t buffer, uint32_t kind, const void *payload,
                                                uint32_t size) {
    return emit_impl<true>(buffer.handle, kind, payload, size);
}

SONDE_API const volatile uint64_t *sonde_buffer_state_word(sonde_buffer_id_t buffer) {
    const uint64_t h = buffer.handle;
    const uint32_t slot = static_cast<uint32_t>(h);
    if (h == 0 || slot >= kMaxBuffers) return nullptr;
    const uint64_t state = g_slot_state[slot].load(std::memory_order_relaxed);
    if (state != active_state(h) && state != stopped_state(h)) return nullptr;
    // The encoding (generation << 2 | allocated << 1 | active) is part of the ABI through
    // sonde_buffer_is_recording in buffer.h.
    return reinterpret_cast<const volatile uint64_t *>(&g_slot_state[slot]);
}

// sonde_writer_state_t is the first fields of Writer, and Chunk::commit the first word of a
// chunk (buffer.h; the inline path in the public header depends on both).
static_assert(std::is_standard_layout<Writer>::value && std::is_standard_layout<Chunk>::value,
              "offsetof below needs standard-layout types");
static_assert(offsetof(Writer, handle) == offsetof(sonde_writer_state_t, handle) &&
                  offsetof(Writer, owner) == offsetof(sonde_writer_state_t, owner) &&
                  offsetof(Writer, pos) == offsetof(sonde_writer_state_t, pos) &&
                  offsetof(Writer, end) == offsetof(sonde_writer_state_t, end) &&
                  offsetof(Writer, base) == offsetof(sonde_writer_state_t, base) &&
                  offsetof(Writer, chunk) == offsetof(sonde_writer_state_t, commit) &&
                  offsetof(Writer, records) == offsetof(sonde_writer_state_t, records) &&
                  offsetof(Writer, busy) == offsetof(sonde_writer_state_t, busy) &&
                  offsetof(Chunk, commit) == 0,
              "Writer must begin with sonde_writer_state_t's fields");
static_assert(sizeof(std::atomic<uint64_t>) == 8 && sizeof(std::atomic<uint32_t>) == 4 &&
                  std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "the inline path uses plain integers with atomic builtins");
static_assert(sizeof(sonde_writer_state_t) == 56 && sizeof(sonde_producer_t) == SONDE_PRODUCER_SIZE_1_2,
              "ABI 1.2 layouts");

SONDE_API sonde_status_t sonde_buffer_producer(sonde_buffer_id_t buffer, sonde_producer_t *producer) {
    if (producer == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (producer->struct_size < SONDE_PRODUCER_SIZE_1_2) return SONDE_STATUS_ERROR_INCOMPATIBLE_ABI;
    // Until it is filled, the producer sends every record to sonde_emit.
    producer->writer = nullptr;
    const uint64_t h = buffer.handle;
    const uint32_t slot = static_cast<uint32_t>(h);
    if (!sonde::core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    if (h == 0 || slot >= kMaxBuffers) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
    const uint64_t state = g_slot_state[slot].load(std::memory_order_relaxed);
    if (state != active_state(h) && state != stopped_state(h)) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
    ThreadState *t;
    try {
        t = thread_state();
    } catch (...) {
        return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    }
    producer->buffer = buffer;
    producer->state = reinterpret_cast<const uint64_t *>(&g_slot_state[slot]);
    producer->active = active_state(h);
    producer->writer = reinterpret_cast<sonde_writer_state_t *const *>(&t->writers[slot]);
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_reserve(sonde_buffer_id_t buffer, uint32_t kind, uint32_t size,
                                       void **payload) {
    try {
        if (payload == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
        *payload = nullptr;
        const uint64_t h = buffer.handle;
        const uint32_t slot = static_cast<uint32_t>(h);
        const sonde_status_t accepting = check_accepting(h, kind, size);
        if (accepting != SONDE_STATUS_SUCCESS) return accepting;
        const uint32_t need = 8 + ((size + 7) & ~7u);
        Writer *w = nullptr;
        const sonde_status_t st = begin_record(h, slot, need, &w);
        if (st != SONDE_STATUS_SUCCESS) return st;
        char *p = w->pos;
        store64(p, need | static_cast<uint64_t>(kind) << 32);
        if (size & 7) store64(p + need - 8, 0);
        w->reserve_need = need;
        w->real_end = w->end;
        w->end = w->pos;  // blocks other records of this thread until commit
        *payload = p + 8;
        return SONDE_STATUS_SUCCESS;  // busy stays set until sonde_commit
    } catch (...) {
        return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    }
}

SONDE_API sonde_status_t sonde_commit(sonde_buffer_id_t buffer) {
    const uint64_t h = buffer.handle;
    const uint32_t slot = static_cast<uint32_t>(h);
    if (slot >= kMaxBuffers) return not_accepting(h);
    ThreadState *t = tls_thread;
    Writer *w = t ? t->writers[slot] : &g_detached_writer;
    if (h == 0 || w->handle.load(std::memory_order_relaxed) != h) {
        // No reservation of this thread is open for this buffer: a phase error when the
        // buffer exists, else the reason it does not.
        if (!sonde::core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        const uint64_t state = g_slot_state[slot].load(std::memory_order_relaxed);
        if (h != 0 && (state == active_state(h) || state == stopped_state(h)))
            return SONDE_STATUS_ERROR_PHASE_FAILURE;
        return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;
    }
    if (w->reserve_need == 0) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    w->end = w->real_end;
    char *np = w->pos + w->reserve_need;
    w->reserve_need = 0;
    publish(w, np);
    busy_exit(w);
    return SONDE_STATUS_SUCCESS;
}

}  // extern "C"
