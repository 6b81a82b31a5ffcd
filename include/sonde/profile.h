/**
 * @file profile.h
 * @brief Profile arrays: fixed-size records replicated into per-thread buckets, allocated in
 * a profile buffer, so that many threads update counters at full speed without atomics.
 *
 * Terminology (see docs/profile-arrays.md):
 * - a **record** is `record_size` bytes, usually a few uint64_t counters;
 * - a **chunk** is one copy of all `num_records` records, `chunk_size` bytes: the record bytes
 *   rounded up to the array's alignment and to 64 bytes, so two chunks never share a cache line;
 * - a **bucket** is one chunk; an array has `num_thread_buckets` of them (a power of two) and a
 *   thread updates the bucket `sonde_profile_thread_index() & (num_thread_buckets - 1)`.
 *
 * Record `r` of bucket `b` lives at buffer offset `offset + b * chunk_size + r * record_size`.
 *
 * A **profile buffer** is the memory the arrays live in: memory Sonde owns, memory the caller
 * provides, or a shared-memory file (a path or a memfd) that another process can map and read
 * while the program runs (its file layout is in sonde/profile_shared.h, included here). Arrays
 * are carved out by Sonde's bump allocator or by a caller allocator (::sonde_profile_allocator_t).
 *
 * Hot path: get a ::sonde_profile_view_t once per thread with ::sonde_profile_array_view, then
 * count with the static inline helpers below (a load, an add and a store; no call, no lock).
 *
 * None of these functions needs ::sonde_initialize, except ::sonde_profile_array_emit which
 * emits into a Sonde buffer.
 *
 * Shared buffers and other processes: a memfd region is sealed against shrinking. A file
 * region can be cut by any process that may write it; every function that touches the region
 * (except the inline helpers and pointers already handed out) first checks the file size and
 * answers SONDE_STATUS_ERROR_FORMAT instead of faulting. A cut that races such a call, between
 * the check and the access, can still raise SIGBUS (see docs/robustness.md).
 */
#ifndef SONDE_PROFILE_H
#define SONDE_PROFILE_H

#include <sonde/defs.h>
#include <sonde/profile_shared.h>
#include <sonde/status.h>

SONDE_BEGIN_DECLS

/** @brief A profile buffer: the memory profile arrays are allocated in. Opaque. @since 1.0 */
typedef struct sonde_profile_buffer_t sonde_profile_buffer_t;

/**
 * @brief A profile array: geometry plus, once allocated, its offset in a buffer. Opaque.
 * @since 1.0
 */
typedef struct sonde_profile_array_t sonde_profile_array_t;

/**
 * @brief The value ::sonde_profile_array_offset answers for an array that is not allocated.
 * @since 1.0
 */
#define SONDE_PROFILE_OFFSET_NONE UINT64_MAX

/**
 * @brief GTPin's default num_thread_buckets for ::sonde_profile_array_create: one bucket.
 * @since 1.0
 */
#define SONDE_PROFILE_DEFAULT_THREAD_BUCKETS 1u

/** @brief GTPin's default alignment for ::sonde_profile_array_create: one cache line. @since 1.0 */
#define SONDE_PROFILE_DEFAULT_ALIGNMENT 64u

/** @brief Every chunk is aligned to at least this many bytes (one cache line). @since 1.0 */
#define SONDE_PROFILE_MIN_CHUNK_ALIGNMENT 64u

/** @brief Largest num_thread_buckets accepted (after rounding up to a power of two). @since 1.0 */
#define SONDE_PROFILE_MAX_THREAD_BUCKETS 65536u

/** @brief Largest alignment accepted by ::sonde_profile_array_create. @since 1.0 */
#define SONDE_PROFILE_MAX_ALIGNMENT 4096u

/**
 * @brief A caller-supplied allocator that places arrays in a profile buffer instead of
 * Sonde's bump allocator (the role of GTPin's IGtProfileBufferAllocator).
 *
 * Set struct_size to sizeof(sonde_profile_allocator_t). Sonde copies the struct.
 * @since 1.0
 */
