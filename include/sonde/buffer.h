/**
 * @file buffer.h
 * @brief Buffers: per-thread chunks that producers fill and Sonde delivers to a callback.
 *
 * A buffer belongs to a session. Each producing thread writes into a chunk of its own with
 * plain stores (no lock, no atomic read-modify-write). A full chunk is handed to delivery;
 * delivery calls the buffer's callback with `[begin, end)` spans of whole records, from the
 * Sonde delivery pool's workers or from the thread that asked for delivery (flush, stop,
 * destroy, thread exit, finalize). Callbacks of one buffer never run concurrently with each
 * other; those of different buffers may.
 * See docs/buffers.md for the lifecycle and guarantees.
 */
#ifndef SONDE_BUFFER_H
#define SONDE_BUFFER_H

#include <sonde/defs.h>
#include <sonde/record.h>
#include <sonde/status.h>

SONDE_BEGIN_DECLS

/**
 * @brief Receives delivered records.
 *
 * @param begin First record of the span; always a SONDE_RECORD_KIND_THREAD record.
 * @param end One past the last record.
 * @param session The buffer's session.
 * @param buffer The buffer.
 * @param user_data The pointer given to ::sonde_create_buffer.
 *
 * The span is valid only during the call. From inside any buffer callback, whichever buffer
 * and session they name, ::sonde_flush_data, ::sonde_stop_session, ::sonde_destroy_buffer,
 * ::sonde_destroy_session and ::sonde_finalize do nothing and answer
 * SONDE_STATUS_ERROR_IN_CALLBACK (each would wait for deliveries, the running one among them).
 * Every other Sonde function may be called. Emitting into the callback's own buffer never
 * waits, whatever its policy: when no chunk is free the record is dropped and counted.
 * Emitting into another LOSSLESS buffer may wait up to that buffer's lossless timeout.
 * @since 1.0
 */
typedef void (*sonde_buffer_callback_t)(const sonde_record_header_t *begin,
                                        const sonde_record_header_t *end,
                                        sonde_session_id_t session, sonde_buffer_id_t buffer,
                                        void *user_data);

/** @brief Buffer property kinds (sonde_buffer_property_t::kind). @since 1.0 */
enum sonde_buffer_property_kind_value {
    SONDE_BUFFER_PROPERTY_KIND_INTERVAL_FLUSH = 0,   /**< Deliver everything every `value` ns; 0 (default) = off. */
    SONDE_BUFFER_PROPERTY_KIND_POLICY = 1,           /**< A sonde_buffer_policy_value; default LOSSLESS. */
    SONDE_BUFFER_PROPERTY_KIND_WATERMARK = 2,        /**< Deliver full chunks once this many bytes wait; default size / 2. */
    SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT = 3, /**< LOSSLESS: longest wait for space in ns, then drop; default 1 s. */
    SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE = 4,       /**< Bytes per thread chunk, power of two 4 KiB..64 MiB; default min(64 KiB, size / 4). */
    SONDE_BUFFER_PROPERTY_KIND_DELIVERY = 5,         /**< A sonde_buffer_delivery_value; default THREAD. @since 1.2 */
    /**
     * 1: the buffer's callbacks may run concurrently, on several workers of the delivery pool
     * and on threads that flush, each span still the records of one producer thread in their
     * order, and one producer's spans never overlap each other; 0 (default): one callback of
     * the buffer at a time. For a consumer whose callback is thread-safe. THREAD delivery only
     * (with POLL: INVALID_ARGUMENT). @since 1.2
     */
    SONDE_BUFFER_PROPERTY_KIND_CONCURRENT_CALLBACKS = 6
};

/**
 * @brief What a producer does when no chunk is free (SONDE_BUFFER_PROPERTY_KIND_POLICY).
 * @since 1.0
 */
enum sonde_buffer_policy_value {
    SONDE_BUFFER_POLICY_LOSSLESS = 0, /**< Wait for space up to the lossless timeout, then drop and count. */
    SONDE_BUFFER_POLICY_DISCARD = 1   /**< Drop the record at once and count it. */
};

/**
 * @brief Who calls the consumer (SONDE_BUFFER_PROPERTY_KIND_DELIVERY).
 * @since 1.2
 */
