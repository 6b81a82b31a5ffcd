/* Profile arrays into the record stream: sonde_profile_array_emit through a real session,
 * buffer and callback; counter-id encoding, summed mode, timestamps, and its failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include <cmocka.h>

#include <sonde/profile.h>
#include <sonde/sonde.h>

#include "collect.h" /* tests/common */

/* The i-th collected record as a PROFILER payload (callbacks of one buffer never overlap, and
 * the test thread reads only after sonde_flush_data or sonde_stop_session returned). */
static sonde_profiler_record_t profiler(collector_t *c, size_t i) {
    sonde_profiler_record_t r;
    assert_true(i < c->count);
    assert_int_equal(c->items[i].kind, SONDE_RECORD_KIND_PROFILER);
    memcpy(&r, c->items[i].payload, sizeof r);
    return r;
}

typedef struct fixture_t {
    sonde_session_id_t session;
    sonde_buffer_id_t buffer;
    collector_t sink;
    sonde_profile_buffer_t *pb;
    sonde_profile_array_t *arr; /* 3 records of 2 u64, 2 buckets */
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    if (f == NULL || sonde_initialize() != SONDE_STATUS_SUCCESS) return -1;
    collector_init(&f->sink);
    if (sonde_create_session(NULL, &f->session) != SONDE_STATUS_SUCCESS) return -1;
    if (sonde_create_buffer(f->session, 1 << 20, collector_cb, &f->sink, NULL, 0, &f->buffer) !=
        SONDE_STATUS_SUCCESS)
        return -1;
    if (sonde_profile_buffer_create(1 << 16, &f->pb) != SONDE_STATUS_SUCCESS ||
        sonde_profile_array_create(16, 3, 2, 64, &f->arr) != SONDE_STATUS_SUCCESS ||
        sonde_profile_array_allocate(f->arr, f->pb) != SONDE_STATUS_SUCCESS ||
        sonde_profile_array_initialize(f->arr, f->pb) != SONDE_STATUS_SUCCESS)
        return -1;
    /* bucket 0: record 0 = {5, 0}, record 2 = {0, 7}; bucket 1: record 0 = {1, 0}, record 1 = {0, 9} */
    const uint64_t b0[6] = {5, 0, 0, 0, 0, 7}, b1[6] = {1, 0, 0, 9, 0, 0};
    if (sonde_profile_array_write(f->arr, f->pb, b0, 0, 3, 0) != SONDE_STATUS_SUCCESS ||
        sonde_profile_array_write(f->arr, f->pb, b1, 0, 3, 1) != SONDE_STATUS_SUCCESS)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    sonde_profile_array_destroy(f->arr);
    sonde_profile_buffer_destroy(f->pb);
    sonde_destroy_session(f->session);
    collector_free(&f->sink);
    free(f);
    return sonde_finalize() == SONDE_STATUS_SUCCESS ? 0 : -1;
}

static void test_counter_id_macros(void **state) {
    (void)state;
    const uint64_t id = SONDE_PROFILE_COUNTER_ID(3, 0x12345678u, 5);
    assert_int_equal(SONDE_PROFILE_COUNTER_BUCKET(id), 3);
    assert_int_equal(SONDE_PROFILE_COUNTER_RECORD(id), 0x12345678u);
    assert_int_equal(SONDE_PROFILE_COUNTER_WORD(id), 5);
    const uint64_t all = SONDE_PROFILE_COUNTER_ID(SONDE_PROFILE_COUNTER_ALL_BUCKETS, UINT32_MAX, 0xFFFF);
    assert_true(all == UINT64_MAX);
}

static void test_emit_per_bucket(void **state) {
    fixture_t *f = *state;
    assert_int_equal(sonde_start_session(f->session), SONDE_STATUS_SUCCESS);
    const uint64_t before = sonde_get_timestamp();
    uint64_t emitted = 0;
    assert_int_equal(sonde_profile_array_emit(f->arr, f->pb, f->buffer, 0, &emitted), SONDE_STATUS_SUCCESS);
    const uint64_t after = sonde_get_timestamp();
    assert_int_equal(emitted, 4);
    assert_int_equal(sonde_flush_data(f->session, f->buffer), SONDE_STATUS_SUCCESS);
    assert_int_equal(f->sink.bad_spans, 0);
    assert_int_equal(f->sink.count, 4);
    /* order: bucket, record, word */
    const struct {
        uint32_t bucket, record, word;
        uint64_t value;
    } want[4] = {{0, 0, 0, 5}, {0, 2, 1, 7}, {1, 0, 0, 1}, {1, 1, 1, 9}};
    for (int i = 0; i < 4; ++i) {
        const sonde_profiler_record_t r = profiler(&f->sink, (size_t)i);
        assert_int_equal(SONDE_PROFILE_COUNTER_BUCKET(r.counter_id), want[i].bucket);
        assert_int_equal(SONDE_PROFILE_COUNTER_RECORD(r.counter_id), want[i].record);
        assert_int_equal(SONDE_PROFILE_COUNTER_WORD(r.counter_id), want[i].word);
        assert_int_equal(r.value, want[i].value);
        assert_true(r.timestamp_ns >= before && r.timestamp_ns <= after);
        assert_true(r.timestamp_ns == profiler(&f->sink, 0).timestamp_ns);
    }
    assert_int_equal(sonde_stop_session(f->session), SONDE_STATUS_SUCCESS);
    f->sink.count = 0;
}

