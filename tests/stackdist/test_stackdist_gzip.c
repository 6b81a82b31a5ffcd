/* A real trace: gzip-gpl3.lackey.zst read directly with libzstd, fed through the batch API at
 * 64-byte lines, must give gem5's histogram gzip-gpl3.l64.hist exactly; the parallel exact mode
 * must give the same; SHARDS must stay within the documented MRC error bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sonde/stackdist.h>

#include "lackey_zst.h"
#include "stackdist_test_util.h"

/* Bounds stated in docs/stack-distance.md for this trace. */
#define GZIP_BOUND_RATE_01 0.01
#define GZIP_BOUND_SIZE_1024 0.01

static lackey_trace_t g_trace;

static int setup(void **state) {
    (void)state;
    const char *dir = getenv("SONDE_SHARED_DATA");
    if (!dir) return -1;
    char path[4096];
    snprintf(path, sizeof path, "%s/gzip-gpl3.lackey.zst", dir);
    return lackey_load(path, 6, &g_trace);
}

static int teardown(void **state) {
    (void)state;
    lackey_free(&g_trace);
    return 0;
}

static sonde_histogram_t *run_seed(uint32_t sampling, double rate, uint64_t size, uint32_t workers,
                                   size_t batch, uint64_t seed) {
    sonde_stackdist_options_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.sampling = sampling;
    o.sample_rate = rate;
    o.sample_size = size;
    o.workers = workers;
    o.seed = seed;
    sonde_stackdist_t *sd = NULL;
    assert_int_equal(sonde_stackdist_create(&o, &sd), SONDE_STATUS_SUCCESS);
    sonde_histogram_t *h = NULL;
    assert_int_equal(sonde_histogram_create(&h), SONDE_STATUS_SUCCESS);
    for (size_t i = 0; i < g_trace.n; i += batch) {
        size_t n = g_trace.n - i < batch ? g_trace.n - i : batch;
        assert_int_equal(sonde_stackdist_batch(sd, g_trace.lines + i, g_trace.is_write + i, n, h),
                         SONDE_STATUS_SUCCESS);
    }
    sonde_stackdist_destroy(sd);
    return h;
}

static sonde_histogram_t *run(uint32_t sampling, double rate, uint64_t size, uint32_t workers, size_t batch) {
    return run_seed(sampling, rate, size, workers, batch, 0);
}

/* Median over SHARDS_SEEDS hash seeds of the MRC error against ex. */
static double shards_median_error(uint32_t sampling, double rate, uint64_t size, size_t batch,
                                  const sonde_histogram_t *ex, uint64_t max_lines) {
    double e[SHARDS_SEEDS];
    for (uint64_t seed = 0; seed < SHARDS_SEEDS; ++seed) {
        sonde_histogram_t *h = run_seed(sampling, rate, size, 1, batch, seed);
        e[seed] = mrc_error(h, ex, max_lines);
        sonde_histogram_destroy(h);
    }
    return median_double(e, SHARDS_SEEDS);
}

static void check_against_gem5(const sonde_histogram_t *h) {
    const char *dir = getenv("SONDE_SHARED_DATA");
    char path[4096];
    snprintf(path, sizeof path, "%s/gzip-gpl3.l64.hist", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    unsigned long long accesses, infinite;
    assert_int_equal(fscanf(f, "accesses %llu infinite %llu", &accesses, &infinite), 2);
    sonde_histogram_summary_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    assert_int_equal(sonde_histogram_get_summary(h, &s), SONDE_STATUS_SUCCESS);
    assert_int_equal(s.accesses, accesses);
    assert_int_equal(s.infinite, infinite);
    uint32_t n = 0;
    sonde_histogram_bin_t *b = get_exact_bins(h, &n);
    assert_non_null(b);
    unsigned long long d, c;
    uint32_t i = 0;
    while (fscanf(f, "%llu %llu", &d, &c) == 2) {
        assert_true(i < n);
        assert_int_equal(b[i].first, d);
        assert_int_equal(b[i].count, c);
        ++i;
    }
    assert_int_equal(i, n);
    free(b);
    fclose(f);
}

static void test_gzip_exact(void **state) {
    (void)state;
    assert_int_equal(g_trace.n, 1970615);
    sonde_histogram_t *h = run(SONDE_STACKDIST_SAMPLING_NONE, 0, 0, 1, 1 << 16);
    check_against_gem5(h);
    sonde_histogram_destroy(h);
    h = run(SONDE_STACKDIST_SAMPLING_NONE, 0, 0, 1, g_trace.n); /* one batch */
    check_against_gem5(h);
    sonde_histogram_destroy(h);
}

static void test_gzip_parallel(void **state) {
    (void)state;
    for (uint32_t w = 2; w <= 4; w += 2) {
        sonde_histogram_t *h = run(SONDE_STACKDIST_SAMPLING_NONE, 0, 0, w, 700000);
        check_against_gem5(h);
        sonde_histogram_destroy(h);
    }
}

static void test_gzip_shards(void **state) {
    (void)state;
    sonde_histogram_t *ex = run(SONDE_STACKDIST_SAMPLING_NONE, 0, 0, 1, g_trace.n);
    sonde_histogram_summary_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    assert_int_equal(sonde_histogram_get_summary(ex, &s), SONDE_STATUS_SUCCESS);
    const uint64_t max_lines = s.max_distance + 1;
    double e = shards_median_error(SONDE_STACKDIST_SAMPLING_FIXED_RATE, 0.1, 0, g_trace.n, ex, max_lines);
    print_message("gzip SHARDS R=0.1: median MAE over %d seeds %.5f\n", SHARDS_SEEDS, e);
    assert_true(e <= GZIP_BOUND_RATE_01);
    e = shards_median_error(SONDE_STACKDIST_SAMPLING_FIXED_SIZE, 0, 1024, 1 << 16, ex, max_lines);
    print_message("gzip SHARDS S=1024: median MAE over %d seeds %.5f\n", SHARDS_SEEDS, e);
    assert_true(e <= GZIP_BOUND_SIZE_1024);
    e = shards_median_error(SONDE_STACKDIST_SAMPLING_FIXED_RATE, 0.01, 0, g_trace.n, ex, max_lines);
    print_message("gzip SHARDS R=0.01 (about 47 sampled lines): median MAE %.5f\n", e);
    sonde_histogram_destroy(ex);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gzip_exact),
        cmocka_unit_test(test_gzip_parallel),
        cmocka_unit_test(test_gzip_shards),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
