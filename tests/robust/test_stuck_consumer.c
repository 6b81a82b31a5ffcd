/* A consumer that is stuck (its callback blocks) must not make LOSSLESS producers wait
 * forever: each record waits at most the lossless timeout, is then dropped and counted, and
 * once the callback is released the accounting is exact (emitted == delivered + dropped), with
 * the drops reported in-stream by a LOSS record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <time.h>

#include <cmocka.h>

#include "collect.h" /* tests/common */

#define TIMEOUT_NS 20000000ull /* 20 ms */
#define DROPS 5

typedef struct stuck_t {
    collector_t col;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int entered;  /* the callback is blocked */
    int released; /* the test let it go */
} stuck_t;

static void stuck_cb(const sonde_record_header_t *begin, const sonde_record_header_t *end,
                     sonde_session_id_t s, sonde_buffer_id_t b, void *user) {
    stuck_t *st = (stuck_t *)user;
    pthread_mutex_lock(&st->mu);
    st->entered = 1;
    pthread_cond_broadcast(&st->cv);
    while (!st->released) pthread_cond_wait(&st->cv, &st->mu);
    pthread_mutex_unlock(&st->mu);
    collector_cb(begin, end, s, b, &st->col);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_stuck_callback(void **state) {
    (void)state;
    stuck_t st;
    memset(&st, 0, sizeof st);
    collector_init(&st.col);
    pthread_mutex_init(&st.mu, NULL);
    pthread_cond_init(&st.cv, NULL);

    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    sonde_session_id_t s;
    assert_int_equal(sonde_create_session(NULL, &s), SONDE_STATUS_SUCCESS);
    /* Four chunks of 4 KiB, delivered by the delivery thread as soon as one is sealed. */
    const sonde_buffer_property_t props[4] = {
        {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, SONDE_BUFFER_POLICY_LOSSLESS},
        {SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096},
        {SONDE_BUFFER_PROPERTY_KIND_WATERMARK, 0, 1},
        {SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT, 0, TIMEOUT_NS}};
    sonde_buffer_id_t b;
    assert_int_equal(sonde_create_buffer(s, 4 * 4096, stuck_cb, &st, props, 4, &b), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_SUCCESS);

    /* Emit until DROPS records were dropped: the delivery thread sits in the callback, so
     * chunks run out and every further record waits the timeout, then is dropped. */
    uint64_t accepted = 0, dropped = 0, seq = 0;
    const double t0 = now_s();
    double slowest_drop = 0;
    while (dropped < DROPS) {
        const uint64_t payload[2] = {seq++, 0};
        const double e0 = now_s();
        const sonde_status_t rc = sonde_emit(b, SONDE_RECORD_KIND_USER, payload, sizeof payload);
        const double took = now_s() - e0;
        if (rc == SONDE_STATUS_SUCCESS) {
            ++accepted;
        } else {
            assert_int_equal(rc, SONDE_STATUS_ERROR_BUFFER_FULL);
            ++dropped;
            if (took > slowest_drop) slowest_drop = took;
        }
        assert_true(now_s() - t0 < 30.0); /* never forever */
    }
    pthread_mutex_lock(&st.mu);
    assert_true(st.entered); /* it really was the stuck callback that held the chunks */
    pthread_mutex_unlock(&st.mu);
    /* A drop waits about the timeout: well under a second, never the default 1 s. */
    print_message("%llu accepted, %llu dropped, slowest drop %.1f ms\n", (unsigned long long)accepted,
                  (unsigned long long)dropped, slowest_drop * 1e3);
    assert_true(slowest_drop < 0.5);

    /* Release the consumer; the next record carries the LOSS report ahead of it. */
    pthread_mutex_lock(&st.mu);
    st.released = 1;
    pthread_cond_broadcast(&st.cv);
    pthread_mutex_unlock(&st.mu);
    assert_int_equal(sonde_flush_data(s, b), SONDE_STATUS_SUCCESS);
    const uint64_t last[2] = {seq++, 0};
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, last, sizeof last), SONDE_STATUS_SUCCESS);
    ++accepted;
    assert_int_equal(sonde_flush_data(s, b), SONDE_STATUS_SUCCESS);

    sonde_buffer_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    assert_int_equal(sonde_get_buffer_stats(s, b, &stats), SONDE_STATUS_SUCCESS);
    assert_int_equal(stats.records_emitted, accepted + dropped);
    assert_int_equal(stats.records_dropped, dropped);
    assert_int_equal(stats.records_delivered, accepted);
    assert_int_equal(stats.records_emitted, stats.records_delivered + stats.records_dropped);
    assert_int_equal(collector_count(&st.col), accepted);
    pthread_mutex_lock(&st.col.mu);
    assert_int_equal(st.col.losses, dropped);
    assert_int_equal(st.col.bad_spans, 0);
    pthread_mutex_unlock(&st.col.mu);

    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
    collector_free(&st.col);
    pthread_cond_destroy(&st.cv);
    pthread_mutex_destroy(&st.mu);
}