enum sonde_buffer_delivery_value {
    SONDE_BUFFER_DELIVERY_THREAD = 0, /**< Sonde calls the buffer's callback: on a worker of its delivery pool, or on a thread that flushes, stops, destroys or exits. */
    SONDE_BUFFER_DELIVERY_POLL = 1    /**< Nothing is delivered until the consumer calls ::sonde_poll_buffer, which calls back on the polling thread. */
};

/** @brief One buffer property: a kind and its value. @since 1.0 */
typedef struct sonde_buffer_property_t {
    uint32_t kind;     /**< A sonde_buffer_property_kind_value. */
    uint32_t reserved; /**< Must be 0. */
    uint64_t value;    /**< The value; unit depends on the kind. */
} sonde_buffer_property_t;

/** @brief Counters of a buffer (::sonde_get_buffer_stats). May grow: set struct_size. @since 1.0 */
typedef struct sonde_buffer_stats_t {
    uint32_t struct_size;       /**< sizeof(sonde_buffer_stats_t) of the caller. */
    uint32_t reserved;          /**< Written as 0. */
    uint64_t records_emitted;   /**< Records accepted by emit/commit (delivered, dropped or pending). */
    uint64_t records_delivered; /**< Emitted records handed to the callback (THREAD and LOSS markers excluded). */
    uint64_t records_dropped;   /**< Emitted records dropped for lack of space. */
    uint64_t bytes_delivered;   /**< Bytes handed to the callback, markers included. */
    uint64_t callbacks;         /**< Callback invocations. */
    uint64_t callback_failures; /**< Callback invocations that threw. */
} sonde_buffer_stats_t;

/**
 * @brief Size of sonde_buffer_stats_t in ABI version 1.0, the smallest struct_size
 * ::sonde_get_buffer_stats accepts.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.1
 */
#define SONDE_BUFFER_STATS_SIZE_1_0 56u

