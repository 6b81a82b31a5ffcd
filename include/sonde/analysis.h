/**
 * @file analysis.h
 * @brief Trace analysis: the tool ABI (sonde_tool_ops_t, the roles of drcachesim's
 * analysis_tool_t) and the analyzer that runs tools over traces, serially (one stream
 * interleaved by timestamp) or in parallel (whole shards per worker).
 *
 * Call order the analyzer guarantees for each tool (docs/analysis.md has the full story):
 *  - initialize() once, before any record, on the thread that calls sonde_analyzer_run().
 *  - Serial mode: process_memrefs() (or process_memref() per record when no batch variant is
 *    set) with every record of every shard, interleaved by timestamp, on that same thread.
 *  - Parallel mode: on each worker w, parallel_worker_init(w); then, one shard at a time,
 *    for each shard s the worker takes: parallel_shard_init(s), the shard's records through
 *    parallel_shard_memrefs() or parallel_shard_memref(), parallel_shard_exit(); at last
 *    parallel_worker_exit(). Workers take shards dynamically, the largest (by stored bytes)
 *    first, so which worker runs which shard is not fixed (since 1.2; 1.0 and 1.1 gave shard s
 *    to worker s % workers). A shard's functions are called from exactly one worker, so shard
 *    data needs no locking.
 *  - Live runs (sonde_analyzer_add_live_input(), since 1.2): the shards are a running
 *    program's threads and appear while the run reads. initialize() is told 0 shards when the
 *    tool has add_shards(), which is then called with each larger count before any record or
 *    parallel_shard_init() of the new shards; a tool without it is told 65536, the most a live
 *    input has. A parallel live run gives each shard its own worker (worker index = shard),
 *    started when the shard appears; its parallel_worker_init/exit and parallel_shard_init/exit
 *    are never called concurrently with each other or with add_shards(), while other workers'
 *    parallel_shard_memref(s) go on.
 *  - print_results() / results_json() when the application asks, after the run.
 *  - destroy() when the analyzer is destroyed.
 * A function that answers false stops the run: the analyzer returns SONDE_STATUS_ERROR_TOOL and
 * its error message is "TOOL: " followed by the tool's message (parallel_shard_error() for the
 * shard functions, get_error_string() for the others).
 */
#ifndef SONDE_ANALYSIS_H
#define SONDE_ANALYSIS_H

#include <sonde/defs.h>
#include <sonde/status.h>
#include <sonde/trace.h>

SONDE_BEGIN_DECLS

/**
 * @brief A tool's function table. Set struct_size to sizeof(sonde_tool_ops_t); unset (NULL)
 * functions are optional unless marked required. `tool` is the tool data pointer handed to the
 * analyzer with the table.
 * @since 1.0
 */
