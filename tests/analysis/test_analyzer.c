/* Tests of the analyzer and the tool ABI (sonde/analysis.h): the exact order of tool calls in
 * serial and parallel mode (a recording tool), one worker per shard, error propagation, the
 * built-in tools on small inputs, external tool loading (and its failures: a FIFO and a tool
 * file cut short among them), and every bad argument. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sonde/analysis.h>

#include "analyzer_test_util.h"
#include "cut_copy.h"

/* ---- a recording tool ---- */

enum { F_INIT, F_MEMREF, F_WORKER_INIT, F_WORKER_EXIT, F_SHARD_INIT, F_SHARD_MEMREF, F_SHARD_EXIT };

typedef struct event_t {
    int fn;
    uint32_t shard; /* shard, or worker index for worker events */
    uint64_t address;
    pthread_t thread;
} event_t;

typedef struct shard_data_t {
    uint32_t shard;
    char error[64];
} shard_data_t;

typedef struct recorder_t {
    pthread_mutex_t lock; /* the log is appended to by every worker */
    event_t events[4096];
    size_t count;
    bool parallel;
    uint64_t fail_at; /* fail on the record with this address (0 = never) */
    bool fail_init;
    shard_data_t shards[16];
    bool destroyed;
} recorder_t;

static void record(recorder_t *r, int fn, uint32_t shard, uint64_t address) {
    pthread_mutex_lock(&r->lock);
    if (r->count < sizeof r->events / sizeof r->events[0]) {
        event_t e = {fn, shard, address, pthread_self()};
        r->events[r->count++] = e;
    }
    pthread_mutex_unlock(&r->lock);
}

static bool rec_init(void *t, uint32_t n) {
    recorder_t *r = t;
    record(r, F_INIT, n, 0);
    return !r->fail_init;
}
static bool rec_memref(void *t, const sonde_memref_t *m) {
    recorder_t *r = t;
    record(r, F_MEMREF, m->shard, m->address);
    return r->fail_at == 0 || m->address != r->fail_at;
}
static bool rec_supported(void *t) { return ((recorder_t *)t)->parallel; }
static bool rec_worker_init(void *t, uint32_t w, void **wd) {
    record(t, F_WORKER_INIT, w, 0);
    *wd = (void *)(uintptr_t)(w + 100);
    return true;
}
static bool rec_worker_exit(void *t, void *wd) {
    record(t, F_WORKER_EXIT, (uint32_t)((uintptr_t)wd - 100), 0);
    return true;
}
static bool rec_shard_init(void *t, uint32_t s, void *wd, void **sd) {
    recorder_t *r = t;
    (void)wd;
    record(r, F_SHARD_INIT, s, 0);
    r->shards[s].shard = s;
    *sd = &r->shards[s];
    return true;
}
static bool rec_shard_memref(void *t, void *sd, const sonde_memref_t *m) {
    recorder_t *r = t;
    shard_data_t *d = sd;
    record(r, F_SHARD_MEMREF, d->shard, m->address);
    if (r->fail_at != 0 && m->address == r->fail_at) {
        snprintf(d->error, sizeof d->error, "bad address %llu", (unsigned long long)m->address);
        return false;
    }
    return true;
}
static bool rec_shard_exit(void *t, void *sd) {
    record(t, F_SHARD_EXIT, ((shard_data_t *)sd)->shard, 0);
    return true;
}
static const char *rec_shard_error(void *t, void *sd) {
    (void)t;
    return ((shard_data_t *)sd)->error;
}
static const char *rec_error(void *t) {
    return ((recorder_t *)t)->fail_init ? "cannot start" : "record refused";
}
static void rec_destroy(void *t) { ((recorder_t *)t)->destroyed = true; }

static sonde_tool_ops_t recorder_ops(void) {
    sonde_tool_ops_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.name = "recorder";
    o.initialize = rec_init;
    o.process_memref = rec_memref;
    o.parallel_shard_supported = rec_supported;
    o.parallel_worker_init = rec_worker_init;
    o.parallel_worker_exit = rec_worker_exit;
    o.parallel_shard_init = rec_shard_init;
    o.parallel_shard_memref = rec_shard_memref;
    o.parallel_shard_exit = rec_shard_exit;
    o.parallel_shard_error = rec_shard_error;
    o.get_error_string = rec_error;
    o.destroy = rec_destroy;
    return o;
}

static recorder_t *new_recorder(bool parallel) {
    recorder_t *r = calloc(1, sizeof *r);
    assert_non_null(r);
    pthread_mutex_init(&r->lock, NULL);
    r->parallel = parallel;
    return r;
}

