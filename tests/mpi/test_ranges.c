/* Byte-range partitions, the library half of `sonde analyze --mpi` over plain lackey and raw64
 * files, without MPI: N analyzers in one process play N ranks. Each reads only its byte range of
 * the inputs, they send each other their routes (cache_sim's references for the ranks that
 * simulate their sets) and rank 0 merges the others' states: its results JSON must equal that of
 * one analyzer that read everything, for every built-in tool and for many rank counts, so that
 * range boundaries fall everywhere: inside a line, on a newline, among data lines before a
 * range's first instruction line, in valgrind's log lines, on carriage returns. Then the first
 * error (the lowest failing rank's message is the one process's, line number included), an empty
 * file, a file smaller than the rank count, several inputs in one stream, and the routes' own
 * errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sonde/analysis.h>

#include "../analysis/analyzer_test_util.h"

enum { kMostRanks = 97 };

static char g_dir[256];
static char g_lackey[300], g_raw[300], g_empty[300], g_tiny[300], g_bad[300];

static void write_file(const char *path, const char *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static uint64_t next(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Lackey text with every kind of line: data lines before the first instruction line (pc 0),
 * valgrind's "==" log, empty lines and CRLF endings, long runs of data lines (a range starting
 * in one finds its pc lines back), accesses that straddle two lines, and a last line without its
 * newline. `bad_at` > 0 puts a bad line after that many lines. */
static size_t make_lackey(char *out, size_t cap, int bad_at) {
    uint64_t x = 0x243F6A8885A308D3ull;
    size_t n = 0;
    n += (size_t)snprintf(out + n, cap - n, " L 00002000,8\n S 00002040,4\n M 00001ffc,8\n");
    for (int line = 0; line < 6000; ++line) {
        const uint64_t r = next(&x);
        if (bad_at > 0 && line == bad_at) n += (size_t)snprintf(out + n, cap - n, " X not a lackey line\n");
        if (line % 997 == 5) {
            n += (size_t)snprintf(out + n, cap - n, "==4242== valgrind says %d\n\n", line);
        } else if (line % 1301 == 7) {
            for (int k = 0; k < 400; ++k) /* a run of data lines, about 6 KiB */
                n += (size_t)snprintf(out + n, cap - n, " L %08llx,8\n",
                                      (unsigned long long)(0x10000000 + (next(&x) >> 40) * 8));
        } else if (r % 3 == 0) {
            n += (size_t)snprintf(out + n, cap - n, "I  %08llx,%u%s",
                                  (unsigned long long)(0x400000 + (r >> 50)), (unsigned)(1 + (r >> 20) % 15),
                                  line % 211 == 3 ? "\r\n" : "\n");
        } else {
            const uint64_t line64 = (r >> 20) % ((r & 1) ? 64 : 20000);
            n += (size_t)snprintf(out + n, cap - n, " %c %08llx,%u\n", "LLSM"[(r >> 8) & 3],
                                  (unsigned long long)(0x10000000 + line64 * 64 + ((r >> 12) & 63)),
                                  (unsigned)(1 + (r >> 30) % 8));
        }
        assert_true(n + 64 < cap);
    }
    n += (size_t)snprintf(out + n, cap - n, "I  00400abc,3"); /* no newline at the end */
    return n;
}

static void make_inputs(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/sonde-ranges-XXXXXX", tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
    assert_non_null(mkdtemp(g_dir));
    snprintf(g_lackey, sizeof g_lackey, "%s/t.lackey", g_dir);
    snprintf(g_raw, sizeof g_raw, "%s/t.raw64", g_dir);
    snprintf(g_empty, sizeof g_empty, "%s/empty.lackey", g_dir);
    snprintf(g_tiny, sizeof g_tiny, "%s/tiny.lackey", g_dir);
    snprintf(g_bad, sizeof g_bad, "%s/bad.lackey", g_dir);
    const size_t cap = 1u << 20;
    char *text = malloc(cap);
    assert_non_null(text);
    write_file(g_lackey, text, make_lackey(text, cap, 0));
    write_file(g_bad, text, make_lackey(text, cap, 3500));
    write_file(g_empty, "", 0);
    write_file(g_tiny, "I  10,4\n", 8);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    uint64_t *raw = (uint64_t *)text;
    for (size_t i = 0; i < 20000; ++i) raw[i] = 0x10000000 + (next(&x) >> 20) % 30000 * 8;
    write_file(g_raw, text, 20000 * 8);
    free(text);
}

