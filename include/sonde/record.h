/**
 * @file record.h
 * @brief Records: the self-describing unit that buffers deliver, and the standard kinds.
 *
 * A record is an 8-byte header followed by its payload, padded to a multiple of 8 bytes.
 * When the header's SONDE_RECORD_FLAG_TIMESTAMP flag is set, an 8-byte timestamp
 * (nanoseconds of CLOCK_MONOTONIC) sits between the header and the payload.
 *
 * Every span that a buffer callback receives holds the records of one producing thread, in
 * emission order, and begins with a SONDE_RECORD_KIND_THREAD record naming that thread.
 */
#ifndef SONDE_RECORD_H
#define SONDE_RECORD_H

#include <sonde/defs.h>
#include <sonde/status.h>

SONDE_BEGIN_DECLS

/** @brief The header of every record. 8 bytes, 8-byte aligned. @since 1.0 */
typedef struct sonde_record_header_t {
    uint32_t size;  /**< Whole record in bytes: header, timestamp, payload and padding; a multiple of 8. */
    uint16_t kind;  /**< One of the SONDE_RECORD_KIND_* values, or >= SONDE_RECORD_KIND_USER. */
    uint16_t flags; /**< SONDE_RECORD_FLAG_* bits. */
} sonde_record_header_t;

/** @brief Record kinds. Kinds below SONDE_RECORD_KIND_USER are Sonde's. @since 1.0 */
enum sonde_record_kind_value {
    SONDE_RECORD_KIND_NONE = 0,     /**< Never valid: a zero header is corruption. */
    SONDE_RECORD_KIND_THREAD = 1,   /**< sonde_thread_record_t; starts every delivered span. Sonde-only. */
    SONDE_RECORD_KIND_LOSS = 2,     /**< sonde_loss_record_t; records dropped before the next one. Sonde-only. */
    SONDE_RECORD_KIND_TRACER = 3,   /**< sonde_tracer_record_t. */
    SONDE_RECORD_KIND_PROFILER = 4, /**< sonde_profiler_record_t. */
    SONDE_RECORD_KIND_MEMREF = 5,   /**< sonde_memref_record_t. */
    SONDE_RECORD_KIND_CALL = 6,     /**< sonde_call_record_t. */
    SONDE_RECORD_KIND_USER = 0x8000,    /**< First custom kind; custom kinds are USER..USER_MAX. */
    SONDE_RECORD_KIND_USER_MAX = 0xFFFF /**< Last custom kind. */
};

/** @brief Record header flags. @since 1.0 */
enum sonde_record_flag_value {
    SONDE_RECORD_FLAG_TIMESTAMP = 1u << 0 /**< An 8-byte timestamp follows the header. */
};

/**
 * @brief Largest payload a record can carry (further limited by the buffer's chunk size).
 * @since 1.0
 */
#define SONDE_RECORD_MAX_PAYLOAD (1u << 24)

/**
 * @brief Payload of SONDE_RECORD_KIND_THREAD: the thread that emitted the following records.
 * @since 1.0
 */
typedef struct sonde_thread_record_t {
    uint64_t thread_id; /**< Sonde's dense thread number, from 1, never reused in a process. */
    uint64_t os_tid;    /**< The kernel thread id (gettid). */
} sonde_thread_record_t;

/**
 * @brief Payload of SONDE_RECORD_KIND_LOSS: records of this thread dropped before the next one.
 * @since 1.0
 */
typedef struct sonde_loss_record_t {
    uint64_t count;     /**< How many records were dropped. */
    uint64_t thread_id; /**< Sonde's thread number of the producer. */
    uint64_t first_ns;  /**< Time of the first drop. */
    uint64_t last_ns;   /**< Time of the last drop. */
} sonde_loss_record_t;

/** @brief Payload of SONDE_RECORD_KIND_TRACER: one traced operation. @since 1.0 */
typedef struct sonde_tracer_record_t {
    uint64_t begin_ns;       /**< Start time. */
    uint64_t end_ns;         /**< End time. */
    uint64_t correlation_id; /**< Links records of one logical operation. */
    uint32_t domain;         /**< Tracing domain (API family), tool-defined. */
    uint32_t operation;      /**< Operation within the domain, tool-defined. */
} sonde_tracer_record_t;

/** @brief Payload of SONDE_RECORD_KIND_PROFILER: one counter sample. @since 1.0 */
typedef struct sonde_profiler_record_t {
    uint64_t counter_id;   /**< Counter number, tool-defined. */
    uint64_t value;        /**< Counter value. */
    uint64_t timestamp_ns; /**< Sample time. */
} sonde_profiler_record_t;

/** @brief Memory-reference access types (sonde_memref_record_t::type). @since 1.0 */
enum sonde_memref_type_value {
    SONDE_MEMREF_READ = 0,   /**< Data load. */
    SONDE_MEMREF_WRITE = 1,  /**< Data store. */
    SONDE_MEMREF_MODIFY = 2, /**< Load and store of the same bytes. */
    SONDE_MEMREF_IFETCH = 3  /**< Instruction fetch. */
};

/** @brief Payload of SONDE_RECORD_KIND_MEMREF: one memory reference. @since 1.0 */
typedef struct sonde_memref_record_t {
    uint64_t address; /**< Accessed address. */
    uint64_t pc;      /**< Instruction address, 0 when unknown. */
    uint32_t size;    /**< Bytes accessed. */
    uint32_t type;    /**< A sonde_memref_type_value. */
} sonde_memref_record_t;

/** @brief CALL events (sonde_call_record_t::event). @since 1.0 */
enum sonde_call_event_value {
    SONDE_CALL_ENTER = 0, /**< Method entered. */
    SONDE_CALL_LEAVE = 1  /**< Method left. */
};

/** @brief Payload of SONDE_RECORD_KIND_CALL: a method enter or leave. @since 1.0 */
typedef struct sonde_call_record_t {
    uint64_t method_id;    /**< Method number (or address), producer-defined. */
    uint64_t timestamp_ns; /**< Event time. */
    uint32_t event;        /**< A sonde_call_event_value. */
    uint32_t reserved;     /**< 0. */
} sonde_call_record_t;

/**
 * @brief The kind of a record.
 * @param record A record (its header), or NULL.
 * @return The header's kind, or SONDE_RECORD_KIND_NONE for a NULL record. Thread-safe.
 * @since 1.0
 */
SONDE_API uint32_t sonde_record_kind(const sonde_record_header_t *record);

/**
 * @brief The payload of a record (after the header and the optional timestamp).
 *
 * @param record A record from a delivered span.
 * @param[out] payload_size Bytes of payload including padding to 8 bytes; may be NULL.
 * @return The payload, or NULL (and size 0) for a NULL record or a header whose size is
 *         smaller than its own header. Thread-safe.
 * @since 1.0
 */
SONDE_API const void *sonde_record_payload(const sonde_record_header_t *record,
                                           uint32_t *payload_size);

/**
 * @brief The timestamp Sonde took for a record emitted with ::sonde_emit_timestamped.
 * @param record A record from a delivered span.
 * @param[out] timestamp_ns Nanoseconds of CLOCK_MONOTONIC.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (the record carries no timestamp).
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_record_timestamp(const sonde_record_header_t *record,
                                                uint64_t *timestamp_ns);

SONDE_END_DECLS

#endif /* SONDE_RECORD_H */
