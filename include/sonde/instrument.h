/**
 * @file instrument.h
 * @brief The program side of the client concept: hosting clients and reporting events.
 *
 * sonde/client.h is what a client plugin includes: the types, the ::sonde_api_t table the
 * client calls Sonde through, and its entry point. A client never links libsonde. This header
 * declares the functions of libsonde that the program side calls:
 *  - hosting clients: ::sonde_load_client, ::sonde_register_client, ::sonde_get_client_info,
 *    ::sonde_get_client_list and ::sonde_get_client_api;
 *  - reporting events: ::sonde_method_enter / ::sonde_method_leave (which
 *    `libsonde-instrument.so` calls from `-finstrument-functions` hooks), ::sonde_memory_access,
 *    ::sonde_user_mark, ::sonde_user_range_push / ::sonde_user_range_pop,
 *    ::sonde_register_thread and ::sonde_refresh_modules.
 *
 * The loading calls are here rather than in client.h because their callers are the same as
 * those of the event calls: the program (or a launcher or language runtime in it) that links
 * libsonde, never a client. client.h is then the whole contract of a client and nothing else,
 * and this header is everything a program calls about clients.
 *
 * sonde/client.h includes this header and this header includes it, so including either gives
 * both. Added in version 1.1 (`SONDE_1.1` in the version script). See docs/clients.md.
 */
#ifndef SONDE_INSTRUMENT_H
#define SONDE_INSTRUMENT_H

#include <sonde/client.h>
#include <sonde/defs.h>
#include <sonde/status.h>

SONDE_BEGIN_DECLS

/**
 * @brief Loads a client plugin: `dlopen(path, RTLD_NOW | RTLD_LOCAL)`, looks up
 * `sonde_client_instantiate` in that object only, and calls it with `options`. May be called
 * before ::sonde_initialize (the client then gets RUNTIME_INIT from it) or after (RUNTIME_INIT
 * and a MODULE_LOAD per loaded module are delivered to it at once). Thread-safe; not from
 * inside a group filter.
 * @param path Path of the shared object.
 * @param options Passed to the entry point as given (may be NULL: passed as "").
 * @param[out] out The client's id, also when loading fails (its message is then kept).
 * @return SUCCESS; NULL_POINTER; LOAD_FAILED (no such file, not a shared object, no entry
 * point defined in the object itself); INCOMPATIBLE_ABI (the client requires a newer client ABI); the status the entry point
 * returned; LIMIT (64 clients, failed ones included); IN_CALLBACK (called from a filter);
 * NOT_INITIALIZED (in a fork() child whose parent had another thread inside the client
 * registry at the fork: see docs/robustness.md).
 * @since 1.1
 */
SONDE_API sonde_status_t sonde_load_client(const char *path, const char *options, sonde_client_id_t *out);

/**
 * @brief Registers a client linked into the program: calls `instantiate` like a loaded client.
 * Same rules and statuses as ::sonde_load_client (without the loading failures).
 * @param instantiate The client's entry point.
 * @param options Passed to it as given (NULL: "").
 * @param[out] out The client's id, also when instantiation fails.
 * @return As ::sonde_load_client, without LOAD_FAILED.
 * @since 1.1
 */
SONDE_API sonde_status_t sonde_register_client(sonde_client_instantiate_fn instantiate, const char *options,
                                               sonde_client_id_t *out);

/**
 * @brief The state, status and message of a client, loaded or failed. Thread-safe.
 * @param client The client.
 * @param[in,out] info Set struct_size and the storage of path and message.
 * @return SUCCESS; NULL_POINTER; ILLEGAL_ID; INCOMPATIBLE_ABI (struct_size smaller than
 * ::SONDE_CLIENT_INFO_SIZE_1_1); BUFFER_TOO_SHORT (path or message); NOT_INITIALIZED (as for
 * ::sonde_load_client).
 * @since 1.1
 */
SONDE_API sonde_status_t sonde_get_client_info(sonde_client_id_t client, sonde_client_info_t *info);

/**
 * @brief Ids of every client, active and failed, in order of loading (array protocol).
 * @param[in,out] clients The array to fill.
 * @return SUCCESS; NULL_POINTER; BUFFER_TOO_SHORT; NOT_INITIALIZED (as for ::sonde_load_client).
 * @since 1.1
 */
