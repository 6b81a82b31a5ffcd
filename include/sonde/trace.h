/**
 * @file trace.h
 * @brief Memory-reference traces: the memref model, Sonde trace files (write and read),
 * readers of valgrind lackey text, raw 64-bit addresses and DynamoRIO drmemtrace traces, and a
 * buffer consumer that writes a live session's MEMREF records to a trace file.
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

/**
 * @brief Memref types: the sonde_memref_type_value values of record.h, markers, and (since 1.2)
 * the instruction, encoding, flush and prefetch kinds of DynamoRIO drmemtrace traces.
 *
 * Tools see the 1.2 kinds only when they ask for them (sonde_tool_ops_t::memref_model returns
 * ::SONDE_MEMREF_MODEL_1_2). Every other tool gets the 1.0 view of a trace: a fetched
 * instruction of any kind (sonde_memref_type_is_instr()) is delivered as
 * ::SONDE_MEMREF_IFETCH, records of the other 1.2 kinds and markers other than
 * ::SONDE_MARKER_TIMESTAMP, ::SONDE_MARKER_THREAD_SWITCH and ::SONDE_MARKER_CPU_ID are left
 * out, and everything else is delivered unchanged. So a tool written for 1.0 sees the loads,
 * stores and fetches of a drmemtrace trace and exactly what it saw before on every other input.
 * The trace reader (sonde_trace_reader_read_shard()) and the trace writer carry every kind.
 * @since 1.0
 */