typedef struct sonde_tool_ops_t {
    uint32_t struct_size; /**< sizeof(sonde_tool_ops_t) as the tool was compiled. */
    uint32_t reserved;    /**< Must be 0. */
    const char *name;     /**< Tool name (required): the key of its results. */
    /** Called once before any record with the total shard count; false = error. */
    bool (*initialize)(void *tool, uint32_t num_shards);
    /** Serial mode: one record (required for serial mode unless process_memrefs is set). */
    bool (*process_memref)(void *tool, const sonde_memref_t *memref);
    /** Writes a human summary to @p stream (a FILE *). */
    bool (*print_results)(void *tool, void *stream);
    /** Whether the tool can run in parallel mode; NULL means no. */
    bool (*parallel_shard_supported)(void *tool);
    /** Called once on each worker before its shards; may set *worker_data. */
    bool (*parallel_worker_init)(void *tool, uint32_t worker_index, void **worker_data);
    /** Called once on each worker after its last shard. */
    bool (*parallel_worker_exit)(void *tool, void *worker_data);
    /** Called on the shard's worker before its first record; may set *shard_data. A shard
     *  whose init fails gets no parallel_shard_exit(): the tool frees what it made before
     *  returning false. */
    bool (*parallel_shard_init)(void *tool, uint32_t shard, void *worker_data, void **shard_data);
    /** One record of a shard (required for parallel mode unless parallel_shard_memrefs is set). */
    bool (*parallel_shard_memref)(void *tool, void *shard_data, const sonde_memref_t *memref);
    /** Called on the shard's worker after its last record. */
    bool (*parallel_shard_exit)(void *tool, void *shard_data);
    /** The message of the last failed shard function of this shard. */
    const char *(*parallel_shard_error)(void *tool, void *shard_data);
    /** The message of the last failed non-shard function. */
    const char *(*get_error_string)(void *tool);
    /** Batch variant of process_memref, preferred when set. */
    bool (*process_memrefs)(void *tool, const sonde_memref_t *memrefs, size_t count);
    /** Batch variant of parallel_shard_memref, preferred when set. */
    bool (*parallel_shard_memrefs)(void *tool, void *shard_data, const sonde_memref_t *memrefs,
                                   size_t count);
    /** The results as one JSON object (text owned by the tool, valid until the next call), or
     *  NULL when the tool cannot give them (get_error_string() says why). */
    const char *(*results_json)(void *tool);
    /** Frees the tool data; called once by sonde_analyzer_destroy(). */
    void (*destroy)(void *tool);
    /**
     * The memref model the tool understands, a sonde_memref_model_value; asked once when the
     * tool is added. NULL (or a table of ::SONDE_TOOL_OPS_SIZE_1_0 bytes) means
     * ::SONDE_MEMREF_MODEL_1_0: the tool gets the 1.0 view of every trace (see
     * ::sonde_memref_kind_value). ::SONDE_MEMREF_MODEL_1_2 (or a larger value) delivers every
     * record kind. @since 1.2
     */
    uint32_t (*memref_model)(void *tool);
    /**
     * Partitioned runs (sonde_analyzer_set_partition(), `sonde analyze --mpi`): asked once at
     * the start of such a run with this process's @p rank of @p nranks and the kind of part the
     * analyzer @p offers (a sonde_partition_value: ::SONDE_PARTITION_SHARDS or
     * ::SONDE_PARTITION_TIME_SLICES). Answer @p offers to take that part only,
     * ::SONDE_PARTITION_EVERY_RECORD (to a ::SONDE_PARTITION_TIME_SLICES offer only) to receive
     * every record of the stream and keep only what this rank owns, or
     * ::SONDE_PARTITION_REFUSE (get_error_string() says why). A tool without this entry, or
     * without export_state and merge_state, is refused by a partitioned run. @since 1.2
     */
    uint32_t (*partition)(void *tool, uint32_t rank, uint32_t nranks, uint32_t offers);
    /**
     * Time-slice partitions: called before the first record of each slice this rank owns, with
     * the slice's number (slices are numbered in stream order from 0). NULL: not told. @since 1.2
     */
    bool (*slice_begin)(void *tool, uint64_t slice);
    /**
     * After a partitioned run: this rank's partial state as bytes (owned by the tool, valid
     * until the next call), *size set to their count; NULL on failure (get_error_string()).
     * @since 1.2
     */
    const void *(*export_state)(void *tool, size_t *size);
    /**
     * Merges the bytes another rank's export_state() gave into this tool's state, so that after
     * every other rank's bytes the results equal those of one process reading everything.
     * Called in any rank order; false on bad bytes or failure (get_error_string()). @p state
     * starts at an 8-byte boundary, whatever its place in the rank's bytes. @since 1.2
     */
    bool (*merge_state)(void *tool, const void *state, size_t size);
    /**
     * Parallel mode: whether a shard may be handed out in pieces. true: the tool's per-shard
     * results are the same when a shard's records come in several runs (its pieces, each a
     * contiguous part of the shard, in no particular order and possibly on several workers at
     * once), each run between its own parallel_shard_init() and parallel_shard_exit() with the
     * shard's number: counts that add up and sets that unite, merged in parallel_shard_exit()
     * (under the tool's own lock, as pieces of one shard may end on two workers at once). The
     * analyzer then cuts large shards (a Sonde trace's runs of chunks, a memory shard's runs of
     * records) so that the workers stay busy; every tool of the run must say true. NULL or
     * false: each shard goes whole, in order, to one worker. Asked once when the run starts.
     * @since 1.2
     */
    bool (*parallel_shard_pieces)(void *tool);
    /**
     * Live runs (sonde_analyzer_add_live_input()): the shard count grew to @p num_shards (the
     * program started threads). Called on the run's thread (serial) or the thread that starts
     * the new shards' workers (parallel), before any record or parallel_shard_init() of a shard
     * at or above the previous count; parallel_shard_memref(s) of earlier shards may run on
     * their workers meanwhile, so shard data handed out before must stay where it is. False
     * stops the run (get_error_string()). NULL: the tool is initialised with 65536 shards in a
     * live run. @since 1.2
     */
    bool (*add_shards)(void *tool, uint32_t num_shards);
} sonde_tool_ops_t;