static void free_recorder(recorder_t *r) {
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static sonde_memref_t ref(uint32_t shard, uint16_t type, uint64_t address, uint16_t size, uint64_t ts) {
    sonde_memref_t m;
    memset(&m, 0, sizeof m);
    m.shard = shard;
    m.type = type;
    m.address = address;
    m.size = size;
    m.timestamp = ts;
    return m;
}

/* ---- serial order ---- */

static void test_serial_order(void **state) {
    (void)state;
    /* Shard 0 at t=10,30,30(0 = inherits 30),50; shard 1 at t=20,30,40. Expected interleaving by
     * timestamp, ties to the lower shard. Addresses name the records. */
    sonde_memref_t s0[4] = {ref(0, 0, 1, 8, 10), ref(0, 0, 2, 8, 30), ref(0, 0, 3, 8, 0),
                            ref(0, 0, 4, 8, 50)};
    sonde_memref_t s1[3] = {ref(1, 1, 11, 8, 20), ref(1, 1, 12, 8, 30), ref(1, 1, 13, 8, 40)};
    recorder_t *r = new_recorder(true);
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    sonde_tool_ops_t ops = recorder_ops();
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &ops, r), SONDE_STATUS_SUCCESS);
    uint32_t id = 99;
    assert_int_equal(sonde_analyzer_add_memory_shard(a, s0, 4, &id), SONDE_STATUS_SUCCESS);
    assert_int_equal(id, 0);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, s1, 3, &id), SONDE_STATUS_SUCCESS);
    assert_int_equal(id, 1);
    assert_int_equal(sonde_analyzer_set_parallel(a, false), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    const uint64_t order[] = {1, 11, 2, 3, 12, 13, 4};
    assert_int_equal(r->count, 1 + 7);
    assert_int_equal(r->events[0].fn, F_INIT);
    assert_int_equal(r->events[0].shard, 2);
    for (size_t i = 0; i < 7; ++i) {
        assert_int_equal(r->events[1 + i].fn, F_MEMREF);
        assert_int_equal(r->events[1 + i].address, order[i]);
        assert_true(pthread_equal(r->events[1 + i].thread, pthread_self()));
    }
    bool parallel = true;
    uint32_t workers = 0;
    assert_int_equal(sonde_analyzer_run_info(a, &parallel, &workers), SONDE_STATUS_SUCCESS);
    assert_false(parallel);
    assert_int_equal(workers, 1);
    assert_false(r->destroyed);
    sonde_analyzer_destroy(a);
    assert_true(r->destroyed);
    free_recorder(r);
}

/* A tool without parallel support turns a parallel run into a serial one. */
static void test_parallel_falls_back_to_serial(void **state) {
    (void)state;
    sonde_memref_t s0[2] = {ref(0, 0, 1, 8, 0), ref(0, 0, 2, 8, 0)};
    recorder_t *r = new_recorder(false);
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    sonde_tool_ops_t ops = recorder_ops();
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &ops, r), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, s0, 2, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    bool parallel = true;
    assert_int_equal(sonde_analyzer_run_info(a, &parallel, NULL), SONDE_STATUS_SUCCESS);
    assert_false(parallel);
    assert_int_equal(r->count, 3);
    assert_int_equal(r->events[1].fn, F_MEMREF);
    sonde_analyzer_destroy(a);
    free_recorder(r);
}

/* ---- parallel order, one worker per shard ---- */

#define NSHARDS 5
#define PER_SHARD 50

static void test_parallel_order(void **state) {
    (void)state;
    static sonde_memref_t shards[NSHARDS][PER_SHARD];
    for (uint32_t s = 0; s < NSHARDS; ++s)
        for (uint32_t i = 0; i < PER_SHARD; ++i) shards[s][i] = ref(s, 0, s * 1000 + i, 4, 0);
    recorder_t *r = new_recorder(true);
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    sonde_tool_ops_t ops = recorder_ops();
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &ops, r), SONDE_STATUS_SUCCESS);
    for (uint32_t s = 0; s < NSHARDS; ++s)
        assert_int_equal(sonde_analyzer_add_memory_shard(a, shards[s], PER_SHARD, NULL),
                         SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_workers(a, 2), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    bool parallel = false;
    uint32_t workers = 0;
    assert_int_equal(sonde_analyzer_run_info(a, &parallel, &workers), SONDE_STATUS_SUCCESS);
    assert_true(parallel);
    assert_int_equal(workers, 2);

    assert_int_equal(r->events[0].fn, F_INIT);
    assert_int_equal(r->events[0].shard, NSHARDS);
    /* Per worker w: worker_init(w), then shards one after another (each: shard_init(s), its
     * records in order, shard_exit(s)), then worker_exit(w); all on one thread. Which worker
     * takes which shard is dynamic; every shard is taken exactly once. */
    uint32_t taken[NSHARDS] = {0};
    for (uint32_t w = 0; w < 2; ++w) {
        pthread_t thread;
        size_t i = 1;
        while (i < r->count && !(r->events[i].fn == F_WORKER_INIT && r->events[i].shard == w)) ++i;
        assert_true(i < r->count);
        thread = r->events[i].thread;
        size_t k = i + 1;
        for (;;) {
            while (k < r->count && !pthread_equal(r->events[k].thread, thread)) ++k;
            assert_true(k < r->count);
            if (r->events[k].fn == F_WORKER_EXIT) break;
            assert_int_equal(r->events[k].fn, F_SHARD_INIT);
            const uint32_t sh = r->events[k].shard;
            assert_true(sh < NSHARDS);
            taken[sh]++;
            ++k;
            for (uint32_t n = 0; n < PER_SHARD; ++n) {
                while (k < r->count && !pthread_equal(r->events[k].thread, thread)) ++k;
                assert_int_equal(r->events[k].fn, F_SHARD_MEMREF);
                assert_int_equal(r->events[k].shard, sh);
                assert_int_equal(r->events[k].address, sh * 1000 + n);
                ++k;
            }
            while (k < r->count && !pthread_equal(r->events[k].thread, thread)) ++k;
            assert_int_equal(r->events[k].fn, F_SHARD_EXIT);
            assert_int_equal(r->events[k].shard, sh);
            ++k;
        }
        assert_int_equal(r->events[k].shard, w);
        for (++k; k < r->count; ++k) assert_false(pthread_equal(r->events[k].thread, thread));
    }
    for (uint32_t sh = 0; sh < NSHARDS; ++sh) assert_int_equal(taken[sh], 1);
    /* Every event of a shard came from one thread, and the two workers are different threads. */
    for (uint32_t s = 0; s < NSHARDS; ++s) {
        bool seen = false;
        pthread_t t = pthread_self();
        for (size_t i = 1; i < r->count; ++i) {
            const event_t *e = &r->events[i];
            if (e->fn < F_SHARD_INIT || e->shard != s) continue;
            if (!seen) {
                t = e->thread;
                seen = true;
            }
            assert_true(pthread_equal(e->thread, t));
        }
        assert_true(seen);
    }
    assert_int_equal(r->count, 1 + 2 * 2 + NSHARDS * (PER_SHARD + 2));
    sonde_analyzer_destroy(a);
    free_recorder(r);
}

