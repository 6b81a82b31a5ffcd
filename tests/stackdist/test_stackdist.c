/* Stack distance calculator through the public ABI: gem5's own answers line by line, random
 * comparisons with a naive stack (marks, removals, compaction, table growth), the verify
 * option, histograms (exact, linear, log2, read/write, infinite), MRCs, the batch call, the
 * parallel exact mode, SHARDS on a synthetic trace, and every bad argument that has a status. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sonde/stackdist.h>

#include "sanitizer.h"
#include "stackdist_test_util.h"

#define OK SONDE_STATUS_SUCCESS

static sonde_stackdist_t *make_sd(const sonde_stackdist_options_t *o) {
    sonde_stackdist_t *sd = NULL;
    assert_int_equal(sonde_stackdist_create(o, &sd), OK);
    assert_non_null(sd);
    return sd;
}

static sonde_histogram_t *make_hist(void) {
    sonde_histogram_t *h = NULL;
    assert_int_equal(sonde_histogram_create(&h), OK);
    assert_non_null(h);
    return h;
}

static sonde_stackdist_options_t opts_default(void) {
    sonde_stackdist_options_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    return o;
}

/* tests/data/stackdist-ops-seed1.txt: gem5's answers to 20,000 random operations. */
static void test_gem5_ops(void **state) {
    (void)state;
    const char *dir = getenv("SONDE_SHARED_DATA");
    assert_non_null(dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/stackdist-ops-seed1.txt", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    for (int pass = 0; pass < 2; ++pass) {
        /* Pass 1 runs with verify on: the naive stack must agree too. */
        sonde_stackdist_options_t o = opts_default();
        o.flags = pass ? SONDE_STACKDIST_FLAG_VERIFY : 0;
        o.initial_capacity = 1; /* smallest tables: exercises growth and compaction */
        sonde_stackdist_t *sd = make_sd(&o);
        rewind(f);
        char op;
        unsigned long long addr;
        int arg, want_mark;
        char dist[32];
        int lines = 0;
        while (fscanf(f, " %c %llu %d %31s %d", &op, &addr, &arg, dist, &want_mark) == 5) {
            uint64_t d = 0;
            bool m = true;
            if (op == 'U')
                assert_int_equal(sonde_stackdist_calc_and_update(sd, addr, arg != 0, &d, &m), OK);
            else
                assert_int_equal(sonde_stackdist_calc(sd, addr, arg != 0, &d, &m), OK);
            uint64_t want = strcmp(dist, "inf") == 0 ? SONDE_STACKDIST_INFINITY : strtoull(dist, NULL, 10);
            if (d != want || (int)m != want_mark)
                fail_msg("line %d: %c %llu %d: got %llu/%d want %s/%d", lines + 1, op, addr, arg,
                         (unsigned long long)d, (int)m, dist, want_mark);
            ++lines;
        }
        assert_int_equal(lines, 20000);
        sonde_stackdist_destroy(sd);
    }
    fclose(f);
}

/* Random operation mixes over several universes against the naive stack. */
static void test_random_vs_naive(void **state) {
    (void)state;
    static const uint64_t universes[] = {1, 3, 16, 200, 3000};
    /* percent of U-add, U-remove, C-mark, C-unmark */
    static const int mixes[][4] = {{100, 0, 0, 0}, {70, 10, 10, 10}, {40, 30, 15, 15}, {90, 2, 8, 0}};
    for (uint64_t seed = 1; seed <= 24; ++seed) {
        for (size_t u = 0; u < sizeof universes / sizeof *universes; ++u) {
            const int *mix = mixes[seed % 4];
            uint64_t rs = seed * 7919 + u;
            sonde_stackdist_options_t o = opts_default();
            o.initial_capacity = seed % 3 == 0 ? 1 : 0;
            sonde_stackdist_t *sd = make_sd(&o);
            naive_t nv;
            naive_init(&nv, universes[u] + 1);
            const int ops = universes[u] >= 3000 ? 6000 : 3000;
            for (int i = 0; i < ops; ++i) {
                uint64_t addr = rng_next(&rs) % universes[u];
                if (addr == 2)
                    addr = UINT64_MAX; /* the table's empty-key value is a valid line */
                else
                    addr = addr * 0x10001ULL + (seed << 40);
                int r = (int)(rng_next(&rs) % 100);
                bool update = r < mix[0] + mix[1];
                bool arg = update ? r < mix[0] : r < mix[0] + mix[1] + mix[2];
                uint64_t d = 0, want;
                bool m = false, wm = false;
                if (update)
                    assert_int_equal(sonde_stackdist_calc_and_update(sd, addr, arg, &d, &m), OK);
                else
                    assert_int_equal(sonde_stackdist_calc(sd, addr, arg, &d, &m), OK);
                want = naive_op(&nv, addr, update, arg, &wm);
                if (d != want || m != wm)
                    fail_msg("seed %llu universe %llu op %d: got %llu/%d want %llu/%d",
                             (unsigned long long)seed, (unsigned long long)universes[u], i,
                             (unsigned long long)d, m, (unsigned long long)want, wm);
            }
            uint64_t size = 0;
            assert_int_equal(sonde_stackdist_size(sd, &size), OK);
            assert_int_equal(size, nv.n);
            naive_free(&nv);
            sonde_stackdist_destroy(sd);
        }
    }
}