enum sonde_memref_kind_value {
    /* SONDE_MEMREF_READ = 0, WRITE = 1, MODIFY = 2, IFETCH = 3 come from sonde/record.h */
    SONDE_MEMREF_MARKER = 4,                 /**< A marker: sonde_memref_t::size holds a sonde_marker_type_value. */
    SONDE_MEMREF_INSTR_NO_FETCH = 5,         /**< Executed, not fetched (a later iteration of an x86 rep string). @since 1.2 */
    SONDE_MEMREF_INSTR_DIRECT_JUMP = 6,      /**< Fetched direct jump. @since 1.2 */
    SONDE_MEMREF_INSTR_INDIRECT_JUMP = 7,    /**< Fetched indirect jump. @since 1.2 */
    SONDE_MEMREF_INSTR_CONDITIONAL_JUMP = 8, /**< Fetched conditional branch, outcome not recorded (drmemtrace versions below 5). @since 1.2 */
    SONDE_MEMREF_INSTR_TAKEN_JUMP = 9,       /**< Fetched conditional branch, taken. @since 1.2 */
    SONDE_MEMREF_INSTR_UNTAKEN_JUMP = 10,    /**< Fetched conditional branch, not taken. @since 1.2 */
    SONDE_MEMREF_INSTR_DIRECT_CALL = 11,     /**< Fetched direct call. @since 1.2 */
    SONDE_MEMREF_INSTR_INDIRECT_CALL = 12,   /**< Fetched indirect call. @since 1.2 */
    SONDE_MEMREF_INSTR_RETURN = 13,          /**< Fetched return. @since 1.2 */
    SONDE_MEMREF_INSTR_SYSENTER = 14,        /**< Fetched sysenter. @since 1.2 */
    SONDE_MEMREF_INSTR_ENCODING = 15,        /**< The encoding of the next record, an instruction seen for the first time in its stretch of trace: address holds bytes 0-7 and pc bytes 8-15 (little-endian), size the byte count (1..16). Always immediately followed by its instruction. @since 1.2 */
    SONDE_MEMREF_INSTR_FLUSH = 16,           /**< Instruction-cache flush of [address, pc): pc holds the end; size the length, 0 when it exceeds 65535. @since 1.2 */
    SONDE_MEMREF_DATA_FLUSH = 17,            /**< Data-cache flush, fields as ::SONDE_MEMREF_INSTR_FLUSH. @since 1.2 */
    SONDE_MEMREF_PREFETCH = 32,              /**< Generic prefetch (the first prefetch kind; address, size and pc as a read). @since 1.2 */
    SONDE_MEMREF_PREFETCH_READ_L1 = 33,      /**< x86 prefetcht0. @since 1.2 */
    SONDE_MEMREF_PREFETCH_READ_L2 = 34,      /**< x86 prefetcht1. @since 1.2 */
    SONDE_MEMREF_PREFETCH_READ_L3 = 35,      /**< x86 prefetcht2. @since 1.2 */
    SONDE_MEMREF_PREFETCHNTA = 36,           /**< x86 prefetchnta. @since 1.2 */
    SONDE_MEMREF_PREFETCH_READ = 37,         /**< ARM prefetch for a read. @since 1.2 */
    SONDE_MEMREF_PREFETCH_WRITE = 38,        /**< ARM prefetch for a write. @since 1.2 */
    SONDE_MEMREF_PREFETCH_INSTR = 39,        /**< ARM prefetch of instructions. @since 1.2 */
    SONDE_MEMREF_PREFETCH_HARDWARE = 40,     /**< Hardware prefetch (e.g. a simulated prefetcher's request). @since 1.2 */
    SONDE_MEMREF_PREFETCH_READ_L1_NT = 41,   /**< Non-temporal read prefetch into L1. @since 1.2 */
    SONDE_MEMREF_PREFETCH_READ_L2_NT = 42,   /**< Non-temporal read prefetch into L2. @since 1.2 */
    SONDE_MEMREF_PREFETCH_READ_L3_NT = 43,   /**< Non-temporal read prefetch into L3. @since 1.2 */
    SONDE_MEMREF_PREFETCH_INSTR_L1 = 44,     /**< Instruction prefetch into L1. @since 1.2 */
    SONDE_MEMREF_PREFETCH_INSTR_L1_NT = 45,  /**< Non-temporal instruction prefetch into L1. @since 1.2 */
    SONDE_MEMREF_PREFETCH_INSTR_L2 = 46,     /**< Instruction prefetch into L2. @since 1.2 */
    SONDE_MEMREF_PREFETCH_INSTR_L2_NT = 47,  /**< Non-temporal instruction prefetch into L2. @since 1.2 */
    SONDE_MEMREF_PREFETCH_INSTR_L3 = 48,     /**< Instruction prefetch into L3. @since 1.2 */
    SONDE_MEMREF_PREFETCH_INSTR_L3_NT = 49,  /**< Non-temporal instruction prefetch into L3. @since 1.2 */
    SONDE_MEMREF_PREFETCH_WRITE_L1 = 50,     /**< Write prefetch into L1. @since 1.2 */
    SONDE_MEMREF_PREFETCH_WRITE_L1_NT = 51,  /**< Non-temporal write prefetch into L1. @since 1.2 */
    SONDE_MEMREF_PREFETCH_WRITE_L2 = 52,     /**< Write prefetch into L2. @since 1.2 */
    SONDE_MEMREF_PREFETCH_WRITE_L2_NT = 53,  /**< Non-temporal write prefetch into L2. @since 1.2 */
    SONDE_MEMREF_PREFETCH_WRITE_L3 = 54,     /**< Write prefetch into L3. @since 1.2 */
    SONDE_MEMREF_PREFETCH_WRITE_L3_NT = 55,  /**< Non-temporal write prefetch into L3 (the last prefetch kind). @since 1.2 */
    SONDE_MEMREF_PREFETCH_LAST = 55          /**< The last prefetch kind: prefetches are SONDE_MEMREF_PREFETCH..SONDE_MEMREF_PREFETCH_LAST. @since 1.2 */
};