/**
 * @brief Creates a buffer in a session.
 *
 * @param session The owning session (started or stopped).
 * @param size Total bytes of chunk memory; at least two chunks.
 * @param callback Receives delivered spans; must not be NULL, unless the buffer has
 *        SONDE_BUFFER_DELIVERY_POLL delivery (its callback is then never called and may be NULL).
 * @param user_data Passed to the callback.
 * @param properties Array of properties, NULL when num_properties is 0. Each kind at most once.
 * @param num_properties Entries in properties.
 * @param[out] out The new buffer's id.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NOT_INITIALIZED,
 *         SONDE_STATUS_ERROR_SESSION_NOT_FOUND, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (size, unknown or repeated kind, bad value,
 *         non-zero reserved), SONDE_STATUS_ERROR_LIMIT, SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_create_buffer(sonde_session_id_t session, uint64_t size,
                                             sonde_buffer_callback_t callback, void *user_data,
                                             const sonde_buffer_property_t *properties,
                                             uint32_t num_properties, sonde_buffer_id_t *out);

/**
 * @brief Delivers every record emitted into the buffer before the call, then returns.
 *
 * For a buffer with SONDE_BUFFER_DELIVERY_POLL nothing is called: every record emitted
 * before the call is already pollable, and the call only wakes threads waiting in
 * ::sonde_poll_buffer.
 *
 * @param session The buffer's session.
 * @param buffer The buffer, or a zero handle for every buffer of the session.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NOT_INITIALIZED,
 *         SONDE_STATUS_ERROR_SESSION_NOT_FOUND, SONDE_STATUS_ERROR_BUFFER_NOT_FOUND,
 *         SONDE_STATUS_ERROR_IN_CALLBACK, SONDE_STATUS_ERROR_CALLBACK_FAILED,
 *         SONDE_STATUS_ERROR_CORRUPTED_SESSION_BUFFER.
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_flush_data(sonde_session_id_t session, sonde_buffer_id_t buffer);

/**
 * @brief Validates `record` and the header after it, and returns that next record.
 *
 * Call it from inside the buffer's callback, on records of the span being delivered.
 * @param record A record inside the current span.
 * @param[out] next The following record, or the span's end after the last one.
 * @param session The session given to the callback.
 * @param buffer The buffer given to the callback.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_RECORD_CORRUPTED (record or next header has a bad size, kind or
 *         alignment, or would extend past the span's end; *next is set to NULL),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (record is not inside the span),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (no span of that buffer is being delivered on
 *         this thread), SONDE_STATUS_ERROR_BUFFER_NOT_FOUND, SONDE_STATUS_ERROR_SESSION_NOT_FOUND.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_next_record(const sonde_record_header_t *record,
                                           const sonde_record_header_t **next,
                                           sonde_session_id_t session, sonde_buffer_id_t buffer);

/**
 * @brief Reads a buffer's counters. After a flush with no producer running,
 * records_emitted == records_delivered + records_dropped exactly.
 *
 * @param session The buffer's session.
 * @param buffer The buffer.
 * @param[in,out] stats struct_size must be set; only that many bytes are written.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NOT_INITIALIZED,
 *         SONDE_STATUS_ERROR_SESSION_NOT_FOUND, SONDE_STATUS_ERROR_BUFFER_NOT_FOUND,
 *         SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_INCOMPATIBLE_ABI (struct_size
 *         smaller than ::SONDE_BUFFER_STATS_SIZE_1_0).
 * Thread-safe; callable from callbacks.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_get_buffer_stats(sonde_session_id_t session,
                                                sonde_buffer_id_t buffer,
                                                sonde_buffer_stats_t *stats);

/**
 * @brief Delivers everything emitted before the call, then destroys the buffer. Waits for
 * emissions in progress on other threads to finish. The id becomes stale.
 *
 * A buffer with SONDE_BUFFER_DELIVERY_POLL has no callback to deliver to: the records that
 * were not polled are discarded, and the call answers SONDE_STATUS_PARTIAL_INFO when there
 * were any (the buffer is destroyed all the same). To lose nothing, stop the session, call
 * ::sonde_poll_buffer with a zero timeout until it answers SONDE_STATUS_ERROR_TIMEOUT, then
 * destroy.
 *
 * @param session The buffer's session.
 * @param buffer The buffer.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_PARTIAL_INFO (poll delivery only: records were
 *         discarded), SONDE_STATUS_ERROR_NOT_INITIALIZED,
 *         SONDE_STATUS_ERROR_SESSION_NOT_FOUND, SONDE_STATUS_ERROR_BUFFER_NOT_FOUND,
 *         SONDE_STATUS_ERROR_IN_CALLBACK, SONDE_STATUS_ERROR_CALLBACK_FAILED.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_destroy_buffer(sonde_session_id_t session, sonde_buffer_id_t buffer);

/**
 * @brief Delivers the records of a SONDE_BUFFER_DELIVERY_POLL buffer that are ready, on the
 * calling thread, waiting up to `timeout_ns` for some.
 *
 * Ready means committed: records in chunks that producers have sealed, and the committed
 * part of chunks they are still filling, so everything emitted before the call (or before a
 * ::sonde_flush_data, a stop, or the exit of the producing thread) is delivered by it. While
 * it waits, the call looks again at least every millisecond, and at once when a producer
 * seals chunks past the watermark, waits for space, or a flush, stop or interval asks for
 * delivery. `callback` receives the same spans a THREAD buffer's callback would: each begins
 * with a THREAD record, holds one thread's records in emission order, and carries LOSS
 * records ahead of the next record of a thread that lost some; ::sonde_next_record works in
 * it. The buffer's counters count these calls and records as deliveries. Delivered chunks
 * go back to the buffer at once, so LOSSLESS producers waiting for space resume.
 *
 * Sonde's delivery pool never calls back for a poll buffer. Calls on one buffer are
 * serialised: a second thread polling the same buffer waits for the first one's callbacks.
 *
 * @param session The buffer's session (started or stopped).
 * @param buffer A buffer created with SONDE_BUFFER_DELIVERY_POLL.
 * @param timeout_ns How long to wait for records; 0 looks once, UINT64_MAX waits for ever.
 * @param callback Receives the spans, on this thread, before the call returns.
 * @param user_data Passed to the callback.
 * @return SONDE_STATUS_SUCCESS (the callback received at least one span),
 *         SONDE_STATUS_ERROR_TIMEOUT (nothing was ready in time),
 *         SONDE_STATUS_ERROR_NOT_INITIALIZED, SONDE_STATUS_ERROR_SESSION_NOT_FOUND,
 *         SONDE_STATUS_ERROR_BUFFER_NOT_FOUND (also when the buffer is destroyed during the
 *         wait), SONDE_STATUS_ERROR_NULL_POINTER (callback is NULL),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (the buffer has THREAD delivery),
 *         SONDE_STATUS_ERROR_IN_CALLBACK (called from inside any buffer callback),
 *         SONDE_STATUS_ERROR_CALLBACK_FAILED (the callback threw; the span counts as
 *         delivered), SONDE_STATUS_ERROR_CORRUPTED_SESSION_BUFFER.
 * Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_poll_buffer(sonde_session_id_t session, sonde_buffer_id_t buffer,
                                           uint64_t timeout_ns, sonde_buffer_callback_t callback,
                                           void *user_data);

/**
 * @brief Emits one record (hot path: no lock, no allocation after the thread's first record).
 *
 * @param buffer Target buffer.
 * @param kind A standard kind (not THREAD or LOSS; payload at least the kind's struct) or
 *        SONDE_RECORD_KIND_USER..SONDE_RECORD_KIND_USER_MAX.
 * @param payload size bytes, copied; may be NULL when size is 0.
 * @param size Payload bytes.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE (nothing recorded),
 *         SONDE_STATUS_ERROR_BUFFER_FULL (dropped and counted), SONDE_STATUS_ERROR_BUFFER_NOT_FOUND,
 *         SONDE_STATUS_ERROR_NOT_INITIALIZED (also at once in the child of a fork(), see
 *         session.h), SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (kind, or size larger than a chunk allows),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (a reservation of this thread is open),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_emit(sonde_buffer_id_t buffer, uint32_t kind, const void *payload,
                                    uint32_t size);

/**
 * @brief Like ::sonde_emit, and Sonde stores a timestamp (::sonde_get_timestamp) in the record
 * (SONDE_RECORD_FLAG_TIMESTAMP; read it with ::sonde_record_timestamp).
 * @param buffer As ::sonde_emit. @param kind As ::sonde_emit. @param payload As ::sonde_emit.
 * @param size As ::sonde_emit.
 * @return As ::sonde_emit.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_emit_timestamped(sonde_buffer_id_t buffer, uint32_t kind,
                                                const void *payload, uint32_t size);

/**
 * @brief Reserves space for one record in the calling thread's chunk (zero copy).
 *
 * Write the payload, then call ::sonde_commit on the same thread. One reservation per thread
 * and buffer may be open; ::sonde_destroy_buffer from another thread waits for it.
 * @param buffer Target buffer.
 * @param kind As for ::sonde_emit.
 * @param size Payload bytes to reserve.
 * @param[out] payload Where to write size bytes (8-byte aligned).
 * @return As ::sonde_emit; on failure *payload is NULL and nothing is open.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_reserve(sonde_buffer_id_t buffer, uint32_t kind, uint32_t size,
                                       void **payload);

/**
 * @brief Publishes the record reserved by this thread with ::sonde_reserve.
 * @param buffer The buffer of the open reservation.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_PHASE_FAILURE (no open reservation),
 *         SONDE_STATUS_ERROR_BUFFER_NOT_FOUND, SONDE_STATUS_ERROR_NOT_INITIALIZED.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_commit(sonde_buffer_id_t buffer);

/**
 * @brief The address of the word that tells, without a call, whether a buffer records.
 *
 * Sonde keeps the word in memory that lives as long as the process, so the pointer never
 * dangles; the word changes when the session starts or stops and when the buffer is
 * destroyed. Test it with ::sonde_buffer_is_recording before calling ::sonde_emit to make an
 * emission point of a stopped session cost one load and one compare in the caller (the pattern
 * of LTTng-UST's tracepoint state check).
 * @param buffer A buffer.
 * @return The word, or NULL when the id does not name a live buffer. Thread-safe.
 * @since 1.0
 */