static void remove_inputs(void) {
    const char *paths[] = {g_lackey, g_raw, g_empty, g_tiny, g_bad};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; ++i) unlink(paths[i]);
    rmdir(g_dir);
}

/* ---- a tool that sees every record: a hash of the records in stream order ----
 * H = H * B + f(record) modulo 2^64 over the stream; a slice's (count, hash) pairs compose in
 * slice order, H(a b) = H(a) * B^|b| + H(b), so the merged hash equals the one process's exactly
 * when every rank read exactly its records, in order, each with its address, size, type and pc
 * (the pc of a lackey data line comes from the last instruction line before it). */
enum { kMostSlices = 128 };
static const uint64_t kBase = 0x100000001B3ull;
typedef struct hasher_t {
    uint64_t count[kMostSlices], hash[kMostSlices];
    bool has[kMostSlices];
    uint64_t slice;
    char json[128];
    uint64_t state[3 * kMostSlices + 1];
} hasher_t;

static uint64_t power(uint64_t n) {
    uint64_t r = 1, b = kBase;
    for (; n != 0; n >>= 1, b *= b)
        if (n & 1) r *= b;
    return r;
}
static bool hash_batch(void *tool, const sonde_memref_t *m, size_t n) {
    hasher_t *h = tool;
    for (size_t i = 0; i < n; ++i) {
        const uint64_t v =
            m[i].address * 31 + m[i].pc * 17 + (uint64_t)m[i].size * 7 + m[i].type + m[i].shard * 5;
        h->hash[h->slice] = h->hash[h->slice] * kBase + v;
    }
    h->count[h->slice] += n;
    h->has[h->slice] = true;
    return true;
}
static uint32_t hash_partition(void *tool, uint32_t rank, uint32_t nranks, uint32_t offers) {
    (void)tool;
    (void)rank;
    (void)nranks;
    return offers == SONDE_PARTITION_TIME_SLICES ? offers : SONDE_PARTITION_REFUSE;
}
static bool hash_slice(void *tool, uint64_t slice) {
    if (slice >= kMostSlices) return false;
    ((hasher_t *)tool)->slice = slice;
    return true;
}
static const void *hash_export(void *tool, size_t *size) {
    hasher_t *h = tool;
    size_t k = 0;
    for (uint64_t s = 0; s < kMostSlices; ++s)
        if (h->has[s]) {
            h->state[k++] = s;
            h->state[k++] = h->count[s];
            h->state[k++] = h->hash[s];
        }
    *size = k * sizeof(uint64_t);
    return h->state;
}
static bool hash_merge(void *tool, const void *state, size_t size) {
    hasher_t *h = tool;
    const uint64_t *v = state;
    for (size_t k = 0; k + 3 <= size / sizeof(uint64_t); k += 3) {
        if (v[k] >= kMostSlices || h->has[v[k]]) return false;
        h->has[v[k]] = true;
        h->count[v[k]] = v[k + 1];
        h->hash[v[k]] = v[k + 2];
    }
    return true;
}
static const char *hash_json(void *tool) {
    hasher_t *h = tool;
    uint64_t count = 0, hash = 0;
    for (uint64_t s = 0; s < kMostSlices; ++s) {
        hash = hash * power(h->count[s]) + h->hash[s];
        count += h->count[s];
    }
    snprintf(h->json, sizeof h->json, "{\"records\": %llu, \"hash\": %llu}", (unsigned long long)count,
             (unsigned long long)hash);
    return h->json;
}
static void hash_destroy(void *tool) { free(tool); }

static void add_hasher(sonde_analyzer_t *a) {
    sonde_tool_ops_t ops;
    memset(&ops, 0, sizeof ops);
    ops.struct_size = sizeof ops;
    ops.name = "records";
    ops.process_memrefs = hash_batch;
    ops.partition = hash_partition;
    ops.slice_begin = hash_slice;
    ops.export_state = hash_export;
    ops.merge_state = hash_merge;
    ops.results_json = hash_json;
    ops.destroy = hash_destroy;
    hasher_t *h = calloc(1, sizeof *h);
    assert_non_null(h);
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &ops, h), SONDE_STATUS_SUCCESS);
}

/* One analyzer (rank `rank` of `nranks`, or a whole run when nranks is 0) over `paths`, serial,
 * with the record hasher beside `tool`. */
