// Buffers: chunks, per-thread writers and delivery.
//
// Ownership and threads
// ---------------------
// * Buffer: made by create_buffer (buffer.cpp), entered into and removed from the buffer table
//   under Table::mu (table.h). Holds `chunk_count` chunks of `chunk_size` bytes in one mapping.
//   Shared by producers (emit), the delivery pool's workers, and threads that flush/stop/destroy/exit;
//   kept alive by shared_ptr.
// * Writer: one per (thread, buffer slot), owned by that thread's ThreadState and reused for
//   every buffer that later occupies the slot. Its write window (pos, end, chunk, records,
//   reservation) is written only by the owning thread. Destroy/finalize only unlink it and
//   clear `handle`; attach() resets the window on the owning thread. A writer is linked into
//   one buffer at a time: when a slot's new buffer is attached before the previous buffer's
//   drain detached the writer (handle still non-zero), attach() retires it to the thread's
//   `retired` list and makes a new one. The chunk pointer read
//   under Buffer::mu and the sealed list are the hand-over points to delivery.
// * Chunk: owned by exactly one of: the free list (Buffer::mu), a writer as its current chunk
//   (the producer appends; delivery may read the committed prefix in place), a writer's sealed
//   list (Buffer::mu), the buffer's orphan list (poll delivery: chunks of threads that exited;
//   Buffer::mu), or delivery (Buffer::deliver_mu, and for a concurrent buffer its writer's
//   Writer::deliver_mu) until it is returned to the free list. Delivery may overwrite a chunk's
//   delivered prefix: a later part of a chunk gets its THREAD marker written in place just
//   before it, over bytes already delivered.
//
// Dropping (DISCARD): a producer that finds no free chunk under Buffer::mu notes the
// buffer's `free_gen` as it read it there (Writer::starved, starved_gen) and drops. Until
// `free_gen` changes, its records are dropped without the lock: a relaxed load of `free_gen`,
// a clock read and the writer's own counters (emitted, dropped, loss_*), no system call, no
// write to shared memory; the emit path's full-chunk branch does this itself (emit_no_room,
// after the busy handshake) and refill does it for the other entries. Every return of chunks
// to the free list (free_chunks_locked, under Buffer::mu) bumps `free_gen`; since the producer
// read it under the same lock, any chunk returned after it looked changes the generation, and
// its next record takes the lock and looks again. LOSSLESS producers wait on space_cv instead
// and never use it.
//
// Publication: the producer writes a record, then release-stores the chunk's commit word
// (records << 32 | bytes). Delivery acquire-loads it and reads only bytes below it.
//
// Busy handshake (what makes destroy safe without a lock on the hot path): a producer stores
// busy = 1, then reads the slot state; destroy stores the new slot state, runs a process-wide
// memory barrier (membarrier), then waits for busy == 0 on every writer. Either the producer
// sees the new state and backs out, or destroy sees busy and waits. Under ThreadSanitizer both
// sides use seq_cst atomics instead, which TSan understands.
//
// fork(): the child keeps nothing of this. Its fork handler (forked_child in table.cpp, through
// the core) makes every slot refuse producers, forgets the forking thread's ThreadState (it
// stays, never freed, in the list of every thread state, like those of the parent's other
// threads) and re-creates the locks of the thread list, the table, the delivery pool and the
// barrier in place; the child's next sonde_initialize parks the parent's buffers (table.h). Delivery code that runs a
// callback checks the core's fork epoch afterwards: a callback that forked leaves the child
// in Sonde code, which then returns without touching the parent's buffers again.
//
// Poll delivery (SONDE_BUFFER_DELIVERY_POLL, poll.cpp): no thread of Sonde's calls the
// buffer's callback. The thread in sonde_poll_buffer is the consumer: it holds deliver_mu
// while it hands spans to the callback it was given (so pollers of one buffer are serialised
// like callbacks), and waits without any lock held on Buffer::poll_cv (with Buffer::mu) for
// `poll_seq` to change, re-checking at least every millisecond because commits do not
// signal. Producers that seal past the watermark or wait for space, flushes, stops and the
// delivery pool's intervals bump `poll_seq` under Buffer::mu and notify instead of
// delivering. A thread that exits moves its sealed chunks to the buffer's `orphans` list
// (Buffer::mu), where the next poll finds them; the writer itself is freed as in thread mode.
// Destroy and finalize discard what was not polled and count it as dropped.
//
// Locks, in order: Buffer::deliver_mu -> Writer::deliver_mu -> Runtime::mu (core) -> Table::mu
// -> Buffer::mu. deliver_mu serialises callbacks of one buffer (held shared for a concurrent
// buffer, whose writers' locks serialise each producer's spans instead); no Sonde lock but the
// delivery locks is held while a callback runs (a callback may create sessions and buffers,
// never flush, stop or destroy).
//
// Files: buffer.cpp creation; table.cpp the slot table and the session hooks; api.cpp the C
// API; emit.cpp the producer hot path; producer.cpp its slow paths and thread exit;
// consumer.cpp hands committed spans to callbacks; poll.cpp poll delivery; delivery.cpp the
// delivery pool;
// barrier.cpp the process-wide barrier; record.cpp reading records.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include <sonde/buffer.h>

