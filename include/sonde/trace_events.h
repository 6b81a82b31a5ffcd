/**
 * @file trace_events.h
 * @brief Program events in Sonde trace files: method enter and leave, thread start, end and
 * names, user marks and ranges, with the tables that name them (methods, modules, threads,
 * strings), so that a recorded trace is readable without the program's binary.
 *
 * A trace holds memory references (sonde/trace.h), program events, or both. Events are read
 * shard by shard (a shard is one thread of the recorded program) in batches of
 * ::sonde_trace_event_t, each with a kind, a timestamp in nanoseconds of Sonde's clock, the
 * shard, an `id`, an `aux` and a `value` whose meaning the kind gives. The tables are read by
 * index. `sonde record` writes such traces; the writer calls below write them by hand.
 *
 * Reading functions take a reader opened with ::sonde_trace_reader_open. A reader that has been
 * closed answers SONDE_STATUS_ERROR_ILLEGAL_ID in every function of this header (it is looked up
 * among the open readers, never dereferenced). Strings returned belong to the reader and stay
 * valid until it is closed.
 *
 * The file format is in docs/trace-format.md, the recorder in docs/recording.md.
 * Added in version 1.2 (`SONDE_1.2` in the version script).
 */
#ifndef SONDE_TRACE_EVENTS_H
#define SONDE_TRACE_EVENTS_H

#include <sonde/defs.h>
#include <sonde/status.h>
#include <sonde/trace.h>

SONDE_BEGIN_DECLS

/**
 * @brief Event kinds (::sonde_trace_event_t::kind). Values are pinned. Readers return kinds
 * they do not know as they are, so that files of a later writer still read.
 * @since 1.2
 */
enum sonde_trace_event_kind {
    SONDE_TRACE_EVENT_METHOD_ENTER = 1, /**< id: method index; the thread entered the method. */
    SONDE_TRACE_EVENT_METHOD_LEAVE = 2, /**< id: method index; the thread returned from it. */
    SONDE_TRACE_EVENT_THREAD_START = 3, /**< id: the shard; value: OS thread id. First event of a thread seen from its start. */
    SONDE_TRACE_EVENT_THREAD_END = 4,   /**< id: the shard; value: OS thread id. Last event of the thread. */
    SONDE_TRACE_EVENT_THREAD_NAME = 5,  /**< id: string id of the thread's name at this time. */
    SONDE_TRACE_EVENT_MARK = 6,         /**< id: string id of the mark's text (its payload is not kept). */
    SONDE_TRACE_EVENT_RANGE_PUSH = 7,   /**< id: string id of the range's text; aux: its depth (0 outermost). */
    SONDE_TRACE_EVENT_RANGE_POP = 8,    /**< id: string id of the range's text; aux: its depth. */
    SONDE_TRACE_EVENT_LOSS = 9,         /**< value: events of this shard lost just before this point (a full buffer). */
    /** A call into a shared library traced through libffi (`sonde record --api`) opens: id: its
     * API function index (::sonde_trace_reader_get_api_function); value: the call's begin
     * timestamp (ns); aux: its argument count. Followed, in this order and with the same
     * timestamp, by aux ::SONDE_TRACE_EVENT_API_ARG events, one ::SONDE_TRACE_EVENT_API_RETURN
     * and one ::SONDE_TRACE_EVENT_API_END. The four kinds carry the call's end timestamp, so
     * that a shard stays in time order. Since trace format minor version 3. @since 1.2 */
    SONDE_TRACE_EVENT_API_CALL = 10,
    /** An argument of the open API call: value: its 64 bits (::sonde_trace_api_value_class);
     * aux: its position (bits 0-15) and the ::SONDE_TRACE_API_TEXT and
     * ::SONDE_TRACE_API_TRUNCATED flags; id: with ::SONDE_TRACE_API_TEXT, the string id of the
     * copied text of a `const char *`. @since 1.2 */
    SONDE_TRACE_EVENT_API_ARG = 11,
    /** The return value of the open API call: value, aux flags and id as for
     * ::SONDE_TRACE_EVENT_API_ARG (position 0; value 0 for void). @since 1.2 */
    SONDE_TRACE_EVENT_API_RETURN = 12,
    /** The open API call ends: id: its API function index; value: its correlation id, unique in
     * the recorded process; aux: the traced calls of this thread open around it (0 outermost).
     * @since 1.2 */
    SONDE_TRACE_EVENT_API_END = 13
};