static sonde_analyzer_t *make(const char *const *paths, size_t npaths, uint32_t format, const char *tool,
                              const char *options, uint32_t rank, uint32_t nranks) {
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, tool, options), SONDE_STATUS_SUCCESS);
    add_hasher(a);
    for (size_t i = 0; i < npaths; ++i)
        assert_int_equal(sonde_analyzer_add_input(a, paths[i], format), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, false), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_workers(a, 2), SONDE_STATUS_SUCCESS);
    if (nranks != 0) assert_int_equal(sonde_analyzer_set_partition(a, rank, nranks), SONDE_STATUS_SUCCESS);
    return a;
}

static void *routes_for(sonde_analyzer_t *a, uint32_t to, size_t *size) {
    size_t need = 0;
    const sonde_status_t st = sonde_analyzer_export_routes(a, to, NULL, 0, &need);
    assert_true(st == SONDE_STATUS_SUCCESS || st == SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    void *bytes = malloc(need + 1);
    assert_non_null(bytes);
    size_t again = 0;
    assert_int_equal(sonde_analyzer_export_routes(a, to, bytes, need, &again), SONDE_STATUS_SUCCESS);
    assert_int_equal(again, need);
    *size = need;
    return bytes;
}

/* Every rank sends every other its routes; each merges them, the lower ranks' first or last
 * (`reverse`): the routed tools keep what comes out of order. */
static void exchange_routes(sonde_analyzer_t **ranks, uint32_t n, bool reverse) {
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t to = reverse ? n - 1 - k : k;
        for (uint32_t j = 0; j < n; ++j) {
            const uint32_t from = reverse ? n - 1 - j : j;
            if (from == to) continue;
            size_t size = 0;
            void *bytes = routes_for(ranks[from], to, &size);
            const sonde_status_t st = sonde_analyzer_merge_routes(ranks[to], from, bytes, size);
            if (st != SONDE_STATUS_SUCCESS)
                fail_msg("routes %u -> %u: %s", from, to, sonde_analyzer_error(ranks[to]));
            free(bytes);
        }
    }
}

static void *state_of(sonde_analyzer_t *a, size_t *size) {
    size_t need = 0;
    const sonde_status_t st = sonde_analyzer_export_state(a, NULL, 0, &need);
    if (st != SONDE_STATUS_SUCCESS && st != SONDE_STATUS_ERROR_BUFFER_TOO_SHORT)
        fail_msg("export: %s", sonde_analyzer_error(a));
    void *bytes = malloc(need + 1);
    assert_non_null(bytes);
    assert_int_equal(sonde_analyzer_export_state(a, bytes, need, size), SONDE_STATUS_SUCCESS);
    return bytes;
}

/* Runs `tool` over `paths` as `nranks` ranks and checks rank 0's merged JSON against `expected`. */
static void check_ranks(const char *const *paths, size_t npaths, uint32_t format, const char *tool,
                        const char *options, uint32_t nranks, const char *expected) {
    sonde_analyzer_t *ranks[kMostRanks] = {NULL};
    for (uint32_t r = 0; r < nranks; ++r) {
        ranks[r] = make(paths, npaths, format, tool, options, r, nranks);
        const sonde_status_t st = sonde_analyzer_run(ranks[r]);
        if (st != SONDE_STATUS_SUCCESS)
            fail_msg("%s rank %u of %u: %s", tool, r, nranks, sonde_analyzer_error(ranks[r]));
    }
    exchange_routes(ranks, nranks, nranks % 2 == 0);
    for (uint32_t r = nranks; r-- > 1;) {
        size_t size = 0;
        void *state = state_of(ranks[r], &size);
        const sonde_status_t st = sonde_analyzer_merge_state(ranks[0], state, size);
        if (st != SONDE_STATUS_SUCCESS) fail_msg("%s merge %u: %s", tool, r, sonde_analyzer_error(ranks[0]));
        free(state);
    }
    char *merged = results(ranks[0]);
    if (strcmp(merged, expected) != 0)
        fail_msg("%s (%s), %u ranks:\nmerged   %.700s\nexpected %.700s", tool, options ? options : "", nranks,
                 merged, expected);
    free(merged);
    for (uint32_t r = 0; r < nranks; ++r) sonde_analyzer_destroy(ranks[r]);
}

static void check_tool(const char *const *paths, size_t npaths, uint32_t format, const char *tool,
                       const char *options) {
    sonde_analyzer_t *one = make(paths, npaths, format, tool, options, 0, 0);
    assert_int_equal(sonde_analyzer_run(one), SONDE_STATUS_SUCCESS);
    char *expected = results(one);
    sonde_analyzer_destroy(one);
    static const uint32_t counts[] = {1, 2, 3, 4, 5, 7, 8, 11, 16, 29, 64};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; ++i)
        check_ranks(paths, npaths, format, tool, options, counts[i], expected);
    free(expected);
}

