/**
 * @file defs.h
 * @brief Version macros, visibility macros and id types shared by every Sonde header.
 *
 * This header is part of the frozen 1.x ABI. It includes only standard C headers.
 */
#ifndef SONDE_DEFS_H
#define SONDE_DEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * Major version of the Sonde ABI; a change means an incompatible library (new SONAME).
 * @since 1.0
 */
#define SONDE_VERSION_MAJOR 1
/** Minor version: additions only, each minor release adds a version node to the map. @since 1.0 */
#define SONDE_VERSION_MINOR 2
/** Patch version: fixes without interface change. @since 1.0 */
#define SONDE_VERSION_PATCH 0
/** The version as one number, major * 10000 + minor * 100 + patch. @since 1.0 */
#define SONDE_VERSION (SONDE_VERSION_MAJOR * 10000 + SONDE_VERSION_MINOR * 100 + SONDE_VERSION_PATCH)

/** Marks a function exported by libsonde. @since 1.0 */
#if defined(SONDE_BUILDING_LIBRARY)
#define SONDE_API __attribute__((visibility("default")))
#else
#define SONDE_API
#endif

/** Marks an entry point that a plugin (client or tool) exports for Sonde to find. @since 1.0 */
#ifdef __cplusplus
#define SONDE_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define SONDE_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
/** Opens a block of C declarations. @since 1.0 */
#define SONDE_BEGIN_DECLS extern "C" {
/** Closes a block of C declarations. @since 1.0 */
#define SONDE_END_DECLS }
#else
/** Opens a block of C declarations. @since 1.0 */
#define SONDE_BEGIN_DECLS
/** Closes a block of C declarations. @since 1.0 */
#define SONDE_END_DECLS
#endif

SONDE_BEGIN_DECLS

/**
 * @brief Identifies a session. The handle carries a slot and a generation, so a stale or
 * forged id is answered with a status, never a crash. A zero handle is never valid.
 * @since 1.0
 */
typedef struct sonde_session_id_t {
    uint64_t handle; /**< Opaque value; two ids name the same object when their handles are equal. */
} sonde_session_id_t;

/**
 * @brief Identifies a buffer of a session; same handle rules as ::sonde_session_id_t.
 * @since 1.0
 */
typedef struct sonde_buffer_id_t {
    uint64_t handle; /**< Opaque value. */
} sonde_buffer_id_t;

/**
 * @brief The version of the library that is loaded, as SONDE_VERSION computes it.
 *
 * Callable at any time, also before ::sonde_initialize. Thread-safe.
 * @param[out] major Major version, may be NULL.
 * @param[out] minor Minor version, may be NULL.
 * @param[out] patch Patch version, may be NULL.
 * @return The version as major * 10000 + minor * 100 + patch.
 * @since 1.0
 */
SONDE_API uint32_t sonde_get_version(uint32_t *major, uint32_t *minor, uint32_t *patch);

SONDE_END_DECLS

#endif /* SONDE_DEFS_H */