typedef struct sonde_profile_allocator_t {
    uint32_t struct_size; /**< sizeof(sonde_profile_allocator_t) of the caller. */
    uint32_t reserved;    /**< Must be 0. */
    void *context;        /**< Passed to allocate. */
    /**
     * Chooses where `size` bytes go: stores a buffer offset that is a multiple of `alignment`
     * (a power of two, at least 64) in *offset and returns true, or returns false when there is
     * no room. Called with the buffer's allocation lock held, so calls never overlap; it must
     * not call sonde_profile_* functions on the same buffer.
     */
    bool (*allocate)(void *context, uint64_t size, uint64_t alignment, uint64_t *offset);
} sonde_profile_allocator_t;

/**
 * @brief Size of sonde_profile_allocator_t in ABI version 1.0, the smallest struct_size
 * ::sonde_profile_buffer_create_with_allocator accepts.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.1
 */
#define SONDE_PROFILE_ALLOCATOR_SIZE_1_0 24u

/**
 * @brief What the hot path needs to address records, for one thread.
 *
 * Filled by ::sonde_profile_array_view for the calling thread; keep one per thread (e.g. in a
 * local variable or a thread_local). Valid while the buffer exists. Set struct_size before the
 * call; the fields below are part of the 1.0 layout and never move.
 * @since 1.0
 */
typedef struct sonde_profile_view_t {
    uint32_t struct_size;   /**< sizeof(sonde_profile_view_t) of the caller. */
    uint32_t bucket;        /**< The calling thread's bucket. */
    uint8_t *bucket_base;   /**< Address of record 0 in the calling thread's bucket. */
    uint8_t *base;          /**< Address of record 0 in bucket 0. */
    uint64_t chunk_size;    /**< Bytes between two buckets. */
    uint32_t record_size;   /**< Bytes per record. */
    uint32_t num_records;   /**< Records per bucket. */
    uint32_t bucket_mask;   /**< num_thread_buckets - 1. */
    uint32_t reserved;      /**< Written as 0. */
} sonde_profile_view_t;

/**
 * @brief Size of sonde_profile_view_t in ABI version 1.0, the smallest struct_size
 * ::sonde_profile_array_view accepts.
 * A literal, valid for x86-64 (LP64), the only platform Sonde is built for.
 * @since 1.1
 */
#define SONDE_PROFILE_VIEW_SIZE_1_0 48u

/* ---------------------------------------------------------------------------------------- */
/* Hot-path helpers. They check nothing: `record` must be below num_records, `bucket` at most */
/* bucket_mask, `field_offset + 8` at most record_size and the field 8-byte aligned. Nor do  */
/* they check a shared file's size: a file another process cut makes them fault (SIGBUS).    */
/* ---------------------------------------------------------------------------------------- */

/**
 * @brief Address of `record` in the calling thread's bucket. Cost: a multiply and an add.
 * @param view The calling thread's view.
 * @param record Record number, below num_records.
 * @return The record's address. Thread-safe (reads the view only).
 * @since 1.0
 */
static inline void *sonde_profile_view_record(const sonde_profile_view_t *view, uint32_t record) {
    return view->bucket_base + (size_t)record * view->record_size;
}

/**
 * @brief Address of `record` in any bucket (for readers).
 * @param view A view of the array.
 * @param bucket Bucket (masked with bucket_mask).
 * @param record Record number, below num_records.
 * @return The record's address. Thread-safe (reads the view only).
 * @since 1.0
 */
static inline void *sonde_profile_view_bucket_record(const sonde_profile_view_t *view,
                                                     uint32_t bucket, uint32_t record) {
    return view->base + (size_t)(bucket & view->bucket_mask) * view->chunk_size +
           (size_t)record * view->record_size;
}

/**
 * @brief Adds to a counter that only the calling thread writes: a relaxed load, an add and a
 * relaxed store (on x86-64 the same instructions as `*counter += delta`), so a reader in
 * another thread or process never sees a torn value. Not a read-modify-write: two threads
 * adding to the same counter concurrently can lose updates (use ::sonde_profile_counter_add_shared).
 * @param counter An 8-byte-aligned counter written only by the calling thread.
 * @param delta Value to add (wrapping modulo 2^64).
 * @since 1.0
 */
static inline void sonde_profile_counter_add(uint64_t *counter, uint64_t delta) {
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + delta, __ATOMIC_RELAXED);
}

