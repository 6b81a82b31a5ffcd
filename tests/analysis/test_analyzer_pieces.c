/* Shards in pieces (sonde_tool_ops_t::parallel_shard_pieces): a tool that says yes gets one
 * large shard as several runs of records, on several workers at once, each run between its own
 * shard init and exit, covering the shard exactly once; a tool that says no (or a run with such
 * a tool beside it) gets every shard whole on one worker; basic_counts, which takes pieces,
 * gives the same results as whole shards and as a serial run, from memory and from a Sonde
 * trace. Also: reuse_distance's parallel exact mode (jobs=N), whose batches are calculated on a
 * thread of their own while the next is gathered, gives the serial run's results over the same
 * shards (about 850 K data accesses: a first batch of 512 K, then the rest). And basic_counts
 * frees each shard's sets of distinct lines once the shard is counted: a parallel run's heap holds
 * the sets of the shard being counted, not of every shard. Also run under ThreadSanitizer (suite
 * stress). */
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/analysis.h>
#include <sonde/trace.h>

#include "analyzer_test_util.h"
#include "tmpdir.h"

enum { kBig = 800000, kSmall = 20000, kShards = 4, kMaxRuns = 4096 };

static sonde_memref_t *make_shard(size_t n, uint64_t seed) {
    sonde_memref_t *m = calloc(n, sizeof *m);
    assert_non_null(m);
    uint64_t x = seed;
    for (size_t i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        m[i].address = (x % (1u << 20)) * 8;
        m[i].size = 8;
        m[i].type = x & 1 ? SONDE_MEMREF_READ : SONDE_MEMREF_WRITE;
        m[i].timestamp = 1 + i;
        /* Some instruction fetches (distinct instruction addresses over the shards) and some
         * accesses across lines (spans), so that every union basic_counts builds is checked. */
        if (i % 101 == 0) {
            m[i].type = i % 202 == 0 ? SONDE_MEMREF_INSTR_TAKEN_JUMP : SONDE_MEMREF_IFETCH;
            m[i].address = 0x400000 + (x >> 40) % 50000 * 4;
            m[i].size = 4;
        } else if (i % 257 == 0) {
            m[i].size = 200;
        }
    }
    return m;
}

/* A tool that records its runs: for each shard init, the shard, the worker, and the first and
 * last address index it saw (addresses are the records' positions here). */
typedef struct run_rec {
    uint32_t shard, worker;
    uint64_t first, count;
} run_rec;

typedef struct recorder {
    bool pieces;
    bool meet; /* the first two workers on the big shard wait for each other (see r_shard_memrefs) */
    unsigned big_workers;
    pthread_cond_t met;
    pthread_mutex_t mu;
    run_rec runs[kMaxRuns];
    size_t nruns;
} recorder;

typedef struct worker_box {
    uint32_t worker;
} worker_box;

static bool r_pieces(void *t) { return ((recorder *)t)->pieces; }
static bool r_supported(void *t) {
    (void)t;
    return true;
}
static bool r_worker_init(void *t, uint32_t w, void **wd) {
    (void)t;
    worker_box *b = malloc(sizeof *b);
    if (b == NULL) return false;
    b->worker = w;
    *wd = b;
    return true;
}
static bool r_worker_exit(void *t, void *wd) {
    (void)t;
    free(wd);
    return true;
}
static bool r_shard_init(void *t, uint32_t shard, void *wd, void **sd) {
    recorder *r = t;
    pthread_mutex_lock(&r->mu);
    const size_t k = r->nruns++;
    pthread_mutex_unlock(&r->mu);
    if (k >= kMaxRuns) return false;
    r->runs[k] = (run_rec){shard, ((worker_box *)wd)->worker, UINT64_MAX, 0};
    *sd = &r->runs[k];
    return true;
}
/* With `meet`, a worker's first records of a piece of the big shard wait until a second worker
 * has started one too (or 60 s have passed; the test then fails on the count): a piece held by
 * one worker is what lets the others take the next pieces, whatever the machine's load, so that
 * "several workers share the big shard" does not depend on how fast threads start. */