static void test_lackey(void **state) {
    (void)state;
    const char *paths[] = {g_lackey};
    check_tool(paths, 1, SONDE_TRACE_FORMAT_LACKEY, "basic_counts", NULL);
    check_tool(paths, 1, SONDE_TRACE_FORMAT_LACKEY, "reuse_distance", NULL); /* gem5's histogram */
    check_tool(paths, 1, SONDE_TRACE_FORMAT_LACKEY, "cache_sim", NULL);
    check_tool(paths, 1, SONDE_TRACE_FORMAT_LACKEY, "cache_sim",
               "I1:1K:2:64,D1:2K:4:64:fifo,L2:8K:4:64,LL:32K:8:64");
}

/* More ranks than 64: cache_sim finds the ranks of a group by their ranges, not a bit mask. */
static void test_many_ranks(void **state) {
    (void)state;
    const char *paths[] = {g_lackey};
    sonde_analyzer_t *one = make(paths, 1, SONDE_TRACE_FORMAT_LACKEY, "cache_sim", NULL, 0, 0);
    assert_int_equal(sonde_analyzer_run(one), SONDE_STATUS_SUCCESS);
    char *expected = results(one);
    sonde_analyzer_destroy(one);
    check_ranks(paths, 1, SONDE_TRACE_FORMAT_LACKEY, "cache_sim", NULL, kMostRanks, expected);
    free(expected);
}

static void test_raw64(void **state) {
    (void)state;
    const char *paths[] = {g_raw};
    check_tool(paths, 1, SONDE_TRACE_FORMAT_RAW64, "basic_counts", NULL);
    check_tool(paths, 1, SONDE_TRACE_FORMAT_RAW64, "reuse_distance", "line_size=128");
    check_tool(paths, 1, SONDE_TRACE_FORMAT_RAW64, "cache_sim", "U1:4K:4:64,LL:64K:8:64");
}

/* Several inputs in one serial stream: the ranges run over them end to end, each input's part
 * cut at its own record boundaries; a tiny and an empty file among them. */
static void test_several_inputs(void **state) {
    (void)state;
    const char *paths[] = {g_tiny, g_lackey, g_empty, g_lackey, g_tiny};
    check_tool(paths, 5, SONDE_TRACE_FORMAT_LACKEY, "basic_counts", NULL);
    check_tool(paths, 5, SONDE_TRACE_FORMAT_LACKEY, "cache_sim", NULL);
    check_tool(paths, 5, SONDE_TRACE_FORMAT_LACKEY, "reuse_distance", NULL);
}

/* Files with fewer bytes than ranks, and none: most ranks read nothing; the warnings ("no
 * records") are the one process's. */
static void test_small_files(void **state) {
    (void)state;
    const char *tiny[] = {g_tiny};
    const char *empty[] = {g_empty};
    check_tool(tiny, 1, SONDE_TRACE_FORMAT_LACKEY, "basic_counts", NULL);
    check_tool(tiny, 1, SONDE_TRACE_FORMAT_LACKEY, "cache_sim", NULL);
    check_tool(empty, 1, SONDE_TRACE_FORMAT_LACKEY, "reuse_distance", NULL);
    check_tool(empty, 1, SONDE_TRACE_FORMAT_LACKEY, "cache_sim", NULL);
}

/* A bad line: the ranks before the one whose range holds it succeed, and that rank fails with
 * the one process's status and message (file offset and line number). */
static void test_first_error(void **state) {
    (void)state;
    const char *paths[] = {g_bad};
    sonde_analyzer_t *one = make(paths, 1, SONDE_TRACE_FORMAT_LACKEY, "basic_counts", NULL, 0, 0);
    const sonde_status_t want = sonde_analyzer_run(one);
    assert_int_equal(want, SONDE_STATUS_ERROR_FORMAT);
    char message[512];
    snprintf(message, sizeof message, "%s", sonde_analyzer_error(one));
    assert_non_null(strstr(message, "bad lackey line"));
    sonde_analyzer_destroy(one);
    static const uint32_t counts[] = {2, 3, 5, 16};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; ++i) {
        bool failed = false;
        for (uint32_t r = 0; r < counts[i] && !failed; ++r) {
            sonde_analyzer_t *a =
                make(paths, 1, SONDE_TRACE_FORMAT_LACKEY, "basic_counts", NULL, r, counts[i]);
            const sonde_status_t st = sonde_analyzer_run(a);
            if (st != SONDE_STATUS_SUCCESS) {
                assert_int_equal(st, want);
                if (strcmp(sonde_analyzer_error(a), message) != 0)
                    fail_msg("rank %u of %u: %s\none process: %s", r, counts[i], sonde_analyzer_error(a),
                             message);
                failed = true;
            }
            sonde_analyzer_destroy(a);
        }
        assert_true(failed);
    }
}