/**
 * @brief Adds to a counter that several threads may write (relaxed atomic fetch-add).
 * @param counter An 8-byte-aligned counter.
 * @param delta Value to add (wrapping modulo 2^64).
 * @since 1.0
 */
static inline void sonde_profile_counter_add_shared(uint64_t *counter, uint64_t delta) {
    (void)__atomic_fetch_add(counter, delta, __ATOMIC_RELAXED);
}

/**
 * @brief Reads a counter whole (relaxed atomic load), also while its writer is running.
 * @param counter An 8-byte-aligned counter.
 * @return Its value.
 * @since 1.0
 */
static inline uint64_t sonde_profile_counter_load(const uint64_t *counter) {
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

/**
 * @brief Hot path: adds `delta` to the u64 at `field_offset` of `record` in the calling thread's
 * bucket. A few instructions, no call, no lock, no atomic read-modify-write. Only the owning
 * thread of the bucket may use it (see ::sonde_profile_view_add_u64_shared otherwise).
 * @param view The calling thread's view.
 * @param record Record number, below num_records.
 * @param field_offset Byte offset of an 8-byte-aligned u64 field within the record.
 * @param delta Value to add.
 * @since 1.0
 */
static inline void sonde_profile_view_add_u64(const sonde_profile_view_t *view, uint32_t record,
                                              uint32_t field_offset, uint64_t delta) {
    sonde_profile_counter_add(
        (uint64_t *)(void *)((uint8_t *)sonde_profile_view_record(view, record) + field_offset),
        delta);
}

/**
 * @brief Like ::sonde_profile_view_add_u64 with an atomic fetch-add, for buckets that
 * several threads share (more threads than buckets).
 * @param view A view of the array.
 * @param record Record number, below num_records.
 * @param field_offset Byte offset of an 8-byte-aligned u64 field within the record.
 * @param delta Value to add.
 * @since 1.0
 */
static inline void sonde_profile_view_add_u64_shared(const sonde_profile_view_t *view,
                                                     uint32_t record, uint32_t field_offset,
                                                     uint64_t delta) {
    sonde_profile_counter_add_shared(
        (uint64_t *)(void *)((uint8_t *)sonde_profile_view_record(view, record) + field_offset),
        delta);
}

/* ---------------------------------------------------------------------------------------- */
/* Thread index                                                                              */
/* ---------------------------------------------------------------------------------------- */

/**
 * @brief The calling thread's stable index: 0, 1, 2, ... in the order threads first ask (or
 * the value set with ::sonde_profile_set_thread_index). Its bucket in an array is
 * `index & (num_thread_buckets - 1)`. Indices are never reused within a process.
 * Thread-safe; lock-free.
 * @return The calling thread's index.
 * @since 1.0
 */
SONDE_API uint32_t sonde_profile_thread_index(void);

/**
 * @brief Pins the calling thread's index (e.g. worker i uses bucket i), overriding the
 * automatic one for this thread only.
 * @param index Any value below UINT32_MAX.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_INVALID_ARGUMENT (UINT32_MAX).
 * Thread-safe: affects only the calling thread.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_set_thread_index(uint32_t index);

/* ---------------------------------------------------------------------------------------- */
/* Profile buffers                                                                           */
/* ---------------------------------------------------------------------------------------- */

/**
 * @brief Creates a profile buffer of `size` bytes of zeroed memory that Sonde owns (page
 * aligned), with Sonde's bump allocator.
 * @param size Bytes, at least 1.
 * @param[out] out The new buffer.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (size 0 or too large),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_buffer_create(uint64_t size, sonde_profile_buffer_t **out);

/**
 * @brief Creates a profile buffer over memory the caller provides (and keeps alive until
 * ::sonde_profile_buffer_destroy). Sonde does not clear it: ::sonde_profile_array_initialize
 * zeroes an array. Offsets and alignments are relative to `memory`.
 * @param memory At least `size` bytes, 64-byte aligned.
 * @param size Bytes, at least 1.
 * @param[out] out The new buffer.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (size 0, memory not 64-byte aligned),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_buffer_create_from_memory(void *memory, uint64_t size,
                                                                 sonde_profile_buffer_t **out);

/**
 * @brief Creates a profile buffer whose arrays are placed by a caller allocator.
 * @param memory Caller memory as for ::sonde_profile_buffer_create_from_memory, or NULL for
 *        `size` bytes of zeroed memory that Sonde owns.
 * @param size Bytes, at least 1.
 * @param allocator The allocator (copied).
 * @param[out] out The new buffer.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER (allocator, its allocate
 *         member, or out), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI (struct_size smaller than
 *         ::SONDE_PROFILE_ALLOCATOR_SIZE_1_0),
 *         SONDE_STATUS_ERROR_NOT_SUPPORTED (unknown non-zero trailing bytes),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (size 0 or too large, memory misaligned,
 *         reserved non-zero), SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_buffer_create_with_allocator(
    void *memory, uint64_t size, const sonde_profile_allocator_t *allocator,
    sonde_profile_buffer_t **out);

/**
 * @brief Creates a profile buffer in a shared-memory file that other processes can map.
 *
 * The region starts with a ::sonde_profile_shared_header_t and a directory of the allocated
 * arrays (SONDE_PROFILE_SHARED_HEADER_SIZE bytes), followed by `size` bytes for arrays.
 * The file is created (or truncated) with mode 0600, sized and mapped MAP_SHARED; Sonde never
 * unlinks it. With `path` NULL the region is an anonymous memfd, sealed with F_SEAL_SHRINK
 * so that no process can make it smaller (ftruncate to a smaller size fails with EPERM;
 * growing is allowed); ::sonde_profile_buffer_fd gives its descriptor (close-on-exec; another
 * process opens it as /proc/PID/fd/FD).
 * @param path File to create, or NULL for a memfd.
 * @param size Bytes for arrays, at least 1.
 * @param[out] out The new buffer.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (size 0 or too large),
 *         SONDE_STATUS_ERROR_IO (open, memfd_create, ftruncate, sealing or mmap failed),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_buffer_create_shared(const char *path, uint64_t size,
                                                            sonde_profile_buffer_t **out);

/**
 * @brief Maps an existing shared profile buffer (made by ::sonde_profile_buffer_create_shared,
 * possibly in another process) read-write, to read or update its arrays. Arrays cannot be
 * allocated in it; find them with ::sonde_profile_array_open.
 * @param path The file (or /proc/PID/fd/FD of a memfd).
 * @param[out] out The new buffer.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_IO (open,
 *         fstat or mmap failed), SONDE_STATUS_ERROR_FORMAT (too short, bad magic, header or
 *         sizes inconsistent with the file), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI (unknown
 *         layout version), SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_buffer_open_shared(const char *path,
                                                          sonde_profile_buffer_t **out);

/**
 * @brief Unmaps or frees the buffer's memory (caller memory is left alone; a shared file is
 * left in place). Arrays allocated in it must not be used with it afterwards. NULL is ignored.
 * Not thread-safe with other calls on the same buffer.
 * @param pb The profile buffer.
 * @since 1.0
 */
SONDE_API void sonde_profile_buffer_destroy(sonde_profile_buffer_t *pb);

/** @brief Bytes available for arrays (shared buffers: without the header). 0 for NULL.
 * Thread-safe.
 * @param pb The profile buffer.
 * @return The size in bytes.
 * @since 1.0
 */
SONDE_API uint64_t sonde_profile_buffer_size(const sonde_profile_buffer_t *pb);

/** @brief Address of buffer offset 0 (shared buffers: the header), or NULL for NULL.
 * Thread-safe.
 * @param pb The profile buffer.
 * @return The address.
 * @since 1.0
 */
SONDE_API void *sonde_profile_buffer_data(const sonde_profile_buffer_t *pb);

/**
 * @brief The file descriptor of a shared buffer (owned by the buffer, closed by destroy).
 * @param pb The profile buffer.
 * @param[out] fd The descriptor.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (not a profile buffer),
 *         SONDE_STATUS_ERROR_NOT_SUPPORTED (not a shared buffer).
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_buffer_fd(const sonde_profile_buffer_t *pb, int *fd);

/**
 * @brief How many arrays the directory of a shared buffer lists.
 * @param pb The profile buffer.
 * @param[out] count Published directory entries.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (not a profile buffer),
 *         SONDE_STATUS_ERROR_NOT_SUPPORTED (not a shared buffer),
 *         SONDE_STATUS_ERROR_FORMAT (a shared buffer whose file another process cut below
 *         the mapped size, or cut and grew back), SONDE_STATUS_ERROR_IO (fstat of that file
 *         failed).
 * Thread-safe (reads the published count).
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_buffer_num_arrays(const sonde_profile_buffer_t *pb,
                                                         uint32_t *count);

/* ---------------------------------------------------------------------------------------- */
/* Profile arrays                                                                            */
/* ---------------------------------------------------------------------------------------- */

/**
 * @brief Creates an unallocated array of `num_records` records of `record_size` bytes in
 * `num_thread_buckets` buckets.
 *
 * chunk_size = record_size * num_records rounded up to max(alignment, 64); it must fit in
 * 32 bits. The array's offset will be a multiple of max(alignment, 64).
 * @param record_size Bytes per record, at least 1.
 * @param num_records Records per bucket, at least 1.
 * @param num_thread_buckets At least 1 (1 is GTPin's default); rounded up to a power of two,
 *        at most SONDE_PROFILE_MAX_THREAD_BUCKETS after rounding.
 * @param alignment A power of two up to SONDE_PROFILE_MAX_ALIGNMENT (64 is the usual choice).
 * @param[out] out The new array.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (a zero count or size, alignment not a power
 *         of two or too large, too many buckets, chunk size overflowing 32 bits),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_array_create(uint32_t record_size, uint32_t num_records,
                                                    uint32_t num_thread_buckets,
                                                    uint32_t alignment,
                                                    sonde_profile_array_t **out);

/**
 * @brief An array describing entry `index` of a shared buffer's directory, already allocated
 * in `pb` (typically a buffer from ::sonde_profile_buffer_open_shared).
 * @param pb The profile buffer.
 * @param index Directory entry, below the published count.
 * @param[out] out Receives the new object; unchanged on failure.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (not a profile buffer, index not below the
 *         published count), SONDE_STATUS_ERROR_NOT_SUPPORTED (not a shared buffer),
 *         SONDE_STATUS_ERROR_FORMAT (entry geometry invalid or outside the region, or the file
 *         was cut below the mapped size or cut and grown back),
 *         SONDE_STATUS_ERROR_IO (fstat of the file failed), SONDE_STATUS_ERROR_OUT_OF_MEMORY.
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_array_open(sonde_profile_buffer_t *pb, uint32_t index,
                                                  sonde_profile_array_t **out);

/** @brief Destroys an array object (the buffer space is not reclaimed). NULL is ignored.
 * Must not race other calls on the same array.
 * @param arr The array.
 * @since 1.0
 */
SONDE_API void sonde_profile_array_destroy(sonde_profile_array_t *arr);

/**
 * @brief Allocates the array in a buffer (its memory is not cleared: see
 * ::sonde_profile_array_initialize). A shared buffer lists the array in its directory.
 * @param arr The array.
 * @param pb The buffer to allocate the array in.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (not an array or not a buffer),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (already allocated),
 *         SONDE_STATUS_ERROR_NOT_SUPPORTED (buffer opened with ::sonde_profile_buffer_open_shared),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY (no room, or the allocator returned false),
 *         SONDE_STATUS_ERROR_LIMIT (shared directory full),
 *         SONDE_STATUS_ERROR (the allocator returned a misaligned or out-of-range offset),
 *         SONDE_STATUS_ERROR_FORMAT (a shared buffer whose file another process cut below
 *         the mapped size, or cut and grew back), SONDE_STATUS_ERROR_IO (fstat of that file
 *         failed).
 * Thread-safe for different arrays; do not allocate one array from two threads at once.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_array_allocate(sonde_profile_array_t *arr,
                                                      sonde_profile_buffer_t *pb);

/**
 * @brief Zeroes every record of every bucket.
 * @param arr The array.
 * @param pb The buffer the array is allocated in.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (not an array, not a buffer, or not the buffer
 *         the array is allocated in), SONDE_STATUS_ERROR_PHASE_FAILURE (not allocated),
 *         SONDE_STATUS_ERROR_FORMAT (a shared buffer whose file another process cut below
 *         the mapped size, or cut and grew back), SONDE_STATUS_ERROR_IO (fstat of that file
 *         failed).
 * Races with writers of the array (their updates may survive or be lost).
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_array_initialize(const sonde_profile_array_t *arr,
                                                        sonde_profile_buffer_t *pb);

/**
 * @brief Copies records [first_record, first_record + num_records) of one bucket into
 * `records` (num_records * record_size bytes).
 * @param arr The array.
 * @param pb The buffer the array is allocated in.
 * @param records num_records * record_size bytes.
 * @param first_record First record of the range.
 * @param num_records Records in the range, at least 1.
 * @param thread_bucket Bucket, below num_thread_buckets.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (not an array or buffer, other buffer, num_records
 *         0, range past the last record, bucket out of range),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (not allocated),
 *         SONDE_STATUS_ERROR_FORMAT (a shared buffer whose file another process cut below
 *         the mapped size, or cut and grew back), SONDE_STATUS_ERROR_IO (fstat of that file
 *         failed).
 * Thread-safe; racing writers: see ::sonde_profile_array_snapshot.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_array_read(const sonde_profile_array_t *arr,
                                                  const sonde_profile_buffer_t *pb,
                                                  void *records, uint32_t first_record,
                                                  uint32_t num_records, uint32_t thread_bucket);

/**
 * @brief Copies num_records records from `records` into [first_record, ...) of one bucket.
 * @param arr The array.
 * @param pb The buffer the array is allocated in.
 * @param records num_records * record_size bytes.
 * @param first_record First record of the range.
 * @param num_records Records in the range, at least 1.
 * @param thread_bucket Bucket, below num_thread_buckets.
 * @return As ::sonde_profile_array_read.
 * Races with writers of the same bucket.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_array_write(const sonde_profile_array_t *arr,
                                                   sonde_profile_buffer_t *pb,
                                                   const void *records, uint32_t first_record,
                                                   uint32_t num_records, uint32_t thread_bucket);

/**
 * @brief Buffer offset of `record` in `thread_bucket`:
 * offset + thread_bucket * chunk_size + record * record_size.
 * @param arr The array.
 * @param record Record number, below num_records.
 * @param thread_bucket Bucket, below num_thread_buckets.
 * @param[out] offset The offset.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (not an array, record or bucket out of range),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (not allocated).
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_array_record_offset(const sonde_profile_array_t *arr,
                                                           uint32_t record,
                                                           uint32_t thread_bucket,
                                                           uint64_t *offset);

/**
 * @brief chunk_size * num_thread_buckets: the bytes the array occupies; 0 for NULL. Thread-safe.
 * @param arr The array.
 * @return The size in bytes.
 * @since 1.0
 */
SONDE_API uint64_t sonde_profile_array_size(const sonde_profile_array_t *arr);
/** @brief The array's buffer offset, or SONDE_PROFILE_OFFSET_NONE (UINT64_MAX) until
 * allocated (and for NULL). Thread-safe.
 * @param arr The array.
 * @return The offset.
 * @since 1.0
 */
SONDE_API uint64_t sonde_profile_array_offset(const sonde_profile_array_t *arr);
/**
 * @brief Whether the array is allocated; false for NULL. Thread-safe.
 * @param arr The array.
 * @return true when allocated.
 * @since 1.0
 */
SONDE_API bool sonde_profile_array_is_allocated(const sonde_profile_array_t *arr);
/**
 * @brief Bytes per record; 0 for NULL. Thread-safe.
 * @param arr The array.
 * @return The record size in bytes.
 * @since 1.0
 */
SONDE_API uint32_t sonde_profile_array_record_size(const sonde_profile_array_t *arr);
/**
 * @brief Records per bucket; 0 for NULL. Thread-safe.
 * @param arr The array.
 * @return The record count.
 * @since 1.0
 */
SONDE_API uint32_t sonde_profile_array_num_records(const sonde_profile_array_t *arr);
/**
 * @brief Buckets after rounding up to a power of two; 0 for NULL. Thread-safe.
 * @param arr The array.
 * @return The bucket count (a power of two).
 * @since 1.0
 */
SONDE_API uint32_t sonde_profile_array_num_thread_buckets(const sonde_profile_array_t *arr);
/**
 * @brief Bytes per bucket (a multiple of max(alignment, 64)); 0 for NULL. Thread-safe.
 * @param arr The array.
 * @return The bucket size in bytes.
 * @since 1.0
 */
SONDE_API uint32_t sonde_profile_array_chunk_size(const sonde_profile_array_t *arr);

/**
 * @brief The calling thread's bucket of an array: sonde_profile_thread_index() & (buckets - 1).
 * @param arr The array.
 * @return The bucket, 0 for NULL. Thread-safe.
 * @since 1.0
 */
SONDE_API uint32_t sonde_profile_array_thread_bucket(const sonde_profile_array_t *arr);

/**
 * @brief Address of `record` in the calling thread's bucket.
 * @param[out] record_ptr The address (valid while the buffer lives; nothing checks a shared
 *        file's size when the pointer is used).
 * @param arr The array.
 * @param pb The buffer the array is allocated in.
 * @param record Record number, below num_records.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (not an array or buffer, other buffer, record out
 *         of range), SONDE_STATUS_ERROR_PHASE_FAILURE (not allocated),
 *         SONDE_STATUS_ERROR_FORMAT (a shared buffer whose file another process cut below
 *         the mapped size, or cut and grew back), SONDE_STATUS_ERROR_IO (fstat of that file
 *         failed).
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_array_thread_record(const sonde_profile_array_t *arr,
                                                           sonde_profile_buffer_t *pb,
                                                           uint32_t record, void **record_ptr);

/**
 * @brief Fills a view for the calling thread, for the inline helpers.
 * @param[in,out] view struct_size must be set; only that many bytes are written.
 * @param arr The array.
 * @param pb The buffer the array is allocated in.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INCOMPATIBLE_ABI (struct_size smaller than
 *         ::SONDE_PROFILE_VIEW_SIZE_1_0),
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (not an array or buffer, other buffer),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (not allocated),
 *         SONDE_STATUS_ERROR_FORMAT (a shared buffer whose file another process cut below
 *         the mapped size, or cut and grew back), SONDE_STATUS_ERROR_IO (fstat of that file
 *         failed).
 * The inline helpers that use the view check nothing: a shared file cut after this call
 * makes them fault.
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_array_view(const sonde_profile_array_t *arr,
                                                  sonde_profile_buffer_t *pb,
                                                  sonde_profile_view_t *view);

/**
 * @brief Sums the u64 at `field_offset` of `record` over all buckets (wrapping modulo 2^64).
 *
 * Each bucket's value is read whole (relaxed atomic load); with writers running the sum is a
 * value each bucket had at some moment during the call, never a torn one.
 * @param arr The array.
 * @param pb The buffer the array is allocated in.
 * @param record Record number, below num_records.
 * @param field_offset Byte offset of the u64 field within the record.
 * @param[out] sum The sum.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (not an array or buffer, other buffer, record out
 *         of range, field not inside the record, or not 8-byte aligned in the buffer),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (not allocated),
 *         SONDE_STATUS_ERROR_FORMAT (a shared buffer whose file another process cut below
 *         the mapped size, or cut and grew back), SONDE_STATUS_ERROR_IO (fstat of that file
 *         failed).
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_array_sum_u64(const sonde_profile_array_t *arr,
                                                     const sonde_profile_buffer_t *pb,
                                                     uint32_t record, uint32_t field_offset,
                                                     uint64_t *sum);

/**
 * @brief Copies the whole array (all buckets, sonde_profile_array_size() bytes, bucket b at
 * b * chunk_size) into caller memory.
 *
 * Racing writers: every 8-byte-aligned u64 is copied whole, so a counter is never torn; each
 * counter's value is one it had during the call, but different counters are read at slightly
 * different moments (counts may be a little behind, and a pair of counters updated together
 * may be seen with one update and not the other). Good for monitoring, not a transaction.
 * @param dst At least dst_size bytes.
 * @param dst_size Bytes available; must be at least sonde_profile_array_size().
 * @param arr The array.
 * @param pb The buffer the array is allocated in.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (not an array or buffer, other buffer),
 *         SONDE_STATUS_ERROR_PHASE_FAILURE (not allocated),
 *         SONDE_STATUS_ERROR_BUFFER_TOO_SHORT (nothing written),
 *         SONDE_STATUS_ERROR_FORMAT (a shared buffer whose file another process cut below
 *         the mapped size, or cut and grew back), SONDE_STATUS_ERROR_IO (fstat of that file
 *         failed) (nothing written).
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_array_snapshot(const sonde_profile_array_t *arr,
                                                      const sonde_profile_buffer_t *pb,
                                                      void *dst, uint64_t dst_size);

/* ---------------------------------------------------------------------------------------- */
/* Into the record stream                                                                    */
/* ---------------------------------------------------------------------------------------- */

/** @brief ::sonde_profile_array_emit flag: emit one record per counter summed over buckets
 * (bucket field SONDE_PROFILE_COUNTER_ALL_BUCKETS) instead of one per counter and bucket.
 * @since 1.0 */
#define SONDE_PROFILE_EMIT_SUMMED 1u

/** @brief Bucket value of a counter id whose value is summed over all buckets. @since 1.0 */
#define SONDE_PROFILE_COUNTER_ALL_BUCKETS 0xFFFFu

/**
 * @brief counter_id of an emitted PROFILER record: bits 63..48 the bucket (or
 * SONDE_PROFILE_COUNTER_ALL_BUCKETS), bits 47..16 the record number, bits 15..0 the index of
 * the u64 word within the record (field_offset / 8).
 * @since 1.0
 */
#define SONDE_PROFILE_COUNTER_ID(bucket, record, word)                                     \
    (((uint64_t)(bucket) << 48) | ((uint64_t)(uint32_t)(record) << 16) |                   \
     (uint64_t)((word) & 0xFFFFu))
/** @brief The bucket of a counter id. @since 1.0 */
#define SONDE_PROFILE_COUNTER_BUCKET(id) ((uint32_t)((uint64_t)(id) >> 48))
/** @brief The record number of a counter id. @since 1.0 */
#define SONDE_PROFILE_COUNTER_RECORD(id) ((uint32_t)((uint64_t)(id) >> 16))
/** @brief The u64 word index within the record of a counter id. @since 1.0 */
#define SONDE_PROFILE_COUNTER_WORD(id) ((uint32_t)((uint64_t)(id) & 0xFFFFu))

/**
 * @brief Emits the array's current contents into a Sonde buffer as SONDE_RECORD_KIND_PROFILER
 * records (sonde_profiler_record_t): one per non-zero u64 counter, counter_id from
 * SONDE_PROFILE_COUNTER_ID, all with one timestamp (::sonde_get_timestamp taken at the start),
 * in order of bucket, record, word. Records are read as by ::sonde_profile_array_snapshot.
 *
 * @param buffer A buffer of a started session.
 * @param flags 0 or SONDE_PROFILE_EMIT_SUMMED.
 * @param[out] emitted Records emitted; may be NULL. Set also on failure.
 * @param arr The array.
 * @param pb The buffer the array is allocated in.
 * @return SONDE_STATUS_SUCCESS, SONDE_STATUS_ERROR_NULL_POINTER,
 *         SONDE_STATUS_ERROR_INVALID_ARGUMENT (not an array or buffer, other buffer, unknown
 *         flags, record_size not a multiple of 8 or above 512 KiB, num_thread_buckets above
 *         65535 without SONDE_PROFILE_EMIT_SUMMED), SONDE_STATUS_ERROR_PHASE_FAILURE (not
 *         allocated),
 *         SONDE_STATUS_ERROR_FORMAT (a shared buffer whose file another process cut below
 *         the mapped size, or cut and grew back), SONDE_STATUS_ERROR_IO (fstat of that file
 *         failed) (checked once, before the first record),
 *         SONDE_STATUS_ERROR_OUT_OF_MEMORY, or the first failure of ::sonde_emit
 *         (e.g. SONDE_STATUS_ERROR_NOT_INITIALIZED, SONDE_STATUS_ERROR_BUFFER_NOT_FOUND,
 *         SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE, SONDE_STATUS_ERROR_BUFFER_FULL), after which
 *         no more records are emitted.
 * Thread-safe.
 * @since 1.0
 */
SONDE_API sonde_status_t sonde_profile_array_emit(const sonde_profile_array_t *arr,
                                                  const sonde_profile_buffer_t *pb,
                                                  sonde_buffer_id_t buffer, uint32_t flags,
                                                  uint64_t *emitted);

SONDE_END_DECLS

#endif /* SONDE_PROFILE_H */
