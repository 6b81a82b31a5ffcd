/* The memref models through the analyzer on a drmemtrace directory (sonde/analysis.h,
 * sonde/trace.h): a tool built against 1.0 (a 136-byte table) and a 1.2 tool that does not ask
 * for more see the 1.0 view (loads, stores, every fetched instruction as IFETCH, timestamp and
 * cpu markers only); a tool that returns SONDE_MEMREF_MODEL_1_2 sees every record; serial and
 * parallel runs agree. The built-in tools' drcachesim categories and models give DynamoRIO's
 * numbers (the whole of each expected.json is checked by check_drmemtrace.py; these are the
 * core of it, here so that sanitizer builds run them too). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sonde/analysis.h>

#include "analyzer_test_util.h"

#define MAX_SHARDS 16

typedef struct counts_t {
    uint64_t by_type[64];
    uint64_t markers_by_size[512];
    uint64_t other;
} counts_t;

typedef struct tool_t {
    counts_t shard[MAX_SHARDS];
    bool full;
} tool_t;

static void count(counts_t *c, const sonde_memref_t *m, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        if (m[i].type < 64)
            ++c->by_type[m[i].type];
        else
            ++c->other;
        if (m[i].type == SONDE_MEMREF_MARKER && m[i].size < 512) ++c->markers_by_size[m[i].size];
    }
}
static bool serial_batch(void *tool, const sonde_memref_t *m, size_t n) {
    tool_t *t = tool;
    for (size_t i = 0; i < n; ++i) count(&t->shard[m[i].shard], &m[i], 1);
    return true;
}
static bool supported(void *tool) {
    (void)tool;
    return true;
}
static bool shard_init(void *tool, uint32_t shard, void *worker_data, void **shard_data) {
    (void)worker_data;
    *shard_data = &((tool_t *)tool)->shard[shard];
    return true;
}
static bool shard_batch(void *tool, void *shard_data, const sonde_memref_t *m, size_t n) {
    (void)tool;
    count(shard_data, m, n);
    return true;
}
static uint32_t full_model(void *tool) {
    (void)tool;
    return SONDE_MEMREF_MODEL_1_2;
}

static sonde_tool_ops_t make_ops(const char *name, uint32_t size, bool full) {
    sonde_tool_ops_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = size;
    o.name = name;
    o.process_memrefs = serial_batch;
    o.parallel_shard_supported = supported;
    o.parallel_shard_init = shard_init;
    o.parallel_shard_memrefs = shard_batch;
    if (full) o.memref_model = full_model;
    return o;
}

static uint64_t sum(const tool_t *t, uint32_t shards, size_t type) {
    uint64_t s = 0;
    for (uint32_t i = 0; i < shards; ++i) s += t->shard[i].by_type[type];
    return s;
}
static uint64_t sum_markers(const tool_t *t, uint32_t shards, size_t kind) {
    uint64_t s = 0;
    for (uint32_t i = 0; i < shards; ++i) s += t->shard[i].markers_by_size[kind];
    return s;
}

static void run(const char *input, bool parallel, tool_t *old_tool, tool_t *plain_tool, tool_t *full_tool) {
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    const sonde_tool_ops_t old_ops = make_ops("old", SONDE_TOOL_OPS_SIZE_1_0, false);
    const sonde_tool_ops_t plain_ops = make_ops("plain", sizeof(sonde_tool_ops_t), false);
    const sonde_tool_ops_t full_ops = make_ops("full", sizeof(sonde_tool_ops_t), true);
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &old_ops, old_tool), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &full_ops, full_tool), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &plain_ops, plain_tool), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_input(a, input, SONDE_TRACE_FORMAT_AUTO), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, parallel), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_workers(a, 2), SONDE_STATUS_SUCCESS);
    const sonde_status_t st = sonde_analyzer_run(a);
    if (st != SONDE_STATUS_SUCCESS) fail_msg("%s: %s", sonde_status_name(st), sonde_analyzer_error(a));
    bool ran_parallel = !parallel;
    assert_int_equal(sonde_analyzer_run_info(a, &ran_parallel, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(ran_parallel, parallel);
    /* Progress: every thread file read once, as stored (zip members by compressed size). */
    uint64_t done = 0, total = 0;
    assert_int_equal(sonde_analyzer_progress(a, &done, &total), SONDE_STATUS_SUCCESS);
    assert_true(total > 0);
    assert_int_equal(done, total);
    sonde_analyzer_destroy(a);
}