/**
 * @brief Marker types. When type == SONDE_MEMREF_MARKER, sonde_memref_t::size holds one of
 * these and sonde_memref_t::address the marker's value (as drmemtrace's markers).
 *
 * Since 1.2 the range ::SONDE_MARKER_DRMEMTRACE + n (n = 0 .. 0xFEFF) carries drmemtrace's
 * marker type n (trace_marker_type_t) with its value unchanged; the named ones below are those
 * with a meaning tools commonly need. drmemtrace's timestamp and cpu id markers are read as
 * ::SONDE_MARKER_TIMESTAMP (microseconds turned into nanoseconds) and ::SONDE_MARKER_CPU_ID.
 * @since 1.0
 */
enum sonde_marker_type_value {
    SONDE_MARKER_TIMESTAMP = 1,                          /**< value: timestamp in ns; starts a run of this shard. */
    SONDE_MARKER_THREAD_SWITCH = 2,                      /**< value: the shard (thread) switched to, serial streams. */
    SONDE_MARKER_CPU_ID = 3,                             /**< value: cpu number (all ones: unknown). */
    SONDE_MARKER_THREAD_ID = 4,                          /**< value: the operating system's id of the thread whose records follow. @since 1.2 */
    SONDE_MARKER_PROCESS_ID = 5,                         /**< value: the process id of that thread. @since 1.2 */
    SONDE_MARKER_THREAD_EXIT = 6,                        /**< value: the thread id; the thread exited. @since 1.2 */
    /**
     * The shard was sampled at the source (SHARDS): a data reference was recorded only when
     * the hash of its line (address / ::SONDE_MARKER_SAMPLE_LINE_SIZE) under the seed of
     * ::SONDE_MARKER_SAMPLE_SEED is below this value: rate = value / 2^32. At the shard's start.
     * @since 1.2
     */
    SONDE_MARKER_SAMPLE_THRESHOLD = 7,
    SONDE_MARKER_SAMPLE_SEED = 8,      /**< value: the seed of the source's sampling hash. @since 1.2 */
    SONDE_MARKER_SAMPLE_LINE_SIZE = 9, /**< value: the line size in bytes the source hashed. @since 1.2 */
    SONDE_MARKER_SAMPLE_SKIPPED = 10,  /**< value: data references of the shard not recorded since the previous one. @since 1.2 */
    SONDE_MARKER_DRMEMTRACE = 0x100,                     /**< Base of drmemtrace's marker types. @since 1.2 */
    SONDE_MARKER_KERNEL_EVENT = 0x100,                   /**< Signal or other kernel event handler start; value: interrupted pc. @since 1.2 */
    SONDE_MARKER_KERNEL_XFER = 0x101,                    /**< Return from a kernel event (sigreturn); value: pc. @since 1.2 */
    SONDE_MARKER_FUNC_ID = 0x104,                        /**< Traced function (or system call) entry; value: its id. @since 1.2 */
    SONDE_MARKER_FUNC_RETADDR = 0x105,                   /**< Traced function's return address. @since 1.2 */
    SONDE_MARKER_FUNC_ARG = 0x106,                       /**< Traced function's argument. @since 1.2 */
    SONDE_MARKER_FUNC_RETVAL = 0x107,                    /**< Traced function's return value. @since 1.2 */
    SONDE_MARKER_FILETYPE = 0x109,                       /**< drmemtrace file type bits (OFFLINE_FILE_TYPE_*). @since 1.2 */
    SONDE_MARKER_CACHE_LINE_SIZE = 0x10A,                /**< Cache line size of the traced machine. @since 1.2 */
    SONDE_MARKER_VERSION = 0x10C,                        /**< drmemtrace trace version. @since 1.2 */
    SONDE_MARKER_PHYSICAL_ADDRESS = 0x10F,               /**< Physical address of the next virtual address marker. @since 1.2 */
    SONDE_MARKER_PHYSICAL_ADDRESS_NOT_AVAILABLE = 0x110, /**< Physical address unavailable. @since 1.2 */
    SONDE_MARKER_VIRTUAL_ADDRESS = 0x111,                /**< Virtual address paired with the previous physical one. @since 1.2 */
    SONDE_MARKER_PAGE_SIZE = 0x112,                      /**< Page size of the traced machine. @since 1.2 */
    SONDE_MARKER_CHUNK_INSTR_COUNT = 0x114,              /**< Instructions per chunk of the drmemtrace file. @since 1.2 */
    SONDE_MARKER_CHUNK_FOOTER = 0x115,                   /**< End of a drmemtrace chunk; value: the chunk's ordinal. @since 1.2 */
    SONDE_MARKER_SYSCALL = 0x119,                        /**< System call; value: its number. @since 1.2 */
    SONDE_MARKER_MAYBE_BLOCKING_SYSCALL = 0x11A,         /**< The system call may block. @since 1.2 */
    SONDE_MARKER_BRANCH_TARGET = 0x11D,                  /**< Target of the indirect branch that follows. @since 1.2 */
    SONDE_MARKER_CORE_WAIT = 0x120,                      /**< A scheduler's core waited. @since 1.2 */
    SONDE_MARKER_CORE_IDLE = 0x121,                      /**< A scheduler's core was idle. @since 1.2 */
    SONDE_MARKER_HARDWARE_EVENT = 0x12B,                 /**< Whole-system traces: hardware event. @since 1.2 */
    SONDE_MARKER_HARDWARE_CONTEXT_RETURN = 0x12C,        /**< Whole-system traces: return from it. @since 1.2 */
    SONDE_MARKER_SKIPPED_MEMREF = 0x12E                  /**< A predicated-off access; value: its address. @since 1.2 */
};