/* Long runs over a fixed working set force many compactions; distances stay exact. */
static void test_compaction(void **state) {
    (void)state;
    sonde_stackdist_t *sd = make_sd(NULL);
    naive_t nv;
    naive_init(&nv, 600);
    uint64_t rs = 99;
    for (int i = 0; i < 60000; ++i) {
        uint64_t a = (i % 3 == 0) ? (uint64_t)(i % 500) : rng_next(&rs) % 500;
        uint64_t d = 0;
        bool m, wm;
        assert_int_equal(sonde_stackdist_calc_and_update(sd, a, true, &d, &m), OK);
        assert_int_equal(d, naive_op(&nv, a, true, true, &wm));
    }
    naive_free(&nv);
    sonde_stackdist_destroy(sd);
}

/* A B A C B A with reads and writes: every bin layout, summary and MRC by hand. */
static void test_histogram_small(void **state) {
    (void)state;
    const uint64_t tr[] = {10, 20, 10, 30, 20, 10};
    const uint8_t w[] = {0, 1, 0, 1, 1, 0};
    sonde_stackdist_t *sd = make_sd(NULL);
    sonde_histogram_t *h = make_hist();
    assert_int_equal(sonde_stackdist_batch(sd, tr, w, 6, h), OK);
    /* distances: inf inf 1 inf 2 2 */
    sonde_histogram_summary_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    assert_int_equal(sonde_histogram_get_summary(h, &s), OK);
    assert_int_equal(s.accesses, 6);
    assert_int_equal(s.reads, 3);
    assert_int_equal(s.writes, 3);
    assert_int_equal(s.infinite, 3);
    assert_int_equal(s.infinite_reads, 1);
    assert_int_equal(s.infinite_writes, 2);
    assert_int_equal(s.sampled, 6);
    assert_int_equal(s.sampling, 0);
    assert_true(s.sample_rate == 1.0);
    assert_int_equal(s.max_distance, 2);

    sonde_histogram_bin_t b[8];
    uint32_t n = 0;
    assert_int_equal(sonde_histogram_get_bins(h, SONDE_HISTOGRAM_BINS_EXACT, 0, b, 8, &n), OK);
    assert_int_equal(n, 2);
    assert_int_equal(b[0].first, 1);
    assert_int_equal(b[0].last, 1);
    assert_int_equal(b[0].count, 1);
    assert_int_equal(b[0].reads, 1);
    assert_int_equal(b[1].first, 2);
    assert_int_equal(b[1].count, 2);
    assert_int_equal(b[1].reads, 1);
    assert_int_equal(b[1].writes, 1);
    assert_int_equal(sonde_histogram_get_bins(h, SONDE_HISTOGRAM_BINS_LINEAR, 2, b, 8, &n), OK);
    assert_int_equal(n, 2);
    assert_int_equal(b[0].first, 0);
    assert_int_equal(b[0].last, 1);
    assert_int_equal(b[0].count, 1);
    assert_int_equal(b[1].first, 2);
    assert_int_equal(b[1].last, 3);
    assert_int_equal(b[1].count, 2);
    assert_int_equal(sonde_histogram_get_bins(h, SONDE_HISTOGRAM_BINS_LOG2, 0, b, 8, &n), OK);
    assert_int_equal(n, 3);
    assert_int_equal(b[0].count, 0);
    assert_int_equal(b[1].first, 1);
    assert_int_equal(b[1].count, 1);
    assert_int_equal(b[2].first, 2);
    assert_int_equal(b[2].last, 3);
    assert_int_equal(b[2].count, 2);
    /* Array protocol: too small fills what fits and says how many exist. */
    memset(b, 0xff, sizeof b);
    assert_int_equal(sonde_histogram_get_bins(h, SONDE_HISTOGRAM_BINS_EXACT, 0, b, 1, &n),
                     SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_int_equal(n, 2);
    assert_int_equal(b[0].first, 1);
    assert_int_equal(b[1].first, UINT64_MAX);
    assert_int_equal(sonde_histogram_get_bins(h, SONDE_HISTOGRAM_BINS_EXACT, 0, NULL, 0, &n),
                     SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);

    sonde_mrc_point_t p[4];
    assert_int_equal(sonde_histogram_get_mrc(h, p, 4, &n), OK);
    assert_int_equal(n, 3);
    assert_int_equal(p[0].cache_lines, 0);
    assert_true(p[0].miss_ratio == 1.0);
    assert_int_equal(p[1].cache_lines, 2);
    assert_true(fabs(p[1].miss_ratio - 5.0 / 6.0) < 1e-12);
    assert_int_equal(p[2].cache_lines, 3);
    assert_true(fabs(p[2].miss_ratio - 0.5) < 1e-12);
    assert_int_equal(sonde_histogram_get_mrc(h, p, 2, &n), SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_int_equal(n, 3);
    double mr = 0;
    assert_int_equal(sonde_histogram_miss_ratio(h, 2, &mr), OK);
    assert_true(fabs(mr - 5.0 / 6.0) < 1e-12);
    assert_int_equal(sonde_histogram_miss_ratio(h, 100, &mr), OK);
    assert_true(fabs(mr - 0.5) < 1e-12);
    assert_int_equal(sonde_histogram_miss_ratio(h, 0, &mr), OK);
    assert_true(mr == 1.0);

    assert_int_equal(sonde_histogram_reset(h), OK);
    assert_int_equal(sonde_histogram_get_mrc(h, p, 4, &n), OK);
    assert_int_equal(n, 0);
    assert_int_equal(sonde_histogram_miss_ratio(h, 2, &mr), OK);
    assert_true(mr == 0.0);
    /* Without types every access is a read; the stack kept its state across the reset. */
    assert_int_equal(sonde_stackdist_batch(sd, tr, NULL, 6, h), OK);
    assert_int_equal(sonde_histogram_get_summary(h, &s), OK);
    assert_int_equal(s.writes, 0);
    assert_int_equal(s.infinite, 0);
    assert_int_equal(sonde_stackdist_batch(sd, NULL, NULL, 0, h), OK);
    sonde_histogram_destroy(h);
    sonde_stackdist_destroy(sd);
}

/* The batch call gives exactly the per-call distances. */
static void test_batch_equals_calls(void **state) {
    (void)state;
    enum { N = 40000 };
    uint64_t *tr = malloc(N * sizeof *tr);
    uint8_t *w = malloc(N);
    uint64_t rs = 5;
    for (int i = 0; i < N; ++i) {
        tr[i] = (i & 1) ? rng_next(&rs) % 2000 : rng_next(&rs) % 50;
        w[i] = (uint8_t)(rng_next(&rs) & 1);
    }
    sonde_stackdist_t *a = make_sd(NULL), *b = make_sd(NULL);
    sonde_histogram_t *h = make_hist();
    assert_int_equal(sonde_stackdist_batch(a, tr, w, N, h), OK);
    uint64_t *count = calloc(N + 1, sizeof *count);
    uint64_t inf = 0;
    for (int i = 0; i < N; ++i) {
        uint64_t d;
        assert_int_equal(sonde_stackdist_calc_and_update(b, tr[i], true, &d, NULL), OK);
        if (d == SONDE_STACKDIST_INFINITY)
            ++inf;
        else
            ++count[d];
    }
    uint32_t n = 0;
    sonde_histogram_bin_t *bins = get_exact_bins(h, &n);
    assert_non_null(bins);
    uint64_t total = inf;
    for (uint32_t i = 0; i < n; ++i) {
        assert_int_equal(bins[i].count, count[bins[i].first]);
        total += bins[i].count;
    }
    assert_int_equal(total, N);
    free(bins);
    free(count);
    free(tr);
    free(w);
    sonde_histogram_destroy(h);
    sonde_stackdist_destroy(a);
    sonde_stackdist_destroy(b);
}

static void assert_same_hist(const sonde_histogram_t *x, const sonde_histogram_t *y) {
    uint32_t nx = 0, ny = 0;
    sonde_histogram_bin_t *bx = get_exact_bins(x, &nx), *by = get_exact_bins(y, &ny);
    assert_non_null(bx);
    assert_non_null(by);
    assert_int_equal(nx, ny);
    for (uint32_t i = 0; i < nx; ++i) {
        assert_int_equal(bx[i].first, by[i].first);
        assert_int_equal(bx[i].reads, by[i].reads);
        assert_int_equal(bx[i].writes, by[i].writes);
    }
    sonde_histogram_summary_t sx, sy;
    memset(&sx, 0, sizeof sx);
    memset(&sy, 0, sizeof sy);
    sx.struct_size = sy.struct_size = sizeof sx;
    assert_int_equal(sonde_histogram_get_summary(x, &sx), OK);
    assert_int_equal(sonde_histogram_get_summary(y, &sy), OK);
    assert_int_equal(sx.accesses, sy.accesses);
    assert_int_equal(sx.infinite_reads, sy.infinite_reads);
    assert_int_equal(sx.infinite_writes, sy.infinite_writes);
    free(bx);
    free(by);
}

/* Both calculators hold the same number of lines. */
static void assert_same_size(sonde_stackdist_t *x, sonde_stackdist_t *y) {
    uint64_t a = 0, b = 0;
    assert_int_equal(sonde_stackdist_size(x, &a), OK);
    assert_int_equal(sonde_stackdist_size(y, &b), OK);
    assert_int_equal(a, b);
}

/* Parallel exact mode equals serial on several traces and worker counts, across batches. */
static void test_parallel_equals_serial(void **state) {
    (void)state;
    enum { N = 300000 };
    uint64_t *tr = malloc(N * sizeof *tr);
    uint8_t *w = malloc(N);
    for (int kind = 0; kind < 4; ++kind) {
        uint64_t rs = 77 + (uint64_t)kind;
        for (int i = 0; i < N; ++i) {
            switch (kind) {
                case 0: tr[i] = rng_next(&rs) % 100000; break;                     /* uniform */
                case 1: tr[i] = (uint64_t)(i % 7000); break;                       /* cyclic scan */
                case 2: tr[i] = rng_next(&rs) % (1 + (uint64_t)(i / 1000)); break; /* growing */
                default: {
                    uint64_t r = rng_next(&rs);
                    tr[i] = (r & 7) ? r % 64 : r % 50000;
                }
            }
            w[i] = (uint8_t)(i % 3 == 0);
        }
        sonde_stackdist_t *serial = make_sd(NULL);
        sonde_histogram_t *hs = make_hist();
        assert_int_equal(sonde_stackdist_batch(serial, tr, w, N / 2, hs), OK);
        assert_int_equal(sonde_stackdist_batch(serial, tr + N / 2, w + N / 2, N - N / 2, hs), OK);
        for (uint32_t workers = 2; workers <= 4; ++workers) {
            sonde_stackdist_options_t o = opts_default();
            o.workers = workers;
            sonde_stackdist_t *par = make_sd(&o);
            sonde_histogram_t *hp = make_hist();
            assert_int_equal(sonde_stackdist_batch(par, tr, w, N / 2, hp), OK);
            assert_int_equal(sonde_stackdist_batch(par, tr + N / 2, w + N / 2, N - N / 2, hp), OK);
            assert_same_hist(hs, hp);
            assert_same_size(serial, par);
            sonde_histogram_destroy(hp);
            sonde_stackdist_destroy(par);
        }
        sonde_histogram_destroy(hs);
        sonde_stackdist_destroy(serial);
    }
    free(tr);
    free(w);
}

/* The parallel merge of a large chunk (its old times split in value buckets, at most 64, and its
 * positions in ranges, one per worker) equals the serial answer for worker counts of 8 and 70
 * (more ranges than buckets), on a trace where most of a chunk's lines are new or long
 * unused: 70% of accesses over 4 Ki hot lines, 30% over 2 Mi cold ones, line UINT64_MAX now
 * and then; two batches, so the second merges against a large stack. */
static void test_parallel_merge_many_workers(void **state) {
    (void)state;
    /* Under TSan (sanitizer.h) half the trace and half the workers: still merges of many tasks. */
    enum { N = SONDE_TEST_TSAN ? 2300000 : 4600000 };
    uint64_t *tr = malloc(N * sizeof *tr);
    uint8_t *w = malloc(N);
    assert_non_null(tr);
    assert_non_null(w);
    uint64_t rs = 4242;
    for (int i = 0; i < N; ++i) {
        const uint64_t r = rng_next(&rs);
        tr[i] = r % 1000 == 0 ? UINT64_MAX : r % 10 < 7 ? (r >> 20) % 4096 : 1000000 + (r >> 24) % (2u << 20);
        w[i] = (uint8_t)(r >> 63);
    }
    sonde_stackdist_t *serial = make_sd(NULL);
    sonde_histogram_t *hs = make_hist();
    assert_int_equal(sonde_stackdist_batch(serial, tr, w, N / 2, hs), OK);
    assert_int_equal(sonde_stackdist_batch(serial, tr + N / 2, w + N / 2, N - N / 2, hs), OK);
    static const uint32_t counts[] = {8, SONDE_TEST_TSAN ? 35 : 70};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
        sonde_stackdist_options_t o = opts_default();
        o.workers = counts[c];
        sonde_stackdist_t *par = make_sd(&o);
        sonde_histogram_t *hp = make_hist();
        /* A batch is calculated in parallel only when each worker gets 64 Ki accesses: 70
         * (35) workers take the whole trace in one. */
        if (counts[c] * 65536u <= N / 2) {
            assert_int_equal(sonde_stackdist_batch(par, tr, w, N / 2, hp), OK);
            assert_int_equal(sonde_stackdist_batch(par, tr + N / 2, w + N / 2, N - N / 2, hp), OK);
        } else {
            assert_true(counts[c] * 65536u <= N);
            assert_int_equal(sonde_stackdist_batch(par, tr, w, N, hp), OK);
        }
        assert_same_hist(hs, hp);
        assert_same_size(serial, par);
        /* The stacks agree line by line on a sample of hot and cold lines. */
        for (uint64_t line = 0; line < 4096; line += 7) {
            uint64_t d1 = 0, d2 = 0;
            const uint64_t both[2] = {line, 1000000 + line * 511};
            for (int k = 0; k < 2; ++k) {
                assert_int_equal(sonde_stackdist_calc(serial, both[k], false, &d1, NULL), OK);
                assert_int_equal(sonde_stackdist_calc(par, both[k], false, &d2, NULL), OK);
                assert_int_equal(d1, d2);
            }
        }
        sonde_histogram_destroy(hp);
        sonde_stackdist_destroy(par);
    }
    free(tr);
    free(w);
    sonde_histogram_destroy(hs);
    sonde_stackdist_destroy(serial);
}

/* Line of the universe used below: 0 stands for UINT64_MAX, the line the table cannot hold. */
static uint64_t universe_line(uint64_t k) { return k == 0 ? UINT64_MAX : k; }

/* Every line of the universe (and the streamed ones) answers the same distance and mark. */
static void assert_same_state(sonde_stackdist_t *a, sonde_stackdist_t *b, uint64_t universe,
                              uint64_t stream_first, uint64_t stream_end) {
    for (uint64_t k = 0; k < universe + (stream_end - stream_first); ++k) {
        const uint64_t line = k < universe ? universe_line(k) : stream_first + (k - universe);
        uint64_t da = 0, db = 0;
        bool ma = false, mb = false;
        assert_int_equal(sonde_stackdist_calc(a, line, false, &da, &ma), OK);
        assert_int_equal(sonde_stackdist_calc(b, line, false, &db, &mb), OK);
        assert_int_equal(da, db);
        assert_int_equal(ma, mb);
    }
}

/* The parallel merge leaves the stack exactly as the serial one: marks set before a batch
 * survive on lines the batch does not touch, removed lines come back cold, line UINT64_MAX
 * and never-seen lines land in every chunk; checked line by line after each of two batches
 * large enough for 2, 3 and 4 workers. */
static void test_parallel_state_and_marks(void **state) {
    (void)state;
    enum { N = 600000, U = 30000 };
    uint64_t *tr = malloc(N * sizeof *tr);
    uint8_t *w = malloc(N);
    assert_non_null(tr);
    assert_non_null(w);
    uint64_t stream = 1000000000; /* never-seen lines, one per tenth access */
    for (uint32_t workers = 2; workers <= 4; ++workers) {
        sonde_stackdist_options_t o = opts_default();
        o.workers = workers;
        sonde_stackdist_t *ser = make_sd(NULL), *par = make_sd(&o);
        sonde_histogram_t *hs = make_hist(), *hp = make_hist();
        uint64_t rs = 99 + workers, d = 0;
        bool m = false;
        const uint64_t stream_first = stream;
        for (int round = 0; round < 2; ++round) {
            /* Before the batch: adds, removals and marks, the same on both. */
            for (int i = 0; i < 20000; ++i) {
                const uint64_t r = rng_next(&rs), line = universe_line(r % U);
                sonde_stackdist_t *both[2] = {ser, par};
                for (int k = 0; k < 2; ++k) {
                    if (r % 5 == 0)
                        assert_int_equal(sonde_stackdist_calc(both[k], line, true, &d, &m), OK);
                    else
                        assert_int_equal(sonde_stackdist_calc_and_update(both[k], line, r % 7 != 0, &d, &m),
                                         OK);
                }
            }
            for (int i = 0; i < N; ++i) {
                const uint64_t r = rng_next(&rs);
                if (r % 10 == 0)
                    tr[i] = stream++;
                else if (r % 10 == 1 && i > 0)
                    tr[i] = tr[i - 1];
                else
                    tr[i] = universe_line((r >> 8) % (round == 0 ? U / 3 : U));
                w[i] = (uint8_t)(r >> 63);
            }
            assert_int_equal(sonde_stackdist_batch(ser, tr, w, N, hs), OK);
            assert_int_equal(sonde_stackdist_batch(par, tr, w, N, hp), OK);
            assert_same_hist(hs, hp);
            assert_same_state(ser, par, U, stream_first, stream);
        }
        sonde_histogram_destroy(hs);
        sonde_histogram_destroy(hp);
        sonde_stackdist_destroy(ser);
        sonde_stackdist_destroy(par);
    }
    free(tr);
    free(w);
}

/* Different seeds sample unrelated line sets: over 64 K distinct lines, each accessed once, the
 * number sampled at R = 0.1 varies between seeds by about its binomial spread (about 77 lines),
 * not by a line or two as it would if a seed only shifted the lines through the same hash. */
static void test_shards_seeds_independent(void **state) {
    (void)state;
    enum { M = 1 << 16 };
    uint64_t *tr = malloc(M * sizeof *tr);
    for (uint64_t i = 0; i < M; ++i) tr[i] = i;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint64_t seed = 0; seed < 16; ++seed) {
        sonde_stackdist_options_t o = opts_default();
        o.sampling = SONDE_STACKDIST_SAMPLING_FIXED_RATE;
        o.sample_rate = 0.1;
        o.seed = seed;
        sonde_stackdist_t *sd = make_sd(&o);
        sonde_histogram_t *h = make_hist();
        assert_int_equal(sonde_stackdist_batch(sd, tr, NULL, M, h), OK);
        uint64_t lines = 0;
        assert_int_equal(sonde_stackdist_size(sd, &lines), OK);
        sonde_histogram_summary_t su;
        memset(&su, 0, sizeof su);
        su.struct_size = sizeof su;
        assert_int_equal(sonde_histogram_get_summary(h, &su), OK);
        assert_int_equal(su.sampled, lines); /* every access is a new line */
        assert_true(lines > M / 20 && lines < M / 5);
        lo = lines < lo ? lines : lo;
        hi = lines > hi ? lines : hi;
        sonde_histogram_destroy(h);
        sonde_stackdist_destroy(sd);
    }
    print_message("sampled lines over 16 seeds: %llu..%llu\n", (unsigned long long)lo,
                  (unsigned long long)hi);
    assert_true(hi - lo >= 40);
    free(tr);
}

