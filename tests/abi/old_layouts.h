/* The structs of libsonde.so.1 as their first release laid them out (1.0 for the core,
 * profile, trace, analysis and stack-distance structs; 1.1 for the client API), copied here so
 * that test_old_client.c and old_plugin.c use no Sonde header: they are what a program or
 * plugin built against those releases passes to today's library. x86-64 LP64 layouts.
 * Function pointers the tests do not call are kept as void * of the same size. */
#ifndef SONDE_TEST_OLD_LAYOUTS_H
#define SONDE_TEST_OLD_LAYOUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Status values used by the tests (pinned in status.h). */
enum {
    OLD_SUCCESS = 0,
    OLD_PARTIAL_INFO = 1,
    OLD_NOT_SUPPORTED = 17,
    OLD_PHASE_FAILURE = 18,
    OLD_INCOMPATIBLE_ABI = 19
};

/* Data items (client.h, 1.1). */
#define OLD_DATA_METHOD_ID (1u << 0)
#define OLD_DATA_ADDRESS (1u << 6)
#define OLD_DATA_SIZE (1u << 7)
#define OLD_DATA_NAME (1u << 10)
#define OLD_DATA_OS_THREAD_ID (1u << 19)
#define OLD_DATA_STATE (1u << 20)
/* Events (client.h, 1.1). */
#define OLD_EVENT_RUNTIME_INIT 0u
#define OLD_EVENT_METHOD_ENTER 8u
#define OLD_EVENT_COUNT 14u /* SONDE_EVENT_COUNT in 1.1 */

typedef struct {
    uint64_t handle;
} id_v10;

/* ---- 1.0 ---- */
typedef struct {
    uint32_t struct_size, flags;
    const char *name;
} session_props_v10;
typedef struct {
    uint32_t struct_size, reserved;
    uint64_t emitted, delivered, dropped, bytes, callbacks, failures;
} stats_v10;
typedef struct {
    uint32_t size;
    uint16_t kind, flags;
} header_v10;
typedef void (*cb_v10)(const header_v10 *, const header_v10 *, id_v10, id_v10, void *);

typedef struct {
    uint32_t struct_size, reserved;
    void *context;
    bool (*allocate)(void *context, uint64_t size, uint64_t alignment, uint64_t *offset);
} profile_allocator_v10;
typedef struct {
    uint32_t struct_size, bucket;
    uint8_t *bucket_base, *base;
    uint64_t chunk_size;
    uint32_t record_size, num_records, bucket_mask, reserved;
} profile_view_v10;

typedef struct {
    uint64_t address, pc, timestamp;
    uint32_t shard;
    uint16_t type, size;
} memref_v10;
typedef struct {
    uint32_t struct_size;
    int32_t compression_level;
    uint32_t chunk_records, reserved;
} writer_props_v10;
typedef struct {
    uint32_t struct_size, reserved;
    const char *name;
    bool (*initialize)(void *tool, uint32_t num_shards);
    bool (*process_memref)(void *tool, const memref_v10 *memref);
    void *print_results, *parallel_shard_supported, *parallel_worker_init, *parallel_worker_exit,
        *parallel_shard_init, *parallel_shard_memref, *parallel_shard_exit, *parallel_shard_error,
        *get_error_string, *process_memrefs, *parallel_shard_memrefs;
    const char *(*results_json)(void *tool);
    void (*destroy)(void *tool);
} tool_ops_v10;

typedef struct {
    uint32_t struct_size, flags;
    uint64_t initial_capacity;
    uint32_t sampling, workers;
    double sample_rate;
    uint64_t sample_size, seed;
} stackdist_options_v10;
typedef struct {
    uint32_t struct_size, sampling;
    uint64_t accesses, reads, writes, infinite, infinite_reads, infinite_writes, sampled;
    double sample_rate;
    uint64_t max_distance;
} histogram_summary_v10;

/* ---- 1.1: the client API ---- */
typedef struct {
    char *entries;
    uint32_t size, actual_size;
} string_v11;
typedef struct {
    id_v10 *entries;
    uint32_t size, actual_size;
} id_array_v11;
typedef struct {
    uint32_t struct_size, event;
    uint64_t valid_items;
    id_v10 method, thread, module, session;
    uint64_t timestamp, call_site, address, size, os_thread_id;
    uint32_t stack_depth, access_type;
    const char *name;
    const void *payload;
    uint64_t payload_size;
} event_data_v11;
typedef struct {
    uint32_t struct_size, visibility;
    uint64_t valid_items;
    string_v11 name, class_name, full_name, mangled_name, source_file;
    uint32_t source_line, reserved;
    id_v10 module;
    uint64_t address, size;
} method_info_v11;
typedef struct {
    uint32_t struct_size, loaded;
    uint64_t valid_items;
    string_v11 name, path;
    uint64_t address, size;
} module_info_v11;
typedef struct {
    uint32_t struct_size, alive;
    uint64_t valid_items;
    string_v11 name;
    uint64_t os_thread_id;
    uint32_t stack_depth, reserved;
} thread_info_v11;
typedef struct {
    uint32_t struct_size, state, status, reserved;
    string_v11 path, message;
} client_info_v11;
typedef void (*handler_v11)(const event_data_v11 *data, void *user_data);
typedef struct {
    uint32_t struct_size, abi_version;
    uint32_t (*register_event)(id_v10 client, uint32_t event, uint64_t items, handler_v11 handler,
                               void *user_data);
    void *set_event_group_filter;
    uint32_t (*get_method_info)(id_v10 client, id_v10 method, uint64_t requested, method_info_v11 *info);
    uint32_t (*get_module_info)(id_v10 client, id_v10 module, uint64_t requested, module_info_v11 *info);
    uint32_t (*get_thread_info)(id_v10 client, id_v10 thread, uint64_t requested, thread_info_v11 *info);
    void *get_thread_stack;
    uint32_t (*get_module_list)(id_v10 client, id_array_v11 *modules);
    void *get_thread_list, *status_name, *status_string, *get_timestamp, *set_message;
} api_v11;

/* The sizes these copies must have: the pinned first-release sizes. */
_Static_assert(sizeof(session_props_v10) == 16, "session properties 1.0");
_Static_assert(sizeof(stats_v10) == 56, "buffer stats 1.0");
_Static_assert(sizeof(profile_allocator_v10) == 24, "profile allocator 1.0");
_Static_assert(sizeof(profile_view_v10) == 48, "profile view 1.0");
_Static_assert(sizeof(memref_v10) == 32, "memref 1.0");
_Static_assert(sizeof(writer_props_v10) == 16, "trace writer properties 1.0");
_Static_assert(sizeof(tool_ops_v10) == 136, "tool ops 1.0");
_Static_assert(sizeof(stackdist_options_v10) == 48, "stack-distance options 1.0");
_Static_assert(sizeof(histogram_summary_v10) == 80, "histogram summary 1.0");
_Static_assert(sizeof(event_data_v11) == 120, "event data 1.1");
_Static_assert(sizeof(method_info_v11) == 128, "method info 1.1");
_Static_assert(sizeof(module_info_v11) == 64, "module info 1.1");
_Static_assert(sizeof(thread_info_v11) == 48, "thread info 1.1");
_Static_assert(sizeof(client_info_v11) == 48, "client info 1.1");
_Static_assert(sizeof(api_v11) == 104, "api table 1.1");

#endif /* SONDE_TEST_OLD_LAYOUTS_H */