/** @brief ::SONDE_TRACE_EVENT_API_ARG and _RETURN aux flag: id names a copied text. @since 1.2 */
#define SONDE_TRACE_API_TEXT 0x10000u
/** @brief aux flag: the copied text is the string's first bytes only (it is longer). @since 1.2 */
#define SONDE_TRACE_API_TRUNCATED 0x20000u
/** @brief aux mask of an argument's position. @since 1.2 */
#define SONDE_TRACE_API_POSITION_MASK 0xFFFFu

/**
 * @brief How the 64 bits of an API argument or return value read. Values are pinned.
 * @since 1.2
 */
enum sonde_trace_api_value_class {
    SONDE_TRACE_API_VOID = 0,     /**< No value (a void return). */
    SONDE_TRACE_API_SIGNED = 1,   /**< A signed integer, sign-extended to 64 bits. */
    SONDE_TRACE_API_UNSIGNED = 2, /**< An unsigned integer (or bool, enum), zero-extended. */
    SONDE_TRACE_API_DOUBLE = 3,   /**< The bits of an IEEE double (a float is converted exactly). */
    SONDE_TRACE_API_POINTER = 4,  /**< An address. */
    SONDE_TRACE_API_STRING = 5    /**< A `const char *`: its address; the text is copied up to a bound. */
};

/**
 * @brief One program event. 32 bytes, no padding, layout pinned.
 * @since 1.2
 */
typedef struct sonde_trace_event_t {
    uint64_t timestamp; /**< Nanoseconds of Sonde's clock (CLOCK_MONOTONIC, read through the TSC). */
    uint64_t value;     /**< Kind-specific 64-bit value (0 when the kind has none). */
    uint32_t id;        /**< Kind-specific id: a method index or a string id. */
    uint32_t shard;     /**< Shard (thread) of the event, dense from 0. */
    uint32_t kind;      /**< A ::sonde_trace_event_kind value. */
    uint32_t aux;       /**< Kind-specific 32-bit value (0 when the kind has none). */
} sonde_trace_event_t;

/** @brief ::sonde_trace_method_t::module of a method outside every known module. @since 1.2 */
#define SONDE_TRACE_NO_MODULE 0xFFFFFFFFu

/**
 * @brief A method of the trace's method table. Strings are never NULL ("" when unknown).
 * @since 1.2
 */
typedef struct sonde_trace_method_t {
    uint32_t struct_size;     /**< sizeof(sonde_trace_method_t) as the caller knows it. */
    uint32_t index;           /**< Method index: ::SONDE_TRACE_EVENT_METHOD_ENTER's id. */
    const char *name;         /**< Short name: no scope, no parameters ("area"). */
    const char *class_name;   /**< Class or namespace ("geo::Circle"), "" for none. */
    const char *full_name;    /**< Demangled full name with parameters ("geo::Circle::area() const"). */
    const char *mangled_name; /**< The ELF symbol name as it is ("_ZNK3geo6Circle4areaEv"). */
    const char *source_file;  /**< Source file from DWARF, "" when unknown. */
    uint32_t source_line;     /**< Source line from DWARF, 0 when unknown. */
    uint32_t module;          /**< Module index, or ::SONDE_TRACE_NO_MODULE. */
    uint64_t address;         /**< Entry address in the recorded process. */
    uint64_t size;            /**< Symbol size in bytes, 0 when unknown. */
    uint32_t visibility;      /**< A ::sonde_visibility value (sonde/client.h). */
    uint32_t reserved;        /**< Zero. */
} sonde_trace_method_t;