static void meet_on_big(recorder *r, const run_rec *run) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&r->mu);
    r->big_workers |= 1u << run->worker;
    pthread_cond_broadcast(&r->met);
    while (__builtin_popcount(r->big_workers) < 2)
        if (pthread_cond_timedwait(&r->met, &r->mu, &until) != 0) break;
    pthread_mutex_unlock(&r->mu);
}
static bool r_shard_memrefs(void *t, void *sd, const sonde_memref_t *m, size_t n) {
    run_rec *run = sd;
    if (((recorder *)t)->meet && run->shard == 1 && run->first == UINT64_MAX) meet_on_big(t, run);
    for (size_t i = 0; i < n; ++i) {
        /* Records of a run are contiguous: position = first + count. */
        if (run->first == UINT64_MAX) run->first = m[i].pc;
        if (m[i].pc != run->first + run->count) return false;
        ++run->count;
    }
    return true;
}
static const char *r_json(void *t) {
    (void)t;
    return "{}";
}

static void add_recorder(sonde_analyzer_t *a, recorder *r) {
    static sonde_tool_ops_t ops;
    ops = (sonde_tool_ops_t){.struct_size = sizeof ops,
                             .name = "recorder",
                             .parallel_shard_supported = r_supported,
                             .parallel_worker_init = r_worker_init,
                             .parallel_worker_exit = r_worker_exit,
                             .parallel_shard_init = r_shard_init,
                             .parallel_shard_memrefs = r_shard_memrefs,
                             .results_json = r_json,
                             .memref_model = NULL,
                             .parallel_shard_pieces = r_pieces};
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &ops, r), SONDE_STATUS_SUCCESS);
}

static sonde_memref_t *g_shards[kShards];
static const size_t kCounts[kShards] = {kSmall, kBig, kSmall, kSmall};