/**
 * @brief Memref models: which record types a tool understands, the answer of
 * sonde_tool_ops_t::memref_model (see ::sonde_memref_kind_value for what each model delivers).
 * @since 1.2
 */
enum sonde_memref_model_value {
    SONDE_MEMREF_MODEL_1_0 = 0, /**< READ, WRITE, MODIFY, IFETCH, and the TIMESTAMP, THREAD_SWITCH and CPU_ID markers. */
    SONDE_MEMREF_MODEL_1_2 = 1  /**< Every type and marker of this header. */
};

/**
 * @brief Whether @p type is a fetched instruction: ::SONDE_MEMREF_IFETCH or one of the
 * branch kinds ::SONDE_MEMREF_INSTR_DIRECT_JUMP .. ::SONDE_MEMREF_INSTR_SYSENTER (not
 * ::SONDE_MEMREF_INSTR_NO_FETCH). Header-inline, any thread.
 * @param type A sonde_memref_t::type.
 * @return true for a fetched instruction.
 * @since 1.2
 */
static inline bool sonde_memref_type_is_instr(uint32_t type) {
    return type == SONDE_MEMREF_IFETCH ||
           (type >= SONDE_MEMREF_INSTR_DIRECT_JUMP && type <= SONDE_MEMREF_INSTR_SYSENTER);
}

/**
 * @brief Whether @p type is a prefetch (::SONDE_MEMREF_PREFETCH .. ::SONDE_MEMREF_PREFETCH_LAST).
 * Header-inline, any thread.
 * @param type A sonde_memref_t::type.
 * @return true for a prefetch.
 * @since 1.2
 */
static inline bool sonde_memref_type_is_prefetch(uint32_t type) {
    return type >= SONDE_MEMREF_PREFETCH && type <= SONDE_MEMREF_PREFETCH_LAST;
}

/** @brief One memory reference or marker. 32 bytes, no padding. @since 1.0 */
typedef struct sonde_memref_t {
    uint64_t address;   /**< Accessed address; for markers the marker value. */
    uint64_t pc;        /**< Instruction address, 0 when unknown. */
    uint64_t timestamp; /**< Nanoseconds, 0 when unknown. */
    uint32_t shard;     /**< Shard (thread) index within the input, dense from 0. */
    uint16_t type;      /**< A sonde_memref_type_value or a sonde_memref_kind_value. */
    uint16_t size;      /**< Bytes accessed; for markers the sonde_marker_type_value. */
} sonde_memref_t;

