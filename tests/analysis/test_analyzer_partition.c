/* Tests of partitioned runs (sonde_analyzer_set_partition, _export_state, _merge_state), the
 * library half of `sonde analyze --mpi`, without MPI: N analyzers in one process play the N
 * ranks, rank 0 merges the others' states, and its results JSON must equal that of one
 * analyzer that read everything, for every built-in tool that runs partitioned, by shards and
 * by time slices, for 1, 2 and 3 ranks. Then every bad argument and every refusal. */
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

enum { kShards = 3, kPerShard = 20000 };

static sonde_memref_t g_refs[kShards][kPerShard];
/* The shards make() reads: g_refs, or one large stream (test_reuse_distance_parallel_merge). */
static const sonde_memref_t *g_input[kShards];
static size_t g_input_len = kPerShard;

/* Deterministic records: data accesses over a few hot and many cold lines (some straddling two
 * lines), instruction fetches, and a marker now and then; timestamps interleave the shards. */
static void make_refs(void) {
    uint64_t x = 0x243F6A8885A308D3ull;
    for (uint32_t s = 0; s < kShards; ++s)
        for (uint32_t i = 0; i < kPerShard; ++i) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            sonde_memref_t *m = &g_refs[s][i];
            memset(m, 0, sizeof *m);
            m->shard = s;
            m->timestamp = 1 + (uint64_t)i * 4 + s;
            m->pc = 0x400000 + (x & 0xfff);
            const uint32_t kind = (uint32_t)(x >> 60);
            const uint64_t line = (x >> 20) % ((x & 1) ? 64 : 40000);
            if (kind < 2) {
                m->type = SONDE_MEMREF_IFETCH;
                m->address = m->pc;
                m->size = 4;
            } else if (kind == 2) {
                m->type = SONDE_MEMREF_MARKER;
                m->size = SONDE_MARKER_TIMESTAMP;
                m->address = i;
            } else {
                m->type = kind < 9 ? SONDE_MEMREF_READ : kind < 14 ? SONDE_MEMREF_WRITE : SONDE_MEMREF_MODIFY;
                m->address = 0x10000000 + line * 64 + ((x >> 8) & 63);
                m->size = 8;
            }
        }
}

/* One analyzer with `tool` over the first `shards` shards; parallel or serial. */
static sonde_analyzer_t *make(const char *tool, const char *options, int shards, bool parallel) {
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, tool, options), SONDE_STATUS_SUCCESS);
    for (int s = 0; s < shards; ++s)
        assert_int_equal(sonde_analyzer_add_memory_shard(a, g_input[s] != NULL ? g_input[s] : g_refs[s],
                                                         g_input_len, NULL),
                         SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, parallel), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_workers(a, 2), SONDE_STATUS_SUCCESS);
    return a;
}

static char *export_bytes(sonde_analyzer_t *a, size_t *size) {
    size_t need = 0;
    const sonde_status_t st = sonde_analyzer_export_state(a, NULL, 0, &need);
    assert_true(st == SONDE_STATUS_ERROR_BUFFER_TOO_SHORT || st == SONDE_STATUS_SUCCESS);
    char *bytes = malloc(need + 1);
    assert_non_null(bytes);
    size_t again = 0;
    assert_int_equal(sonde_analyzer_export_state(a, bytes, need, &again), SONDE_STATUS_SUCCESS);
    assert_int_equal(again, need);
    *size = need;
    return bytes;
}

/* Runs `tool` as `nranks` ranks and checks rank 0's merged JSON against one analyzer's. The
 * others' states are merged in reverse order: merging must not depend on it. */
static void check_equal(const char *tool, const char *options, int shards, bool parallel, uint32_t nranks) {
    sonde_analyzer_t *one = make(tool, options, shards, parallel);
    assert_int_equal(sonde_analyzer_run(one), SONDE_STATUS_SUCCESS);
    char *expected = results(one);
    sonde_analyzer_t *ranks[3];
    char *states[3];
    size_t sizes[3];
    for (uint32_t r = 0; r < nranks; ++r) {
        ranks[r] = make(tool, options, shards, parallel);
        assert_int_equal(sonde_analyzer_set_partition(ranks[r], r, nranks), SONDE_STATUS_SUCCESS);
        const sonde_status_t st = sonde_analyzer_run(ranks[r]);
        if (st != SONDE_STATUS_SUCCESS) fail_msg("%s rank %u: %s", tool, r, sonde_analyzer_error(ranks[r]));
        states[r] = export_bytes(ranks[r], &sizes[r]);
    }
    for (uint32_t r = nranks - 1; r >= 1; --r) {
        const sonde_status_t st = sonde_analyzer_merge_state(ranks[0], states[r], sizes[r]);
        if (st != SONDE_STATUS_SUCCESS) fail_msg("%s merge %u: %s", tool, r, sonde_analyzer_error(ranks[0]));
    }
    char *merged = results(ranks[0]);
    if (strcmp(merged, expected) != 0)
        fail_msg("%s, %d shards, %s, %u ranks:\nmerged   %.600s\nexpected %.600s", tool, shards,
                 parallel ? "parallel" : "serial", nranks, merged, expected);
    free(merged);
    for (uint32_t r = 0; r < nranks; ++r) {
        free(states[r]);
        sonde_analyzer_destroy(ranks[r]);
    }
    free(expected);
    sonde_analyzer_destroy(one);
}