/**
 * @brief Size of sonde_trace_method_t in version 1.2, which introduced it: the smallest
 * struct_size accepted. A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.2
 */
#define SONDE_TRACE_METHOD_SIZE_1_2 80u

/** @brief A module (the program, a shared object) of the trace's module table. @since 1.2 */
typedef struct sonde_trace_module_t {
    uint32_t struct_size; /**< sizeof(sonde_trace_module_t) as the caller knows it. */
    uint32_t index;       /**< Module index (::sonde_trace_method_t::module). */
    const char *path;     /**< Path as the loader knew it, "" for none (the vdso). */
    const char *name;     /**< File name. */
    uint64_t address;     /**< Lowest mapped address in the recorded process. */
    uint64_t size;        /**< Span of its mapped segments in bytes. */
} sonde_trace_module_t;

/** @brief Size of sonde_trace_module_t in version 1.2 (smallest struct_size accepted). @since 1.2 */
#define SONDE_TRACE_MODULE_SIZE_1_2 40u

/** @brief A thread of the trace: one shard of events. @since 1.2 */
typedef struct sonde_trace_thread_t {
    uint32_t struct_size;  /**< sizeof(sonde_trace_thread_t) as the caller knows it. */
    uint32_t shard;        /**< The shard its events carry. */
    uint64_t os_thread_id; /**< The kernel thread id, 0 when unknown. */
    const char *name;      /**< Its last known name, "" when unknown. */
} sonde_trace_thread_t;

/** @brief Size of sonde_trace_thread_t in version 1.2 (smallest struct_size accepted). @since 1.2 */
#define SONDE_TRACE_THREAD_SIZE_1_2 24u

/** @brief What a reader holds about a trace's events (::sonde_trace_reader_event_info). @since 1.2 */
typedef struct sonde_trace_event_info_t {
    uint32_t struct_size;  /**< sizeof(sonde_trace_event_info_t) as the caller knows it. */
    uint32_t num_shards;   /**< Event shards (threads); 0 for a memref-only trace. */
    uint64_t num_events;   /**< Events over every shard. */
    uint32_t num_methods;  /**< Entries of the method table (1 + the largest index). */
    uint32_t num_modules;  /**< Entries of the module table. */
    uint32_t num_strings;  /**< Entries of the string table (id 0 is always ""). */
    uint32_t num_threads;  /**< Entries of the thread table: at least num_shards. */
    uint64_t first_timestamp; /**< Earliest event timestamp, 0 without events. */
    uint64_t last_timestamp;  /**< Latest event timestamp, 0 without events. */
} sonde_trace_event_info_t;

/** @brief Size of sonde_trace_event_info_t in version 1.2 (smallest struct_size accepted). @since 1.2 */
#define SONDE_TRACE_EVENT_INFO_SIZE_1_2 48u

