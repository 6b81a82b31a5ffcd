/* Sessions and runtime lifecycle: initialise/finalise, phases, ids, properties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sonde/sonde.h>

static void noop_cb(const sonde_record_header_t *b, const sonde_record_header_t *e, sonde_session_id_t s,
                    sonde_buffer_id_t bu, void *u) {
    (void)b;
    (void)e;
    (void)s;
    (void)bu;
    (void)u;
}

static void test_calls_before_initialize(void **state) {
    (void)state;
    assert_false(sonde_is_initialized());
    sonde_session_id_t s = {0};
    sonde_buffer_id_t b = {0};
    bool active = false;
    sonde_buffer_stats_t st = {sizeof st, 0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(sonde_finalize(), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_create_session(NULL, &s), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_stop_session(s), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_destroy_session(s), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_session_is_active(s, &active), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_create_buffer(s, 1 << 20, noop_cb, NULL, NULL, 0, &b),
                     SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_flush_data(s, b), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_get_buffer_stats(s, b, &st), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_destroy_buffer(s, b), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, "x", 1), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_emit_timestamped(b, SONDE_RECORD_KIND_USER, "x", 1),
                     SONDE_STATUS_ERROR_NOT_INITIALIZED);
    void *p = NULL;
    assert_int_equal(sonde_reserve(b, SONDE_RECORD_KIND_USER, 8, &p), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_commit(b), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    /* The clock works before initialisation. */
    uint64_t t1 = sonde_get_timestamp(), t2 = sonde_get_timestamp();
    assert_true(t2 >= t1 && t1 > 0);
}