static void check_tool(const char *tool, const char *options) {
    for (uint32_t n = 1; n <= 3; ++n) {
        check_equal(tool, options, kShards, true, n);  /* by shards */
        check_equal(tool, options, kShards, false, n); /* by time slices of the interleaved stream */
        check_equal(tool, options, 1, true, n);        /* one shard: time slices */
    }
}

static void test_basic_counts(void **state) {
    (void)state;
    check_tool("basic_counts", NULL);
    check_tool("basic_counts", "line_size=256");
}

static void test_reuse_distance(void **state) {
    (void)state;
    check_tool("reuse_distance", NULL);
    check_tool("reuse_distance", "line_size=256,jobs=2");
    /* SHARDS at a fixed rate: the same estimate, bit for bit. At 0.01 the scaled distances
     * near a later slice's start wait for rank 0's cap. */
    check_tool("reuse_distance", "sample_rate=0.1");
    check_tool("reuse_distance", "sample_rate=0.01,seed=3");
}

/* A state of another sampling rate or seed is refused, and rank 0 keeps what it had. */
/* Slices with many first accesses are merged at rank 0 on several threads (merge_jobs):
 * the same histogram as one analyzer, exact and SHARDS, for the last slice (read only) and
 * the ones before it (merged into the stack). One stream of 240 Ki accesses over 2^17 cold
 * lines and 64 hot ones, so that every slice has more than 16 Ki first accesses. */
static void test_reuse_distance_parallel_merge(void **state) {
    (void)state;
    enum { kBig = 240 * 1024 };
    sonde_memref_t *big = calloc(kBig, sizeof *big);
    assert_non_null(big);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < kBig; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        big[i].timestamp = 1 + i;
        big[i].type = (x >> 62) == 0 ? SONDE_MEMREF_WRITE : SONDE_MEMREF_READ;
        big[i].address = 0x10000000 + ((x & 3) == 0 ? (x >> 20) % 64 : (x >> 20) % (1u << 17)) * 64;
        big[i].size = 8;
    }
    g_input[0] = big;
    g_input_len = kBig;
    for (uint32_t n = 2; n <= 3; ++n) {
        check_equal("reuse_distance", "merge_jobs=3", 1, true, n);
        check_equal("reuse_distance", "jobs=2,merge_jobs=2", 1, true, n);
        check_equal("reuse_distance", "sample_rate=0.5,seed=7,merge_jobs=2", 1, true, n);
    }
    g_input[0] = NULL;
    g_input_len = kPerShard;
    free(big);
}

static void test_reuse_distance_other_sampling(void **state) {
    (void)state;
    static const char *const other[] = {NULL, "sample_rate=0.2", "sample_rate=0.1,seed=9"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; ++i) {
        sonde_analyzer_t *r0 = make("reuse_distance", "sample_rate=0.1", 1, true);
        sonde_analyzer_t *r1 = make("reuse_distance", other[i], 1, true);
        assert_int_equal(sonde_analyzer_set_partition(r0, 0, 2), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_set_partition(r1, 1, 2), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_run(r0), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_run(r1), SONDE_STATUS_SUCCESS);
        size_t size = 0;
        char *bytes = export_bytes(r1, &size);
        assert_int_not_equal(sonde_analyzer_merge_state(r0, bytes, size), SONDE_STATUS_SUCCESS);
        if (strstr(sonde_analyzer_error(r0), "another sampling rate or seed") == NULL)
            fail_msg("%s: %s", other[i] ? other[i] : "exact", sonde_analyzer_error(r0));
        free(bytes);
        sonde_analyzer_destroy(r0);
        sonde_analyzer_destroy(r1);
    }
}

