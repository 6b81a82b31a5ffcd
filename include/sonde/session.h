/**
 * @file session.h
 * @brief Runtime initialisation and sessions: the unit that is started and stopped.
 *
 * A session groups buffers. While a session is started, records emitted into its buffers are
 * collected; while it is stopped, emitting costs a few instructions and records nothing.
 * All functions here are thread-safe unless noted.
 *
 * fork(): the child of a process that initialised Sonde starts with Sonde not initialised.
 * The parent's sessions and buffers are the parent's: in the child every call that needs the
 * runtime (::sonde_emit, ::sonde_emit_timestamped, ::sonde_reserve, ::sonde_commit,
 * ::sonde_flush_data, ::sonde_create_session, ::sonde_start_session, ::sonde_stop_session,
 * ::sonde_destroy_session, ::sonde_create_buffer, ::sonde_destroy_buffer,
 * ::sonde_get_buffer_stats, ::sonde_finalize, ...) answers SONDE_STATUS_ERROR_NOT_INITIALIZED
 * at once, instead of waiting for a delivery pool that the child does not have, and nothing
 * the parent emitted is ever delivered in the child. The child may call ::sonde_initialize to
 * get a runtime of its own; the parent's ids stay stale there (SESSION_NOT_FOUND,
 * BUFFER_NOT_FOUND). The parent is unaffected. See docs/robustness.md.
 */
#ifndef SONDE_SESSION_H
#define SONDE_SESSION_H

#include <sonde/defs.h>
#include <sonde/status.h>

SONDE_BEGIN_DECLS

/**
 * @brief Initialises the runtime: starts the delivery pool and calibrates the clock.
 *
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_ALREADY_INITIALIZED (nothing changed),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY (nothing initialised, also when a client could not
 *         take the new runtime in), SONDE_STATUS_ERROR (a client failed otherwise; nothing
 *         initialised), SONDE_STATUS_ERROR_IN_CALLBACK (called from a buffer callback while
 *         ::sonde_finalize is under way; nothing done).
 * Thread-safe (a call that races ::sonde_finalize waits for it to finish); may be called again
 * after ::sonde_finalize (old ids stay invalid), and in the child of a fork() (which starts not
 * initialised; the parent's ids stay invalid).
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_initialize(void);

/**
 * @brief Stops and destroys every session, delivering every record emitted before the call,
 * then stops the delivery pool. Later calls other than sonde_initialize, the status and
 * version functions answer SONDE_STATUS_ERROR_NOT_INITIALIZED.
 *
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NOT_INITIALIZED (also in the child of a
 *         fork() that has not initialised Sonde itself),
 *         SONDE_STATUS_ERROR_IN_CALLBACK (called from a buffer callback; nothing done),
 *         SONDE_STATUS_ERROR_CALLBACK_FAILED (a callback threw while delivering; all else done),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY (a client ran out of memory in its shutdown event;
 *         the runtime is finalised all the same).
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_finalize(void);

/** @brief Whether ::sonde_initialize has succeeded in this process and ::sonde_finalize has not
 * run since (false in the child of a fork() until the child initialises).
 * @return true when initialised.
 * @since 1.0 */
SONDE_API bool sonde_is_initialized(void);

/**
 * @brief Optional properties of a session.
 *
 * Set struct_size to sizeof(sonde_session_properties_t). A size smaller than
 * ::SONDE_SESSION_PROPERTIES_SIZE_1_0 is refused with SONDE_STATUS_ERROR_INCOMPATIBLE_ABI; a
 * larger one than the library's is accepted only if the bytes Sonde does not know are zero
 * (else SONDE_STATUS_ERROR_NOT_SUPPORTED).
 * @since 1.0
 */
typedef struct sonde_session_properties_t {
    uint32_t struct_size; /**< sizeof(sonde_session_properties_t) of the caller. */
    uint32_t flags;       /**< Reserved, must be 0. */
    const char *name;     /**< Optional name (copied; at most 63 bytes kept), or NULL. */
} sonde_session_properties_t;

/**
 * @brief Size of sonde_session_properties_t in ABI version 1.0, the smallest struct_size
 * ::sonde_create_session accepts.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.1
 */
#define SONDE_SESSION_PROPERTIES_SIZE_1_0 16u

/**
 * @brief Creates a stopped session.
 *
 * @param props Properties, or NULL for defaults.
 * @param[out] out The new session's id.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NOT_INITIALIZED,
 *         SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_INCOMPATIBLE_ABI,
 *         SONDE_STATUS_ERROR_NOT_SUPPORTED, SONDE_STATUS_ERROR_INVALID_ARGUMENT (flags),
 *         SONDE_STATUS_ERROR_LIMIT (too many sessions), SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_create_session(const sonde_session_properties_t *props,
                                              sonde_session_id_t *out);

/**
 * @brief Starts a session: its buffers accept records from now on.
 *
 * @param session The session.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NOT_INITIALIZED,
 *         SONDE_STATUS_ERROR_SESSION_NOT_FOUND, SONDE_STATUS_ERROR_SESSION_ACTIVE (already started).
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_start_session(sonde_session_id_t session);

/**
 * @brief Stops a session, then delivers every record emitted into its buffers before the call.
 *
 * A record whose emission races with the stop is either delivered now or kept for the next
 * flush; it is never lost.
 * @param session The session.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NOT_INITIALIZED (also in a fork() child),
 *         SONDE_STATUS_ERROR_SESSION_NOT_FOUND, SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE,
 *         SONDE_STATUS_ERROR_IN_CALLBACK, SONDE_STATUS_ERROR_CALLBACK_FAILED,
 *         SONDE_STATUS_ERROR_CORRUPTED_SESSION_BUFFER.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_stop_session(sonde_session_id_t session);

/**
 * @brief Destroys a session and its buffers (stopping it first if started), delivering every
 * record emitted before the call. The id becomes stale.
 *
 * @param session The session.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NOT_INITIALIZED,
 *         SONDE_STATUS_ERROR_SESSION_NOT_FOUND, SONDE_STATUS_ERROR_IN_CALLBACK,
 *         SONDE_STATUS_ERROR_CALLBACK_FAILED.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_destroy_session(sonde_session_id_t session);

/**
 * @brief Whether a session is started.
 * @param session The session.
 * @param[out] active true when started.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NOT_INITIALIZED,
 *         SONDE_STATUS_ERROR_SESSION_NOT_FOUND, SONDE_STATUS_ERROR_NULL_POINTER.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_session_is_active(sonde_session_id_t session, bool *active);

/**
 * @brief The current time in nanoseconds of CLOCK_MONOTONIC, as Sonde timestamps records.
 *
 * Uses the invariant TSC calibrated against CLOCK_MONOTONIC when the CPU has one, else
 * clock_gettime. Callable at any time (before initialisation it uses clock_gettime).
 * Thread-safe, lock-free.
 * @return The time in nanoseconds.
 * @since 1.0
 */
SONDE_API uint64_t sonde_get_timestamp(void);

SONDE_END_DECLS

#endif /* SONDE_SESSION_H */
