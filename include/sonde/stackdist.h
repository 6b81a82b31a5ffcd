/**
 * @file stackdist.h
 * @brief Exact LRU stack distances with gem5 StackDistCalc semantics, batch reuse histograms,
 * Mattson miss-ratio curves, SHARDS sampling and a parallel exact mode.
 *
 * The stack distance of an access is the number of distinct other lines touched since the
 * previous access to the same line: an immediate re-access has distance 0, a first access is
 * ::SONDE_STACKDIST_INFINITY. See docs/stack-distance.md.
 *
 * None of these functions needs ::sonde_initialize. A calculator or a histogram is used by one
 * thread at a time (different objects may be used by different threads concurrently).
 */
#ifndef SONDE_STACKDIST_H
#define SONDE_STACKDIST_H

#include <sonde/defs.h>
#include <sonde/status.h>

SONDE_BEGIN_DECLS

/** @brief The distance of a line never seen (or removed): a cold access. @since 1.0 */
#define SONDE_STACKDIST_INFINITY UINT64_MAX

/** @brief A stack-distance calculator. Opaque. @since 1.0 */
typedef struct sonde_stackdist_t sonde_stackdist_t;

/** @brief A reuse histogram filled by ::sonde_stackdist_batch. Opaque. @since 1.0 */
typedef struct sonde_histogram_t sonde_histogram_t;

/** @brief sonde_stackdist_options_t::flags: check every answer against a naive stack. @since 1.0 */
#define SONDE_STACKDIST_FLAG_VERIFY 0x1u

/**
 * @brief Sampling modes (sonde_stackdist_options_t::sampling); cross the ABI as uint32_t.
 * @since 1.0 (the values; the tag `enum sonde_stackdist_sampling_value` since 1.1)
 */
enum sonde_stackdist_sampling_value {
    SONDE_STACKDIST_SAMPLING_NONE = 0,       /**< Exact distances. */
    SONDE_STACKDIST_SAMPLING_FIXED_RATE = 1, /**< SHARDS with a fixed rate (sample_rate). */
    SONDE_STACKDIST_SAMPLING_FIXED_SIZE = 2  /**< SHARDS keeping at most sample_size lines. */
};

/**
 * @brief Bin layouts for ::sonde_histogram_get_bins; cross the ABI as uint32_t.
 * @since 1.0 (the values; the tag `enum sonde_histogram_bins_value` since 1.1)
 */
enum sonde_histogram_bins_value {
    SONDE_HISTOGRAM_BINS_EXACT = 0,  /**< One entry per distance with a non-zero count. */
    SONDE_HISTOGRAM_BINS_LINEAR = 1, /**< Bins [k*w, k*w+w-1] for every k up to the largest. */
    SONDE_HISTOGRAM_BINS_LOG2 = 2    /**< Bins [0,0], [1,1], [2,3], [4,7], ... up to the largest. */
};

/**
 * @brief Options of ::sonde_stackdist_create. Zero-initialise, set struct_size to
 * sizeof(sonde_stackdist_options_t), then set the fields you need.
 * @since 1.0
 */
typedef struct sonde_stackdist_options_t {
    uint32_t struct_size;      /**< sizeof(sonde_stackdist_options_t). */
    uint32_t flags;            /**< SONDE_STACKDIST_FLAG_* bits; others must be 0. */
    uint64_t initial_capacity; /**< Lines to size the tables for (0: a small default). */
    uint32_t sampling;         /**< SONDE_STACKDIST_SAMPLING_*; batches only. */
    uint32_t workers;          /**< Exact batches: > 1 splits each batch over this many threads (max 256). */
    double sample_rate;        /**< FIXED_RATE: 0 < R <= 1. */
    uint64_t sample_size;      /**< FIXED_SIZE: at most this many sampled lines (>= 1). */
    uint64_t seed;             /**< SHARDS hash seed; different seeds sample unrelated lines. */
} sonde_stackdist_options_t;

/**
 * @brief Size of sonde_stackdist_options_t in ABI version 1.0, the smallest struct_size
 * ::sonde_stackdist_create accepts.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.0
 */
#define SONDE_STACKDIST_OPTIONS_SIZE_1_0 48u