/**
 * @brief Size of sonde_tool_ops_t in ABI version 1.0.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.1
 */
#define SONDE_TOOL_OPS_SIZE_1_0 136u

/**
 * @brief Size of sonde_tool_ops_t in ABI version 1.2 (memref_model, then the partition entries
 * partition, slice_begin, export_state and merge_state, then parallel_shard_pieces and add_shards
 * appended).
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.2
 */
#define SONDE_TOOL_OPS_SIZE_1_2 192u

/**
 * @brief Kinds of part in a partitioned run, and a tool's answers to
 * sonde_tool_ops_t::partition. Values are pinned.
 * @since 1.2
 */
enum sonde_partition_value {
    /** The tool cannot run partitioned. */
    SONDE_PARTITION_REFUSE = 0,
    /** Whole shards: each rank reads some of the shards (a parallel run of two or more shards). */
    SONDE_PARTITION_SHARDS = 1,
    /** Time slices of the one interleaved stream: each rank is handed the records of its slices. */
    SONDE_PARTITION_TIME_SLICES = 2,
    /** The tool's answer to a time-slice offer: hand it every record; it keeps its own part. */
    SONDE_PARTITION_EVERY_RECORD = 3
};

/**
 * @brief The smallest sonde_tool_ops_t struct_size the analyzer accepts: the 1.0 size
 * (::SONDE_TOOL_OPS_SIZE_1_0). A table that grows later stays accepted at this size.
 * @since 1.0
 */
#define SONDE_TOOL_OPS_MIN_SIZE SONDE_TOOL_OPS_SIZE_1_0

/**
 * @brief The entry point an external tool (a shared object) exports with SONDE_EXPORT.
 * @param options The options string given to sonde_analyzer_load_tool() ("" when none).
 * @param[out] ops The tool's table; must stay valid until its destroy() is called.
 * @param[out] tool_data The tool data pointer passed to every function of @p ops.
 * @return SONDE_STATUS_SUCCESS, or any failure status (e.g. INVALID_ARGUMENT for bad options).
 * @since 1.0
 */
typedef sonde_status_t (*sonde_tool_create_fn)(const char *options, const sonde_tool_ops_t **ops,
                                               void **tool_data);

/** @brief An analyzer (opaque). One thread at a time. @since 1.0 */
typedef struct sonde_analyzer_t sonde_analyzer_t;

