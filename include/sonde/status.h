/**
 * @file status.h
 * @brief The one status type of the Sonde ABI, its values and their names.
 *
 * Values are pinned and append-only: a value that has shipped never changes meaning.
 * `SONDE_STATUS_SUCCESS` and `SONDE_STATUS_PARTIAL_INFO` mean the call did its work (the
 * latter: some of the requested data could not be provided); every other value is a failure
 * after which nothing was changed unless the function documents otherwise.
 */
#ifndef SONDE_STATUS_H
#define SONDE_STATUS_H

#include <sonde/defs.h>

SONDE_BEGIN_DECLS

/**
 * @brief A status code; one of the `SONDE_STATUS_*` values. Crosses the ABI as uint32_t.
 * @since 1.0
 */
typedef uint32_t sonde_status_t;

/** @brief The status values. @since 1.0 */
enum sonde_status_value {
    SONDE_STATUS_SUCCESS = 0,                      /**< The call succeeded. */
    SONDE_STATUS_PARTIAL_INFO = 1,                 /**< Succeeded; some requested data is missing. */
    SONDE_STATUS_ERROR = 2,                        /**< Generic failure. */
    SONDE_STATUS_ERROR_NOT_INITIALIZED = 3,        /**< Called before sonde_initialize or after sonde_finalize. */
    SONDE_STATUS_ERROR_ALREADY_INITIALIZED = 4,    /**< sonde_initialize called twice. */
    SONDE_STATUS_ERROR_INVALID_ARGUMENT = 5,       /**< An argument is out of its documented range. */
    SONDE_STATUS_ERROR_NULL_POINTER = 6,           /**< A required pointer argument is NULL. */
    SONDE_STATUS_ERROR_SESSION_NOT_FOUND = 7,      /**< The session id is stale, forged or destroyed. */
    SONDE_STATUS_ERROR_BUFFER_NOT_FOUND = 8,       /**< The buffer id is stale, forged or destroyed. */
    SONDE_STATUS_ERROR_SESSION_ACTIVE = 9,         /**< The operation needs a stopped session. */
    SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE = 10,    /**< The operation needs a started session. */
    SONDE_STATUS_ERROR_RECORD_CORRUPTED = 11,      /**< A record header is invalid (size, kind, alignment). */
    SONDE_STATUS_ERROR_CORRUPTED_SESSION_BUFFER = 12, /**< Buffer memory was overwritten (guard word broken). */
    SONDE_STATUS_ERROR_BUFFER_FULL = 13,           /**< No space: the record was dropped and counted. */
    SONDE_STATUS_ERROR_OUT_OF_MEMORY = 14,         /**< An allocation failed. */
    SONDE_STATUS_ERROR_BUFFER_TOO_SHORT = 15,      /**< An output array or string is too small; see actual_size. */
    SONDE_STATUS_ERROR_ILLEGAL_ID = 16,            /**< An id (client, method, thread, module, ...) is unknown. */
    SONDE_STATUS_ERROR_NOT_SUPPORTED = 17,         /**< The request or a non-zero field is not supported. */
    SONDE_STATUS_ERROR_PHASE_FAILURE = 18,         /**< Called in the wrong phase (order of calls). */
    SONDE_STATUS_ERROR_INCOMPATIBLE_ABI = 19,      /**< A struct_size or abi_version is too old. */
    SONDE_STATUS_ERROR_IO = 20,                    /**< An operating-system I/O call failed. */
    SONDE_STATUS_ERROR_FORMAT = 21,                /**< Input data is not in the expected format. */
    SONDE_STATUS_ERROR_CALLBACK_FAILED = 22,       /**< A user callback threw; the data was handed to it. */
    SONDE_STATUS_ERROR_IN_CALLBACK = 23,           /**< Not allowed from inside this buffer's own callback. */
    SONDE_STATUS_ERROR_VERIFY_FAILED = 24,         /**< A self-check (verify mode) found a mismatch. */
    SONDE_STATUS_ERROR_TOOL = 25,                  /**< An analysis tool reported an error. */
    SONDE_STATUS_ERROR_LOAD_FAILED = 26,           /**< A plugin could not be loaded (dlopen or entry point). */
    SONDE_STATUS_ERROR_TIMEOUT = 27,               /**< A wait ran out of time. */
    SONDE_STATUS_ERROR_LIMIT = 28,                 /**< A fixed capacity (sessions, buffers, ...) is exhausted. */
    SONDE_STATUS_ERROR_NULL_PTR = SONDE_STATUS_ERROR_NULL_POINTER, /**< Alias (Martini spelling) kept for 1.x; Sonde itself spells it NULL_POINTER. */
    SONDE_STATUS_LAST = 29                         /**< One past the largest value of this version. */
};

/**
 * @brief The enum name of a status, e.g. "SONDE_STATUS_ERROR_NULL_POINTER".
 *
 * Callable at any time. Thread-safe. Never returns NULL: unknown values give
 * "SONDE_STATUS_UNKNOWN".
 * @param status Any value.
 * @return The name (static storage).
 * @since 1.0
 */
SONDE_API const char *sonde_status_name(sonde_status_t status);

/**
 * @brief A one-sentence description of a status.
 *
 * Callable at any time. Thread-safe. Never returns NULL.
 * @param status Any value.
 * @return The description (static storage).
 * @since 1.0
 */
SONDE_API const char *sonde_status_string(sonde_status_t status);

SONDE_END_DECLS

#endif /* SONDE_STATUS_H */