static void test_cache_sim(void **state) {
    (void)state;
    check_tool("cache_sim", NULL);
    check_tool("cache_sim", "I1:4K:2:64,D1:8K:4:64:fifo,L2:64K:8:64,LL:256K:16:64");
    check_tool("cache_sim", "U1:2K:2:64,LL:128K:4:64");
}

static void test_cache_sim_refusals(void **state) {
    (void)state;
    static const char *const refused[][2] = {
        {"I1:32K:8:64,D1:32K:8:32,LL:1M:16:64", "different line sizes"},
        {"I1:32K:8:64,D1:32K:8:64,LL:1M:16:64:random", "replaces at random"},
        {"model=drcachesim", "cannot run partitioned"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; ++i) {
        sonde_analyzer_t *a = make("cache_sim", refused[i][0], 1, true);
        assert_int_equal(sonde_analyzer_set_partition(a, 0, 2), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_NOT_SUPPORTED);
        if (strstr(sonde_analyzer_error(a), refused[i][1]) == NULL)
            fail_msg("%s: %s", refused[i][0], sonde_analyzer_error(a));
        sonde_analyzer_destroy(a);
    }
    /* An access over three lines cannot be split by sets: every rank stops with the reason. */
    sonde_memref_t wide[2];
    memset(wide, 0, sizeof wide);
    wide[0].type = SONDE_MEMREF_READ;
    wide[0].address = 0x1000;
    wide[0].size = 8;
    wide[1].type = SONDE_MEMREF_READ;
    wide[1].address = 0x2030;
    wide[1].size = 100;
    for (uint32_t r = 0; r < 2; ++r) {
        sonde_analyzer_t *a = NULL;
        assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_add_tool(a, "cache_sim", NULL), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_add_memory_shard(a, wide, 2, NULL), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_set_partition(a, r, 2), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_TOOL);
        assert_non_null(strstr(sonde_analyzer_error(a), "spans more than two lines"));
        sonde_analyzer_destroy(a);
    }
}