static void test_emit_summed(void **state) {
    fixture_t *f = *state;
    assert_int_equal(sonde_start_session(f->session), SONDE_STATUS_SUCCESS);
    uint64_t emitted = 0;
    assert_int_equal(sonde_profile_array_emit(f->arr, f->pb, f->buffer, SONDE_PROFILE_EMIT_SUMMED, &emitted),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(emitted, 3);
    assert_int_equal(sonde_stop_session(f->session), SONDE_STATUS_SUCCESS);
    assert_int_equal(f->sink.count, 3);
    const struct {
        uint32_t record, word;
        uint64_t value;
    } want[3] = {{0, 0, 6}, {1, 1, 9}, {2, 1, 7}};
    for (int i = 0; i < 3; ++i) {
        const sonde_profiler_record_t r = profiler(&f->sink, (size_t)i);
        assert_int_equal(SONDE_PROFILE_COUNTER_BUCKET(r.counter_id), SONDE_PROFILE_COUNTER_ALL_BUCKETS);
        assert_int_equal(SONDE_PROFILE_COUNTER_RECORD(r.counter_id), want[i].record);
        assert_int_equal(SONDE_PROFILE_COUNTER_WORD(r.counter_id), want[i].word);
        assert_int_equal(r.value, want[i].value);
    }
    f->sink.count = 0;
}

static void test_emit_failures(void **state) {
    fixture_t *f = *state;
    uint64_t emitted = 77;
    /* session stopped: sonde_emit's answer, nothing recorded */
    assert_int_equal(sonde_profile_array_emit(f->arr, f->pb, f->buffer, 0, &emitted),
                     SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE);
    assert_int_equal(emitted, 0);
    assert_int_equal(sonde_start_session(f->session), SONDE_STATUS_SUCCESS);
    const sonde_buffer_id_t forged = {f->buffer.handle ^ ((uint64_t)1 << 40)};
    assert_int_equal(sonde_profile_array_emit(f->arr, f->pb, forged, 0, &emitted),
                     SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    assert_int_equal(sonde_profile_array_emit(f->arr, f->pb, f->buffer, 2, &emitted),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_profile_array_emit(NULL, f->pb, f->buffer, 0, &emitted),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_profile_array_emit(f->arr, NULL, f->buffer, 0, &emitted),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(
        sonde_profile_array_emit(f->arr, (sonde_profile_buffer_t *)f->arr, f->buffer, 0, &emitted),
        SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    /* records that are not whole u64 words */
    sonde_profile_array_t *odd = NULL;
    assert_int_equal(sonde_profile_array_create(12, 2, 1, 64, &odd), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_allocate(odd, f->pb), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_emit(odd, f->pb, f->buffer, 0, &emitted),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    sonde_profile_array_destroy(odd);
    /* 65536 buckets cannot be numbered per bucket, only summed */
    sonde_profile_buffer_t *big = NULL;
    sonde_profile_array_t *wide = NULL;
    assert_int_equal(sonde_profile_buffer_create(64ull << 16, &big), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_create(8, 1, 65536, 64, &wide), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_allocate(wide, big), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_initialize(wide, big), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_emit(wide, big, f->buffer, 0, &emitted),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_profile_array_emit(wide, big, f->buffer, SONDE_PROFILE_EMIT_SUMMED, &emitted),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(emitted, 0); /* all zero: nothing to say */
    sonde_profile_array_destroy(wide);
    sonde_profile_buffer_destroy(big);
    /* emitted may be NULL */
    assert_int_equal(sonde_profile_array_emit(f->arr, f->pb, f->buffer, 0, NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_stop_session(f->session), SONDE_STATUS_SUCCESS);
    assert_int_equal(f->sink.count, 4);
    f->sink.count = 0;
}

/* After sonde_finalize the core answers NOT_INITIALIZED, and emit passes that on. */
static void test_emit_not_initialized(void **state) {
    (void)state;
    sonde_profile_buffer_t *pb = NULL;
    sonde_profile_array_t *arr = NULL;
    assert_int_equal(sonde_profile_buffer_create(4096, &pb), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_create(8, 1, 1, 64, &arr), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_allocate(arr, pb), SONDE_STATUS_SUCCESS);
    const uint64_t one = 1;
    assert_int_equal(sonde_profile_array_write(arr, pb, &one, 0, 1, 0), SONDE_STATUS_SUCCESS);
    const sonde_buffer_id_t b = {1};
    uint64_t emitted = 9;
    assert_int_equal(sonde_profile_array_emit(arr, pb, b, 0, &emitted), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(emitted, 0);
    sonde_profile_array_destroy(arr);
    sonde_profile_buffer_destroy(pb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_id_macros),
        cmocka_unit_test_setup_teardown(test_emit_per_bucket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_emit_summed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_emit_failures, setup, teardown),
        cmocka_unit_test(test_emit_not_initialized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