SONDE_API const volatile uint64_t *sonde_buffer_state_word(sonde_buffer_id_t buffer);

/**
 * @brief Whether `buffer` accepts records now, read from its state word (header-inline).
 *
 * A true answer can turn false at any moment (a concurrent stop); ::sonde_emit then answers
 * SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE, which is harmless.
 * @param word The result of ::sonde_buffer_state_word for this buffer (NULL gives false).
 * @param buffer The same buffer.
 * @return true when the buffer's session is started.
 * @since 1.0
 */
static inline bool sonde_buffer_is_recording(const volatile uint64_t *word, sonde_buffer_id_t buffer) {
    return word != NULL && *word == (((buffer.handle >> 32) << 2) | 3u);
}

/**
 * @name Header-inline emission
 * The record ::sonde_emit writes, written by code inlined into the caller: no call while the
 * thread's chunk has room. A thread asks once for a ::sonde_producer_t (::sonde_buffer_producer)
 * and keeps it in a thread-local variable; ::sonde_emit_inline then costs what the record's
 * stores cost. Anything unusual (the first record of the thread, a full chunk, a stopped or
 * destroyed buffer, an open reservation, another kind than a user kind, a payload over 128
 * bytes, a producer used on another thread) goes through ::sonde_emit, which answers as it
 * always does. See docs/buffers.md, "Header-inline emission".
 * @{
 */