/** @brief Totals of a histogram (::sonde_histogram_get_summary). @since 1.0 */
typedef struct sonde_histogram_summary_t {
    uint32_t struct_size;     /**< sizeof(sonde_histogram_summary_t), set by the caller. */
    uint32_t sampling;        /**< Non-zero when the counts are SHARDS estimates. */
    uint64_t accesses;        /**< Accesses offered to the calculator (true count). */
    uint64_t reads;           /**< Estimated reads (all counted accesses of type read). */
    uint64_t writes;          /**< Estimated writes. */
    uint64_t infinite;        /**< Estimated cold (infinite-distance) accesses. */
    uint64_t infinite_reads;  /**< Cold reads. */
    uint64_t infinite_writes; /**< Cold writes. */
    uint64_t sampled;         /**< Accesses that went through the stack (== accesses when exact). */
    double sample_rate;       /**< Current sampling rate (1.0 when exact). */
    uint64_t max_distance;    /**< Largest finite distance with a count (0 if none). */
} sonde_histogram_summary_t;

/**
 * @brief Size of sonde_histogram_summary_t in ABI version 1.0, the smallest struct_size
 * ::sonde_histogram_get_summary accepts.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.0
 */
#define SONDE_HISTOGRAM_SUMMARY_SIZE_1_0 80u

/** @brief One histogram bin: distances first..last inclusive. @since 1.0 */
typedef struct sonde_histogram_bin_t {
    uint64_t first;  /**< Smallest distance of the bin. */
    uint64_t last;   /**< Largest distance of the bin. */
    uint64_t count;  /**< reads + writes. */
    uint64_t reads;  /**< Read accesses in the bin. */
    uint64_t writes; /**< Write accesses in the bin. */
} sonde_histogram_bin_t;

/** @brief One point of a miss-ratio curve. @since 1.0 */
typedef struct sonde_mrc_point_t {
    uint64_t cache_lines; /**< Fully associative LRU cache size in lines. */
    double miss_ratio;    /**< Miss ratio of that cache on the trace (0..1). */
} sonde_mrc_point_t;

/**
 * @brief Creates a calculator.
 * @param opts Options, or NULL for the defaults (exact, serial, no verify).
 * @param[out] out The new calculator; destroy it with ::sonde_stackdist_destroy.
 * @return SUCCESS; NULL_POINTER if out is NULL; INCOMPATIBLE_ABI if opts->struct_size is
 * smaller than SONDE_STACKDIST_OPTIONS_SIZE_1_0; NOT_SUPPORTED for unknown flags or non-zero
 * bytes beyond the known struct, or verify combined with sampling; INVALID_ARGUMENT for an
 * unknown sampling mode, a rate outside (0, 1], a zero sample_size, or workers > 256;
 * OUT_OF_MEMORY.
 * @note Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_stackdist_create(const sonde_stackdist_options_t *opts,
                                                sonde_stackdist_t **out);

/**
 * @brief gem5 calcStackDistAndUpdate: the distance of addr and the old node's mark; with
 * add_new_node the line becomes the most recent, unmarked; without it the line is removed.
 * @param sd The calculator.
 * @param addr Line address.
 * @param add_new_node true: update; false: remove addr from the stack.
 * @param[out] distance The distance, or SONDE_STACKDIST_INFINITY if addr was not in the stack.
 * @param[out] marked The mark of the old node (false when infinite). May be NULL.
 * @return SUCCESS; NULL_POINTER if sd or distance is NULL; NOT_SUPPORTED on a sampling
 * calculator; VERIFY_FAILED in verify mode when the naive stack disagrees (the outputs hold the
 * fast answer; the calculator stays usable).
 * @note Not thread-safe for the same sd.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_stackdist_calc_and_update(sonde_stackdist_t *sd, uint64_t addr,
                                                         bool add_new_node, uint64_t *distance,
                                                         bool *marked);

/**
 * @brief gem5 calcStackDist: the distance of addr without changing the stack; returns the
 * previous mark of its node and sets the mark to `mark`.
 * @param sd The calculator.
 * @param addr Line address.
 * @param mark The new mark of addr's node (ignored if addr is not in the stack).
 * @param[out] distance The distance, or SONDE_STACKDIST_INFINITY.
 * @param[out] marked The previous mark (false when infinite). May be NULL.
 * @return SUCCESS; NULL_POINTER; NOT_SUPPORTED on a sampling calculator; VERIFY_FAILED.
 * @note Not thread-safe for the same sd.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_stackdist_calc(sonde_stackdist_t *sd, uint64_t addr, bool mark,
                                              uint64_t *distance, bool *marked);

/**
 * @brief Batch hot path: updates the stack with every address in order (as
 * calc_and_update(addr, true)) and adds each distance to `hist`. Sampling and parallel
 * calculators sample or split the batch as configured.
 * @param sd The calculator.
 * @param addrs n line addresses.
 * @param is_write n access types (0 read, non-zero write), or NULL for all reads.
 * @param n Number of accesses (0 is allowed).
 * @param hist The histogram to add to.
 * @return SUCCESS; NULL_POINTER if sd or hist is NULL, or addrs is NULL with n > 0;
 * VERIFY_FAILED (verify mode; the histogram holds the fast answers); OUT_OF_MEMORY.
 * @note Not thread-safe for the same sd or hist; a parallel calculator starts its worker
 * threads at its first batch large enough to split, keeps them (asleep between batches) and
 * joins them in ::sonde_stackdist_destroy.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_stackdist_batch(sonde_stackdist_t *sd, const uint64_t *addrs,
                                               const uint8_t *is_write, size_t n,
                                               sonde_histogram_t *hist);

/**
 * @brief Lines currently in the stack (sampled lines under SHARDS).
 * @param sd The calculator.
 * @param[out] lines The count.
 * @return SUCCESS; NULL_POINTER.
 * @note Not thread-safe for the same sd.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_stackdist_size(const sonde_stackdist_t *sd, uint64_t *lines);

/**
 * @brief Destroys a calculator. NULL is ignored.
 * @param sd The calculator.
 * @since 1.0
 */
