/**
 * @file trace.h
 * @brief Memory-reference traces: the memref model, Sonde trace files (write and read),
 * readers of valgrind lackey text and raw 64-bit addresses, and a buffer consumer that
 * writes a live session's MEMREF records to a trace file.
 *
 * The file format is described byte by byte in docs/trace-format.md.
 */
#ifndef SONDE_TRACE_H
#define SONDE_TRACE_H

#include <sonde/defs.h>
#include <sonde/status.h>
#include <sonde/buffer.h>
#include <sonde/record.h>

SONDE_BEGIN_DECLS

/** @brief Memref types: the sonde_memref_type_value values of record.h plus markers. */
enum sonde_memref_kind_value {
    /* SONDE_MEMREF_READ = 0, WRITE = 1, MODIFY = 2, IFETCH = 3 come from sonde/record.h */
    SONDE_MEMREF_MARKER = 4 /**< A marker: sonde_memref_t::size holds a sonde_marker_type_value. */
};

/**
 * @brief Marker types. When type == SONDE_MEMREF_MARKER, sonde_memref_t::size holds one of
 * these and sonde_memref_t::address the marker's value (as drmemtrace's markers).
 */
enum sonde_marker_type_value {
    SONDE_MARKER_TIMESTAMP = 1,     /**< value: timestamp in ns; starts a run of this shard. */
    SONDE_MARKER_THREAD_SWITCH = 2, /**< value: the shard (thread) switched to, serial streams. */
    SONDE_MARKER_CPU_ID = 3         /**< value: cpu number. */
};

/** @brief One memory reference or marker. 32 bytes, no padding. */
typedef struct sonde_memref_t {
    uint64_t address;   /**< Accessed address; for markers the marker value. */
    uint64_t pc;        /**< Instruction address, 0 when unknown. */
    uint64_t timestamp; /**< Nanoseconds, 0 when unknown. */
    uint32_t shard;     /**< Shard (thread) index within the input, dense from 0. */
    uint16_t type;      /**< A sonde_memref_type_value or SONDE_MEMREF_MARKER. */
    uint16_t size;      /**< Bytes accessed; for markers the sonde_marker_type_value. */
} sonde_memref_t;

/** @brief Input formats (crosses the ABI as uint32_t). */
enum sonde_trace_format_value {
    SONDE_TRACE_FORMAT_AUTO = 0,   /**< By magic (Sonde trace, zstd frame), then by file extension. */
    SONDE_TRACE_FORMAT_SONDE = 1,  /**< A Sonde trace file (docs/trace-format.md). */
    SONDE_TRACE_FORMAT_LACKEY = 2, /**< valgrind --tool=lackey --trace-mem=yes text, plain or zstd. */
    SONDE_TRACE_FORMAT_RAW64 = 3   /**< Little-endian 64-bit addresses, each an 8-byte read. */
};

/** @brief An open trace reader (opaque). */
typedef struct sonde_trace_reader_t sonde_trace_reader_t;
/** @brief An open trace writer (opaque). */
typedef struct sonde_trace_writer_t sonde_trace_writer_t;

/**
 * @brief Opens a trace for reading.
 *
 * A Sonde trace whose writer did not finish (no footer or index) is recovered by scanning:
 * every complete chunk is readable and sonde_trace_reader_warnings() says what was lost. An
 * index whose checksum holds but whose entries repeat, overlap, point outside the chunks or
 * list a shard's chunks out of file order is refused (docs/trace-format.md, "Index").
 *
 * The file is opened once: the format is told from the bytes the reader then reads, so a pipe
 * or FIFO (or /dev/stdin) works for lackey and raw64 input; its one shard can be read once (by
 * sonde_trace_reader_read_shard() or sonde_trace_reader_read(), not both). A Sonde trace needs
 * a seekable file (its index is at the end).
 *
 * @param path File to open.
 * @param format A sonde_trace_format_value.
 * @param error Optional buffer for the error message ("FILE: offset N: what is wrong") when
 *        the call fails; may be NULL. Always NUL-terminated when error_size > 0.
 * @param error_size Bytes available in @p error.
 * @param[out] out The reader; set to NULL on failure.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER (path or out),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (unknown format), SONDE_STATUS_ERROR_IO (missing or
 *         unreadable file; a Sonde trace from a pipe), SONDE_STATUS_ERROR_FORMAT (bad magic,
 *         version, header or index; AUTO could not tell the format, or the input is empty),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 *         Thread-safe.
 */
SONDE_API sonde_status_t sonde_trace_reader_open(const char *path, uint32_t format, char *error,
                                                 size_t error_size, sonde_trace_reader_t **out);