/**
 * @brief Counts of the trace's events and tables, from its index and tables (no event is
 * decompressed).
 * @param reader An open reader (any format: lackey and raw64 inputs have no events).
 * @param[in,out] info Set struct_size; the rest is filled.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_ILLEGAL_ID
 *         (a closed reader), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI (struct_size smaller than
 *         ::SONDE_TRACE_EVENT_INFO_SIZE_1_2). Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_reader_event_info(const sonde_trace_reader_t *reader,
                                                       sonde_trace_event_info_t *info);

/**
 * @brief Number of events of one shard (from the index; nothing is decompressed).
 * @param reader An open reader.
 * @param shard Event shard, below sonde_trace_event_info_t::num_shards.
 * @param[out] num_events The count.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_ILLEGAL_ID,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (shard out of range). Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_reader_shard_events(const sonde_trace_reader_t *reader, uint32_t shard,
                                                         uint64_t *num_events);

/**
 * @brief Reads the next batch of events of one shard, in the order the thread produced them.
 * Each shard has its own position; reading a shard reads only its chunks.
 *
 * @param reader An open reader.
 * @param shard Event shard, below sonde_trace_event_info_t::num_shards.
 * @param[out] events Room for @p max events; each carries sonde_trace_event_t::shard == @p shard.
 * @param max Capacity of @p events (at least 1).
 * @param[out] num_read Events stored; 0 (with SUCCESS) at the end of the shard.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_ILLEGAL_ID,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (shard out of range or max == 0),
 *         SONDE_STATUS_ERROR_IO, SONDE_STATUS_ERROR_FORMAT (corrupted or truncated data; see
 *         sonde_trace_reader_error()), SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 *         Not thread-safe: one thread at a time per reader.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_reader_read_events(sonde_trace_reader_t *reader, uint32_t shard,
                                                        sonde_trace_event_t *events, size_t max,
                                                        size_t *num_read);

/**
 * @brief Moves a shard's event position back to its first event (to read it again).
 * @param reader An open reader.
 * @param shard Event shard.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_ILLEGAL_ID,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (shard out of range).
 *         Not thread-safe: one thread at a time per reader.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_reader_rewind_events(sonde_trace_reader_t *reader, uint32_t shard);

/**
 * @brief One entry of the method table. An index below num_methods that no table entry names
 * (a trace cut before its tables were written) answers PARTIAL_INFO with empty strings and
 * zero numbers.
 * @param reader An open reader.
 * @param index Method index, below sonde_trace_event_info_t::num_methods.
 * @param[in,out] method Set struct_size; the rest is filled (strings owned by the reader).
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_PARTIAL_INFO, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_ILLEGAL_ID, SONDE_STATUS_ERROR_INVALID_ARGUMENT (index out of
 *         range), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI (struct_size smaller than
 *         ::SONDE_TRACE_METHOD_SIZE_1_2). Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_reader_get_method(const sonde_trace_reader_t *reader, uint32_t index,
                                                       sonde_trace_method_t *method);

/**
 * @brief One entry of the module table; same rules as ::sonde_trace_reader_get_method with
 * ::SONDE_TRACE_MODULE_SIZE_1_2.
 * @param reader An open reader.
 * @param index Module index, below sonde_trace_event_info_t::num_modules.
 * @param[in,out] module Set struct_size; the rest is filled.
 * @return As ::sonde_trace_reader_get_method. Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_reader_get_module(const sonde_trace_reader_t *reader, uint32_t index,
                                                       sonde_trace_module_t *module);

/**
 * @brief The thread of an event shard: its OS thread id and last known name. A shard the
 * thread table does not list answers PARTIAL_INFO (os_thread_id 0, name "").
 * @param reader An open reader.
 * @param shard Shard, below sonde_trace_event_info_t::num_threads.
 * @param[in,out] thread Set struct_size; the rest is filled.
 * @return As ::sonde_trace_reader_get_method, with ::SONDE_TRACE_THREAD_SIZE_1_2. Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_reader_get_thread(const sonde_trace_reader_t *reader, uint32_t shard,
                                                       sonde_trace_thread_t *thread);

/**
 * @brief A string of the string table (mark and range texts, thread names).
 * @param reader An open reader.
 * @param id String id, below sonde_trace_event_info_t::num_strings; id 0 is "".
 * @param[out] text The NUL-terminated string, owned by the reader.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_ILLEGAL_ID,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (id out of range). Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_reader_get_string(const sonde_trace_reader_t *reader, uint32_t id,
                                                       const char **text);

/**
 * @brief A function traced by `sonde record --api`: where it is and its signature. Strings and
 * arrays are never NULL (an empty string when unknown) and belong to the reader.
 * @since 1.2
 */