/* With one delivery worker (SONDE_DELIVERY_THREADS=1, set by main), a stuck consumer of one
 * buffer stalls it, so a LOSSLESS producer of another buffer that waits for it also times out
 * and drops, rather than hanging. (With more workers, another one delivers the other buffer:
 * core_delivery_pool tests that; the pool grows with the load, so how many workers exist when
 * the callback sticks would depend on timing here.) */
static void test_stuck_callback_other_buffer(void **state) {
    (void)state;
    stuck_t st;
    memset(&st, 0, sizeof st);
    collector_init(&st.col);
    pthread_mutex_init(&st.mu, NULL);
    pthread_cond_init(&st.cv, NULL);
    collector_t other;
    collector_init(&other);

    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    sonde_session_id_t s;
    assert_int_equal(sonde_create_session(NULL, &s), SONDE_STATUS_SUCCESS);
    const sonde_buffer_property_t props[4] = {
        {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, SONDE_BUFFER_POLICY_LOSSLESS},
        {SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096},
        {SONDE_BUFFER_PROPERTY_KIND_WATERMARK, 0, 1},
        {SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT, 0, TIMEOUT_NS}};
    sonde_buffer_id_t stuck, b;
    assert_int_equal(sonde_create_buffer(s, 4 * 4096, stuck_cb, &st, props, 4, &stuck), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_create_buffer(s, 4 * 4096, collector_cb, &other, props, 4, &b),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_SUCCESS);

    /* Get the delivery thread stuck in the first buffer's callback. */
    for (uint64_t i = 0; i < 400; ++i) {
        const uint64_t payload[2] = {i, 1};
        const sonde_status_t rc = sonde_emit(stuck, SONDE_RECORD_KIND_USER, payload, sizeof payload);
        assert_true(rc == SONDE_STATUS_SUCCESS || rc == SONDE_STATUS_ERROR_BUFFER_FULL);
    }
    pthread_mutex_lock(&st.mu);
    while (!st.entered) pthread_cond_wait(&st.cv, &st.mu);
    pthread_mutex_unlock(&st.mu);

    uint64_t accepted = 0, dropped = 0, seq = 0;
    const double t0 = now_s();
    while (dropped < DROPS) {
        const uint64_t payload[2] = {seq++, 2};
        const sonde_status_t rc = sonde_emit(b, SONDE_RECORD_KIND_USER, payload, sizeof payload);
        if (rc == SONDE_STATUS_SUCCESS)
            ++accepted;
        else {
            assert_int_equal(rc, SONDE_STATUS_ERROR_BUFFER_FULL);
            ++dropped;
        }
        assert_true(now_s() - t0 < 30.0);
    }
    /* The other buffer is flushed by this thread, not the stuck one: exact at once. */
    assert_int_equal(sonde_flush_data(s, b), SONDE_STATUS_SUCCESS);
    sonde_buffer_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    assert_int_equal(sonde_get_buffer_stats(s, b, &stats), SONDE_STATUS_SUCCESS);
    assert_int_equal(stats.records_emitted, accepted + dropped);
    assert_int_equal(stats.records_dropped, dropped);
    assert_int_equal(stats.records_delivered, accepted);
    assert_int_equal(collector_count(&other), accepted);

    pthread_mutex_lock(&st.mu);
    st.released = 1;
    pthread_cond_broadcast(&st.cv);
    pthread_mutex_unlock(&st.mu);
    assert_int_equal(sonde_flush_data(s, stuck), SONDE_STATUS_SUCCESS);
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    assert_int_equal(sonde_get_buffer_stats(s, stuck, &stats), SONDE_STATUS_SUCCESS);
    assert_int_equal(stats.records_emitted, stats.records_delivered + stats.records_dropped);
    assert_int_equal(collector_count(&st.col), stats.records_delivered);

    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
    collector_free(&other);
    collector_free(&st.col);
    pthread_cond_destroy(&st.cv);
    pthread_mutex_destroy(&st.mu);
}

int main(void) {
    setenv("SONDE_DELIVERY_THREADS", "1", 1); /* read when the runtime starts its pool */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stuck_callback),
        cmocka_unit_test(test_stuck_callback_other_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
