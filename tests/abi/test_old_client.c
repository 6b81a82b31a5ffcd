/* Old callers keep working: programs and plugins written against the first-release layouts,
 * with their own copies of the structs (old_layouts.h) and no Sonde header, load
 * libsonde.so.1 with dlopen and call through dlsym. Every growable struct is passed at its
 * first-release size and accepted; one byte less answers INCOMPATIBLE_ABI; a newer caller's
 * larger struct is accepted with a zero tail, and an input with a non-zero tail answers
 * NOT_SUPPORTED, while an output's tail is left as the caller set it. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "old_layouts.h"

static void *lib;
/* POSIX idiom: dlsym returns void *; copy it into the function pointer. */
#define LOAD_FROM(handle, var, name)      \
    do {                                  \
        void *p_ = dlsym(handle, name);   \
        assert_non_null(p_);              \
        memcpy(&(var), &p_, sizeof(var)); \
    } while (0)
#define LOAD(var, name) LOAD_FROM(lib, var, name)

/* A newer caller's struct: the old layout followed by fields this test does not know. The
 * tail is long enough for the struct to stay larger than the library's while the library's
 * struct grows by less than 256 bytes; the tests set and read the tail's last 8 bytes. */
#define TAIL 256
#define NEWER(T)                  \
    struct {                      \
        T old;                    \
        unsigned char tail[TAIL]; \
    }
static void set_tail_end(unsigned char *tail, uint64_t v) { memcpy(tail + TAIL - 8, &v, 8); }
static uint64_t tail_end(const unsigned char *tail) {
    uint64_t v;
    memcpy(&v, tail + TAIL - 8, 8);
    return v;
}
/* A byte pattern no field is set to; a tail that still holds it was not written. */
#define TAIL_MARK 0x5a5a5a5a5a5a5a5aull

static int load_library(void **state) {
    (void)state;
    const char *path = getenv("SONDE_LIBRARY");
    lib = dlopen(path ? path : "libsonde.so.1", RTLD_NOW | RTLD_LOCAL);
    return lib != NULL ? 0 : -1;
}

static const char *plugin_path(void) {
    const char *p = getenv("SONDE_OLD_PLUGIN");
    assert_non_null(p);
    return p;
}

static void count_cb(const header_v10 *b, const header_v10 *e, id_v10 s, id_v10 bu, void *u) {
    (void)s;
    (void)bu;
    for (const header_v10 *r = b; r < e; r = (const header_v10 *)((const char *)r + r->size))
        if (r->kind >= 0x8000) ++*(int *)u;
}

/* ---- sessions and buffers (1.0) ---- */