/* The routes' own errors: before the run, this rank, beyond the ranks, twice, bad bytes, the
 * state asked for before every route is in. */
static void test_route_errors(void **state) {
    (void)state;
    const char *paths[] = {g_lackey};
    size_t need = 0;
    assert_int_equal(sonde_analyzer_export_routes(NULL, 1, NULL, 0, &need), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_merge_routes(NULL, 1, NULL, 0), SONDE_STATUS_ERROR_NULL_POINTER);
    sonde_analyzer_t *ranks[2];
    for (uint32_t r = 0; r < 2; ++r) {
        ranks[r] = make(paths, 1, SONDE_TRACE_FORMAT_LACKEY, "cache_sim", NULL, r, 2);
        assert_int_equal(sonde_analyzer_export_routes(ranks[r], 1 - r, NULL, 0, &need),
                         SONDE_STATUS_ERROR_PHASE_FAILURE);
        assert_int_equal(sonde_analyzer_merge_routes(ranks[r], 1 - r, "", 0),
                         SONDE_STATUS_ERROR_PHASE_FAILURE);
        assert_int_equal(sonde_analyzer_run(ranks[r]), SONDE_STATUS_SUCCESS);
    }
    assert_int_equal(sonde_analyzer_export_routes(ranks[0], 0, NULL, 0, &need),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_analyzer_export_routes(ranks[0], 2, NULL, 0, &need),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_analyzer_export_routes(ranks[0], 1, NULL, 0, NULL),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_export_routes(ranks[0], 1, NULL, 0, &need),
                     SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_true(need > 0);
    /* The state waits for the routes. */
    size_t size = 0;
    assert_int_equal(sonde_analyzer_export_state(ranks[1], NULL, 0, &size), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_non_null(strstr(sonde_analyzer_error(ranks[1]), "sonde_analyzer_merge_routes"));
    /* Bad bytes, this rank, beyond the ranks. */
    assert_int_equal(sonde_analyzer_merge_routes(ranks[1], 0, "garbage!", 8), SONDE_STATUS_ERROR_FORMAT);
    assert_int_equal(sonde_analyzer_merge_routes(ranks[1], 1, "", 0), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_analyzer_merge_routes(ranks[1], 7, "", 0), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    /* Routes made for another rank. */
    void *mine = routes_for(ranks[1], 0, &size);
    assert_int_equal(sonde_analyzer_merge_routes(ranks[1], 0, mine, size),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    free(mine);
    /* Truncated routes. */
    void *bytes = routes_for(ranks[0], 1, &size);
    assert_int_equal(sonde_analyzer_merge_routes(ranks[1], 0, bytes, size - 1), SONDE_STATUS_ERROR_FORMAT);
    assert_int_equal(sonde_analyzer_merge_routes(ranks[1], 0, bytes, size), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_merge_routes(ranks[1], 0, bytes, size),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    free(bytes);
    void *state_bytes = state_of(ranks[1], &size);
    free(state_bytes);
    for (uint32_t r = 0; r < 2; ++r) sonde_analyzer_destroy(ranks[r]);

    /* A run that routes nothing takes empty routes only. */
    sonde_analyzer_t *a = make(paths, 1, SONDE_TRACE_FORMAT_LACKEY, "basic_counts", NULL, 0, 2);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_export_routes(a, 1, NULL, 0, &need), SONDE_STATUS_SUCCESS);
    assert_int_equal(need, 0);
    assert_int_equal(sonde_analyzer_merge_routes(a, 1, "x", 1), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_analyzer_merge_routes(a, 1, NULL, 0), SONDE_STATUS_SUCCESS);
    sonde_analyzer_destroy(a);
}

int main(void) {
    make_inputs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lackey),       cmocka_unit_test(test_many_ranks),
        cmocka_unit_test(test_raw64),        cmocka_unit_test(test_several_inputs),
        cmocka_unit_test(test_small_files),  cmocka_unit_test(test_first_error),
        cmocka_unit_test(test_route_errors),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    remove_inputs();
    return failed;
}