SONDE_API void sonde_stackdist_destroy(sonde_stackdist_t *sd);

/**
 * @brief Creates an empty histogram.
 * @param[out] out The histogram; destroy it with ::sonde_histogram_destroy.
 * @return SUCCESS; NULL_POINTER; OUT_OF_MEMORY.
 * @note Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_histogram_create(sonde_histogram_t **out);

/**
 * @brief Destroys a histogram. NULL is ignored.
 * @param hist The histogram.
 * @since 1.0
 */
SONDE_API void sonde_histogram_destroy(sonde_histogram_t *hist);

/**
 * @brief Empties a histogram.
 * @param hist The histogram.
 * @return SUCCESS; NULL_POINTER.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_histogram_reset(sonde_histogram_t *hist);

/**
 * @brief Totals: accesses, reads, writes, the infinite count, the sampled fraction.
 * @param hist The histogram.
 * @param[in,out] out Set out->struct_size first; at most that many bytes are written.
 * @return SUCCESS; NULL_POINTER; INCOMPATIBLE_ABI if out->struct_size is smaller than
 * SONDE_HISTOGRAM_SUMMARY_SIZE_1_0.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_histogram_get_summary(const sonde_histogram_t *hist,
                                                     sonde_histogram_summary_t *out);

/**
 * @brief Histogram bins, with the array protocol: the first `size` entries are filled and
 * *actual_size says how many exist.
 * @param hist The histogram.
 * @param binning SONDE_HISTOGRAM_BINS_EXACT, _LINEAR or _LOG2.
 * @param width Bin width for LINEAR (>= 1); ignored otherwise.
 * @param[out] entries Room for `size` bins (may be NULL when size is 0).
 * @param size Entries available.
 * @param[out] actual_size Bins that exist.
 * @return SUCCESS; BUFFER_TOO_SHORT if size < *actual_size (the first size are filled);
 * NULL_POINTER if hist or actual_size is NULL or entries is NULL with size > 0;
 * INVALID_ARGUMENT for an unknown binning or a zero LINEAR width.
 * @note Counts of a sampled histogram are rounded estimates.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_histogram_get_bins(const sonde_histogram_t *hist, uint32_t binning,
                                                  uint64_t width, sonde_histogram_bin_t *entries,
                                                  uint32_t size, uint32_t *actual_size);

/**
 * @brief The miss-ratio curve (Mattson): point (0, 1), then (d + 1, miss ratio) for every
 * distance d with a count, ascending; same array protocol as ::sonde_histogram_get_bins.
 * An empty histogram has no points.
 * @param hist The histogram.
 * @param[out] entries Room for `size` points (may be NULL when size is 0).
 * @param size Entries available.
 * @param[out] actual_size Points that exist.
 * @return SUCCESS; BUFFER_TOO_SHORT; NULL_POINTER.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_histogram_get_mrc(const sonde_histogram_t *hist,
                                                 sonde_mrc_point_t *entries, uint32_t size,
                                                 uint32_t *actual_size);

/**
 * @brief The LRU miss ratio of a fully associative cache of `cache_lines` lines.
 * @param hist The histogram.
 * @param cache_lines Cache size in lines (0 gives 1 unless the histogram is empty).
 * @param[out] miss_ratio The ratio in [0, 1]; 0 for an empty histogram.
 * @return SUCCESS; NULL_POINTER.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_histogram_miss_ratio(const sonde_histogram_t *hist,
                                                    uint64_t cache_lines, double *miss_ratio);

SONDE_END_DECLS

#endif /* SONDE_STACKDIST_H */