/**
 * @brief The first fields of the library's per-thread writer for one buffer, read and written
 * by ::sonde_emit_inline on the writer's own thread.
 *
 * The library owns it; the layout is ABI from 1.2 and never changes (a later need adds another
 * struct, not a field here). Fields marked atomic are accessed with atomic operations.
 * @since 1.2
 */
typedef struct sonde_writer_state {
    uint64_t handle;  /**< Atomic: the buffer this writer serves now (sonde_buffer_id_t::handle), 0 for none. */
    uint64_t owner;   /**< Atomic: the thread pointer of the writer's thread (0: no thread's). */
    char *pos;        /**< Next free byte of the current chunk (8-byte aligned). */
    char *end;        /**< End of the room (equal to pos while a reservation is open). */
    char *base;       /**< First byte of the current chunk's records. */
    uint64_t *commit; /**< Atomic: the current chunk's commit word, records << 32 | bytes used from base. */
    uint32_t records; /**< Records in the current chunk. */
    uint32_t busy;    /**< Atomic: 1 while the thread writes a record (the handshake with stop and destroy). */
} sonde_writer_state_t;

/**
 * @brief One thread's handle on one buffer for ::sonde_emit_inline; filled by
 * ::sonde_buffer_producer.
 *
 * Set struct_size before the call; the other fields are the library's. A producer serves the
 * thread that asked for it, as long as the buffer lives: on another thread, after the buffer
 * is destroyed, in a forked child or after the thread's exit, ::sonde_emit_inline takes the
 * out-of-line path and answers as ::sonde_emit does, never writing into another thread's chunk.
 * @since 1.2
 */
typedef struct sonde_producer {
    uint32_t struct_size;                /**< ::SONDE_PRODUCER_SIZE_1_2 or more. */
    uint32_t reserved;                   /**< 0. */
    sonde_buffer_id_t buffer;            /**< The buffer. */
    sonde_writer_state_t *const *writer; /**< Atomic: the owning thread's writer cell for the buffer's slot. */
    const uint64_t *state;               /**< Atomic: the buffer's state word (::sonde_buffer_state_word). */
    uint64_t active;                     /**< The state word's value while the buffer records. */
} sonde_producer_t;

/** @brief sizeof(sonde_producer_t) in 1.2. @since 1.2 */
#define SONDE_PRODUCER_SIZE_1_2 40u

/**
 * @brief Fills a producer for the calling thread and `buffer`.
 *
 * Call it once per thread and buffer (it may allocate the thread's state); keep the result in
 * a thread-local variable. It does not emit, and a buffer of a stopped session gives a producer
 * too (records are refused until the session starts).
 * @param buffer A live buffer.
 * @param[in,out] producer struct_size set by the caller; the rest is filled on success.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INCOMPATIBLE_ABI (struct_size below ::SONDE_PRODUCER_SIZE_1_2),
 *         SONDE_STATUS_ERROR_BUFFER_NOT_FOUND (stale or unknown id),
 *         SONDE_STATUS_ERROR_NOT_INITIALIZED, SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 *         On failure the producer is left unusable: ::sonde_emit_inline then calls ::sonde_emit.
 * Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_buffer_producer(sonde_buffer_id_t buffer, sonde_producer_t *producer);

/** @cond SONDE_INTERNAL */
#if defined(__SANITIZE_THREAD__)
/** @brief Defined in a ThreadSanitizer build (internal to ::sonde_emit_inline). @since 1.2 */
#define SONDE_INLINE_TSAN_ 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
/** @brief Defined in a ThreadSanitizer build (internal to ::sonde_emit_inline). @since 1.2 */
#define SONDE_INLINE_TSAN_ 1
#endif
#endif
#if defined(SONDE_INLINE_TSAN_)
/** @brief The busy handshake's order: sequentially consistent under ThreadSanitizer. @since 1.2 */
#define SONDE_INLINE_ORDER_ __ATOMIC_SEQ_CST
#else
/** @brief The busy handshake's order: relaxed, with a compiler fence. @since 1.2 */
#define SONDE_INLINE_ORDER_ __ATOMIC_RELAXED
#endif
/**
 * @brief The calling thread's thread pointer (internal to ::sonde_emit_inline).
 *
 * It names the calling thread in one load; where the compiler cannot give it, 0 never matches
 * a writer's owner and every record takes the out-of-line path.
 * @return The thread pointer, or 0.
 * @since 1.2
 */