static void check_dir(bool parallel) {
    char dir[768];
    snprintf(dir, sizeof dir, "%s/drmemtrace/core_serial/drmemtrace.threadsig.x64.tracedir",
             getenv("SONDE_SHARED_DATA"));
    static tool_t old_tool, plain_tool, full_tool;
    memset(&old_tool, 0, sizeof old_tool);
    memset(&plain_tool, 0, sizeof plain_tool);
    memset(&full_tool, 0, sizeof full_tool);
    run(dir, parallel, &old_tool, &plain_tool, &full_tool);
    const uint32_t n = 9;
    /* The 1.0 view: 650,576 fetched instructions of every kind as IFETCH, the loads and
     * stores, the timestamp and cpu markers (3,314 of them), nothing else. */
    for (int t = 0; t < 2; ++t) {
        const tool_t *v = t == 0 ? &old_tool : &plain_tool;
        assert_int_equal(sum(v, n, SONDE_MEMREF_IFETCH), 650576);
        assert_int_equal(sum(v, n, SONDE_MEMREF_READ), 172208);
        assert_int_equal(sum(v, n, SONDE_MEMREF_WRITE), 100150);
        assert_int_equal(sum(v, n, SONDE_MEMREF_MARKER), 3314);
        assert_int_equal(sum_markers(v, n, SONDE_MARKER_TIMESTAMP) + sum_markers(v, n, SONDE_MARKER_CPU_ID),
                         3314);
        for (size_t type = SONDE_MEMREF_MARKER + 1; type < 64; ++type) assert_int_equal(sum(v, n, type), 0);
        for (uint32_t s = 0; s < n; ++s) assert_int_equal(v->shard[s].other, 0);
    }
    /* The full model: the branch kinds, non-fetched instructions, encodings, every marker. */
    uint64_t fetched = 0;
    for (size_t type = 0; type < 64; ++type)
        if (sonde_memref_type_is_instr((uint32_t)type)) fetched += sum(&full_tool, n, type);
    assert_int_equal(fetched, 650576);
    assert_int_equal(sum(&full_tool, n, SONDE_MEMREF_IFETCH), 499388);
    assert_int_equal(sum(&full_tool, n, SONDE_MEMREF_INSTR_TAKEN_JUMP), 31407);
    assert_int_equal(sum(&full_tool, n, SONDE_MEMREF_INSTR_NO_FETCH), 126);
    assert_int_equal(sum(&full_tool, n, SONDE_MEMREF_INSTR_ENCODING), 21842);
    assert_int_equal(sum_markers(&full_tool, n, SONDE_MARKER_THREAD_ID), 9);
    assert_int_equal(sum_markers(&full_tool, n, SONDE_MARKER_SYSCALL), 480);
    assert_int_equal(sum_markers(&full_tool, n, SONDE_MARKER_MAYBE_BLOCKING_SYSCALL), 183);
    assert_int_equal(sum_markers(&full_tool, n, SONDE_MARKER_KERNEL_EVENT) +
                         sum_markers(&full_tool, n, SONDE_MARKER_KERNEL_XFER),
                     530);
}

static void test_models_serial(void **state) {
    (void)state;
    check_dir(false);
}

static void test_models_parallel(void **state) {
    (void)state;
    check_dir(true);
}

/* Runs one built-in tool over `rel` (under tests/data/drmemtrace) and returns its results JSON, squeezed. */
static char *builtin(const char *rel, const char *tool, const char *options, bool parallel) {
    char path[768];
    snprintf(path, sizeof path, "%s/drmemtrace/%s", getenv("SONDE_SHARED_DATA"), rel);
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, tool, options), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_input(a, path, SONDE_TRACE_FORMAT_AUTO), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, parallel), SONDE_STATUS_SUCCESS);
    const sonde_status_t st = sonde_analyzer_run(a);
    if (st != SONDE_STATUS_SUCCESS) fail_msg("%s: %s", sonde_status_name(st), sonde_analyzer_error(a));
    char *text = results(a);
    sonde_analyzer_destroy(a);
    return text;
}

static void expect_all(const char *text, const char *const *keys) {
    for (; *keys != NULL; ++keys)
        if (strstr(text, *keys) == NULL) fail_msg("%s not in %.300s...", *keys, text);
}

/* core_serial/expected.json, tool.core_serial: basic_counts totals (JSON keys are sorted, so
 * the total's "marker_kinds" object comes before its "markers" count). */