/**
 * @brief Creates an analyzer: parallel mode, one worker per core, no tools, no inputs.
 * @param[out] out The analyzer.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 *         Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_analyzer_create(sonde_analyzer_t **out);

/**
 * @brief Destroys an analyzer and its tools (each tool's destroy()), unloading external tools.
 * @param analyzer The analyzer; NULL is accepted.
 * @return SONDE_STATUS_SUCCESS.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_analyzer_destroy(sonde_analyzer_t *analyzer);

/**
 * @brief Adds a built-in tool by name ("basic_counts", "cache_sim", "reuse_distance").
 * @param analyzer The analyzer.
 * @param name The tool's name.
 * @param options Tool options or NULL: basic_counts takes "line_size=N" (default 64); cache_sim
 *        takes "NAME:SIZE:WAYS:LINE[:POLICY],..." (default "I1:32K:8:64,D1:32K:8:64,LL:1M:16:64")
 *        or, since 1.2, "model=drcachesim[,KEY=VALUE...]" (DynamoRIO drcachesim's hierarchy),
 *        and, since 1.2, an item "per_pc=1" among its levels (the counts of each pc in its JSON
 *        results, for `sonde annotate`; not with the drcachesim model, nor partitioned);
 *        reuse_distance takes "line_size=N,..." or, since 1.2, "model=drcachesim[,...]"
 *        (docs/analysis.md lists every option).
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER (analyzer or name),
 *         SONDE_STATUS_ERROR_NOT_SUPPORTED (no built-in tool of that name),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (bad options; see sonde_analyzer_error()),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (after sonde_analyzer_run()),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY. One thread at a time per analyzer.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_analyzer_add_tool(sonde_analyzer_t *analyzer, const char *name,
                                                 const char *options);

/**
 * @brief Loads an external tool: dlopen(path, RTLD_NOW | RTLD_LOCAL), then calls its
 * sonde_tool_create(options, ...), looked up in that object only (not in its dependencies).
 * @param analyzer The analyzer.
 * @param path Path of the shared object.
 * @param options Tool options or NULL.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_LOAD_FAILED (dlopen failed, or the object does not define
 *         sonde_tool_create itself),
 *         SONDE_STATUS_ERROR_INCOMPATIBLE_ABI (ops struct_size smaller than
 *         SONDE_TOOL_OPS_MIN_SIZE),
 *         SONDE_STATUS_ERROR_NOT_SUPPORTED (reserved field set or ops larger with unknown parts),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (no name, a name already added or reserved:
 *         "inputs", "warnings", and since 1.2 "metadata", which sonde analyze --json
 *         writes; or no memref function),
 *         SONDE_STATUS_ERROR_TOOL (sonde_tool_create failed), SONDE_STATUS_ERROR_PHASE_FAILURE,
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY. sonde_analyzer_error() says why.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_analyzer_load_tool(sonde_analyzer_t *analyzer, const char *path,
                                                  const char *options);

/**
 * @brief Adds a tool given by its table. The analyzer copies the table and owns tool_data from
 * now on (it calls ops->destroy(tool_data) at destroy, also when this call fails).
 * @param analyzer The analyzer.
 * @param ops The table.
 * @param tool_data Passed to every function of the table.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INCOMPATIBLE_ABI, SONDE_STATUS_ERROR_NOT_SUPPORTED,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (no name, a name already added or reserved:
 *         "inputs", "warnings", and since 1.2 "metadata", which sonde analyze --json
 *         writes; or no memref function),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE, SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_analyzer_add_tool_ops(sonde_analyzer_t *analyzer,
                                                     const sonde_tool_ops_t *ops, void *tool_data);

/**
 * @brief Chooses serial (one interleaved stream) or parallel (shards on workers) mode. A
 * parallel run falls back to serial when a tool does not support parallel shards.
 * @param analyzer The analyzer.
 * @param parallel true for parallel mode (the default).
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_PHASE_FAILURE.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_analyzer_set_parallel(sonde_analyzer_t *analyzer, bool parallel);

/**
 * @brief Sets the number of parallel workers (0 = the number of cores, the default).
 * @param analyzer The analyzer.
 * @param workers Worker count, at most 1024.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (> 1024), SONDE_STATUS_ERROR_PHASE_FAILURE.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_analyzer_set_workers(sonde_analyzer_t *analyzer, uint32_t workers);

/**
 * @brief Opens an input trace; its shards follow those of earlier inputs in the numbering.
 * The file is opened once: a pipe or FIFO (bash's <(zstdcat t.zst), /dev/stdin) works for
 * lackey and raw64 input, with or without an explicit format; a Sonde trace needs a seekable
 * file. A truncated Sonde trace opens (recovered); sonde_analyzer_input_warnings() says so.
 * @param analyzer The analyzer.
 * @param path The file, or (since 1.2) a drmemtrace trace directory.
 * @param format A sonde_trace_format_value.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_IO,
 *         SONDE_STATUS_ERROR_FORMAT, SONDE_STATUS_ERROR_INVALID_ARGUMENT (unknown format; since 1.2
 *         also after a live input, sonde_analyzer_add_live_input()),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE, SONDE_STATUS_ERROR_OUT_OF_MEMORY;
 *         sonde_analyzer_error() names the file and offset.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_analyzer_add_input(sonde_analyzer_t *analyzer, const char *path,
                                                  uint32_t format);

/**
 * @brief What the analyzer found when it opened input @p input (and, after a run, when it read
 * it): whether the input is complete, and the warnings of its reader.
 *
 * An input is incomplete when it was not read as written: a Sonde trace whose writer did not
 * finish (no footer or index), recovered by scanning its complete chunks. Its warnings say what
 * was lost, e.g. "FILE: no footer (the writer did not finish)" and "FILE: recovered 3 complete
 * chunks (1500 records) by scanning; truncated chunk at offset 52311 (812 of 1650 bytes)".
 * After a successful run, an input that gave no record has the warning "FILE: no records".
 * The same appear in sonde_analyzer_results_json() under "inputs" and "warnings".
 * @param analyzer The analyzer.
 * @param input Input number: 0 for the first sonde_analyzer_add_input() that succeeded, 1 for
 *        the next, and so on (memory shards are not inputs).
 * @param[out] complete Optional: false when the input was recovered.
 * @param[out] warnings Optional: the warnings, one per line, "" when there are none; owned by
 *        the analyzer and valid until its next sonde_analyzer_add_input(), sonde_analyzer_run()
 *        or sonde_analyzer_destroy().
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER (analyzer),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (no such input; sonde_analyzer_error() says so).
 *         One thread at a time per analyzer.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_analyzer_input_warnings(const sonde_analyzer_t *analyzer, uint32_t input,
                                                       bool *complete, const char **warnings);

/**
 * @brief Adds a live input: the memory references of a running program, sent by the program's
 * Sonde runtime as it runs (a program built for `sonde record --memory`, started with
 * SONDE_MEMTRACE_LIVE=FD naming its end of a Unix socket pair whose other end is @p fd; `sonde
 * analyze --live` does this, docs/memory-traces.md "Analysing live"). The runtime hands over a
 * shared-memory ring on the socket and sends the references through it (docs/trace-format.md,
 * "The live stream"). Its shards are the program's threads, in the order of their first access,
 * and appear while sonde_analyzer_run() reads; the run ends when the program's runtime ends the
 * stream (its exit, or a fatal signal) or the socket reaches its end (the program is gone). A
 * serial run hands the tools exactly the interleaving a trace recorded from the same run gives
 * (by timestamp, ties to the lower shard): a record is handed out only once every shard that may
 * still deliver an earlier one has delivered a later one or ended. Reading is lossless: while
 * the tools are busy nothing is read and the program waits. A stream that ends without its end
 * message (the program was killed) or that says the runtime dropped batches makes the input
 * incomplete (sonde_analyzer_input_warnings()); results cover what arrived. The input is listed
 * in the results JSON with format "live". A live input is the only input of its analyzer and
 * cannot be partitioned.
 * @param analyzer The analyzer.
 * @param fd The descriptor to read (a Unix stream socket), borrowed: it must stay open until
 *        sonde_analyzer_run() returns; the caller closes it. A run that fails shuts it down, which
 *        tells the program's runtime: it stops sending and the program goes on unanalysed.
 * @param name What messages and the results call the input (e.g. the program's name).
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER (analyzer or name),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (fd is not an open descriptor; another input,
 *         memory shard or live input was added; sonde_analyzer_error() says which),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (after sonde_analyzer_run()),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY. A run over it may also answer SONDE_STATUS_ERROR_FORMAT
 *         (a malformed stream) or SONDE_STATUS_ERROR_IO (a read failed). One thread at a time.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_analyzer_add_live_input(sonde_analyzer_t *analyzer, int fd, const char *name);

/**
 * @brief Adds one in-memory shard. The records are borrowed (not copied) and must stay valid
 * and unchanged until sonde_analyzer_run() returns. Tools receive them as stored, so their
 * shard field should hold the shard's number: the number of shards (of file inputs and memory
 * shards) added before this one, which @p shard returns.
 * @param analyzer The analyzer.
 * @param memrefs The shard's records in order (may be NULL when @p count is 0).
 * @param count How many.
 * @param[out] shard Optional: the shard's number.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (since 1.2: after a live input),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE, SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_analyzer_add_memory_shard(sonde_analyzer_t *analyzer,
                                                         const sonde_memref_t *memrefs, size_t count,
                                                         uint32_t *shard);

/**
 * @brief Makes the run process only this process's part of the inputs: rank @p rank of
 * @p nranks processes that read the same inputs with the same tools and options (the `sonde
 * analyze --mpi` ranks). A parallel run of two or more shards deals the shards, largest first,
 * round-robin to the ranks; any other run is serial and cuts its one interleaved stream into
 * time slices: byte ranges when every input is a plain lackey or raw64 file (rank r reads bytes
 * [B r / n, B (r + 1) / n) of the inputs laid end to end, the records that start there, and
 * exchanges routes with the others, see sonde_analyzer_export_routes()), else ranges of
 * records (ceil(records / nranks) each when every shard's record count is known, so rank r
 * reads slice r; else slices of 4,194,304 records, slice k to rank k mod nranks).
 * Every tool must have sonde_tool_ops_t::partition, export_state and merge_state. After the
 * run, sonde_analyzer_export_state() gives this rank's state, and rank 0 merges the others' with
 * sonde_analyzer_merge_state(). docs/scaling.md explains what each built-in tool does.
 * @param analyzer The analyzer.
 * @param rank This process's rank, below @p nranks.
 * @param nranks How many ranks, 1 to 65536 (1: the whole input, but export and merge work).
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (nranks 0 or above 65536, rank >= nranks),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (after sonde_analyzer_run()). One thread at a time.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_analyzer_set_partition(sonde_analyzer_t *analyzer, uint32_t rank,
                                                      uint32_t nranks);

/**
 * @brief After a successful partitioned run: this rank's partial state as bytes (the records
 * it read from each input and every tool's export_state()), for sonde_analyzer_merge_state()
 * at another analyzer of the same inputs, tools and partition count.
 * @param analyzer The analyzer.
 * @param[out] buffer Room for @p size bytes (may be NULL when size is 0).
 * @param size Bytes available.
 * @param[out] actual_size Bytes the state takes.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER (analyzer or actual_size),
 *         SONDE_STATUS_ERROR_BUFFER_TOO_SHORT (see actual_size),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (no successful partitioned run),
 *         SONDE_STATUS_ERROR_TOOL (a tool's export_state failed),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY. One thread at a time.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_analyzer_export_state(sonde_analyzer_t *analyzer, void *buffer, size_t size,
                                                     size_t *actual_size);

/**
 * @brief Merges another rank's sonde_analyzer_export_state() bytes into this analyzer's results
 * (after its own successful partitioned run). Once every other rank's state is merged, the
 * results (sonde_analyzer_print_results(), sonde_analyzer_results_json()) equal those of one
 * process that analysed everything. Each rank's state is merged at most once, in any order.
 * @param analyzer The analyzer.
 * @param state The bytes.
 * @param size Their count.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (no successful partitioned run here),
 *         SONDE_STATUS_ERROR_FORMAT (not a state, or truncated),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (another partition count, this rank's own state or
 *         one merged already, other inputs or tools),
 *         SONDE_STATUS_ERROR_TOOL (a tool's merge_state failed; the results are then unusable),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY. sonde_analyzer_error() says why. One thread at a time.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_analyzer_merge_state(sonde_analyzer_t *analyzer, const void *state,
                                                    size_t size);

/**
 * @brief After a successful partitioned run: the bytes this rank sends rank @p rank before the
 * states are exchanged (its "routes"). A time-slice run whose shards are all plain lackey or
 * raw64 files reads byte ranges (each rank only its part of the stream, see docs/scaling.md);
 * a built-in tool that needs more than its own slice then sends what it read to the ranks that
 * need it (cache_sim sends each reference to the ranks that simulate its cache sets). Empty
 * (@p actual_size 0) when no tool of the run routes. Every rank sends every other rank its
 * routes and merges theirs with sonde_analyzer_merge_routes() before
 * sonde_analyzer_export_state().
 * @param analyzer The analyzer.
 * @param rank The rank the bytes are for (not this rank).
 * @param[out] buffer Room for @p size bytes (may be NULL when size is 0).
 * @param size Bytes available.
 * @param[out] actual_size Bytes the routes take.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER (analyzer or actual_size),
 *         SONDE_STATUS_ERROR_BUFFER_TOO_SHORT (see actual_size),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (this rank, or @p rank beyond the ranks),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (no successful partitioned run),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY. One thread at a time.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_analyzer_export_routes(sonde_analyzer_t *analyzer, uint32_t rank,
                                                      void *buffer, size_t size, size_t *actual_size);

/**
 * @brief Merges the routes rank @p rank's sonde_analyzer_export_routes() made for this rank
 * (empty bytes when its run routes nothing). Once every other rank's are merged (in any order),
 * the routing tools finish this rank's part and sonde_analyzer_export_state() may be called;
 * until then it answers SONDE_STATUS_ERROR_PHASE_FAILURE.
 * @param analyzer The analyzer.
 * @param rank The rank that made them (not this rank).
 * @param bytes The bytes (may be NULL when @p size is 0).
 * @param size Their count.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (no successful partitioned run here),
 *         SONDE_STATUS_ERROR_FORMAT (not routes, or truncated),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (this rank, a rank merged already or beyond the
 *         ranks, routes made for another rank, another run's tools),
 *         SONDE_STATUS_ERROR_TOOL (a tool failed with them; the results are then unusable),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY. sonde_analyzer_error() says why. One thread at a time.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_analyzer_merge_routes(sonde_analyzer_t *analyzer, uint32_t rank,
                                                     const void *bytes, size_t size);

/**
 * @brief Runs every tool over every input. Can be called once.
 * @param analyzer The analyzer.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (no tool or no input; since 1.2 a live input with a
 *         partition),
 *         SONDE_STATUS_ERROR_NOT_SUPPORTED (serial run and a tool has no serial memref function),
 *         SONDE_STATUS_ERROR_TOOL (a tool failed), SONDE_STATUS_ERROR_IO / _FORMAT (an input
 *         failed part-way), SONDE_STATUS_ERROR_PHASE_FAILURE (second call),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY (also, up front, a serial run whose inputs' decode
 *         buffers would exceed the readers' memory budget; the message says what it would need).
 *         sonde_analyzer_error() says why.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_analyzer_run(sonde_analyzer_t *analyzer);

/**
 * @brief The message of the last failed call, or "".
 * @param analyzer The analyzer.
 * @return A string owned by the analyzer, valid until its next call; "" for NULL.
 * @since 1.0
 */