static inline uint64_t sonde_thread_pointer_(void) {
#if (defined(__x86_64__) || defined(__aarch64__)) && (defined(__GNUC__) || defined(__clang__))
    return (uint64_t)(uintptr_t)__builtin_thread_pointer();
#else
    return 0;
#endif
}
/** @endcond */

/**
 * @brief ::sonde_emit, inlined: writes one record into the calling thread's chunk.
 *
 * The fast path checks that the writer belongs to this thread and the buffer, that the kind
 * is a user kind, the payload at most 128 bytes and the chunk has room, then makes the same
 * busy handshake and stores as ::sonde_emit (no lock, no atomic read-modify-write, no call).
 * Otherwise it calls ::sonde_emit, so every answer and guarantee of ::sonde_emit holds.
 * @param producer Filled by ::sonde_buffer_producer on this thread (not NULL).
 * @param kind As ::sonde_emit. @param payload As ::sonde_emit. @param size As ::sonde_emit.
 * @return As ::sonde_emit.
 * @since 1.2
 */
static inline sonde_status_t sonde_emit_inline(const sonde_producer_t *producer, uint32_t kind,
                                               const void *payload, uint32_t size) {
    const uint32_t need = 8u + ((size + 7u) & ~7u);
    sonde_writer_state_t *w;
    char *p;
    uint64_t word;
    if (__builtin_expect(producer->writer == NULL || kind - SONDE_RECORD_KIND_USER > 0x7FFFu ||
                             size > 128u || (payload == NULL && size != 0u),
                         0))
        return sonde_emit(producer->buffer, kind, payload, size);
    w = __atomic_load_n(producer->writer, __ATOMIC_RELAXED);
    if (__builtin_expect(__atomic_load_n(&w->handle, __ATOMIC_RELAXED) != producer->buffer.handle ||
                             __atomic_load_n(&w->owner, __ATOMIC_RELAXED) != sonde_thread_pointer_() ||
                             (size_t)(w->end - w->pos) < need,
                         0))
        return sonde_emit(producer->buffer, kind, payload, size);
    __atomic_store_n(&w->busy, 1u, SONDE_INLINE_ORDER_);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (__builtin_expect(__atomic_load_n(producer->state, SONDE_INLINE_ORDER_) != producer->active, 0)) {
        __atomic_store_n(&w->busy, 0u, __ATOMIC_RELEASE);
        return sonde_emit(producer->buffer, kind, payload, size);
    }
    p = w->pos;
    word = (uint64_t)need | (uint64_t)kind << 32;
    __builtin_memcpy(p, &word, 8);
    if (size & 7u) {
        word = 0;
        __builtin_memcpy(p + 8 + (size & ~7u), &word, 8);
    }
    if (size != 0u) __builtin_memcpy(p + 8, payload, size);
    w->pos = p + need;
    w->records += 1u;
    __atomic_store_n(w->commit, (uint64_t)w->records << 32 | (uint64_t)(uint32_t)(w->pos - w->base),
                     __ATOMIC_RELEASE);
    __atomic_store_n(&w->busy, 0u, __ATOMIC_RELEASE);
    return SONDE_STATUS_SUCCESS;
}
/** @} */

SONDE_END_DECLS

#endif /* SONDE_BUFFER_H */