static void test_reuse_distance_refusals(void **state) {
    (void)state;
    static const char *const refused[][2] = {
        {"sample_size=100", "SHARDS at a fixed size (sample_size) does not run partitioned"},
        {"per_shard=1", "per_shard does not run partitioned"},
        {"model=drcachesim", "cannot run partitioned"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; ++i) {
        sonde_analyzer_t *a = make("reuse_distance", refused[i][0], 1, true);
        assert_int_equal(sonde_analyzer_set_partition(a, 0, 2), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_NOT_SUPPORTED);
        if (strstr(sonde_analyzer_error(a), refused[i][1]) == NULL)
            fail_msg("%s: %s", refused[i][0], sonde_analyzer_error(a));
        sonde_analyzer_destroy(a);
    }
}

/* ---- bad arguments ---- */

static void test_set_partition_errors(void **state) {
    (void)state;
    assert_int_equal(sonde_analyzer_set_partition(NULL, 0, 1), SONDE_STATUS_ERROR_NULL_POINTER);
    sonde_analyzer_t *a = make("basic_counts", NULL, 1, true);
    assert_int_equal(sonde_analyzer_set_partition(a, 0, 0), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(sonde_analyzer_error(a), "nranks 1..65536"));
    assert_int_equal(sonde_analyzer_set_partition(a, 2, 2), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_analyzer_set_partition(a, 0, 65537), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_analyzer_set_partition(a, 1, 2), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_partition(a, 0, 2), SONDE_STATUS_ERROR_PHASE_FAILURE);
    sonde_analyzer_destroy(a);
}

static void test_export_errors(void **state) {
    (void)state;
    size_t need = 0;
    char byte;
    assert_int_equal(sonde_analyzer_export_state(NULL, NULL, 0, &need), SONDE_STATUS_ERROR_NULL_POINTER);
    sonde_analyzer_t *a = make("basic_counts", NULL, 1, true);
    assert_int_equal(sonde_analyzer_export_state(a, NULL, 0, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_export_state(a, NULL, 4, &need), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_set_partition(a, 0, 2), SONDE_STATUS_SUCCESS);
    /* Before the run. */
    assert_int_equal(sonde_analyzer_export_state(a, NULL, 0, &need), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_export_state(a, &byte, 1, &need), SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_true(need > 1);
    sonde_analyzer_destroy(a);
    /* A run that is not partitioned has no state to give. */
    a = make("basic_counts", NULL, 1, true);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_export_state(a, NULL, 0, &need), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_non_null(strstr(sonde_analyzer_error(a), "not a partitioned run"));
    assert_int_equal(sonde_analyzer_merge_state(a, &byte, 1), SONDE_STATUS_ERROR_PHASE_FAILURE);
    sonde_analyzer_destroy(a);
}

static void test_merge_errors(void **state) {
    (void)state;
    sonde_analyzer_t *r0 = make("basic_counts", NULL, kShards, true);
    sonde_analyzer_t *r1 = make("basic_counts", NULL, kShards, true);
    sonde_analyzer_t *three = make("basic_counts", NULL, kShards, true);
    sonde_analyzer_t *other_tool = make("basic_counts", "line_size=128", kShards, true);
    assert_int_equal(sonde_analyzer_set_partition(r0, 0, 2), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_partition(r1, 1, 2), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_partition(three, 1, 3), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_partition(other_tool, 1, 2), SONDE_STATUS_SUCCESS);
    /* Before its own run. */
    char junk[16] = "SNDPART1";
    assert_int_equal(sonde_analyzer_merge_state(r0, junk, sizeof junk), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_analyzer_run(r0), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(r1), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(three), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(other_tool), SONDE_STATUS_SUCCESS);
    size_t n0, n1, n3, nt;
    char *s0 = export_bytes(r0, &n0), *s1 = export_bytes(r1, &n1), *s3 = export_bytes(three, &n3);
    char *st = export_bytes(other_tool, &nt);

    assert_int_equal(sonde_analyzer_merge_state(NULL, s1, n1), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_merge_state(r0, NULL, 4), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_merge_state(r0, "nonsense", 8), SONDE_STATUS_ERROR_FORMAT);
    assert_non_null(strstr(sonde_analyzer_error(r0), "bad magic"));
    assert_int_equal(sonde_analyzer_merge_state(r0, s1, 20), SONDE_STATUS_ERROR_FORMAT);
    assert_non_null(strstr(sonde_analyzer_error(r0), "truncated"));
    assert_int_equal(sonde_analyzer_merge_state(r0, s1, n1 - 1), SONDE_STATUS_ERROR_FORMAT);
    assert_int_equal(sonde_analyzer_merge_state(r0, s0, n0), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(sonde_analyzer_error(r0), "this rank's own"));
    assert_int_equal(sonde_analyzer_merge_state(r0, s3, n3), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(sonde_analyzer_error(r0), "3 ranks"));
    /* Same layout, a tool of other options: the tool refuses its state. */
    assert_int_equal(sonde_analyzer_merge_state(r0, st, nt), SONDE_STATUS_ERROR_TOOL);
    assert_non_null(strstr(sonde_analyzer_error(r0), "another line size"));
    /* A failed tool merge leaves the results unusable: no further merge. */
    assert_int_equal(sonde_analyzer_merge_state(r0, s1, n1), SONDE_STATUS_ERROR_PHASE_FAILURE);
    sonde_analyzer_destroy(r0);

    r0 = make("basic_counts", NULL, kShards, true);
    assert_int_equal(sonde_analyzer_set_partition(r0, 0, 2), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(r0), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_merge_state(r0, s1, n1), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_merge_state(r0, s1, n1), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(sonde_analyzer_error(r0), "merged already"));
    /* Bytes after the end. */
    char *longer = malloc(n1 + 1);
    assert_non_null(longer);
    memcpy(longer, s1, n1);
    longer[n1] = 0;
    assert_int_equal(sonde_analyzer_merge_state(r0, longer, n1 + 1), SONDE_STATUS_ERROR_FORMAT);
    free(longer);
    sonde_analyzer_destroy(r0);

    free(s0);
    free(s1);
    free(s3);
    free(st);
    sonde_analyzer_destroy(r1);
    sonde_analyzer_destroy(three);
    sonde_analyzer_destroy(other_tool);
}

/* Corrupted states of reuse_distance (exact and SHARDS at a fixed rate): each of a spread of
 * byte positions flipped in turn. Every merge answers (success when the bytes still make sense,
 * else an error naming the state) and rank 0's results come out or are refused; nothing
 * crashes or reads out of bounds (the suite runs this under AddressSanitizer too). */
static void test_reuse_distance_corrupt_states(void **state) {
    (void)state;
    static const char *const options[] = {NULL, "sample_rate=0.1"};
    for (size_t o = 0; o < sizeof options / sizeof options[0]; ++o) {
        sonde_analyzer_t *r1 = make("reuse_distance", options[o], 1, true);
        assert_int_equal(sonde_analyzer_set_partition(r1, 1, 2), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_run(r1), SONDE_STATUS_SUCCESS);
        size_t size = 0;
        char *good = export_bytes(r1, &size);
        char *bad = malloc(size);
        assert_non_null(bad);
        const size_t step = size / 300 + 1;
        size_t refused = 0, tried = 0;
        for (size_t at = 8; at < size; at += step) {
            memcpy(bad, good, size);
            bad[at] = (char)(bad[at] ^ 0x5A);
            sonde_analyzer_t *r0 = make("reuse_distance", options[o], 1, true);
            assert_int_equal(sonde_analyzer_set_partition(r0, 0, 2), SONDE_STATUS_SUCCESS);
            assert_int_equal(sonde_analyzer_run(r0), SONDE_STATUS_SUCCESS);
            const sonde_status_t st = sonde_analyzer_merge_state(r0, bad, size);
            ++tried;
            if (st != SONDE_STATUS_SUCCESS) {
                ++refused;
                assert_true(strlen(sonde_analyzer_error(r0)) > 0);
            } else {
                size_t need = 0;
                const sonde_status_t rs = sonde_analyzer_results_json(r0, NULL, 0, &need);
                assert_true(rs == SONDE_STATUS_SUCCESS || rs == SONDE_STATUS_ERROR_BUFFER_TOO_SHORT ||
                            rs == SONDE_STATUS_ERROR_TOOL || rs == SONDE_STATUS_ERROR_OUT_OF_MEMORY);
            }
            sonde_analyzer_destroy(r0);
        }
        print_message("reuse_distance %s: %zu of %zu corrupted states refused\n",
                      options[o] ? options[o] : "exact", refused, tried);
        assert_true(refused > 0);
        free(bad);
        free(good);
        sonde_analyzer_destroy(r1);
    }
}

/* ---- tools that cannot run partitioned ---- */

static bool plain_memrefs(void *t, const sonde_memref_t *m, size_t n) {
    (void)t;
    (void)m;
    (void)n;
    return true;
}
static uint32_t refuse(void *t, uint32_t rank, uint32_t nranks, uint32_t offers) {
    (void)t;
    (void)rank;
    (void)nranks;
    (void)offers;
    return SONDE_PARTITION_REFUSE;
}
static const char *refuse_why(void *t) {
    (void)t;
    return "needs the whole trace";
}
static const void *no_state(void *t, size_t *size) {
    (void)t;
    *size = 0;
    return "";
}
static bool no_merge(void *t, const void *s, size_t n) {
    (void)t;
    (void)s;
    (void)n;
    return true;
}

static void test_refused_tools(void **state) {
    (void)state;
    /* A 1.0 table: no partition entries. */
    sonde_tool_ops_t ops;
    memset(&ops, 0, sizeof ops);
    ops.struct_size = SONDE_TOOL_OPS_SIZE_1_0;
    ops.name = "old_tool";
    ops.process_memrefs = plain_memrefs;
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &ops, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, g_refs[0], 100, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_partition(a, 0, 2), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_non_null(strstr(sonde_analyzer_error(a), "old_tool: this tool cannot run partitioned"));
    sonde_analyzer_destroy(a);

    /* A table with the entries whose partition() refuses. */
    memset(&ops, 0, sizeof ops);
    ops.struct_size = sizeof ops;
    ops.name = "whole_only";
    ops.process_memrefs = plain_memrefs;
    ops.get_error_string = refuse_why;
    ops.partition = refuse;
    ops.export_state = no_state;
    ops.merge_state = no_merge;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &ops, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, g_refs[0], 100, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_partition(a, 1, 2), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_non_null(strstr(sonde_analyzer_error(a),
                           "whole_only: cannot run partitioned by time slices: "
                           "needs the whole trace"));
    sonde_analyzer_destroy(a);
}

int main(void) {
    make_refs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_counts),
        cmocka_unit_test(test_reuse_distance),
        cmocka_unit_test(test_reuse_distance_parallel_merge),
        cmocka_unit_test(test_reuse_distance_refusals),
        cmocka_unit_test(test_reuse_distance_other_sampling),
        cmocka_unit_test(test_reuse_distance_corrupt_states),
        cmocka_unit_test(test_cache_sim),
        cmocka_unit_test(test_cache_sim_refusals),
        cmocka_unit_test(test_set_partition_errors),
        cmocka_unit_test(test_export_errors),
        cmocka_unit_test(test_merge_errors),
        cmocka_unit_test(test_refused_tools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