/* ---- dynamic, largest-first shard assignment ---- */

/* One shard ten times the size of the others, added in the middle. The tool holds the large
 * shard's first span until every small shard has been finished (or 60 s have passed): with
 * largest-first dynamic assignment one worker takes the large shard at once and the other
 * finishes all the small ones meanwhile; with a fixed assignment (worker w: shards w, w + n,
 * ...) the large shard's worker would own small shards too and the wait would time out. */
#define SKEW_SMALL 4
#define SKEW_UNIT 1000
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t big;
    uint32_t small_done;
    bool timed_out;
    pthread_t owner[SKEW_SMALL + 1];
    uint32_t started[SKEW_SMALL + 1]; /* order in which shards were started, 1-based */
    uint32_t next_start;
} skew_t;
static bool skew_supported(void *t) {
    (void)t;
    return true;
}
static bool skew_serial(void *t, const sonde_memref_t *m, size_t n) {
    (void)t, (void)m, (void)n;
    return true;
}
static bool skew_shard_init(void *tool, uint32_t shard, void *wd, void **sd) {
    (void)wd;
    skew_t *k = (skew_t *)tool;
    pthread_mutex_lock(&k->mu);
    k->owner[shard] = pthread_self();
    k->started[shard] = ++k->next_start;
    pthread_mutex_unlock(&k->mu);
    *sd = (void *)(uintptr_t)(shard + 1);
    return true;
}
static bool skew_memrefs(void *tool, void *sd, const sonde_memref_t *m, size_t n) {
    (void)m, (void)n;
    skew_t *k = (skew_t *)tool;
    if ((uintptr_t)sd - 1 != k->big) return true;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&k->mu);
    while (k->small_done < SKEW_SMALL && !k->timed_out)
        if (pthread_cond_timedwait(&k->cv, &k->mu, &until) != 0) k->timed_out = true;
    pthread_mutex_unlock(&k->mu);
    return true;
}
static bool skew_shard_exit(void *tool, void *sd) {
    skew_t *k = (skew_t *)tool;
    if ((uintptr_t)sd - 1 == k->big) return true;
    pthread_mutex_lock(&k->mu);
    k->small_done++;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    return true;
}

static void test_skewed_shards_largest_first(void **state) {
    (void)state;
    static sonde_memref_t small[SKEW_SMALL][SKEW_UNIT];
    static sonde_memref_t big[10 * SKEW_UNIT];
    for (uint32_t s = 0; s < SKEW_SMALL; ++s)
        for (uint32_t i = 0; i < SKEW_UNIT; ++i) small[s][i] = ref(s, 0, i * 64, 8, 0);
    for (uint32_t i = 0; i < 10 * SKEW_UNIT; ++i) big[i] = ref(2, 0, i * 64, 8, 0);
    skew_t k;
    memset(&k, 0, sizeof k);
    pthread_mutex_init(&k.mu, NULL);
    pthread_cond_init(&k.cv, NULL);
    k.big = 2;
    sonde_tool_ops_t ops;
    memset(&ops, 0, sizeof ops);
    ops.struct_size = sizeof ops;
    ops.name = "skew";
    ops.process_memrefs = skew_serial;
    ops.parallel_shard_supported = skew_supported;
    ops.parallel_shard_init = skew_shard_init;
    ops.parallel_shard_memrefs = skew_memrefs;
    ops.parallel_shard_exit = skew_shard_exit;
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &ops, &k), SONDE_STATUS_SUCCESS);
    /* Shards 0, 1 small, 2 large, 3, 4 small. */
    for (uint32_t s = 0, i = 0; s < SKEW_SMALL + 1; ++s) {
        const bool is_big = s == k.big;
        assert_int_equal(sonde_analyzer_add_memory_shard(a, is_big ? big : small[i],
                                                         is_big ? 10 * SKEW_UNIT : SKEW_UNIT, NULL),
                         SONDE_STATUS_SUCCESS);
        if (!is_big) ++i;
    }
    assert_int_equal(sonde_analyzer_set_workers(a, 2), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    assert_false(k.timed_out);
    assert_int_equal(k.small_done, SKEW_SMALL);
    /* The large shard started first, and its worker took no other shard. */
    assert_int_equal(k.started[k.big], 1);
    for (uint32_t s = 0; s < SKEW_SMALL + 1; ++s)
        if (s != k.big) assert_false(pthread_equal(k.owner[s], k.owner[k.big]));
    sonde_analyzer_destroy(a);
    pthread_cond_destroy(&k.cv);
    pthread_mutex_destroy(&k.mu);
}