SONDE_API sonde_status_t sonde_get_client_list(sonde_client_array_t *clients);

/**
 * @brief The function table clients receive, for a program that wants to make data requests
 * on behalf of a client it registered. Never NULL. Thread-safe.
 * @return The process's api table (static storage).
 * @since 1.1
 */
SONDE_API const sonde_api_t *sonde_get_client_api(void);

/**
 * @brief Reports that the calling thread entered `function`, called from `call_site`.
 * `libsonde-instrument.so` calls it from `__cyg_profile_func_enter`; language runtimes and
 * hand-instrumented code may call it directly. Hot path: no lock, no allocation after the
 * method's first call; about 5 ns when no client wants the method. Does nothing before
 * ::sonde_initialize.
 * @param function Entry address of the function entered (NULL is no function: ignored).
 * @param call_site Return address in its caller (may be NULL).
 * @since 1.1
 */
SONDE_API void sonde_method_enter(const void *function, const void *call_site);

/**
 * @brief Reports that the calling thread returns from `function`. Leaves that skip frames
 * (longjmp) are repaired by unwinding the shadow stack to `function`. Same costs as
 * ::sonde_method_enter.
 * @param function Entry address of the function returning (NULL is ignored).
 * @param call_site Return address in its caller (may be NULL).
 * @since 1.1
 */
SONDE_API void sonde_method_leave(const void *function, const void *call_site);

/**
 * @brief Reports a memory reference of the calling thread (MEMORY_ACCESS). Does nothing before
 * ::sonde_initialize or inside an observer.
 * @param address The address referenced.
 * @param size Bytes referenced.
 * @param access_type A ::sonde_access_type value.
 * @since 1.1
 */
SONDE_API void sonde_memory_access(const void *address, uint64_t size, uint32_t access_type);

/**
 * @brief A USER_MARK event with a text and an optional payload (both valid only during the
 * observers' calls). The USER functions answer IN_CALLBACK when called from an observer.
 * @param text The mark's text.
 * @param payload Optional bytes for the observers (may be NULL).
 * @param payload_size Bytes at payload.
 * @return SUCCESS; NULL_POINTER (text); NOT_INITIALIZED; IN_CALLBACK.
 * @since 1.1
 */
SONDE_API sonde_status_t sonde_user_mark(const char *text, const void *payload, uint64_t payload_size);

/**
 * @brief Opens a named range on the calling thread (USER_RANGE_PUSH). Ranges nest up to 256 deep.
 * @param text The range's name (copied).
 * @return SUCCESS; NULL_POINTER; NOT_INITIALIZED; IN_CALLBACK; LIMIT (too deep: not pushed).
 * @since 1.1
 */
SONDE_API sonde_status_t sonde_user_range_push(const char *text);

/**
 * @brief Closes the innermost range of the calling thread (USER_RANGE_POP, NAME = its text).
 * @return SUCCESS; NOT_INITIALIZED; IN_CALLBACK; PHASE_FAILURE (no open range).
 * @since 1.1
 */
SONDE_API sonde_status_t sonde_user_range_pop(void);

/**
 * @brief Names the calling thread to Sonde now, before its first event, and delivers
 * THREAD_START if it is new. `libsonde-instrument.so` calls it at the start of every thread
 * created with pthread_create.
 * @param[out] out The thread's id, may be NULL.
 * @return SUCCESS; NOT_INITIALIZED; LIMIT (65,536 threads).
 * @since 1.1
 */
SONDE_API sonde_status_t sonde_register_thread(sonde_thread_id_t *out);

/**
 * @brief Re-reads the list of loaded modules (`dl_iterate_phdr`) and delivers MODULE_LOAD and
 * MODULE_UNLOAD for the differences. `libsonde-instrument.so` calls it after every
 * dlopen and dlclose.
 * @return SUCCESS; NOT_INITIALIZED.
 * @since 1.1
 */
SONDE_API sonde_status_t sonde_refresh_modules(void);

SONDE_END_DECLS

#endif /* SONDE_INSTRUMENT_H */
