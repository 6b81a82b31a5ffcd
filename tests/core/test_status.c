/* Status values: every value has a name and a sentence; unknown values are answered too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sonde/sonde.h>

static void test_every_status_has_name_and_string(void **state) {
    (void)state;
    for (uint32_t s = 0; s < SONDE_STATUS_LAST; ++s) {
        const char *name = sonde_status_name(s);
        const char *text = sonde_status_string(s);
        assert_non_null(name);
        assert_non_null(text);
        assert_true(strncmp(name, "SONDE_STATUS_", 13) == 0);
        assert_true(strlen(text) > 10);
        for (uint32_t t = 0; t < s; ++t) assert_string_not_equal(name, sonde_status_name(t));
    }
}

static void test_pinned_values(void **state) {
    (void)state;
    assert_int_equal(SONDE_STATUS_SUCCESS, 0);
    assert_string_equal(sonde_status_name(SONDE_STATUS_SUCCESS), "SONDE_STATUS_SUCCESS");
    assert_string_equal(sonde_status_name(SONDE_STATUS_PARTIAL_INFO), "SONDE_STATUS_PARTIAL_INFO");
    assert_string_equal(sonde_status_name(SONDE_STATUS_ERROR), "SONDE_STATUS_ERROR");
    assert_string_equal(sonde_status_name(SONDE_STATUS_ERROR_RECORD_CORRUPTED),
                        "SONDE_STATUS_ERROR_RECORD_CORRUPTED");
    assert_string_equal(sonde_status_name(SONDE_STATUS_ERROR_CORRUPTED_SESSION_BUFFER),
                        "SONDE_STATUS_ERROR_CORRUPTED_SESSION_BUFFER");
    assert_int_equal(SONDE_STATUS_ERROR_NULL_POINTER, SONDE_STATUS_ERROR_NULL_POINTER);
    const uint32_t required[] = {SONDE_STATUS_ERROR_NOT_INITIALIZED,
                                 SONDE_STATUS_ERROR_ALREADY_INITIALIZED,
                                 SONDE_STATUS_ERROR_INVALID_ARGUMENT,
                                 SONDE_STATUS_ERROR_NULL_POINTER,
                                 SONDE_STATUS_ERROR_SESSION_NOT_FOUND,
                                 SONDE_STATUS_ERROR_BUFFER_NOT_FOUND,
                                 SONDE_STATUS_ERROR_SESSION_ACTIVE,
                                 SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE,
                                 SONDE_STATUS_ERROR_BUFFER_FULL,
                                 SONDE_STATUS_ERROR_OUT_OF_MEMORY,
                                 SONDE_STATUS_ERROR_BUFFER_TOO_SHORT,
                                 SONDE_STATUS_ERROR_ILLEGAL_ID,
                                 SONDE_STATUS_ERROR_NOT_SUPPORTED,
                                 SONDE_STATUS_ERROR_PHASE_FAILURE,
                                 SONDE_STATUS_ERROR_INCOMPATIBLE_ABI,
                                 SONDE_STATUS_ERROR_IO,
                                 SONDE_STATUS_ERROR_FORMAT};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; ++i)
        assert_string_not_equal(sonde_status_name(required[i]), "SONDE_STATUS_UNKNOWN");
}

static void test_unknown_status(void **state) {
    (void)state;
    assert_string_equal(sonde_status_name(SONDE_STATUS_LAST), "SONDE_STATUS_UNKNOWN");
    assert_string_equal(sonde_status_name(0xFFFFFFFFu), "SONDE_STATUS_UNKNOWN");
    assert_non_null(sonde_status_string(12345));
}

static void test_version(void **state) {
    (void)state;
    uint32_t major = 9, minor = 9, patch = 9;
    assert_int_equal(sonde_get_version(&major, &minor, &patch), SONDE_VERSION);
    assert_int_equal(major, SONDE_VERSION_MAJOR);
    assert_int_equal(minor, SONDE_VERSION_MINOR);
    assert_int_equal(patch, SONDE_VERSION_PATCH);
    assert_int_equal(sonde_get_version(NULL, NULL, NULL), SONDE_VERSION);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_status_has_name_and_string),
        cmocka_unit_test(test_pinned_values),
        cmocka_unit_test(test_unknown_status),
        cmocka_unit_test(test_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