/**
 * @brief Number of shards (threads) of the trace; lackey and raw64 inputs have one.
 * @param reader An open reader.
 * @param[out] num_shards The count.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER. Thread-safe.
 */
SONDE_API sonde_status_t sonde_trace_reader_num_shards(const sonde_trace_reader_t *reader,
                                                       uint32_t *num_shards);

/**
 * @brief The resolved format of the input (never SONDE_TRACE_FORMAT_AUTO).
 * @param reader An open reader.
 * @param[out] format A sonde_trace_format_value.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER. Thread-safe.
 */
SONDE_API sonde_status_t sonde_trace_reader_format(const sonde_trace_reader_t *reader,
                                                   uint32_t *format);

/**
 * @brief Reads the next batch of one shard. Each shard has its own position; reading a shard
 * reads only that shard's chunks, so a damaged shard does not stop the others.
 *
 * @param reader An open reader.
 * @param shard Shard index, below sonde_trace_reader_num_shards().
 * @param[out] memrefs Room for @p max records; each carries sonde_memref_t::shard == @p shard.
 * @param max Capacity of @p memrefs (at least 1).
 * @param[out] num_read Records stored; 0 (with SUCCESS) at the end of the shard.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (shard out of range or max == 0),
 *         SONDE_STATUS_ERROR_IO (a read failed; a pipe read a second time), SONDE_STATUS_ERROR_FORMAT
 *         (corrupted or truncated data, a record type or marker type the format does not define;
 *         see sonde_trace_reader_error()), SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 *         Not thread-safe: one thread at a time per reader.
 */
SONDE_API sonde_status_t sonde_trace_reader_read_shard(sonde_trace_reader_t *reader, uint32_t shard,
                                                       sonde_memref_t *memrefs, size_t max,
                                                       size_t *num_read);

/**
 * @brief Reads the next batch of the serial view: every shard interleaved by timestamp
 * (records of one shard stay in order). Independent of the per-shard positions.
 *
 * @param reader An open reader.
 * @param[out] memrefs Room for @p max records.
 * @param max Capacity of @p memrefs (at least 1).
 * @param[out] num_read Records stored; 0 (with SUCCESS) at the end.
 * @return As sonde_trace_reader_read_shard() (without the shard range error); also
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY, at the first call, when holding every shard's decode
 *         buffers at once would take more than 256 MiB plus 16 times the file's size (the message
 *         says how much; read such a trace shard by shard).
 *         Not thread-safe: one thread at a time per reader.
 */
SONDE_API sonde_status_t sonde_trace_reader_read(sonde_trace_reader_t *reader, sonde_memref_t *memrefs,
                                                 size_t max, size_t *num_read);

/**
 * @brief The message of the last failed read: "FILE: offset N: what is wrong", or "".
 * @param reader An open reader.
 * @return A string owned by the reader, valid until its next call; "" for a NULL reader.
 *         Not thread-safe with concurrent reads of the same reader.
 */
SONDE_API const char *sonde_trace_reader_error(const sonde_trace_reader_t *reader);

/**
 * @brief Warnings found while opening (e.g. a truncated Sonde trace recovered by scanning),
 * one per line, or "" when there are none.
 * @param reader An open reader.
 * @return A string owned by the reader, valid until close; "" for a NULL reader. Thread-safe.
 */
SONDE_API const char *sonde_trace_reader_warnings(const sonde_trace_reader_t *reader);

/**
 * @brief Closes a reader and frees it. NULL is accepted.
 * @param reader The reader.
 * @return SONDE_STATUS_SUCCESS.
 */
SONDE_API sonde_status_t sonde_trace_reader_close(sonde_trace_reader_t *reader);

/** @brief Options of sonde_trace_writer_create(). Zero fields take the default. */
typedef struct sonde_trace_writer_properties_t {
    uint32_t struct_size;      /**< sizeof(sonde_trace_writer_properties_t). */
    int32_t compression_level; /**< zstd level, 1..19; 0 = default (1, the fastest). */
    uint32_t chunk_records;    /**< Records per chunk, 1..1048576; 0 = default (65536). */
    uint32_t reserved;         /**< Must be 0. */
} sonde_trace_writer_properties_t;

/**
 * @brief Size of sonde_trace_writer_properties_t in ABI version 1.0, the smallest struct_size
 * sonde_trace_writer_create() accepts.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 */
#define SONDE_TRACE_WRITER_PROPERTIES_SIZE_1_0 16u