#if defined(__SANITIZE_THREAD__)
#define SONDE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SONDE_TSAN 1
#endif
#endif

#define SONDE_LIKELY(x) __builtin_expect(!!(x), 1)
#define SONDE_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace sonde::buffer {

constexpr uint32_t kMaxBuffers = 1024;
constexpr uint64_t kGuard = 0x5AFEC0DE5AFEC0DEull;
constexpr uint32_t kThreadRecordSize = 8 + sizeof(sonde_thread_record_t);
constexpr uint32_t kLossRecordSize = 8 + sizeof(sonde_loss_record_t);
// Room kept at the start of every chunk for its THREAD marker and a LOSS record.
constexpr uint32_t kChunkOverhead = kThreadRecordSize + kLossRecordSize;

struct Buffer;
struct ThreadState;

// ---- slot states: the hot path's one shared read --------------------------------------
// state = generation << 2 | allocated << 1 | active. Handle = generation << 32 | slot.
// This encoding is public ABI: sonde_buffer_is_recording (buffer.h) compares against it.
extern std::atomic<uint64_t> g_slot_state[kMaxBuffers];

inline uint64_t active_state(uint64_t handle) { return (handle >> 32) << 2 | 3u; }
inline uint64_t stopped_state(uint64_t handle) { return (handle >> 32) << 2 | 2u; }

struct Chunk {
    std::atomic<uint64_t> commit{0};  // producer: records << 32 | bytes used
    uint32_t delivered_bytes = 0;     // delivery (deliver_mu)
    uint32_t delivered_records = 0;   // delivery (deliver_mu)
    uint64_t thread_id = 0;           // set by the producer that takes the chunk (Buffer::mu)
    uint64_t os_tid = 0;
    Chunk *next = nullptr;  // free list / sealed list / orphan list link (Buffer::mu)
    char *data = nullptr;   // capacity bytes, then an 8-byte guard word
};

// The first eight fields are sonde_writer_state_t (buffer.h), which sonde_emit_inline reads and
// writes in the caller's code: their order, types and offsets are ABI (static_asserts in
// emit.cpp). Chunk::commit is the chunk's first word, so `chunk` is the state's `commit`.
// A writer belongs to one thread for its life; `owner` is that thread's thread pointer (set
// at creation; 0 in the detached sentinel), which the inline path compares with its own.
struct alignas(64) Writer {
    // ---- producer-owned ----
    std::atomic<uint64_t> handle{0};  // buffer handle this writer serves; 0 = detached
    std::atomic<uint64_t> owner{0};   // the owning thread's thread pointer (see above)
    char *pos = nullptr;              // next free byte in the current chunk
    char *end = nullptr;              // end of usable room (== pos while a reservation is open)
    char *base = nullptr;             // current chunk's data
    Chunk *chunk = nullptr;           // current chunk
    uint32_t records = 0;             // records in the current chunk
    std::atomic<uint32_t> busy{0};
    char *real_end = nullptr;   // end saved while a reservation is open
    Buffer *buffer = nullptr;   // attached buffer (valid while handle is current)
    uint32_t reserve_need = 0;  // bytes of the open reservation, 0 when none
    // Drops not yet reported in-stream; first and last in clock::ticks(), converted to ns when
    // the LOSS record is written.
    uint64_t loss_count = 0, loss_first = 0, loss_last = 0;
    // DISCARD with no chunk: the Buffer::free_gen seen when none was free (valid when starved).
    uint64_t starved_gen = 0;
    bool starved = false;
    std::atomic<uint64_t> emitted{0};  // records of sealed chunks and drops (not the current chunk's)
    std::atomic<uint64_t> dropped{0};
    // ---- shared with delivery (Buffer::mu) ----
    Chunk *sealed_head = nullptr, *sealed_tail = nullptr;
    // A concurrent buffer's deliveries of this writer's chunks hold it (with the buffer's
    // deliver_mu shared), so that one producer's spans are delivered one at a time, in order.
    std::mutex deliver_mu;
    Writer *next_in_buffer = nullptr;
    ThreadState *thread = nullptr;
    uint32_t slot = 0;
    // ---- owning thread only ----
    Writer *next_retired = nullptr;  // ThreadState::retired list
};

