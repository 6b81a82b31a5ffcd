// A C++ client whose buffer callback throws: the exception never crosses the ABI; the flush
// reports SONDE_STATUS_ERROR_CALLBACK_FAILED, the failure is counted, and the buffer keeps
// working.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

extern "C" {
#include <cmocka.h>
}

#include <cstring>
#include <stdexcept>

#include <sonde/sonde.h>

namespace {

int g_calls = 0;

void throwing_cb(const sonde_record_header_t *, const sonde_record_header_t *, sonde_session_id_t,
                 sonde_buffer_id_t, void *) {
    ++g_calls;
    if (g_calls == 1) throw std::runtime_error("consumer failed");
}

void test_throwing_callback(void **) {
    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    sonde_session_id_t s;
    assert_int_equal(sonde_create_session(nullptr, &s), SONDE_STATUS_SUCCESS);
    sonde_buffer_id_t b;
    assert_int_equal(sonde_create_buffer(s, 1 << 16, throwing_cb, nullptr, nullptr, 0, &b),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_SUCCESS);
    uint64_t v = 1;
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_flush_data(s, b), SONDE_STATUS_ERROR_CALLBACK_FAILED);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_flush_data(s, b), SONDE_STATUS_SUCCESS);
    sonde_buffer_stats_t st;
    std::memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    assert_int_equal(sonde_get_buffer_stats(s, b, &st), SONDE_STATUS_SUCCESS);
    assert_int_equal(st.callback_failures, 1);
    assert_int_equal(st.callbacks, 2);
    assert_int_equal(st.records_delivered, 2);
    assert_int_equal(g_calls, 2);
    assert_int_equal(sonde_destroy_session(s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_throwing_callback)};
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