/* ---- errors ---- */

static void run_failing(bool parallel, bool fail_init, const char *expect) {
    sonde_memref_t s0[3] = {ref(0, 0, 1, 8, 0), ref(0, 0, 2, 8, 0), ref(0, 0, 3, 8, 0)};
    sonde_memref_t s1[3] = {ref(1, 0, 4, 8, 0), ref(1, 0, 5, 8, 0), ref(1, 0, 6, 8, 0)};
    recorder_t *r = new_recorder(parallel);
    r->fail_at = 2;
    r->fail_init = fail_init;
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    sonde_tool_ops_t ops = recorder_ops();
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &ops, r), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, s0, 3, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, s1, 3, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, parallel), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_workers(a, 2), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_TOOL);
    assert_string_equal(sonde_analyzer_error(a), expect);
    /* Record 3 of shard 0 never reaches the tool once record 2 failed. */
    for (size_t i = 0; i < r->count; ++i)
        assert_false((r->events[i].fn == F_MEMREF || r->events[i].fn == F_SHARD_MEMREF) &&
                     r->events[i].address == 3);
    if (parallel && !fail_init) {
        /* The failed shard and every worker still get their exit calls. */
        size_t exits = 0, worker_exits = 0;
        for (size_t i = 0; i < r->count; ++i) {
            exits += r->events[i].fn == F_SHARD_EXIT && r->events[i].shard == 0;
            worker_exits += r->events[i].fn == F_WORKER_EXIT;
        }
        assert_int_equal(exits, 1);
        assert_int_equal(worker_exits, 2);
    }
    /* No results after a failed run; a second run is refused. */
    size_t need = 0;
    assert_int_equal(sonde_analyzer_results_json(a, NULL, 0, &need), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_analyzer_print_results(a, stdout), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_PHASE_FAILURE);
    sonde_analyzer_destroy(a);
    free_recorder(r);
}

static void test_errors_stop_the_run(void **state) {
    (void)state;
    run_failing(false, false, "recorder: record refused");
    run_failing(true, false, "recorder: bad address 2");
    run_failing(false, true, "recorder: cannot start");
    run_failing(true, true, "recorder: cannot start");
}

/* ---- built-in tools ---- */

static void test_basic_counts(void **state) {
    (void)state;
    for (int parallel = 0; parallel < 2; ++parallel) {
        sonde_memref_t s0[5] = {ref(0, SONDE_MEMREF_READ, 0, 8, 0), ref(0, SONDE_MEMREF_WRITE, 64, 8, 0),
                                ref(0, SONDE_MEMREF_MODIFY, 60, 8, 0),
                                ref(0, SONDE_MEMREF_IFETCH, 4096, 4, 0),
                                ref(0, SONDE_MEMREF_MARKER, 7, SONDE_MARKER_TIMESTAMP, 0)};
        /* Shard 1 is empty; s1 is shard 2. */
        sonde_memref_t s1[2] = {ref(2, SONDE_MEMREF_READ, 0, 8, 0), ref(2, SONDE_MEMREF_READ, 200, 8, 0)};
        sonde_analyzer_t *a = NULL;
        assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", ""), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_add_memory_shard(a, s0, 5, NULL), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_add_memory_shard(a, NULL, 0, NULL), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_add_memory_shard(a, s1, 2, NULL), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_set_parallel(a, parallel != 0), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
        char *text = results(a);
        /* The JSON lists every shard by position, the empty one too. */
        assert_non_null(strstr(text, "\"shards\":[{\"distinct_lines\":3,"));
        assert_non_null(strstr(text,
                               "},{\"distinct_lines\":0,\"ifetches\":0,\"markers\":0,\"reads\":0,"
                               "\"total\":0,\"writes\":0},{\"distinct_lines\":2,"));
        /* total: reads 1 + 1 (M) + 2, writes 1 + 1 (M), 1 ifetch, 1 marker; lines 0, 1 (M at 60
         * straddles 0 and 1), 64 (ifetch), 3 (address 200) */
        assert_non_null(strstr(text,
                               "\"basic_counts\":{\"distinct_lines\":4,\"ifetches\":1,\"line_size\":64,"
                               "\"markers\":1,\"reads\":4,\"shards\":["));
        assert_non_null(strstr(text, "\"total\":6,\"writes\":2}"));
        assert_non_null(strstr(
            text,
            "{\"distinct_lines\":2,\"ifetches\":0,\"markers\":0,\"reads\":2,\"total\":2,\"writes\":0}"));
        free(text);
        /* The text lists the shards with records and says how many it leaves out. */
        char *printed = NULL;
        size_t printed_size = 0;
        FILE *f = open_memstream(&printed, &printed_size);
        assert_non_null(f);
        assert_int_equal(sonde_analyzer_print_results(a, f), SONDE_STATUS_SUCCESS);
        fclose(f);
        fputs(printed, stdout);
        assert_non_null(strstr(printed, "basic_counts: 3 shard(s)\n"));
        assert_non_null(strstr(printed, "  shard 0    reads 2, writes 2,"));
        assert_null(strstr(printed, "shard 1 "));
        assert_non_null(strstr(printed, "  shard 2    reads 2, writes 0,"));
        assert_non_null(strstr(printed, "  (1 shard(s) without records not listed)\n"));
        free(printed);
        sonde_analyzer_destroy(a);
    }
}