static void test_core_v10(void **state) {
    (void)state;
    uint32_t (*init)(void);
    LOAD(init, "sonde_initialize");
    uint32_t (*fini)(void);
    LOAD(fini, "sonde_finalize");
    uint32_t (*create)(const session_props_v10 *, id_v10 *);
    LOAD(create, "sonde_create_session");
    uint32_t (*start)(id_v10);
    LOAD(start, "sonde_start_session");
    uint32_t (*stop)(id_v10);
    LOAD(stop, "sonde_stop_session");
    uint32_t (*create_buffer)(id_v10, uint64_t, cb_v10, void *, const void *, uint32_t, id_v10 *);
    LOAD(create_buffer, "sonde_create_buffer");
    uint32_t (*emit)(id_v10, uint32_t, const void *, uint32_t);
    LOAD(emit, "sonde_emit");
    uint32_t (*stats)(id_v10, id_v10, stats_v10 *);
    LOAD(stats, "sonde_get_buffer_stats");
    uint32_t (*version)(uint32_t *, uint32_t *, uint32_t *);
    LOAD(version, "sonde_get_version");
    uint32_t major = 0;
    version(&major, NULL, NULL);
    assert_int_equal(major, 1);

    assert_int_equal(init(), OLD_SUCCESS);
    session_props_v10 props = {sizeof props, 0, "old-client"};
    id_v10 s, b;
    assert_int_equal(create(&props, &s), OLD_SUCCESS);
    int count = 0;
    assert_int_equal(create_buffer(s, 1 << 16, count_cb, &count, NULL, 0, &b), OLD_SUCCESS);
    assert_int_equal(start(s), OLD_SUCCESS);
    uint64_t v = 7;
    for (int i = 0; i < 100; ++i) assert_int_equal(emit(b, 0x8000, &v, 8), OLD_SUCCESS);
    assert_int_equal(stop(s), OLD_SUCCESS);
    assert_int_equal(count, 100);
    stats_v10 st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    assert_int_equal(stats(s, b, &st), OLD_SUCCESS);
    assert_int_equal(st.emitted, 100);
    assert_int_equal(st.delivered, 100);

    /* Stats are an output: one byte short is refused, a larger struct's tail is not written. */
    st.struct_size = sizeof st - 1;
    assert_int_equal(stats(s, b, &st), OLD_INCOMPATIBLE_ABI);
    NEWER(stats_v10) newer_stats;
    memset(&newer_stats, 0, sizeof newer_stats);
    newer_stats.old.struct_size = sizeof newer_stats;
    set_tail_end(newer_stats.tail, TAIL_MARK);
    assert_int_equal(stats(s, b, &newer_stats.old), OLD_SUCCESS);
    assert_int_equal(newer_stats.old.delivered, 100);
    assert_int_equal(newer_stats.old.struct_size, sizeof newer_stats);
    assert_true(tail_end(newer_stats.tail) == TAIL_MARK);

    /* Session properties are an input: a zero tail is accepted, a non-zero one is not. */
    NEWER(session_props_v10) newer;
    memset(&newer, 0, sizeof newer);
    newer.old.struct_size = sizeof newer;
    id_v10 s2;
    assert_int_equal(create(&newer.old, &s2), OLD_SUCCESS);
    set_tail_end(newer.tail, 1);
    assert_int_equal(create(&newer.old, &s2), OLD_NOT_SUPPORTED);
    props.struct_size = sizeof props - 1;
    assert_int_equal(create(&props, &s2), OLD_INCOMPATIBLE_ABI);
    props.struct_size = 8;
    assert_int_equal(create(&props, &s2), OLD_INCOMPATIBLE_ABI);
    assert_int_equal(fini(), OLD_SUCCESS);
}

/* ---- clients and data requests (1.1) ---- */

__attribute__((noinline, used)) static void old_method(void) { __asm__ volatile(""); }
#define FN(f) ((const void *)(uintptr_t)(f))