static void test_initialize_twice_and_again_after_finalize(void **state) {
    (void)state;
    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    assert_true(sonde_is_initialized());
    assert_int_equal(sonde_initialize(), SONDE_STATUS_ERROR_ALREADY_INITIALIZED);
    sonde_session_id_t s;
    assert_int_equal(sonde_create_session(NULL, &s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
    assert_false(sonde_is_initialized());
    assert_int_equal(sonde_finalize(), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    /* Re-initialising works, and the old id stays stale. */
    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_ERROR_SESSION_NOT_FOUND);
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
}

static int setup(void **state) {
    (void)state;
    return sonde_initialize() == SONDE_STATUS_SUCCESS ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return sonde_finalize() == SONDE_STATUS_SUCCESS ? 0 : -1;
}

static void test_session_lifecycle(void **state) {
    (void)state;
    sonde_session_id_t s;
    bool active = true;
    assert_int_equal(sonde_create_session(NULL, &s), SONDE_STATUS_SUCCESS);
    assert_true(s.handle != 0);
    assert_int_equal(sonde_session_is_active(s, &active), SONDE_STATUS_SUCCESS);
    assert_false(active);
    assert_int_equal(sonde_stop_session(s), SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_ERROR_SESSION_ACTIVE);
    assert_int_equal(sonde_session_is_active(s, &active), SONDE_STATUS_SUCCESS);
    assert_true(active);
    assert_int_equal(sonde_stop_session(s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_destroy_session(s), SONDE_STATUS_SUCCESS);
    /* Stale id everywhere. */
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_ERROR_SESSION_NOT_FOUND);
    assert_int_equal(sonde_stop_session(s), SONDE_STATUS_ERROR_SESSION_NOT_FOUND);
    assert_int_equal(sonde_destroy_session(s), SONDE_STATUS_ERROR_SESSION_NOT_FOUND);
    assert_int_equal(sonde_session_is_active(s, &active), SONDE_STATUS_ERROR_SESSION_NOT_FOUND);
    /* A new session in the same slot gets a new generation. */
    sonde_session_id_t s2;
    assert_int_equal(sonde_create_session(NULL, &s2), SONDE_STATUS_SUCCESS);
    assert_true(s2.handle != s.handle);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_ERROR_SESSION_NOT_FOUND);
    assert_int_equal(sonde_destroy_session(s2), SONDE_STATUS_SUCCESS);
}

static void test_forged_ids_and_nulls(void **state) {
    (void)state;
    sonde_session_id_t forged[] = {
        {0}, {1}, {0xFFFFFFFFFFFFFFFFull}, {(uint64_t)77 << 32 | 3}, {(uint64_t)1 << 32 | 100000}};
    bool active;
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; ++i) {
        assert_int_equal(sonde_start_session(forged[i]), SONDE_STATUS_ERROR_SESSION_NOT_FOUND);
        assert_int_equal(sonde_stop_session(forged[i]), SONDE_STATUS_ERROR_SESSION_NOT_FOUND);
        assert_int_equal(sonde_destroy_session(forged[i]), SONDE_STATUS_ERROR_SESSION_NOT_FOUND);
        assert_int_equal(sonde_session_is_active(forged[i], &active), SONDE_STATUS_ERROR_SESSION_NOT_FOUND);
    }
    assert_int_equal(sonde_create_session(NULL, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    sonde_session_id_t s;
    assert_int_equal(sonde_create_session(NULL, &s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_session_is_active(s, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_destroy_session(s), SONDE_STATUS_SUCCESS);
}

static void test_properties_struct_size(void **state) {
    (void)state;
    sonde_session_id_t s;
    sonde_session_properties_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.name = "a-session-name";
    assert_int_equal(sonde_create_session(&p, &s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_destroy_session(s), SONDE_STATUS_SUCCESS);
    /* Too small: older than version 1.0. */
    p.struct_size = 4;
    assert_int_equal(sonde_create_session(&p, &s), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    p.struct_size = 0;
    assert_int_equal(sonde_create_session(&p, &s), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    /* Larger, from a newer header: accepted when the unknown tail is zero. */
    struct {
        sonde_session_properties_t v1;
        uint64_t future[4];
    } big;
    memset(&big, 0, sizeof big);
    big.v1.struct_size = sizeof big;
    assert_int_equal(sonde_create_session(&big.v1, &s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_destroy_session(s), SONDE_STATUS_SUCCESS);
    big.future[2] = 1;
    assert_int_equal(sonde_create_session(&big.v1, &s), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    /* Reserved flags. */
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.flags = 1;
    assert_int_equal(sonde_create_session(&p, &s), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
}

static void test_session_limit(void **state) {
    (void)state;
    static sonde_session_id_t ids[300];
    size_t n = 0;
    sonde_status_t st = SONDE_STATUS_SUCCESS;
    while (n < 300 && (st = sonde_create_session(NULL, &ids[n])) == SONDE_STATUS_SUCCESS) ++n;
    assert_int_equal(st, SONDE_STATUS_ERROR_LIMIT);
    assert_true(n >= 64);
    for (size_t i = 0; i < n; ++i) assert_int_equal(sonde_destroy_session(ids[i]), SONDE_STATUS_SUCCESS);
}

static void test_finalize_destroys_sessions(void **state) {
    (void)state;
    sonde_session_id_t s;
    assert_int_equal(sonde_create_session(NULL, &s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_stop_session(s), SONDE_STATUS_ERROR_SESSION_NOT_FOUND);
}

int main(void) {
    const struct CMUnitTest lifecycle[] = {
        cmocka_unit_test(test_calls_before_initialize),
        cmocka_unit_test(test_initialize_twice_and_again_after_finalize),
    };
    const struct CMUnitTest sessions[] = {
        cmocka_unit_test(test_session_lifecycle),          cmocka_unit_test(test_forged_ids_and_nulls),
        cmocka_unit_test(test_properties_struct_size),     cmocka_unit_test(test_session_limit),
        cmocka_unit_test(test_finalize_destroys_sessions),
    };
    int failed = cmocka_run_group_tests_name("lifecycle", lifecycle, NULL, NULL);
    failed += cmocka_run_group_tests_name("sessions", sessions, setup, teardown);
    return failed;
}