/* cache_sim with `config` over one shard, serially or in parallel mode. */
static void run_cache_mode(const char *config, const sonde_memref_t *refs, size_t n, bool parallel,
                           char **json) {
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "cache_sim", config), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, refs, n, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, parallel), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    *json = results(a);
    assert_int_equal(sonde_analyzer_print_results(a, stdout), SONDE_STATUS_SUCCESS);
    sonde_analyzer_destroy(a);
}

/* A 2-set, 2-way cache with 64-byte lines: set = block & 1. */
static void run_cache(const char *config, const sonde_memref_t *refs, size_t n, char **json) {
    run_cache_mode(config, refs, n, false, json);
}

/* cache_sim reads the 1.2 memref model: a fetched instruction of any kind is an instruction
 * fetch, and prefetches, instructions not fetched, encodings, flushes and markers are not
 * simulated (what the 1.0 view would have delivered), serially and in parallel mode alike. */
static void test_cache_sim_kinds(void **state) {
    (void)state;
    sonde_memref_t refs[] = {
        ref(0, SONDE_MEMREF_INSTR_DIRECT_JUMP, 4096, 4, 0), /* I1 miss */
        ref(0, SONDE_MEMREF_READ, 0, 8, 0),                 /* D1 miss */
        ref(0, SONDE_MEMREF_PREFETCH, 8192, 8, 0),          /* not simulated */
        ref(0, SONDE_MEMREF_INSTR_NO_FETCH, 12288, 4, 0),   /* not simulated */
        ref(0, SONDE_MEMREF_INSTR_ENCODING, 16384, 4, 0),   /* not simulated */
        ref(0, SONDE_MEMREF_DATA_FLUSH, 0, 64, 0),          /* not simulated */
        ref(0, SONDE_MEMREF_MARKER, 7, SONDE_MARKER_TIMESTAMP, 0),
        ref(0, SONDE_MEMREF_IFETCH, 4100, 4, 0),          /* I1 hit */
        ref(0, SONDE_MEMREF_INSTR_SYSENTER, 20480, 2, 0), /* I1 miss */
        ref(0, SONDE_MEMREF_INSTR_RETURN, 4104, 1, 0),    /* I1 hit */
        ref(0, SONDE_MEMREF_WRITE, 8, 8, 0),              /* D1 hit */
    };
    const struct {
        const char *level, *key;
        uint64_t want;
    } counts[] = {{"I1", "accesses", 4}, {"I1", "misses", 2},   {"D1", "accesses", 2},
                  {"D1", "misses", 1},   {"LL", "accesses", 3}, {"LL", "ifetch_misses", 2}};
    for (int parallel = 0; parallel < 2; ++parallel) {
        char *json = NULL;
        run_cache_mode("I1:1K:2:64,D1:1K:2:64,LL:4K:4:64", refs, sizeof refs / sizeof refs[0], parallel != 0,
                       &json);
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; ++i)
            assert_int_equal(level_value(json, counts[i].level, counts[i].key), counts[i].want);
        free(json);
    }
}

/* A parallel shard whose levels hold more than a megabyte of sets and blocks seen, and whose
 * first level misses nearly always, prefetches for the records ahead (kPrefetchBytes in
 * cache_sim.cpp) from its second span of records on; the serial mode never does. The two must
 * give the same results, and the counts must add up. */
static void test_cache_sim_prefetching(void **state) {
    (void)state;
    enum { kRefs = 300000 };
    sonde_memref_t *refs = calloc(kRefs, sizeof *refs);
    assert_non_null(refs);
    uint64_t x = 1;
    for (size_t i = 0; i < kRefs; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull; /* an LCG: its high bits are used */
        const uint16_t type = (x >> 62) == 0         ? SONDE_MEMREF_IFETCH
                              : ((x >> 61) & 1) != 0 ? SONDE_MEMREF_WRITE
                                                     : SONDE_MEMREF_READ;
        refs[i] = ref(0, type, (x >> 24) % (256u << 20), 8, 0); /* 256 MiB: 1024 regions seen */
    }
    const char *config = "I1:32K:8:64,D1:32K:8:64,LL:4M:16:64";
    char *serial = NULL, *parallel = NULL;
    run_cache_mode(config, refs, kRefs, false, &serial);
    run_cache_mode(config, refs, kRefs, true, &parallel);
    assert_string_equal(serial, parallel);
    const long long first = level_value(parallel, "I1", "accesses") + level_value(parallel, "D1", "accesses");
    assert_int_equal(first, kRefs);
    assert_int_equal(level_value(parallel, "LL", "accesses"),
                     level_value(parallel, "I1", "misses") + level_value(parallel, "D1", "misses"));
    assert_true(level_value(parallel, "LL", "compulsory_misses") > 0);
    assert_true(level_value(parallel, "LL", "compulsory_misses") <= level_value(parallel, "LL", "misses"));
    free(serial);
    free(parallel);
    free(refs);
}