static void test_basic_counts_categories(void **state) {
    (void)state;
    static const char *const keys[] = {"\"ifetches\":650576,",
                                       "\"unique_ifetches\":6360,",
                                       "\"non_fetched_ifetches\":126,",
                                       "\"reads\":172208,",
                                       "\"writes\":100150",
                                       "\"threads\":9,",
                                       "\"encodings\":21842,",
                                       "\"prefetches\":0,",
                                       "{\"blocking_syscall\":183,\"core_idle\":0,\"core_wait\":0,"
                                       "\"function_argument\":144,\"function_id\":49,"
                                       "\"function_return_address\":0,\"function_return_value\":25,"
                                       "\"hardware_transfer\":0,\"kernel_transfer\":530,\"other\":316,"
                                       "\"physical_address\":0,\"physical_address_unavailable\":0,"
                                       "\"skipped_memref\":0,\"syscall\":480,\"timestamp_cpuid\":3314}",
                                       NULL};
    for (int parallel = 0; parallel < 2; ++parallel) {
        char *text = builtin("core_serial/drmemtrace.threadsig.x64.tracedir", "basic_counts", "", parallel);
        expect_all(text, keys);
        free(text);
    }
}

/* reuse_offline/expected.json: drcachesim's reuse_distance on the version-1 trace. */
static void test_reuse_distance_drcachesim(void **state) {
    (void)state;
    static const char *const keys[] = {
        "\"data_accesses\":56,",
        "\"data_histogram\":[[0,0],[1,0],[2,13],[3,0],[4,40]],",
        "\"distance_limit\":0,",
        "\"histogram\":[[0,103],[1,42],[2,13],[3,13],[4,53]],",
        "\"instruction_accesses\":173,",
        "\"median\":1,",
        "\"pruned_address_hits\":0,\"pruned_addresses\":0,",
        "\"top_lines\":[{\"address\":\"0x400100\",\"distant_references\":0,"
        "\"line\":4194560,\"references\":114}",
        "\"total_accesses\":229,\"unique_accesses\":126,\"unique_cache_lines\":5}",
        NULL};
    for (int parallel = 0; parallel < 2; ++parallel) {
        char *text = builtin("reuse_offline/drmemtrace.small.x64.trace", "reuse_distance", "model=drcachesim",
                             parallel);
        expect_all(text, keys);
        free(text);
    }
    char *text =
        builtin("core_serial/drmemtrace.threadsig.x64.tracedir", "reuse_distance", "model=drcachesim", true);
    const char *const all[] = {"\"instruction_accesses\":650576,", "\"total_accesses\":922934,", NULL};
    expect_all(text, all);
    free(text);
}

/* drcacheoff.cpu/expected.json: drcachesim's default cache hierarchy with -cpu_scheduling. */
static void test_cache_sim_drcachesim(void **state) {
    (void)state;
    static const struct {
        const char *level, *key;
        uint64_t value;
    } want[] = {
        {"L1I0", "hits", 35903},
        {"L1I0", "misses", 666},
        {"L1I0", "compulsory_misses", 664},
        {"L1I0", "invalidations", 0},
        {"L1D0", "hits", 9718},
        {"L1D0", "misses", 354},
        {"L1D0", "compulsory_misses", 627},
        {"L1D0", "prefetch_hits", 74},
        {"L1D0", "prefetch_misses", 280},
        {"L1I1", "hits", 105796},
        {"L1I1", "misses", 543},
        {"L1I1", "compulsory_misses", 543},
        {"L1D1", "hits", 32672},
        {"L1D1", "misses", 1112},
        {"L1D1", "compulsory_misses", 1822},
        {"L1D1", "prefetch_hits", 161},
        {"L1D1", "prefetch_misses", 951},
        {"LL", "hits", 455},
        {"LL", "misses", 2220},
        {"LL", "compulsory_misses", 3222},
        {"LL", "prefetch_hits", 229},
        {"LL", "prefetch_misses", 1002},
        {"LL", "child_hits", 184324},
        {"LL", "invalidations", 0},
        {"L1I2", "accesses", 0},
        {"L1D3", "accesses", 0},
    };
    char *text =
        builtin("drcacheoff.cpu/drmemtrace.simple_app.trace.zip", "cache_sim", "model=drcachesim", false);
    assert_non_null(strstr(text,
                           "{\"core\":0,\"traced_cpus\":[8]},{\"core\":1,\"traced_cpus\":[2]},"
                           "{\"core\":2,\"traced_cpus\":[]},{\"core\":3,\"traced_cpus\":[]}"));
    for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i)
        if (level_value(text, want[i].level, want[i].key) != want[i].value)
            fail_msg("%s %s: %llu, expected %llu", want[i].level, want[i].key,
                     (unsigned long long)level_value(text, want[i].level, want[i].key),
                     (unsigned long long)want[i].value);
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_serial),           cmocka_unit_test(test_models_parallel),
        cmocka_unit_test(test_basic_counts_categories), cmocka_unit_test(test_reuse_distance_drcachesim),
        cmocka_unit_test(test_cache_sim_drcachesim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