SONDE_API const char *sonde_analyzer_error(const sonde_analyzer_t *analyzer);

/**
 * @brief Whether the last run was parallel (false after a serial run or a fallback).
 * @param analyzer The analyzer.
 * @param[out] parallel The answer.
 * @param[out] workers Workers used (1 for serial); may be NULL.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (not run yet).
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_analyzer_run_info(const sonde_analyzer_t *analyzer, bool *parallel,
                                                 uint32_t *workers);

/**
 * @brief How far a run has read its file inputs, for a progress display: may be called from
 * any thread while sonde_analyzer_run() runs on another (and before or after it), as long as no
 * input is being added at the same time.
 *
 * Both figures are bytes as the inputs are stored (compressed where they are): @p done counts
 * the bytes the readers have consumed so far (a Sonde trace: the chunks of its memory-reference
 * shards; lackey and raw64: the file, plain or zstd; drmemtrace: each thread file, a zip
 * member at a time), @p total the bytes they will consume in a run that reads everything.
 * Memory shards are not counted. A serial run reads each shard once, so done reaches total at
 * the end; a run that stops early (an error) leaves it short.
 * @param analyzer The analyzer.
 * @param[out] done Bytes consumed so far.
 * @param[out] total Bytes to consume; 0 when it cannot be known (an input is a pipe or a FIFO),
 *             then only @p done is meaningful.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER.
 * @since 1.2
 */