static void test_cache_sim_policies(void **state) {
    (void)state;
    /* Blocks 0, 2, 0, 4, 2 all map to set 0 (2 ways). LRU: miss miss hit miss(evicts 2) miss.
     * FIFO: miss miss hit miss(evicts 0, the oldest) hit. */
    sonde_memref_t refs[5] = {ref(0, 0, 0, 4, 0), ref(0, 0, 128, 4, 0), ref(0, 0, 0, 4, 0),
                              ref(0, 0, 256, 4, 0), ref(0, 0, 128, 4, 0)};
    char *json = NULL;
    run_cache("D1:256:2:64", refs, 5, &json);
    assert_int_equal(level_value(json, "D1", "accesses"), 5);
    assert_int_equal(level_value(json, "D1", "misses"), 4);
    assert_int_equal(level_value(json, "D1", "hits"), 1);
    assert_int_equal(level_value(json, "D1", "compulsory_misses"), 3);
    assert_non_null(strstr(json, "\"miss_ratio\":0.8"));
    free(json);
    run_cache("D1:256:2:64:fifo", refs, 5, &json);
    assert_int_equal(level_value(json, "D1", "misses"), 3);
    free(json);
    run_cache("D1:256:2:64:random", refs, 5, &json);
    assert_true(level_value(json, "D1", "misses") >= 3);
    free(json);
}

static void test_cache_sim_hierarchy(void **state) {
    (void)state;
    /* An 8-byte read at 60 straddles blocks 0 and 1: one access, one miss (both lines missed);
     * then a read at 64 hits. An ifetch goes to I1, misses, and LL takes it. A modify is one
     * data access. */
    sonde_memref_t refs[4] = {ref(0, SONDE_MEMREF_READ, 60, 8, 0), ref(0, SONDE_MEMREF_READ, 64, 4, 0),
                              ref(0, SONDE_MEMREF_IFETCH, 4096, 4, 0), ref(0, SONDE_MEMREF_MODIFY, 8, 8, 0)};
    char *json = NULL;
    run_cache("I1:1K:2:64,D1:1K:2:64,LL:4K:4:64", refs, 4, &json);
    assert_int_equal(level_value(json, "D1", "accesses"), 3);
    assert_int_equal(level_value(json, "D1", "misses"), 1);
    assert_int_equal(level_value(json, "I1", "accesses"), 1);
    assert_int_equal(level_value(json, "I1", "misses"), 1);
    assert_int_equal(level_value(json, "LL", "accesses"), 2);
    assert_int_equal(level_value(json, "LL", "misses"), 2);
    assert_int_equal(level_value(json, "LL", "ifetch_misses"), 1);
    assert_int_equal(level_value(json, "LL", "data_misses"), 1);
    free(json);
}

/* Serial mode: private L1 per shard, shared LL. Two shards read the same line: both L1s miss,
 * the LL misses once and hits once. */
static void test_cache_sim_private_l1(void **state) {
    (void)state;
    sonde_memref_t s0[1] = {ref(0, 0, 0, 4, 1)};
    sonde_memref_t s1[1] = {ref(1, 0, 0, 4, 2)};
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "cache_sim", "D1:1K:2:64,LL:4K:4:64"), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, s0, 1, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, s1, 1, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, false), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    char *json = results(a);
    assert_int_equal(level_value(json, "D1", "misses"), 2);
    assert_int_equal(level_value(json, "LL", "accesses"), 2);
    assert_int_equal(level_value(json, "LL", "misses"), 1);
    free(json);
    sonde_analyzer_destroy(a);
}

/* per_pc=1: each pc's reads, writes and misses by level; summed, they are the levels' counts. */
static void test_cache_sim_per_pc(void **state) {
    (void)state;
    sonde_memref_t s0[40];
    for (int i = 0; i < 20; ++i) {
        s0[2 * i] = ref(0, SONDE_MEMREF_READ, 0x10000 + 64 * (uint64_t)i, 8, 1); /* a new line: misses */
        s0[2 * i].pc = 0x10;
        s0[2 * i + 1] =
            ref(0, SONDE_MEMREF_WRITE, 0x10000 + 64 * (uint64_t)i, 8, 1); /* the same line: hits */
        s0[2 * i + 1].pc = 0x20;
    }
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "cache_sim", "D1:1K:2:64,per_pc=1,LL:4K:4:64"),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, s0, 40, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, false), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    char *json = results(a);
    assert_int_equal(level_value(json, "D1", "misses"), 20);
    assert_int_equal(level_value(json, "D1", "read_accesses"), 20);
    assert_int_equal(level_value(json, "D1", "write_accesses"), 20);
    assert_int_equal(level_value(json, "D1", "read_misses"), 20);
    assert_int_equal(level_value(json, "LL", "read_accesses"), 20);
    assert_int_equal(level_value(json, "LL", "write_accesses"), 0);
    assert_non_null(strstr(json, "\"pc\":16,\"read_misses\":[20,20],\"reads\":20,\"write_misses\":[0,0]"));
    assert_non_null(
        strstr(json, "\"pc\":32,\"read_misses\":[0,0],\"reads\":0,\"write_misses\":[0,0],\"writes\":20"));
    free(json);
    sonde_analyzer_destroy(a);
    /* A bad value, and a partitioned run, are refused. */
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "cache_sim", "per_pc=2"),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(sonde_analyzer_error(a), "per_pc"));
    assert_int_equal(sonde_analyzer_add_tool(a, "cache_sim", "per_pc=1"), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, s0, 40, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_partition(a, 0, 2), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_non_null(strstr(sonde_analyzer_error(a), "per_pc does not run partitioned"));
    sonde_analyzer_destroy(a);
}