/** @brief Input formats (crosses the ABI as uint32_t). @since 1.0 */
enum sonde_trace_format_value {
    SONDE_TRACE_FORMAT_AUTO = 0,   /**< A directory is a drmemtrace trace; a file goes by magic (Sonde trace, zstd frame), drmemtrace names and containers, then by file extension. */
    SONDE_TRACE_FORMAT_SONDE = 1,  /**< A Sonde trace file (docs/trace-format.md). */
    SONDE_TRACE_FORMAT_LACKEY = 2, /**< valgrind --tool=lackey --trace-mem=yes text, plain or zstd. */
    SONDE_TRACE_FORMAT_RAW64 = 3,  /**< Little-endian 64-bit addresses, each an 8-byte read. */
    SONDE_TRACE_FORMAT_DRMEMTRACE = 4 /**< DynamoRIO drmemtrace offline trace: a directory of thread files or one file (.zip, .gz, .lz4, .zst or plain); docs/analysis.md. @since 1.2 */
};

/** @brief An open trace reader (opaque). @since 1.0 */
typedef struct sonde_trace_reader_t sonde_trace_reader_t;
/** @brief An open trace writer (opaque). @since 1.0 */
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
 * sonde_trace_reader_read_shard() or sonde_trace_reader_read(), not both). A Sonde trace is read
 * by seeking (its index is at its end): from a pipe it is first copied, as it arrives, into an
 * unnamed temporary file in $TMPDIR (else /tmp), read once (since 1.2; 1.0 and 1.1 refused it).
 *
 * A drmemtrace trace may be a directory (since 1.2): each thread file in it is one shard, in
 * name order. The reader delivers every record kind (::SONDE_MEMREF_MODEL_1_2); a caller that
 * only knows the 1.0 kinds skips the records whose type it does not know.
 *
 * @param path File (or, for drmemtrace, directory) to open.
 * @param format A sonde_trace_format_value.
 * @param error Optional buffer for the error message ("FILE: offset N: what is wrong") when
 *        the call fails; may be NULL. Always NUL-terminated when error_size > 0.
 * @param error_size Bytes available in @p error.
 * @param[out] out The reader; set to NULL on failure.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER (path or out),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (unknown format), SONDE_STATUS_ERROR_IO (missing or
 *         unreadable file; a drmemtrace trace from a pipe; no room to copy a Sonde trace from a
 *         pipe), SONDE_STATUS_ERROR_FORMAT (bad magic,
 *         version, header or index; AUTO could not tell the format, or the input is empty),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 *         Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_trace_reader_open(const char *path, uint32_t format, char *error,
                                                 size_t error_size, sonde_trace_reader_t **out);

/**
 * @brief Number of shards (threads) of the trace; lackey and raw64 inputs have one, a drmemtrace
 * directory one per thread file.
 * @param reader An open reader.
 * @param[out] num_shards The count.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER. Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_trace_reader_num_shards(const sonde_trace_reader_t *reader,
                                                       uint32_t *num_shards);

/**
 * @brief The resolved format of the input (never SONDE_TRACE_FORMAT_AUTO).
 * @param reader An open reader.
 * @param[out] format A sonde_trace_format_value.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER. Thread-safe.
 * @since 1.0
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
 * @since 1.0
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
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_trace_reader_read(sonde_trace_reader_t *reader, sonde_memref_t *memrefs,
                                                 size_t max, size_t *num_read);

/**
 * @brief The message of the last failed read: "FILE: offset N: what is wrong", or "".
 * @param reader An open reader.
 * @return A string owned by the reader, valid until its next call; "" for a NULL reader.
 *         Not thread-safe with concurrent reads of the same reader.
 * @since 1.0
 */