SONDE_API sonde_status_t sonde_analyzer_progress(const sonde_analyzer_t *analyzer, uint64_t *done,
                                                 uint64_t *total);

/**
 * @brief Calls every tool's print_results() on @p stream after a successful run.
 * @param analyzer The analyzer.
 * @param stream A FILE *.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (no successful run), SONDE_STATUS_ERROR_TOOL,
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY (a built-in tool ran out of memory).
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_analyzer_print_results(sonde_analyzer_t *analyzer, void *stream);

/**
 * @brief The results of every tool as one JSON object, a key per tool name (tools without
 * results_json() are left out), plus, when file inputs were added (sonde_analyzer_add_input()),
 * two keys of the analyzer's own: "inputs", an array with
 * one object per file input, {"path": ..., "format": "sonde" | "lackey" | "raw64" | "drmemtrace" (1.2),
 * "complete": true | false, "warnings": [...]}, and "warnings", every input's warnings in one
 * array of strings (see sonde_analyzer_input_warnings()). Tools cannot take these two names.
 * @param analyzer The analyzer.
 * @param[out] buffer Room for @p size bytes (may be NULL when size is 0); NUL-terminated.
 * @param size Bytes available.
 * @param[out] actual_size Bytes needed including the NUL.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER (analyzer or actual_size),
 *         SONDE_STATUS_ERROR_BUFFER_TOO_SHORT (see actual_size), SONDE_STATUS_ERROR_PHASE_FAILURE,
 *         SONDE_STATUS_ERROR_TOOL (a tool gave NULL or text that is not a JSON object),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY (also when a built-in tool runs out of memory).
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_analyzer_results_json(sonde_analyzer_t *analyzer, char *buffer,
                                                     size_t size, size_t *actual_size);

SONDE_END_DECLS

#endif /* SONDE_ANALYSIS_H */