/* ---- external tools ---- */

static void test_external_tools(void **state) {
    (void)state;
    sonde_memref_t s0[3] = {ref(0, 0, 1, 8, 0), ref(0, 0, 2, 8, 0), ref(0, 0, 3, 8, 0)};
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_load_tool(a, FIXTURE_GOOD, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_load_tool(a, FIXTURE_GOOD, "x"), SONDE_STATUS_SUCCESS);
    /* The same name twice is refused. */
    assert_int_equal(sonde_analyzer_load_tool(a, FIXTURE_GOOD, NULL), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(sonde_analyzer_error(a), "already added"));
    assert_int_equal(sonde_analyzer_load_tool(a, "/nonexistent/tool.so", NULL),
                     SONDE_STATUS_ERROR_LOAD_FAILED);
    assert_non_null(strstr(sonde_analyzer_error(a), "/nonexistent/tool.so"));
    assert_int_equal(sonde_analyzer_load_tool(a, FIXTURE_NO_SYMBOL, NULL), SONDE_STATUS_ERROR_LOAD_FAILED);
    assert_non_null(strstr(sonde_analyzer_error(a), "no symbol sonde_tool_create"));
    /* A FIFO with no writer: refused, where dlopen would have blocked for ever. */
    char fifo_dir[] = "/tmp/sonde-fifo-tool-XXXXXX";
    assert_non_null(mkdtemp(fifo_dir));
    char fifo[64];
    snprintf(fifo, sizeof fifo, "%s/tool.so", fifo_dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(sonde_analyzer_load_tool(a, fifo, NULL), SONDE_STATUS_ERROR_LOAD_FAILED);
    assert_non_null(strstr(sonde_analyzer_error(a), "is not a regular file"));
    unlink(fifo);
    rmdir(fifo_dir);
    /* A good tool's file cut in half: refused, where dlopen would have raised SIGBUS here. */
    char cut[] = "/tmp/sonde-cut-tool-XXXXXX";
    assert_true(cut_copy(FIXTURE_GOOD, 0, cut) != 0);
    assert_int_equal(sonde_analyzer_load_tool(a, cut, NULL), SONDE_STATUS_ERROR_LOAD_FAILED);
    assert_non_null(strstr(sonde_analyzer_error(a), "cut short"));
    unlink(cut);
    /* An entry point that only a dependency of the object defines is not the tool's. */
    assert_int_equal(sonde_analyzer_load_tool(a, FIXTURE_FROM_DEPENDENCY, NULL),
                     SONDE_STATUS_ERROR_LOAD_FAILED);
    assert_non_null(strstr(sonde_analyzer_error(a), "not defined in the plugin"));
    assert_non_null(strstr(sonde_analyzer_error(a), "analyzer_fixture_provider"));
    assert_int_equal(sonde_analyzer_load_tool(a, FIXTURE_BAD_SIZE, NULL),
                     SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    assert_non_null(strstr(sonde_analyzer_error(a), "struct_size 8"));
    assert_int_equal(sonde_analyzer_load_tool(a, FIXTURE_CREATE_FAILS, NULL), SONDE_STATUS_ERROR_TOOL);
    assert_non_null(strstr(sonde_analyzer_error(a), "SONDE_STATUS_ERROR_INVALID_ARGUMENT"));
    assert_int_equal(sonde_analyzer_add_memory_shard(a, s0, 3, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    char *json = results(a);
    assert_string_equal(json,
                        "{\"fixture\":{\"records\":3},\"fixture_named\":{\"options\":\"x\",\"records\":3}}");
    free(json);
    sonde_analyzer_destroy(a);
}

/* ---- bad arguments ---- */

static void test_bad_arguments(void **state) {
    (void)state;
    sonde_memref_t s0[1] = {ref(0, 0, 1, 8, 0)};
    assert_int_equal(sonde_analyzer_create(NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_destroy(NULL), SONDE_STATUS_SUCCESS);
    assert_string_equal(sonde_analyzer_error(NULL), "");
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    sonde_tool_ops_t ops = recorder_ops();
    recorder_t *r = new_recorder(false);

    assert_int_equal(sonde_analyzer_add_tool(NULL, "basic_counts", NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_add_tool(a, NULL, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_add_tool(a, "no_such_tool", NULL), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_non_null(strstr(sonde_analyzer_error(a), "basic_counts, cache_sim"));
    assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", "line_size=3"),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", "colour=red"),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    const char *bad_reuse[] = {"merge_jobs=0", "merge_jobs=1025", "merge_jobs=-1", "merge_jobs=2x",
                               "model=drcachesim,merge_jobs=2"};
    for (size_t i = 0; i < sizeof bad_reuse / sizeof bad_reuse[0]; ++i) {
        assert_int_equal(sonde_analyzer_add_tool(a, "reuse_distance", bad_reuse[i]),
                         SONDE_STATUS_ERROR_INVALID_ARGUMENT);
        assert_non_null(strstr(sonde_analyzer_error(a), "merge_jobs"));
    }
    const char *bad_caches[] = {"D1:32K:8",     "D1:32K:8:48",      "D1:32K:0:64",
                                "D1:33K:8:64",  "D1:32K:8:64:plru", "D1:xK:8:64",
                                "D1:-32K:8:64", ":32K:8:64",        "D1:32K:8:64,"};
    for (size_t i = 0; i < sizeof bad_caches / sizeof bad_caches[0]; ++i) {
        assert_int_equal(sonde_analyzer_add_tool(a, "cache_sim", bad_caches[i]),
                         SONDE_STATUS_ERROR_INVALID_ARGUMENT);
        assert_true(strncmp(sonde_analyzer_error(a), "cache_sim: ", 11) == 0);
    }
    assert_int_equal(sonde_analyzer_load_tool(a, NULL, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_load_tool(NULL, FIXTURE_GOOD, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_add_tool_ops(a, NULL, r), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_add_tool_ops(NULL, &ops, r), SONDE_STATUS_ERROR_NULL_POINTER);
    sonde_tool_ops_t bad = ops;
    bad.struct_size = 16;
    bad.destroy = NULL;
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &bad, r), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    bad = ops;
    bad.destroy = NULL;
    bad.reserved = 1;
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &bad, r), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    bad = ops;
    bad.destroy = NULL;
    bad.name = NULL;
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &bad, r), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    bad = ops;
    bad.destroy = NULL;
    bad.process_memref = NULL;
    bad.parallel_shard_memref = NULL;
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &bad, r), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    /* A larger table with unknown non-zero bytes beyond the known struct. */
    struct {
        sonde_tool_ops_t ops;
        uint64_t extra;
    } bigger;
    memset(&bigger, 0, sizeof bigger);
    bigger.ops = ops;
    bigger.ops.destroy = NULL;
    bigger.ops.struct_size = sizeof bigger;
    bigger.extra = 1;
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &bigger.ops, r), SONDE_STATUS_ERROR_NOT_SUPPORTED);

    assert_int_equal(sonde_analyzer_set_parallel(NULL, true), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_set_workers(NULL, 1), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_set_workers(a, 1025), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_analyzer_add_input(a, NULL, SONDE_TRACE_FORMAT_LACKEY),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_add_input(NULL, "x", SONDE_TRACE_FORMAT_LACKEY),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_add_input(a, "/nonexistent/trace.sonde", SONDE_TRACE_FORMAT_SONDE),
                     SONDE_STATUS_ERROR_IO);
    assert_non_null(strstr(sonde_analyzer_error(a), "/nonexistent/trace.sonde"));
    assert_int_equal(sonde_analyzer_add_input(a, FIXTURE_GOOD, 77), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_analyzer_add_input(a, FIXTURE_GOOD, SONDE_TRACE_FORMAT_SONDE),
                     SONDE_STATUS_ERROR_FORMAT);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, NULL, 1, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_add_memory_shard(NULL, s0, 1, NULL), SONDE_STATUS_ERROR_NULL_POINTER);

    /* Nothing to run yet. */
    assert_int_equal(sonde_analyzer_run(NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    bool parallel = false;
    assert_int_equal(sonde_analyzer_run_info(a, &parallel, NULL), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_analyzer_run_info(a, NULL, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    size_t need = 0;
    assert_int_equal(sonde_analyzer_results_json(a, NULL, 0, &need), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_analyzer_results_json(a, NULL, 0, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_results_json(a, NULL, 5, &need), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_print_results(a, NULL), SONDE_STATUS_ERROR_NULL_POINTER);

    /* A serial-only tool that only has parallel functions cannot run serially. */
    bad = ops;
    bad.process_memref = NULL;
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &bad, r), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, s0, 1, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, false), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    /* After a run nothing can be added. */
    assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", NULL), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, s0, 1, NULL), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_analyzer_set_parallel(a, true), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_analyzer_set_workers(a, 2), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_PHASE_FAILURE);
    sonde_analyzer_destroy(a);
    assert_true(r->destroyed);
    free_recorder(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serial_order),          cmocka_unit_test(test_parallel_falls_back_to_serial),
        cmocka_unit_test(test_parallel_order),        cmocka_unit_test(test_skewed_shards_largest_first),
        cmocka_unit_test(test_errors_stop_the_run),   cmocka_unit_test(test_basic_counts),
        cmocka_unit_test(test_cache_sim_policies),    cmocka_unit_test(test_cache_sim_hierarchy),
        cmocka_unit_test(test_cache_sim_private_l1),  cmocka_unit_test(test_cache_sim_per_pc),
        cmocka_unit_test(test_cache_sim_prefetching), cmocka_unit_test(test_cache_sim_kinds),
        cmocka_unit_test(test_external_tools),        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