SONDE_API const char *sonde_trace_reader_error(const sonde_trace_reader_t *reader);

/**
 * @brief Warnings found while opening (e.g. a truncated Sonde trace recovered by scanning),
 * one per line, or "" when there are none.
 * @param reader An open reader.
 * @return A string owned by the reader, valid until close; "" for a NULL reader. Thread-safe.
 * @since 1.0
 */
SONDE_API const char *sonde_trace_reader_warnings(const sonde_trace_reader_t *reader);

/**
 * @brief How far the reader has read its input, in bytes as stored (compressed where it is),
 * for a progress display. May be called from any thread while another thread reads.
 * @param reader An open reader.
 * @param[out] done Bytes consumed so far (see sonde_analyzer_progress() for what counts).
 * @param[out] total Bytes that reading every shard consumes; 0 when it cannot be known (a pipe).
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_reader_progress(const sonde_trace_reader_t *reader, uint64_t *done,
                                                     uint64_t *total);

/**
 * @brief Closes a reader and frees it. NULL is accepted.
 * @param reader The reader.
 * @return SONDE_STATUS_SUCCESS.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_trace_reader_close(sonde_trace_reader_t *reader);

/** @brief Options of sonde_trace_writer_create(). Zero fields take the default. @since 1.0 */
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
 * @since 1.1
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
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_trace_writer_create(const char *path,
                                                   const sonde_trace_writer_properties_t *properties,
                                                   sonde_trace_writer_t **out);

/**
 * @brief Reopens a complete Sonde trace to add to it: table entries (sonde/trace_events.h),
 * events and records, as to a writer made by sonde_trace_writer_create(). The blocks already in
 * the file stay where they are; what is added is written where the file's extension index (or
 * index) begins, followed by new indexes that list the old blocks and the new, and a new
 * footer (docs/trace-format.md, "Adding to a trace"); the header's minor version becomes this
 * library's when it was older. Until sonde_trace_writer_close() has written the footer, the
 * file reads as a truncated trace whose blocks are recovered by scanning. New string table
 * entries get ids after the file's, and sonde_trace_writer_add_string() finds the file's own
 * strings. Records keep the file's chunk size; compression is zstd level 1.
 * `sonde record --memory` adds a memory trace's symbols and lines this way once the program has
 * exited.
 *
 * @param path A Sonde trace with its index and footer (a regular file).
 * @param error Optional buffer for the error message ("FILE: what is wrong"); may be NULL.
 *        Always NUL-terminated when error_size > 0.
 * @param error_size Bytes available in @p error.
 * @param[out] out The writer; set to NULL on failure.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER (path or out),
 *         SONDE_STATUS_ERROR_IO (missing or unreadable file, not a regular file, cannot be
 *         written), SONDE_STATUS_ERROR_FORMAT (not a Sonde trace, a damaged index, or an
 *         incomplete trace: one whose writer did not finish has no index to extend),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY. Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_writer_reopen(const char *path, char *error, size_t error_size,
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
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_trace_writer_write(sonde_trace_writer_t *writer, uint32_t shard,
                                                  const sonde_memref_t *memrefs, size_t count);

/**
 * @brief The message of the writer's first failure, or "". For a writer fed by
 * sonde_trace_buffer_consumer(), the message ends with how many memory references delivered to
 * it are not in the file, "(N memory references delivered to the writer are not in the file)".
 * @param writer An open writer.
 * @return A string owned by the writer, valid until close; "" for NULL. Thread-safe.
 * @since 1.0
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
 * @since 1.0
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
 * @since 1.0
 */
SONDE_API void sonde_trace_buffer_consumer(const sonde_record_header_t *begin,
                                           const sonde_record_header_t *end,
                                           sonde_session_id_t session, sonde_buffer_id_t buffer,
                                           void *user_data);

SONDE_END_DECLS

#endif /* SONDE_TRACE_H */