/* Runs the recorder (and basic_counts when `with_counts`) over the memory shards. */
static void run_recorder(recorder *r, bool with_counts) {
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    add_recorder(a, r);
    if (with_counts) assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", ""), SONDE_STATUS_SUCCESS);
    for (int s = 0; s < kShards; ++s)
        assert_int_equal(sonde_analyzer_add_memory_shard(a, g_shards[s], kCounts[s], NULL),
                         SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_workers(a, 4), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    sonde_analyzer_destroy(a);
}

/* Each shard's runs cover it exactly once; returns how many workers ran the big shard. */
static unsigned check_cover(const recorder *r, unsigned *big_runs) {
    unsigned workers_seen = 0;
    *big_runs = 0;
    for (int s = 0; s < kShards; ++s) {
        uint64_t covered = 0;
        for (size_t k = 0; k < r->nruns; ++k) {
            if (r->runs[k].shard != (uint32_t)s) continue;
            covered += r->runs[k].count;
            if (s == 1) {
                ++*big_runs;
                workers_seen |= 1u << r->runs[k].worker;
            }
            /* No run overlaps another of its shard. */
            for (size_t j = 0; j < k; ++j)
                if (r->runs[j].shard == (uint32_t)s && r->runs[j].count != 0 && r->runs[k].count != 0)
                    assert_true(r->runs[j].first + r->runs[j].count <= r->runs[k].first ||
                                r->runs[k].first + r->runs[k].count <= r->runs[j].first);
        }
        assert_int_equal(covered, kCounts[s]);
    }
    return (unsigned)__builtin_popcount(workers_seen);
}

static void test_memory_pieces(void **state) {
    (void)state;
    recorder *r = calloc(1, sizeof *r);
    assert_non_null(r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->met, NULL);
    r->pieces = true;
    r->meet = true;
    run_recorder(r, false);
    r->meet = false;
    unsigned big_runs;
    const unsigned workers = check_cover(r, &big_runs);
    /* The big shard is 40 times a small one: cut so that several workers get a share of it. */
    assert_true(big_runs > 1);
    assert_true(workers > 1);

    /* basic_counts takes pieces too, so the big shard is still cut with it beside. */
    r->nruns = 0;
    run_recorder(r, true);
    check_cover(r, &big_runs);
    assert_true(big_runs > 1);

    /* A tool that says no: every shard whole, once. */
    r->nruns = 0;
    r->pieces = false;
    run_recorder(r, false);
    check_cover(r, &big_runs);
    assert_int_equal(big_runs, 1);
    assert_int_equal(r->nruns, kShards);
    pthread_cond_destroy(&r->met);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* basic_counts' results JSON with `workers` workers (0: serial) over memory shards or a file. */
static char *counts_json(const char *path, uint32_t workers) {
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", ""), SONDE_STATUS_SUCCESS);
    if (path != NULL)
        assert_int_equal(sonde_analyzer_add_input(a, path, SONDE_TRACE_FORMAT_SONDE), SONDE_STATUS_SUCCESS);
    else
        for (int s = 0; s < kShards; ++s)
            assert_int_equal(sonde_analyzer_add_memory_shard(a, g_shards[s], kCounts[s], NULL),
                             SONDE_STATUS_SUCCESS);
    if (workers == 0)
        assert_int_equal(sonde_analyzer_set_parallel(a, false), SONDE_STATUS_SUCCESS);
    else
        assert_int_equal(sonde_analyzer_set_workers(a, workers), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    char *json = results(a);
    sonde_analyzer_destroy(a);
    return json;
}

static void same_counts(const char *path) {
    char *serial = counts_json(path, 0);
    /* A 1.2 kind is in the shards: the distinct instruction addresses are printed too. */
    assert_non_null(strstr(serial, "\"unique_ifetches\":"));
    static const uint32_t workers[] = {1, 2, 3, 4, 8};
    for (size_t i = 0; i < sizeof workers / sizeof workers[0]; ++i) {
        char *j = counts_json(path, workers[i]);
        if (strcmp(j, serial) != 0) {
            size_t at = 0;
            while (j[at] == serial[at]) ++at;
            fail_msg(
                "%s, %u workers: basic_counts differ from the serial run at byte %zu: \"%.80s\" for "
                "\"%.80s\"",
                path ? path : "memory", workers[i], at, j + (at > 40 ? at - 40 : 0),
                serial + (at > 40 ? at - 40 : 0));
        }
        free(j);
    }
    free(serial);
}

static void test_basic_counts_pieces(void **state) {
    (void)state;
    same_counts(NULL);
    /* The same shards in a Sonde trace of small chunks: pieces are runs of chunks. */
    sonde_trace_writer_properties_t p = {sizeof p, 0, 8192, 0};
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(tmpdir_path("t.sonde"), &p, &w), SONDE_STATUS_SUCCESS);
    for (int s = 0; s < kShards; ++s)
        assert_int_equal(sonde_trace_writer_write(w, (uint32_t)s, g_shards[s], kCounts[s]),
                         SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);
    same_counts(tmpdir_path("t.sonde"));
}

/* Bytes the heap has handed out and not taken back (glibc's count, arenas and mmapped blocks);
 * 0 where it does not say (a sanitizer's allocator replaces glibc's). */
static size_t heap_in_use(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    const struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
#else
    return 0;
#endif
}

/* A tool beside basic_counts that notes the heap in use at each shard's start. */
static size_t g_heap_peak;
static bool h_shard_init(void *t, uint32_t shard, void *wd, void **sd) {
    (void)t, (void)shard, (void)wd;
    const size_t now = heap_in_use();
    if (now > g_heap_peak) g_heap_peak = now;
    *sd = NULL;
    return true;
}
static bool h_shard_memrefs(void *t, void *sd, const sonde_memref_t *m, size_t n) {
    (void)t, (void)sd, (void)m, (void)n;
    return true;
}

static void test_basic_counts_memory(void **state) {
    (void)state;
    if (heap_in_use() == 0) skip();
    /* 12 shards, each the same 150 K distinct lines: a shard's set is a table of 4 MiB (512 K
     * slots of 8 bytes, at most half full), the union over the shards another 4 MiB. Held to
     * the end, the sets would take 48 MiB at the last shard's start; freed as each shard ends,
     * the union, a set or two, and the blocks the run keeps to hand out again (core/huge_pages.h:
     * a shard's tables of 1, 2 and 4 MiB): about 18 MiB. */
    enum { kLines = 150000, kMemShards = 12 };
    sonde_memref_t *m = calloc(kLines, sizeof *m);
    assert_non_null(m);
    for (size_t i = 0; i < kLines; ++i) {
        m[i].address = (uint64_t)(i * 7919u % kLines) * 64;
        m[i].size = 8;
        m[i].type = SONDE_MEMREF_READ;
    }
    static sonde_tool_ops_t ops;
    ops = (sonde_tool_ops_t){.struct_size = sizeof ops,
                             .name = "heap",
                             .parallel_shard_supported = r_supported,
                             .parallel_shard_init = h_shard_init,
                             .parallel_shard_memrefs = h_shard_memrefs,
                             .results_json = r_json,
                             .parallel_shard_pieces = r_supported};
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", ""), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &ops, NULL), SONDE_STATUS_SUCCESS);
    for (int s = 0; s < kMemShards; ++s)
        assert_int_equal(sonde_analyzer_add_memory_shard(a, m, kLines, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_workers(a, 1), SONDE_STATUS_SUCCESS);
    const size_t before = heap_in_use();
    g_heap_peak = before;
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    const size_t grew = g_heap_peak - before;
    if (grew > (size_t)32 << 20)
        fail_msg("the heap grew by %zu MiB during the run: the shards' sets were kept", grew >> 20);
    /* The counts are those of the whole sets: every shard and the total have all the lines. */
    char *json = results(a);
    char want[64];
    snprintf(want, sizeof want, "\"distinct_lines\":%d,", kLines);
    size_t found = 0;
    for (const char *p = json; (p = strstr(p, want)) != NULL; ++p) ++found;
    assert_int_equal(found, kMemShards + 1);
    free(json);
    sonde_analyzer_destroy(a);
    free(m);
}

/* The results JSON of reuse_distance with `options` over the shards, in a serial run. */
static char *reuse_json(const char *options) {
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "reuse_distance", options), SONDE_STATUS_SUCCESS);
    for (int s = 0; s < kShards; ++s)
        assert_int_equal(sonde_analyzer_add_memory_shard(a, g_shards[s], kCounts[s], NULL),
                         SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    char *j = results(a);
    sonde_analyzer_destroy(a);
    return j;
}

static void test_reuse_batches(void **state) {
    (void)state;
    char *serial = reuse_json("line_size=64");
    /* Every data access is counted: the shards' records less their instruction fetches. */
    size_t data = 0;
    for (int s = 0; s < kShards; ++s)
        for (size_t i = 0; i < kCounts[s]; ++i) data += g_shards[s][i].type <= SONDE_MEMREF_MODIFY;
    char want[64];
    snprintf(want, sizeof want, "\"accesses\":%zu,", data);
    assert_non_null(strstr(serial, want));
    for (int jobs = 2; jobs <= 3; ++jobs) {
        char options[64];
        snprintf(options, sizeof options, "line_size=64,jobs=%d", jobs);
        char *j = reuse_json(options);
        if (strcmp(j, serial) != 0) fail_msg("reuse_distance %s differs from the serial run", options);
        free(j);
    }
    free(serial);
}

static int setup(void **state) {
    (void)state;
    for (int s = 0; s < kShards; ++s) {
        g_shards[s] = make_shard(kCounts[s], 0x9E3779B97F4A7C15ull + (uint64_t)s);
        /* The position in the shard, for the recorder's contiguity check. */
        for (size_t i = 0; i < kCounts[s]; ++i) {
            g_shards[s][i].pc = i;
            g_shards[s][i].shard = (uint32_t)s; /* memory shards are handed over as stored */
        }
    }
    return tmpdir_make("pieces");
}

static int teardown(void **state) {
    (void)state;
    for (int s = 0; s < kShards; ++s) free(g_shards[s]);
    return tmpdir_remove();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_pieces),
        cmocka_unit_test(test_basic_counts_pieces),
        cmocka_unit_test(test_basic_counts_memory),
        cmocka_unit_test(test_reuse_batches),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
