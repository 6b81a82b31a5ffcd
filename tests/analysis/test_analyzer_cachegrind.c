/* The real-peer test of cache_sim: on the lackey trace of `gzip -9 -c GPL-3`
 * ($SONDE_SHARED_DATA/gzip-gpl3.lackey.zst), cache_sim configured as cachegrind's hierarchy
 * (I1 and D1 32K 8-way 64-byte LRU, a unified 1M 16-way LRU LL) reports exactly what valgrind's
 * cachegrind reports for the same program with --I1=32768,8,64 --D1=32768,8,64
 * --LL=1048576,16,64. Run serially and in parallel (one shard: the same hierarchy). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sonde/analysis.h>

#include "analyzer_test_util.h"

static void check(bool parallel) {
    const char *dir = getenv("SONDE_SHARED_DATA");
    assert_non_null(dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/gzip-gpl3.lackey.zst", dir);
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "cache_sim", "I1:32K:8:64,D1:32K:8:64,LL:1M:16:64"),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_input(a, path, SONDE_TRACE_FORMAT_LACKEY), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, parallel), SONDE_STATUS_SUCCESS);
    const sonde_status_t st = sonde_analyzer_run(a);
    if (st != SONDE_STATUS_SUCCESS) fprintf(stderr, "%s\n", sonde_analyzer_error(a));
    assert_int_equal(st, SONDE_STATUS_SUCCESS);
    char *json = results(a);
    assert_int_equal(sonde_analyzer_print_results(a, stdout), SONDE_STATUS_SUCCESS);
    assert_int_equal(level_value(json, "I1", "misses"), 1374);
    assert_int_equal(level_value(json, "D1", "misses"), 253021);
    assert_int_equal(level_value(json, "LL", "misses"), 6057);
    assert_int_equal(level_value(json, "LL", "ifetch_misses"), 1348);
    assert_int_equal(level_value(json, "LL", "data_misses"), 4709);
    /* Every L, S and M line is one D1 access: 1,970,615 data references. */
    assert_int_equal(level_value(json, "D1", "accesses"), 1970615);
    free(json);
    sonde_analyzer_destroy(a);
}

static void test_cachegrind_serial(void **state) {
    (void)state;
    check(false);
}

static void test_cachegrind_parallel(void **state) {
    (void)state;
    check(true);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cachegrind_serial),
        cmocka_unit_test(test_cachegrind_parallel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
