/**
 * @file profile_shared.h
 * @brief The file layout of a shared profile buffer (version 1), for readers in another
 * process that map the file without libsonde.
 *
 * ::sonde_profile_buffer_create_shared (sonde/profile.h) makes the file: a 64-byte
 * ::sonde_profile_shared_header_t at offset 0, a directory of ::sonde_profile_shared_array_t
 * entries after it (entry i at offset 64 + 64 * i), and the arrays from
 * SONDE_PROFILE_SHARED_HEADER_SIZE on. All fields are little-endian; each array uses the
 * geometry recorded in its directory entry (record `r` of bucket `b` at
 * `offset + b * chunk_size + r * record_size`). A reader loads `num_arrays` with acquire order
 * and then reads only that many entries. sonde/profile.h includes this header.
 */
#ifndef SONDE_PROFILE_SHARED_H
#define SONDE_PROFILE_SHARED_H

#include <sonde/defs.h>

/**
 * @brief First 8 bytes of a shared profile buffer: "SONDEPRF" read as a little-endian u64.
 * @since 1.0
 */
#define SONDE_PROFILE_SHARED_MAGIC 0x46525045444E4F53ull
/** @brief Layout version of this header. @since 1.0 */
#define SONDE_PROFILE_SHARED_VERSION 1u
/**
 * @brief Bytes of header plus directory; the first array starts at or after this offset.
 * @since 1.0
 */
#define SONDE_PROFILE_SHARED_HEADER_SIZE 4096u
/** @brief Directory entries that fit in the header: (4096 - 64) / 64. @since 1.0 */
#define SONDE_PROFILE_SHARED_MAX_ARRAYS 63u

/** @brief The 64-byte header at offset 0 of a shared profile buffer. @since 1.0 */
typedef struct sonde_profile_shared_header_t {
    uint64_t magic;       /**< SONDE_PROFILE_SHARED_MAGIC. */
    uint32_t version;     /**< SONDE_PROFILE_SHARED_VERSION. */
    uint32_t header_size; /**< SONDE_PROFILE_SHARED_HEADER_SIZE. */
    uint64_t size;        /**< Bytes of the whole region (header included) = the file size. */
    uint64_t bump;        /**< Next free offset of the bump allocator. */
    uint32_t max_arrays;  /**< Directory capacity. */
    uint32_t num_arrays;  /**< Directory entries published (stored with release order last). */
    uint64_t creator_pid; /**< Process that created the buffer. */
    uint64_t reserved[2]; /**< 0. */
} sonde_profile_shared_header_t;

/** @brief One 64-byte directory entry; entry i sits at offset 64 + 64 * i. @since 1.0 */
typedef struct sonde_profile_shared_array_t {
    uint64_t offset;             /**< Offset of the array (bucket 0, record 0) in the region. */
    uint64_t size;               /**< chunk_size * num_thread_buckets. */
    uint32_t record_size;        /**< Bytes per record. */
    uint32_t num_records;        /**< Records per bucket. */
    uint32_t num_thread_buckets; /**< Buckets (a power of two). */
    uint32_t chunk_size;         /**< Bytes per bucket. */
    uint32_t alignment;          /**< Alignment asked at creation. */
    uint32_t reserved0;          /**< 0. */
    uint64_t reserved[3];        /**< 0. */
} sonde_profile_shared_array_t;

#endif /* SONDE_PROFILE_SHARED_H */