/* Documented SHARDS bounds (docs/stack-distance.md) on a synthetic trace. */
#define SHARDS_BOUND_RATE 0.01
#define SHARDS_BOUND_SIZE 0.01

/* Median over SHARDS_SEEDS seeds of the MRC error of sampling calculators with options o
 * (seed 0's histogram h0 given; seeds 1.. run here) against the exact histogram he. */
static double shards_median_error(sonde_stackdist_options_t o, const uint64_t *tr, size_t n,
                                  const sonde_histogram_t *h0, const sonde_histogram_t *he,
                                  uint64_t max_lines) {
    double errs[SHARDS_SEEDS];
    errs[0] = mrc_error(h0, he, max_lines);
    for (uint64_t seed = 1; seed < SHARDS_SEEDS; ++seed) {
        o.seed = seed;
        sonde_stackdist_t *sd = make_sd(&o);
        sonde_histogram_t *h = make_hist();
        assert_int_equal(sonde_stackdist_batch(sd, tr, NULL, n, h), OK);
        errs[seed] = mrc_error(h, he, max_lines);
        sonde_histogram_destroy(h);
        sonde_stackdist_destroy(sd);
    }
    return median_double(errs, SHARDS_SEEDS);
}

static void test_shards_synthetic(void **state) {
    (void)state;
    enum { N = 1000000 };
    uint64_t *tr = malloc(N * sizeof *tr);
    uint64_t rs = 4242;
    for (int i = 0; i < N; ++i) {
        /* a hot set, a warm set and a large cold set */
        uint64_t r = rng_next(&rs) % 100;
        uint64_t x = rng_next(&rs);
        tr[i] = r < 50 ? x % 1000 : r < 85 ? 1000 + x % 20000 : 100000 + x % 200000;
    }
    sonde_stackdist_t *ex = make_sd(NULL);
    sonde_histogram_t *he = make_hist();
    assert_int_equal(sonde_stackdist_batch(ex, tr, NULL, N, he), OK);
    sonde_histogram_summary_t se;
    memset(&se, 0, sizeof se);
    se.struct_size = sizeof se;
    assert_int_equal(sonde_histogram_get_summary(he, &se), OK);

    sonde_stackdist_options_t o = opts_default();
    o.sampling = SONDE_STACKDIST_SAMPLING_FIXED_RATE;
    o.sample_rate = 0.1;
    sonde_stackdist_t *fr = make_sd(&o);
    sonde_histogram_t *hr = make_hist();
    assert_int_equal(sonde_stackdist_batch(fr, tr, NULL, N, hr), OK);
    double err = shards_median_error(o, tr, N, hr, he, se.max_distance + 1);
    print_message("SHARDS fixed rate 0.1: median MAE over %d seeds %.5f\n", SHARDS_SEEDS, err);
    assert_true(err <= SHARDS_BOUND_RATE);
    sonde_histogram_summary_t sr;
    memset(&sr, 0, sizeof sr);
    sr.struct_size = sizeof sr;
    assert_int_equal(sonde_histogram_get_summary(hr, &sr), OK);
    assert_int_equal(sr.sampling, 1);
    assert_int_equal(sr.accesses, N);
    assert_true(fabs(sr.sample_rate - 0.1) < 1e-6);
    assert_true(sr.sampled > N / 20 && sr.sampled < N / 5);
    uint64_t d;
    assert_int_equal(sonde_stackdist_calc(fr, 1, false, &d, NULL), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(sonde_stackdist_calc_and_update(fr, 1, true, &d, NULL),
                     SONDE_STATUS_ERROR_NOT_SUPPORTED);

    o.sampling = SONDE_STACKDIST_SAMPLING_FIXED_SIZE;
    o.sample_size = 8192;
    sonde_stackdist_t *fs = make_sd(&o);
    sonde_histogram_t *hz = make_hist();
    assert_int_equal(sonde_stackdist_batch(fs, tr, NULL, N, hz), OK);
    err = shards_median_error(o, tr, N, hz, he, se.max_distance + 1);
    print_message("SHARDS fixed size 8192: median MAE over %d seeds %.5f\n", SHARDS_SEEDS, err);
    assert_true(err <= SHARDS_BOUND_SIZE);
    uint64_t lines = 0;
    assert_int_equal(sonde_stackdist_size(fs, &lines), OK);
    assert_true(lines <= 8192);
    sonde_histogram_summary_t sz;
    memset(&sz, 0, sizeof sz);
    sz.struct_size = sizeof sz;
    assert_int_equal(sonde_histogram_get_summary(hz, &sz), OK);
    assert_true(sz.sample_rate < 0.1 && sz.sample_rate > 0.0);
    assert_true(sz.sampled < (uint64_t)N);

    sonde_histogram_destroy(he);
    sonde_histogram_destroy(hr);
    sonde_histogram_destroy(hz);
    sonde_stackdist_destroy(ex);
    sonde_stackdist_destroy(fr);
    sonde_stackdist_destroy(fs);
    free(tr);
}

static void test_bad_arguments(void **state) {
    (void)state;
    sonde_stackdist_t *sd = NULL;
    assert_int_equal(sonde_stackdist_create(NULL, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    sonde_stackdist_options_t o = opts_default();
    o.struct_size = 8;
    assert_int_equal(sonde_stackdist_create(&o, &sd), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    assert_null(sd);
    o = opts_default();
    o.flags = 0x80;
    assert_int_equal(sonde_stackdist_create(&o, &sd), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    /* a larger struct from a newer caller: zero tail is fine, non-zero tail is not */
    struct {
        sonde_stackdist_options_t o;
        uint64_t extra;
    } big;
    memset(&big, 0, sizeof big);
    big.o.struct_size = sizeof big;
    assert_int_equal(sonde_stackdist_create(&big.o, &sd), OK);
    sonde_stackdist_destroy(sd);
    big.extra = 1;
    assert_int_equal(sonde_stackdist_create(&big.o, &sd), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    o = opts_default();
    o.sampling = 7;
    assert_int_equal(sonde_stackdist_create(&o, &sd), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    o.sampling = SONDE_STACKDIST_SAMPLING_FIXED_RATE;
    o.sample_rate = 0.0;
    assert_int_equal(sonde_stackdist_create(&o, &sd), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    o.sample_rate = 1.5;
    assert_int_equal(sonde_stackdist_create(&o, &sd), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    o.sample_rate = 0.5;
    o.flags = SONDE_STACKDIST_FLAG_VERIFY;
    assert_int_equal(sonde_stackdist_create(&o, &sd), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    o = opts_default();
    o.sampling = SONDE_STACKDIST_SAMPLING_FIXED_SIZE;
    assert_int_equal(sonde_stackdist_create(&o, &sd), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    o = opts_default();
    o.workers = 257;
    assert_int_equal(sonde_stackdist_create(&o, &sd), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_null(sd);

    sd = make_sd(NULL);
    sonde_histogram_t *h = make_hist();
    uint64_t d, a = 1;
    bool m;
    assert_int_equal(sonde_stackdist_calc_and_update(NULL, 1, true, &d, &m), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_stackdist_calc_and_update(sd, 1, true, NULL, &m), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_stackdist_calc(NULL, 1, true, &d, &m), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_stackdist_calc(sd, 1, true, NULL, &m), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_stackdist_batch(NULL, &a, NULL, 1, h), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_stackdist_batch(sd, &a, NULL, 1, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_stackdist_batch(sd, NULL, NULL, 1, h), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_stackdist_size(NULL, &d), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_stackdist_size(sd, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_histogram_create(NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_histogram_reset(NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    sonde_histogram_summary_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    assert_int_equal(sonde_histogram_get_summary(NULL, &s), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_histogram_get_summary(h, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    s.struct_size = 16;
    assert_int_equal(sonde_histogram_get_summary(h, &s), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    sonde_histogram_bin_t b;
    uint32_t n;
    assert_int_equal(sonde_histogram_get_bins(NULL, 0, 0, &b, 1, &n), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_histogram_get_bins(h, 0, 0, &b, 1, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_histogram_get_bins(h, 0, 0, NULL, 1, &n), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_histogram_get_bins(h, 3, 0, &b, 1, &n), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_histogram_get_bins(h, SONDE_HISTOGRAM_BINS_LINEAR, 0, &b, 1, &n),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    sonde_mrc_point_t p;
    assert_int_equal(sonde_histogram_get_mrc(NULL, &p, 1, &n), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_histogram_get_mrc(h, &p, 1, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_histogram_get_mrc(h, NULL, 1, &n), SONDE_STATUS_ERROR_NULL_POINTER);
    double mr;
    assert_int_equal(sonde_histogram_miss_ratio(NULL, 1, &mr), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_histogram_miss_ratio(h, 1, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    /* marked may be NULL */
    assert_int_equal(sonde_stackdist_calc_and_update(sd, 1, true, &d, NULL), OK);
    assert_int_equal(sonde_stackdist_calc(sd, 1, true, &d, NULL), OK);
    assert_int_equal(d, 0);
    sonde_stackdist_destroy(NULL);
    sonde_histogram_destroy(NULL);
    sonde_histogram_destroy(h);
    sonde_stackdist_destroy(sd);
}

/* An optional argument is a cmocka test-name filter (the stress pass runs the parallel test). */
int main(int argc, char **argv) {
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gem5_ops),
        cmocka_unit_test(test_random_vs_naive),
        cmocka_unit_test(test_compaction),
        cmocka_unit_test(test_histogram_small),
        cmocka_unit_test(test_batch_equals_calls),
        cmocka_unit_test(test_parallel_equals_serial),
        cmocka_unit_test(test_parallel_state_and_marks),
        cmocka_unit_test(test_parallel_merge_many_workers),
        cmocka_unit_test(test_shards_seeds_independent),
        cmocka_unit_test(test_shards_synthetic),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