// A thread's state. Its memory is never freed: at thread exit it goes to a free list for the
// next thread, so that a producer (sonde_producer_t) kept past its thread's exit still points
// at a valid writer cell, whose writer then belongs to another thread or none (owner) and
// sends the record to sonde_emit.
struct ThreadState {
    Writer *writers[kMaxBuffers];  // never null: unused slots point to a detached sentinel
    // Writers replaced while still linked into a buffer whose drain had not detached them yet
    // (the slot's previous buffer: a writer is in one buffer's list at a time). Freed once
    // their handle is 0, at the next attach or at thread exit.
    Writer *retired = nullptr;
    uint64_t thread_id = 0;
    uint64_t os_tid = 0;
    // The list of every thread state (producer.cpp, its own lock): it keeps them reachable in
    // a forked child, where the parent's threads are gone but their states may not be freed.
    ThreadState *prev_state = nullptr, *next_state = nullptr;
    ThreadState *next_free = nullptr;  // the free list (producer.cpp, g_states_mu)
};

struct Buffer {
    uint64_t handle = 0;
    uint64_t session_handle = 0;
    sonde_buffer_callback_t callback = nullptr;
    void *user_data = nullptr;
    // properties
    uint64_t interval_ns = 0;
    uint32_t policy = SONDE_BUFFER_POLICY_LOSSLESS;
    uint64_t watermark = 0;
    uint64_t lossless_timeout_ns = 1000000000ull;
    uint32_t chunk_size = 0;  // bytes per chunk including the guard word
    uint32_t capacity = 0;    // usable bytes per chunk
    uint32_t chunk_count = 0;
    uint32_t delivery = SONDE_BUFFER_DELIVERY_THREAD;  // set at creation, then read-only
    // memory
    void *mapping = nullptr;
    size_t mapping_size = 0;
    std::vector<Chunk> chunks;

    std::mutex mu;                     // free list, sealed lists, writer list
    std::condition_variable space_cv;  // LOSSLESS producers wait here for a free chunk
    Chunk *free_head = nullptr;
    // Bumped (under mu) each time chunks return to the free list; read without the lock by
    // DISCARD producers that found none (see "Dropping" above).
    std::atomic<uint64_t> free_gen{0};
    uint64_t sealed_bytes = 0;
    Writer *writers = nullptr;
    uint64_t retired_emitted = 0, retired_dropped = 0;  // of writers that detached
    bool dead = false;                                  // set by destroy (under mu and deliver_mu)
    // Poll delivery (Buffer::mu): pollers wait on poll_cv for poll_seq to change; orphans are
    // the sealed chunks of threads that exited, in order, waiting for a poll.
    std::condition_variable poll_cv;
    uint64_t poll_seq = 0;
    Chunk *orphan_head = nullptr, *orphan_tail = nullptr;

    // Held exclusively to deliver a buffer whose callbacks are serialised, to drain it and to
    // unlink a writer; held shared by the deliveries of a `concurrent` buffer, which then take
    // each writer's deliver_mu for its chunks.
    std::shared_mutex deliver_mu;
    bool concurrent = false;  // SONDE_BUFFER_PROPERTY_KIND_CONCURRENT_CALLBACKS, read-only
    std::atomic<uint64_t> delivered{0}, bytes_delivered{0}, callbacks{0}, failures{0};
    std::atomic<bool> drain_requested{false};
    // The delivery pool (delivery.cpp): sched is kIdle, kQueued (in the run queue), kRunning (a
    // worker delivers it) or kAgain (requested again while running); interval_due asks the
    // next delivery to include current chunks; next_interval_flush is the next interval
    // deadline (0 until the first scan), claimed by compare-and-swap.
    // A concurrent buffer's sched counts its queue entries and running workers instead (under
    // the pool's lock), and `again` asks a running worker for one more pass.
    std::atomic<uint32_t> sched{0};
    std::atomic<bool> again{false};
    std::atomic<bool> interval_due{false};
    std::atomic<uint64_t> next_interval_flush{0};

