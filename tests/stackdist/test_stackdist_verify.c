/* The verify option: a naive stack checks every answer; an injected fault (a hidden test hook,
 * not part of libsonde's exports) must come back as SONDE_STATUS_ERROR_VERIFY_FAILED, from
 * single calls and from batches, and never abort. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sonde/stackdist.h>

void stackdist_test_inject_fault(sonde_stackdist_t *sd, uint64_t nth_call);

static sonde_stackdist_t *make_verify(void) {
    sonde_stackdist_options_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.flags = SONDE_STACKDIST_FLAG_VERIFY;
    sonde_stackdist_t *sd = NULL;
    assert_int_equal(sonde_stackdist_create(&o, &sd), SONDE_STATUS_SUCCESS);
    return sd;
}

static void test_verify_clean_run(void **state) {
    (void)state;
    sonde_stackdist_t *sd = make_verify();
    uint64_t d;
    bool m;
    for (uint64_t i = 0; i < 5000; ++i) {
        uint64_t a = (i * 2654435761u) % 97;
        assert_int_equal(sonde_stackdist_calc_and_update(sd, a, i % 11 != 0, &d, &m), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_stackdist_calc(sd, a + 1, i & 1, &d, &m), SONDE_STATUS_SUCCESS);
    }
    sonde_stackdist_destroy(sd);
}

static void test_verify_catches_fault(void **state) {
    (void)state;
    sonde_stackdist_t *sd = make_verify();
    stackdist_test_inject_fault(sd, 40);
    uint64_t d;
    bool m;
    for (uint64_t i = 1; i < 40; ++i)
        assert_int_equal(sonde_stackdist_calc_and_update(sd, i % 7, true, &d, &m), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_stackdist_calc(sd, 3, true, &d, &m), SONDE_STATUS_ERROR_VERIFY_FAILED);
    /* the failure is sticky: the calculator keeps answering but reports it */
    assert_int_equal(sonde_stackdist_calc_and_update(sd, 3, true, &d, &m), SONDE_STATUS_ERROR_VERIFY_FAILED);
    assert_int_equal(d, 1); /* 3 was last touched before 4 */
    sonde_stackdist_destroy(sd);

    sd = make_verify();
    stackdist_test_inject_fault(sd, 500);
    sonde_histogram_t *h = NULL;
    assert_int_equal(sonde_histogram_create(&h), SONDE_STATUS_SUCCESS);
    uint64_t tr[1000];
    for (int i = 0; i < 1000; ++i) tr[i] = (uint64_t)(i % 37);
    assert_int_equal(sonde_stackdist_batch(sd, tr, NULL, 400, h), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_stackdist_batch(sd, tr + 400, NULL, 600, h), SONDE_STATUS_ERROR_VERIFY_FAILED);
    sonde_histogram_destroy(h);
    sonde_stackdist_destroy(sd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify_clean_run),
        cmocka_unit_test(test_verify_catches_fault),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