typedef struct sonde_trace_api_function_t {
    uint32_t struct_size;             /**< sizeof(sonde_trace_api_function_t) as the caller knows it. */
    uint32_t index;                   /**< API function index: ::SONDE_TRACE_EVENT_API_CALL's id. */
    const char *library;              /**< File name of the library that defines it ("libz.so.1"). */
    const char *name;                 /**< Function name ("crc32"). */
    const char *return_type;          /**< Return type as C spells it ("unsigned long"). */
    uint32_t return_class;            /**< A ::sonde_trace_api_value_class. */
    uint32_t num_args;                /**< Arguments (at most 16). */
    const char *const *arg_names;     /**< num_args names, as declared, or "argN". */
    const char *const *arg_types;     /**< num_args types as C spells them. */
    const uint32_t *arg_classes;      /**< num_args ::sonde_trace_api_value_class values. */
} sonde_trace_api_function_t;

/** @brief Size of sonde_trace_api_function_t in version 1.2 (smallest struct_size accepted). @since 1.2 */
#define SONDE_TRACE_API_FUNCTION_SIZE_1_2 64u

/**
 * @brief Number of entries of the trace's API function table (0 for a trace without API calls,
 * and for every trace of format minor version 2 or older).
 * @param reader An open reader.
 * @param[out] count The count.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_ILLEGAL_ID.
 *         Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_reader_num_api_functions(const sonde_trace_reader_t *reader,
                                                              uint32_t *count);

/**
 * @brief One entry of the API function table. An index below the count that no table entry
 * names (a trace cut before its tables were written) answers PARTIAL_INFO with empty strings
 * and no arguments.
 * @param reader An open reader.
 * @param index API function index, below ::sonde_trace_reader_num_api_functions.
 * @param[in,out] function Set struct_size; the rest is filled (owned by the reader).
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_PARTIAL_INFO, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_ILLEGAL_ID, SONDE_STATUS_ERROR_INVALID_ARGUMENT (index out of
 *         range), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI (struct_size smaller than
 *         ::SONDE_TRACE_API_FUNCTION_SIZE_1_2). Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_reader_get_api_function(const sonde_trace_reader_t *reader, uint32_t index,
                                                             sonde_trace_api_function_t *function);

/**
 * @brief An entry of the trace's line table (trace format minor version 4): the records whose
 * pc lies in [address, address + size) come from this source line. `sonde record --memory`
 * writes one entry for every distinct pc of its trace (size 1): its pcs are the return
 * addresses of the calls to the load and store callbacks, and the line is that of the call.
 * @since 1.2
 */
typedef struct sonde_trace_line_t {
    uint32_t struct_size; /**< sizeof(sonde_trace_line_t) as the caller knows it. */
    uint32_t module;      /**< Module index (::sonde_trace_reader_get_module), or ::SONDE_TRACE_NO_MODULE. */
    uint64_t address;     /**< First pc of the range, in the recorded process. */
    uint64_t size;        /**< Bytes of the range, at least 1. */
    const char *file;     /**< Source file as DWARF names it (usually absolute); never NULL. */
    uint32_t line;        /**< Source line, from 1. */
    uint32_t column;      /**< Source column, 0 when unknown. */
} sonde_trace_line_t;

/** @brief Size of sonde_trace_line_t in version 1.2 (smallest struct_size accepted). @since 1.2 */
#define SONDE_TRACE_LINE_SIZE_1_2 40u