    std::shared_ptr<Buffer> parked_next;  // a forked child's list of the parent's buffers (table.h)

    ~Buffer();
};

// Creation (buffer.cpp; no lock held): validates the properties and maps the chunks.
sonde_status_t create_buffer(uint64_t session_handle, uint64_t size, sonde_buffer_callback_t cb,
                             void *user_data, const sonde_buffer_property_t *props, uint32_t n,
                             std::shared_ptr<Buffer> &out);
// Teardown (consumer.cpp; no lock held, the buffer already retired from the table): waits for
// producers in progress, delivers everything (a poll buffer: discards what was not polled,
// counts it as dropped and adds it to *discarded when given) and detaches every writer.
sonde_status_t drain_and_detach(Buffer &b, uint64_t *discarded = nullptr);

// Records a writer has emitted: its sealed and dropped ones plus those committed in its
// current chunk (Buffer::mu held: the producer changes `chunk` only under it).
inline uint64_t writer_emitted_locked(const Writer *w) {
    const uint64_t current = w->chunk ? w->chunk->commit.load(std::memory_order_acquire) >> 32 : 0;
    return w->emitted.load(std::memory_order_relaxed) + current;
}

// Delivery (consumer.cpp). `partial` also delivers the committed prefix of every writer's
// current chunk. Allocates nothing. In a child that forked inside a callback it stops after
// that callback and answers NOT_INITIALIZED. For a poll buffer it calls nothing and only
// wakes its pollers (poll_wake).
// `wait` (flushes, stops, exits): a concurrent buffer's writer being delivered by another
// thread is waited for; without it (pool workers) that writer is left to the other thread.
sonde_status_t deliver(Buffer &b, bool partial, bool wait = true);
// Asks for delivery of `b` (no lock held): a delivery pool worker for THREAD delivery, the
// buffer's pollers for POLL delivery (poll.cpp).
void request_delivery(Buffer &b);
// Poll delivery (poll.cpp): wakes the threads in sonde_poll_buffer (Buffer::mu held / not).
void poll_wake_locked(Buffer &b);
void poll_wake(Buffer &b);
// The poll loop behind sonde_poll_buffer (no lock held, not inside a callback).
sonde_status_t poll(Buffer &b, uint64_t timeout_ns, sonde_buffer_callback_t cb, void *user_data);
void fill_stats(Buffer &b, sonde_buffer_stats_t &s);

// Thread exit (producer.cpp; pthread key destructor).
void thread_exit(ThreadState *t);
// Fork child handler part (producer.cpp): forgets the forking thread's state, so that the
// child's thread starts afresh and its exit never delivers the parent's records.
void thread_forked_child();

// Whether the calling thread is inside a buffer callback (consumer.cpp).
bool in_callback();

// The process-wide memory barrier of the busy handshake (barrier.cpp).
void barrier_init();
void process_barrier();
// Fork child handler part: re-creates the barrier's lock; the next barrier_init registers the
// child for membarrier again.
void barrier_forked_child();

// The delivery pool (delivery.cpp): started with the runtime (one worker, more on demand up to
// SONDE_DELIVERY_THREADS or the CPU count), stopped at finalize. schedule() asks for a delivery
// of `b` by a worker (any thread, no Buffer lock held); reschedule() makes a worker look at the
// interval deadlines again (a buffer with an interval was created).
constexpr uint32_t kIdle = 0, kQueued = 1, kRunning = 2, kAgain = 3;
sonde_status_t delivery_start();
void delivery_stop();
void schedule(Buffer &b);
void delivery_reschedule();
// The number of pool workers running now.
uint32_t delivery_threads();
// Makes the delivery pool's state (at load time, so that the fork handler never allocates).
void delivery_make();
// Fork child handler part: the pool's threads do not exist in the child; forget them and
// re-create its lock and condition variable in place.
void delivery_forked_child();

}  // namespace sonde::buffer