static void test_client_v11(void **state) {
    (void)state;
    uint32_t (*init)(void);
    LOAD(init, "sonde_initialize");
    uint32_t (*fini)(void);
    LOAD(fini, "sonde_finalize");
    uint32_t (*load_client)(const char *, const char *, id_v10 *);
    LOAD(load_client, "sonde_load_client");
    uint32_t (*client_info)(id_v10, client_info_v11 *);
    LOAD(client_info, "sonde_get_client_info");
    const api_v11 *(*get_api)(void);
    LOAD(get_api, "sonde_get_client_api");
    void (*enter)(const void *, const void *);
    LOAD(enter, "sonde_method_enter");
    void (*leave)(const void *, const void *);
    LOAD(leave, "sonde_method_leave");

    /* Loaded before initialisation: RUNTIME_INIT reaches it in sonde_initialize. */
    id_v10 id;
    assert_int_equal(load_client(plugin_path(), "", &id), OLD_SUCCESS);
    assert_int_equal(init(), OLD_SUCCESS);

    /* What the plugin saw through its 1.1 table and event data. */
    void *plugin = dlopen(plugin_path(), RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(plugin);
    uint32_t *api_size, *api_version, *init_events, *event_size, *thread_status, *register_failures;
    uint64_t *thread_items, *thread_os_tid, *method, *method_address;
    char *thread_name;
    LOAD_FROM(plugin, api_size, "old_plugin_api_size");
    LOAD_FROM(plugin, api_version, "old_plugin_api_version");
    LOAD_FROM(plugin, init_events, "old_plugin_init_events");
    LOAD_FROM(plugin, event_size, "old_plugin_event_size");
    LOAD_FROM(plugin, thread_status, "old_plugin_thread_status");
    LOAD_FROM(plugin, thread_items, "old_plugin_thread_items");
    LOAD_FROM(plugin, thread_os_tid, "old_plugin_thread_os_tid");
    LOAD_FROM(plugin, thread_name, "old_plugin_thread_name");
    LOAD_FROM(plugin, method, "old_plugin_method");
    LOAD_FROM(plugin, method_address, "old_plugin_method_address");
    LOAD_FROM(plugin, register_failures, "old_plugin_register_failures");
    assert_int_equal(*register_failures, 0);
    const uint64_t tid = (uint64_t)syscall(SYS_gettid);
    assert_true(*api_size >= sizeof(api_v11));
    assert_true(*api_version >= 1);
    assert_int_equal(*init_events, 1);
    assert_true(*event_size >= sizeof(event_data_v11));
    assert_int_equal(*thread_status, OLD_SUCCESS);
    assert_int_equal(*thread_items, OLD_DATA_NAME | OLD_DATA_OS_THREAD_ID | OLD_DATA_STATE);
    assert_int_equal(*thread_os_tid, tid);
    assert_true(thread_name[0] != '\0');

    enter(FN(old_method), NULL);
    leave(FN(old_method), NULL);
    assert_true(*method != 0);
    assert_true(*method_address == (uint64_t)(uintptr_t)FN(old_method));
    const id_v10 method_id = {*method};

    /* The program asks on the client's behalf, through the same 1.1 table. */
    const api_v11 *api = get_api();
    assert_non_null(api);

    method_info_v11 mi;
    memset(&mi, 0, sizeof mi);
    mi.struct_size = sizeof mi;
    assert_int_equal(api->get_method_info(id, method_id, OLD_DATA_ADDRESS, &mi), OLD_SUCCESS);
    assert_int_equal(mi.valid_items, OLD_DATA_ADDRESS);
    assert_true(mi.address == (uint64_t)(uintptr_t)FN(old_method));
    assert_int_equal(mi.struct_size, sizeof mi);
    mi.struct_size = sizeof mi - 1;
    assert_int_equal(api->get_method_info(id, method_id, OLD_DATA_ADDRESS, &mi), OLD_INCOMPATIBLE_ABI);
    NEWER(method_info_v11) big_mi;
    memset(&big_mi, 0, sizeof big_mi);
    big_mi.old.struct_size = sizeof big_mi;
    assert_int_equal(api->get_method_info(id, method_id, OLD_DATA_ADDRESS, &big_mi.old), OLD_SUCCESS);
    assert_true(big_mi.old.address == (uint64_t)(uintptr_t)FN(old_method));
    assert_true(tail_end(big_mi.tail) == 0);
    /* An info struct is also an output: its tail is room for results, not checked nor written. */
    set_tail_end(big_mi.tail, TAIL_MARK);
    big_mi.old.address = 0;
    assert_int_equal(api->get_method_info(id, method_id, OLD_DATA_ADDRESS, &big_mi.old), OLD_SUCCESS);
    assert_true(big_mi.old.address == (uint64_t)(uintptr_t)FN(old_method));
    assert_true(tail_end(big_mi.tail) == TAIL_MARK);

    id_v10 modules[256];
    id_array_v11 list = {modules, 256, 0};
    assert_int_equal(api->get_module_list(id, &list), OLD_SUCCESS);
    assert_true(list.actual_size >= 1);
    const uint64_t mod_items = OLD_DATA_ADDRESS | OLD_DATA_SIZE | OLD_DATA_STATE;
    module_info_v11 mo;
    memset(&mo, 0, sizeof mo);
    mo.struct_size = sizeof mo;
    assert_int_equal(api->get_module_info(id, modules[0], mod_items, &mo), OLD_SUCCESS);
    assert_int_equal(mo.valid_items, mod_items);
    assert_int_equal(mo.loaded, 1);
    assert_true(mo.size > 0);
    mo.struct_size = sizeof mo - 1;
    assert_int_equal(api->get_module_info(id, modules[0], mod_items, &mo), OLD_INCOMPATIBLE_ABI);
    NEWER(module_info_v11) big_mo;
    memset(&big_mo, 0, sizeof big_mo);
    big_mo.old.struct_size = sizeof big_mo;
    assert_int_equal(api->get_module_info(id, modules[0], mod_items, &big_mo.old), OLD_SUCCESS);
    assert_int_equal(big_mo.old.loaded, 1);
    set_tail_end(big_mo.tail, TAIL_MARK);
    assert_int_equal(api->get_module_info(id, modules[0], mod_items, &big_mo.old), OLD_SUCCESS);
    assert_true(tail_end(big_mo.tail) == TAIL_MARK);

    const id_v10 calling_thread = {0};
    const uint64_t thr_items = OLD_DATA_OS_THREAD_ID | OLD_DATA_STATE;
    thread_info_v11 th;
    memset(&th, 0, sizeof th);
    th.struct_size = sizeof th;
    assert_int_equal(api->get_thread_info(id, calling_thread, thr_items, &th), OLD_SUCCESS);
    assert_int_equal(th.os_thread_id, tid);
    assert_int_equal(th.alive, 1);
    th.struct_size = sizeof th - 1;
    assert_int_equal(api->get_thread_info(id, calling_thread, thr_items, &th), OLD_INCOMPATIBLE_ABI);
    NEWER(thread_info_v11) big_th;
    memset(&big_th, 0, sizeof big_th);
    big_th.old.struct_size = sizeof big_th;
    assert_int_equal(api->get_thread_info(id, calling_thread, thr_items, &big_th.old), OLD_SUCCESS);
    assert_int_equal(big_th.old.os_thread_id, tid);
    set_tail_end(big_th.tail, TAIL_MARK);
    assert_int_equal(api->get_thread_info(id, calling_thread, thr_items, &big_th.old), OLD_SUCCESS);
    assert_true(tail_end(big_th.tail) == TAIL_MARK);

    char path[1024], message[256];
    client_info_v11 ci;
    memset(&ci, 0, sizeof ci);
    ci.struct_size = sizeof ci;
    ci.path = (string_v11){path, sizeof path, 0};
    ci.message = (string_v11){message, sizeof message, 0};
    assert_int_equal(client_info(id, &ci), OLD_SUCCESS);
    assert_int_equal(ci.state, 0); /* ACTIVE */
    assert_int_equal(ci.status, OLD_SUCCESS);
    assert_string_equal(path, plugin_path());
    assert_int_equal(ci.path.actual_size, strlen(plugin_path()) + 1);
    ci.struct_size = sizeof ci - 1;
    assert_int_equal(client_info(id, &ci), OLD_INCOMPATIBLE_ABI);
    NEWER(client_info_v11) big_ci;
    memset(&big_ci, 0, sizeof big_ci);
    big_ci.old.struct_size = sizeof big_ci;
    big_ci.old.path = (string_v11){path, sizeof path, 0};
    big_ci.old.message = (string_v11){message, sizeof message, 0};
    big_ci.old.state = 7;
    assert_int_equal(client_info(id, &big_ci.old), OLD_SUCCESS);
    assert_int_equal(big_ci.old.state, 0);
    set_tail_end(big_ci.tail, TAIL_MARK);
    assert_int_equal(client_info(id, &big_ci.old), OLD_SUCCESS);
    assert_true(tail_end(big_ci.tail) == TAIL_MARK);

    dlclose(plugin);
    assert_int_equal(fini(), OLD_SUCCESS);
}

/* ---- profile arrays (1.0) ---- */

typedef struct {
    uint64_t next, calls;
} bump_t;

static bool place(void *context, uint64_t size, uint64_t alignment, uint64_t *offset) {
    bump_t *b = (bump_t *)context;
    const uint64_t at = (b->next + alignment - 1) & ~(alignment - 1);
    *offset = at;
    b->next = at + size;
    ++b->calls;
    return true;
}

static void test_profile_v10(void **state) {
    (void)state;
    uint32_t (*create_buffer)(void *, uint64_t, const profile_allocator_v10 *, void **);
    LOAD(create_buffer, "sonde_profile_buffer_create_with_allocator");
    void (*destroy_buffer)(void *);
    LOAD(destroy_buffer, "sonde_profile_buffer_destroy");
    uint32_t (*create_array)(uint32_t, uint32_t, uint32_t, uint32_t, void **);
    LOAD(create_array, "sonde_profile_array_create");
    uint32_t (*allocate)(void *, void *);
    LOAD(allocate, "sonde_profile_array_allocate");
    uint32_t (*view)(const void *, void *, profile_view_v10 *);
    LOAD(view, "sonde_profile_array_view");
    uint32_t (*sum_u64)(const void *, const void *, uint32_t, uint32_t, uint64_t *);
    LOAD(sum_u64, "sonde_profile_array_sum_u64");
    void (*destroy_array)(void *);
    LOAD(destroy_array, "sonde_profile_array_destroy");

    /* The allocator is an input. */
    bump_t bump = {0, 0};
    profile_allocator_v10 alloc = {sizeof alloc, 0, &bump, place};
    void *pb = NULL;
    alloc.struct_size = sizeof alloc - 1;
    assert_int_equal(create_buffer(NULL, 1 << 16, &alloc, &pb), OLD_INCOMPATIBLE_ABI);
    NEWER(profile_allocator_v10) newer = {alloc, {0}};
    newer.old.struct_size = sizeof newer;
    assert_int_equal(create_buffer(NULL, 1 << 16, &newer.old, &pb), OLD_SUCCESS);
    destroy_buffer(pb);
    set_tail_end(newer.tail, 1);
    assert_int_equal(create_buffer(NULL, 1 << 16, &newer.old, &pb), OLD_NOT_SUPPORTED);
    alloc.struct_size = sizeof alloc;
    assert_int_equal(create_buffer(NULL, 1 << 16, &alloc, &pb), OLD_SUCCESS);

    void *arr = NULL;
    assert_int_equal(create_array(16, 4, 1, 64, &arr), OLD_SUCCESS);
    assert_int_equal(allocate(arr, pb), OLD_SUCCESS);
    assert_int_equal(bump.calls, 1);

    /* The view is an output. */
    profile_view_v10 v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    assert_int_equal(view(arr, pb, &v), OLD_SUCCESS);
    assert_int_equal(v.struct_size, sizeof v);
    assert_int_equal(v.record_size, 16);
    assert_int_equal(v.num_records, 4);
    assert_int_equal(v.bucket_mask, 0);
    assert_int_equal(v.chunk_size, 64);
    assert_non_null(v.base);
    assert_ptr_equal(v.bucket_base, v.base);
    uint64_t counter;
    memcpy(&counter, v.bucket_base + 2 * 16 + 8, sizeof counter);
    counter += 5;
    memcpy(v.bucket_base + 2 * 16 + 8, &counter, sizeof counter);
    uint64_t sum = 0;
    assert_int_equal(sum_u64(arr, pb, 2, 8, &sum), OLD_SUCCESS);
    assert_int_equal(sum, 5);
    v.struct_size = sizeof v - 1;
    assert_int_equal(view(arr, pb, &v), OLD_INCOMPATIBLE_ABI);
    NEWER(profile_view_v10) big;
    memset(&big, 0, sizeof big);
    big.old.struct_size = sizeof big;
    set_tail_end(big.tail, TAIL_MARK);
    assert_int_equal(view(arr, pb, &big.old), OLD_SUCCESS);
    assert_int_equal(big.old.record_size, 16);
    assert_ptr_equal(big.old.base, v.base);
    assert_true(tail_end(big.tail) == TAIL_MARK);

    destroy_array(arr);
    destroy_buffer(pb);
}

/* ---- trace files and the analyzer (1.0) ---- */

typedef struct {
    uint64_t records;
} inline_counter_t;

static bool inline_count(void *tool, const memref_v10 *m) {
    if (m->type != 4) ++((inline_counter_t *)tool)->records; /* 4: a marker */
    return true;
}

static void test_trace_analysis_v10(void **state) {
    (void)state;
    uint32_t (*writer_create)(const char *, const writer_props_v10 *, void **);
    LOAD(writer_create, "sonde_trace_writer_create");
    uint32_t (*writer_write)(void *, uint32_t, const memref_v10 *, size_t);
    LOAD(writer_write, "sonde_trace_writer_write");
    uint32_t (*writer_close)(void *);
    LOAD(writer_close, "sonde_trace_writer_close");
    uint32_t (*analyzer_create)(void **);
    LOAD(analyzer_create, "sonde_analyzer_create");
    uint32_t (*analyzer_destroy)(void *);
    LOAD(analyzer_destroy, "sonde_analyzer_destroy");
    uint32_t (*load_tool)(void *, const char *, const char *);
    LOAD(load_tool, "sonde_analyzer_load_tool");
    uint32_t (*add_tool_ops)(void *, const tool_ops_v10 *, void *);
    LOAD(add_tool_ops, "sonde_analyzer_add_tool_ops");
    uint32_t (*add_input)(void *, const char *, uint32_t);
    LOAD(add_input, "sonde_analyzer_add_input");
    uint32_t (*set_parallel)(void *, bool);
    LOAD(set_parallel, "sonde_analyzer_set_parallel");
    uint32_t (*run)(void *);
    LOAD(run, "sonde_analyzer_run");
    uint32_t (*results_json)(void *, char *, size_t, size_t *);
    LOAD(results_json, "sonde_analyzer_results_json");
    const char *(*analyzer_error)(const void *);
    LOAD(analyzer_error, "sonde_analyzer_error");

    char path[] = "/tmp/sonde-old-client-XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);

    /* Writer properties are an input. */
    writer_props_v10 props = {sizeof props, 3, 2, 0};
    void *w = NULL;
    props.struct_size = sizeof props - 1;
    assert_int_equal(writer_create(path, &props, &w), OLD_INCOMPATIBLE_ABI);
    NEWER(writer_props_v10) newer = {props, {0}};
    newer.old.struct_size = sizeof newer;
    assert_int_equal(writer_create(path, &newer.old, &w), OLD_SUCCESS);
    assert_int_equal(writer_close(w), OLD_SUCCESS);
    set_tail_end(newer.tail, 1);
    assert_int_equal(writer_create(path, &newer.old, &w), OLD_NOT_SUPPORTED);
    props.struct_size = sizeof props;
    assert_int_equal(writer_create(path, &props, &w), OLD_SUCCESS);
    memref_v10 refs[5];
    for (int i = 0; i < 5; ++i) refs[i] = (memref_v10){0x1000u + 64u * (unsigned)i, 0x400000, 0, 0, 0, 8};
    assert_int_equal(writer_write(w, 0, refs, 5), OLD_SUCCESS);
    assert_int_equal(writer_close(w), OLD_SUCCESS);

    /* A tool table of the 1.0 size from a plugin, and one handed over directly. */
    void *a = NULL;
    assert_int_equal(analyzer_create(&a), OLD_SUCCESS);
    assert_int_equal(load_tool(a, plugin_path(), ""), OLD_SUCCESS);
    inline_counter_t counter = {0};
    tool_ops_v10 ops;
    memset(&ops, 0, sizeof ops);
    ops.name = "inline_counts";
    ops.process_memref = inline_count;
    ops.struct_size = sizeof ops - 1;
    assert_int_equal(add_tool_ops(a, &ops, &counter), OLD_INCOMPATIBLE_ABI);
    NEWER(tool_ops_v10) newer_ops = {ops, {0}};
    newer_ops.old.struct_size = sizeof newer_ops;
    set_tail_end(newer_ops.tail, 1);
    assert_int_equal(add_tool_ops(a, &newer_ops.old, &counter), OLD_NOT_SUPPORTED);
    set_tail_end(newer_ops.tail, 0);
    assert_int_equal(add_tool_ops(a, &newer_ops.old, &counter), OLD_SUCCESS);

    assert_int_equal(add_input(a, path, 1 /* SONDE */), OLD_SUCCESS);
    assert_int_equal(set_parallel(a, false), OLD_SUCCESS);
    const uint32_t st = run(a);
    if (st != OLD_SUCCESS) fail_msg("run: %s", analyzer_error(a));
    assert_int_equal(counter.records, 5);
    char json[512];
    size_t actual = 0;
    assert_int_equal(results_json(a, json, sizeof json, &actual), OLD_SUCCESS);
    const char *old_counts = strstr(json, "\"old_counts\"");
    assert_non_null(old_counts);
    const char *records = strstr(old_counts, "\"records\":");
    assert_non_null(records);
    assert_int_equal(strtoull(records + strlen("\"records\":"), NULL, 10), 5);
    assert_int_equal(analyzer_destroy(a), OLD_SUCCESS);
    unlink(path);
}

/* ---- stack distance (1.0) ---- */

static void test_stackdist_v10(void **state) {
    (void)state;
    uint32_t (*sd_create)(const stackdist_options_v10 *, void **);
    LOAD(sd_create, "sonde_stackdist_create");
    void (*sd_destroy)(void *);
    LOAD(sd_destroy, "sonde_stackdist_destroy");
    uint32_t (*calc_and_update)(void *, uint64_t, bool, uint64_t *, bool *);
    LOAD(calc_and_update, "sonde_stackdist_calc_and_update");
    uint32_t (*batch)(void *, const uint64_t *, const uint8_t *, size_t, void *);
    LOAD(batch, "sonde_stackdist_batch");
    uint32_t (*hist_create)(void **);
    LOAD(hist_create, "sonde_histogram_create");
    void (*hist_destroy)(void *);
    LOAD(hist_destroy, "sonde_histogram_destroy");
    uint32_t (*summary)(const void *, histogram_summary_v10 *);
    LOAD(summary, "sonde_histogram_get_summary");

    /* Options are an input. */
    stackdist_options_v10 opts;
    memset(&opts, 0, sizeof opts);
    void *sd = NULL;
    opts.struct_size = sizeof opts - 1;
    assert_int_equal(sd_create(&opts, &sd), OLD_INCOMPATIBLE_ABI);
    NEWER(stackdist_options_v10) newer = {opts, {0}};
    newer.old.struct_size = sizeof newer;
    assert_int_equal(sd_create(&newer.old, &sd), OLD_SUCCESS);
    sd_destroy(sd);
    set_tail_end(newer.tail, 1);
    assert_int_equal(sd_create(&newer.old, &sd), OLD_NOT_SUPPORTED);
    opts.struct_size = sizeof opts;
    assert_int_equal(sd_create(&opts, &sd), OLD_SUCCESS);

    uint64_t distance = 0;
    bool marked = true;
    assert_int_equal(calc_and_update(sd, 1, true, &distance, &marked), OLD_SUCCESS);
    assert_true(distance == UINT64_MAX);
    assert_false(marked);
    assert_int_equal(calc_and_update(sd, 2, true, &distance, &marked), OLD_SUCCESS);
    assert_int_equal(calc_and_update(sd, 1, true, &distance, &marked), OLD_SUCCESS);
    assert_int_equal(distance, 1);

    void *hist = NULL;
    assert_int_equal(hist_create(&hist), OLD_SUCCESS);
    const uint64_t addrs[] = {10, 20, 10, 30, 20};
    assert_int_equal(batch(sd, addrs, NULL, 5, hist), OLD_SUCCESS);

    /* The summary is an output. */
    histogram_summary_v10 sum;
    memset(&sum, 0, sizeof sum);
    sum.struct_size = sizeof sum;
    assert_int_equal(summary(hist, &sum), OLD_SUCCESS);
    assert_int_equal(sum.struct_size, sizeof sum);
    assert_int_equal(sum.accesses, 5);
    assert_int_equal(sum.infinite, 3);
    assert_int_equal(sum.max_distance, 2);
    sum.struct_size = sizeof sum - 1;
    assert_int_equal(summary(hist, &sum), OLD_INCOMPATIBLE_ABI);
    NEWER(histogram_summary_v10) big;
    memset(&big, 0, sizeof big);
    big.old.struct_size = sizeof big;
    set_tail_end(big.tail, TAIL_MARK);
    assert_int_equal(summary(hist, &big.old), OLD_SUCCESS);
    assert_int_equal(big.old.accesses, 5);
    assert_true(tail_end(big.tail) == TAIL_MARK);

    hist_destroy(hist);
    sd_destroy(sd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_core_v10),      cmocka_unit_test(test_client_v11),
        cmocka_unit_test(test_profile_v10),   cmocka_unit_test(test_trace_analysis_v10),
        cmocka_unit_test(test_stackdist_v10),
    };
    return cmocka_run_group_tests(tests, load_library, NULL);
}