/**
 * @brief Number of entries of the trace's line table (0 for a trace without one, and for every
 * trace of format minor version 3 or older).
 * @param reader An open reader.
 * @param[out] count The count.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_ILLEGAL_ID.
 *         Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_reader_num_lines(const sonde_trace_reader_t *reader, uint32_t *count);

/**
 * @brief One entry of the line table. Entries are ordered by address (then size), so that a pc
 * is found by a binary search over the indexes.
 * @param reader An open reader.
 * @param index Entry index, below ::sonde_trace_reader_num_lines.
 * @param[in,out] line Set struct_size; the rest is filled (the file name is owned by the reader).
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_ILLEGAL_ID,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (index out of range),
 *         SONDE_STATUS_ERROR_INCOMPATIBLE_ABI (struct_size smaller than ::SONDE_TRACE_LINE_SIZE_1_2).
 *         Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_reader_get_line(const sonde_trace_reader_t *reader, uint32_t index,
                                                     sonde_trace_line_t *line);

/**
 * @brief Adds a line table entry. The file name is stored once in the string table, whatever
 * the number of entries that name it.
 * @param writer An open writer.
 * @param line The entry.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER (writer, line or its file),
 *         SONDE_STATUS_ERROR_INCOMPATIBLE_ABI (struct_size smaller than ::SONDE_TRACE_LINE_SIZE_1_2),
 *         SONDE_STATUS_ERROR_NOT_SUPPORTED (unknown trailing bytes set),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (size 0, a range past 2^64, or a file name over
 *         1 MiB), SONDE_STATUS_ERROR_PHASE_FAILURE (an earlier write failed),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY. Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_writer_add_line(sonde_trace_writer_t *writer, const sonde_trace_line_t *line);

/**
 * @brief Appends events to an event shard of a trace being written. sonde_trace_event_t::shard
 * of the input is ignored. Full chunks (the writer's chunk_records events) are compressed and
 * written as they fill, after the table entries added before them, so that a trace cut short
 * still names what its chunks refer to.
 * @param writer An open writer.
 * @param shard Shard index (at most 65535).
 * @param events Events; may be NULL when @p count is 0.
 * @param count How many.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (shard > 65535), SONDE_STATUS_ERROR_IO,
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (an earlier write failed), SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 *         Thread-safe (the writer's lock).
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_writer_write_events(sonde_trace_writer_t *writer, uint32_t shard,
                                                         const sonde_trace_event_t *events, size_t count);

/**
 * @brief Adds a string to the trace's string table, or finds it: equal texts get one id.
 * @param writer An open writer.
 * @param text NUL-terminated text (at most 1 MiB).
 * @param[out] id Its id (0 for "").
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_INVALID_ARGUMENT
 *         (too long), SONDE_STATUS_ERROR_PHASE_FAILURE (an earlier write failed),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY. Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_writer_add_string(sonde_trace_writer_t *writer, const char *text,
                                                       uint32_t *id);

/**
 * @brief Adds (or replaces: the last entry of an index wins) a method table entry. NULL strings
 * are stored as "".
 * @param writer An open writer.
 * @param method The entry; its index field names it.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_INCOMPATIBLE_ABI
 *         (struct_size smaller than ::SONDE_TRACE_METHOD_SIZE_1_2), SONDE_STATUS_ERROR_NOT_SUPPORTED
 *         (unknown trailing bytes set), SONDE_STATUS_ERROR_INVALID_ARGUMENT (index above 2^24 or
 *         a string over 1 MiB), SONDE_STATUS_ERROR_PHASE_FAILURE, SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 *         Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_writer_add_method(sonde_trace_writer_t *writer,
                                                       const sonde_trace_method_t *method);

/**
 * @brief Adds (or replaces) a module table entry; same rules as ::sonde_trace_writer_add_method
 * with ::SONDE_TRACE_MODULE_SIZE_1_2.
 * @param writer An open writer.
 * @param module The entry; its index field names it.
 * @return As ::sonde_trace_writer_add_method. Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_writer_add_module(sonde_trace_writer_t *writer,
                                                       const sonde_trace_module_t *module);

/**
 * @brief Adds (or replaces) a thread table entry; same rules as ::sonde_trace_writer_add_method
 * with ::SONDE_TRACE_THREAD_SIZE_1_2 (the shard field names it, at most 65535).
 * @param writer An open writer.
 * @param thread The entry.
 * @return As ::sonde_trace_writer_add_method. Thread-safe.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_trace_writer_add_thread(sonde_trace_writer_t *writer,
                                                       const sonde_trace_thread_t *thread);

SONDE_END_DECLS

#endif /* SONDE_TRACE_EVENTS_H */