/**
 * @brief Creates (truncates) a Sonde trace file and writes its header.
 *
 * @param path File to create.
 * @param properties Options, or NULL for the defaults.
 * @param[out] out The writer.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INCOMPATIBLE_ABI (struct_size smaller than
 *         SONDE_TRACE_WRITER_PROPERTIES_SIZE_1_0),
 *         SONDE_STATUS_ERROR_NOT_SUPPORTED (unknown trailing bytes set),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (level or chunk_records out of range, reserved != 0),
 *         SONDE_STATUS_ERROR_IO (cannot create), SONDE_STATUS_ERROR_OUT_OF_MEMORY. Thread-safe.
 */
SONDE_API sonde_status_t sonde_trace_writer_create(const char *path,
                                                   const sonde_trace_writer_properties_t *properties,
                                                   sonde_trace_writer_t **out);

/**
 * @brief Appends records to a shard. sonde_memref_t::shard of the input is ignored.
 * Full chunks are compressed and written as they fill.
 *
 * @param writer An open writer.
 * @param shard Shard index (dense numbering is the caller's choice; at most 65535).
 * @param memrefs Records; may be NULL when @p count is 0.
 * @param count How many.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (shard > 65535, or a record whose type is not a
 *         memref type or SONDE_MEMREF_MARKER, or a marker whose size is not a
 *         sonde_marker_type_value; nothing is written), SONDE_STATUS_ERROR_IO,
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (an earlier write failed), SONDE_STATUS_ERROR_OUT_OF_MEMORY
 *         (the writer then stops like after a write error: later writes answer PHASE_FAILURE and
 *         sonde_trace_writer_close() answers OUT_OF_MEMORY). Thread-safe (serialised by the
 *         writer's lock).
 */
SONDE_API sonde_status_t sonde_trace_writer_write(sonde_trace_writer_t *writer, uint32_t shard,
                                                  const sonde_memref_t *memrefs, size_t count);

/**
 * @brief The message of the writer's first failure, or "". For a writer fed by
 * sonde_trace_buffer_consumer(), the message ends with how many memory references delivered to
 * it are not in the file, "(N memory references delivered to the writer are not in the file)".
 * @param writer An open writer.
 * @return A string owned by the writer, valid until close; "" for NULL. Thread-safe.
 */
SONDE_API const char *sonde_trace_writer_error(const sonde_trace_writer_t *writer);

/**
 * @brief Writes the pending chunks, the index and the footer, closes the file and frees the
 * writer. NULL is accepted.
 * @param writer The writer.
 * @return SONDE_STATUS_SUCCESS, or the status of the writer's first failure, now or before:
 *         SONDE_STATUS_ERROR_IO (a write failed), SONDE_STATUS_ERROR_OUT_OF_MEMORY,
 *         SONDE_STATUS_ERROR_RECORD_CORRUPTED (sonde_trace_buffer_consumer() was given a bad
 *         record). After a failure the file is a truncated trace that readers recover by
 *         scanning. The file is closed and the writer freed in every case.
 */
SONDE_API sonde_status_t sonde_trace_writer_close(sonde_trace_writer_t *writer);

/**
 * @brief A sonde_buffer_callback_t that appends the span's SONDE_RECORD_KIND_MEMREF records to
 * a trace. Pass the writer as user_data of sonde_create_buffer(). Sonde thread ids (from the
 * span's SONDE_RECORD_KIND_THREAD record) become dense shard numbers in order of first
 * appearance; a record's timestamp (sonde_emit_timestamped) becomes sonde_memref_t::timestamp,
 * else 0. Other kinds are skipped; a MEMREF record whose type is not 0..3 stops the writer with
 * SONDE_STATUS_ERROR_RECORD_CORRUPTED. The records are read in place from the span (no copy on the
 * producer side). A failure (a write error, running out of memory, a bad record) stops the
 * writer: nothing more is written, and every memory reference delivered to it that is not in
 * the file (the rest of the span, later spans, records pending in unwritten chunks) is counted;
 * sonde_trace_writer_error() gives the failure and that count, sonde_trace_writer_close()
 * answers the failure's status. Thread-safe (the writer's lock).
 * @param begin First record of the span.
 * @param end One past the last record.
 * @param session The session that delivers it.
 * @param buffer The buffer that delivers it.
 * @param user_data The ::sonde_trace_writer_t to append to.
 */
SONDE_API void sonde_trace_buffer_consumer(const sonde_record_header_t *begin,
                                           const sonde_record_header_t *end,
                                           sonde_session_id_t session, sonde_buffer_id_t buffer,
                                           void *user_data);

SONDE_END_DECLS

#endif /* SONDE_TRACE_H */
