/* Poll delivery (SONDE_BUFFER_DELIVERY_POLL, sonde_poll_buffer): records reach the callback on
 * the polling thread only, in order with exact accounting; the timeout; LOSSLESS producers
 * wait for a poll; flush, stop and thread exit make records pollable and call nothing; destroy
 * discards what was not polled; bad arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect.h" /* tests/common */

static sonde_session_id_t g_session;

static int setup(void **state) {
    (void)state;
    if (sonde_initialize() != SONDE_STATUS_SUCCESS) return -1;
    if (sonde_create_session(NULL, &g_session) != SONDE_STATUS_SUCCESS) return -1;
    return sonde_start_session(g_session) == SONDE_STATUS_SUCCESS ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    sonde_destroy_session(g_session);
    return sonde_finalize() == SONDE_STATUS_SUCCESS ? 0 : -1;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Counts the calls of a callback that Sonde must never call: a poll buffer's own. */
static int g_creation_callback_calls;

static void creation_cb(const sonde_record_header_t *b, const sonde_record_header_t *e, sonde_session_id_t s,
                        sonde_buffer_id_t bu, void *u) {
    (void)b, (void)e, (void)s, (void)bu, (void)u;
    __atomic_add_fetch(&g_creation_callback_calls, 1, __ATOMIC_RELAXED);
}

static sonde_buffer_id_t make_poll_buffer(uint64_t size, uint32_t policy, uint64_t chunk,
                                          uint64_t timeout_ns) {
    const sonde_buffer_property_t props[4] = {
        {SONDE_BUFFER_PROPERTY_KIND_DELIVERY, 0, SONDE_BUFFER_DELIVERY_POLL},
        {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, policy},
        {SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, chunk},
        {SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT, 0, timeout_ns}};
    sonde_buffer_id_t b = {0};
    assert_int_equal(sonde_create_buffer(g_session, size, creation_cb, NULL, props, 4, &b),
                     SONDE_STATUS_SUCCESS);
    return b;
}

static sonde_buffer_stats_t stats_of(sonde_buffer_id_t b) {
    sonde_buffer_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    assert_int_equal(sonde_get_buffer_stats(g_session, b, &st), SONDE_STATUS_SUCCESS);
    return st;
}

/* Polls with a zero timeout until nothing is left; returns the number of successful polls. */
static int poll_all(sonde_buffer_id_t b, collector_t *col) {
    int n = 0;
    sonde_status_t st;
    while ((st = sonde_poll_buffer(g_session, b, 0, collector_cb, col)) == SONDE_STATUS_SUCCESS) ++n;
    assert_int_equal(st, SONDE_STATUS_ERROR_TIMEOUT);
    return n;
}

static void emit_seq(sonde_buffer_id_t b, uint64_t from, uint64_t count) {
    for (uint64_t i = from; i < from + count; ++i)
        assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &i, sizeof i), SONDE_STATUS_SUCCESS);
}

static void assert_seq(const collector_t *col, size_t at, uint64_t from, uint64_t count) {
    assert_true(col->count >= at + count);
    for (uint64_t i = 0; i < count; ++i) {
        uint64_t v;
        memcpy(&v, col->items[at + i].payload, sizeof v);
        assert_int_equal(col->items[at + i].kind, SONDE_RECORD_KIND_USER);
        assert_int_equal(v, from + i);
    }
}

static void test_poll_order_and_accounting(void **state) {
    (void)state;
    g_creation_callback_calls = 0;
    collector_t col;
    collector_init(&col);
    sonde_buffer_id_t b = make_poll_buffer(1 << 20, SONDE_BUFFER_POLICY_LOSSLESS, 4096, 1000000000u);
    assert_int_equal(sonde_poll_buffer(g_session, b, 0, collector_cb, &col), SONDE_STATUS_ERROR_TIMEOUT);
    emit_seq(b, 0, 3000); /* several chunks: sealed ones and a partial one */
    assert_true(poll_all(b, &col) >= 1);
    assert_int_equal(col.count, 3000);
    assert_int_equal(col.bad_spans, 0);
    assert_seq(&col, 0, 0, 3000);
    /* The rest of a chunk already partly polled comes with its THREAD marker again. */
    emit_seq(b, 3000, 10);
    assert_int_equal(poll_all(b, &col), 1);
    assert_seq(&col, 3000, 3000, 10);
    assert_int_equal(col.bad_spans, 0);
    const sonde_buffer_stats_t st = stats_of(b);
    assert_int_equal(st.records_emitted, 3010);
    assert_int_equal(st.records_delivered, 3010);
    assert_int_equal(st.records_dropped, 0);
    assert_int_equal(st.callbacks, col.spans);
    assert_int_equal(g_creation_callback_calls, 0);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
    collector_free(&col);
}

typedef struct {
    sonde_buffer_id_t b;
    uint64_t count;
    useconds_t delay_us;
    int done;
    uint64_t full;
} producer_arg_t;

static void *producer(void *arg) {
    producer_arg_t *a = (producer_arg_t *)arg;
    if (a->delay_us) usleep(a->delay_us);
    for (uint64_t i = 0; i < a->count; ++i) {
        sonde_status_t st = sonde_emit(a->b, SONDE_RECORD_KIND_USER, &i, sizeof i);
        if (st == SONDE_STATUS_ERROR_BUFFER_FULL)
            a->full++;
        else
            assert_int_equal(st, SONDE_STATUS_SUCCESS);
    }
    __atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_poll_timeout(void **state) {
    (void)state;
    collector_t col;
    collector_init(&col);
    sonde_buffer_id_t b = make_poll_buffer(1 << 20, SONDE_BUFFER_POLICY_LOSSLESS, 4096, 1000000000u);
    uint64_t t0 = now_ns();
    assert_int_equal(sonde_poll_buffer(g_session, b, 30000000u, collector_cb, &col),
                     SONDE_STATUS_ERROR_TIMEOUT);
    assert_true(now_ns() - t0 >= 30000000u);
    assert_int_equal(col.spans, 0);

    /* A record emitted by another thread while the poll waits ends the wait long before it
     * times out, and the thread's exit leaves the record pollable. */
    producer_arg_t a = {b, 1, 50000, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, producer, &a);
    t0 = now_ns();
    assert_int_equal(sonde_poll_buffer(g_session, b, 10000000000u, collector_cb, &col), SONDE_STATUS_SUCCESS);
    assert_true(now_ns() - t0 < 5000000000u);
    pthread_join(t, NULL);
    poll_all(b, &col);
    assert_int_equal(col.count, 1);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
    collector_free(&col);
}

static void test_poll_lossless_producer_waits_for_poll(void **state) {
    (void)state;
    collector_t col;
    collector_init(&col);
    /* Four chunks of 4 KiB: far fewer than the records below need. */
    sonde_buffer_id_t b = make_poll_buffer(4 * 4096, SONDE_BUFFER_POLICY_LOSSLESS, 4096, 30000000000u);
    producer_arg_t a = {b, 20000, 0, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, producer, &a);
    usleep(200000);
    /* Nothing consumes: the producer is blocked, waiting for the poller, and drops nothing. */
    assert_int_equal(__atomic_load_n(&a.done, __ATOMIC_ACQUIRE), 0);
    const sonde_buffer_stats_t before = stats_of(b);
    assert_true(before.records_emitted < 20000);
    assert_int_equal(before.records_dropped, 0);
    assert_int_equal(before.records_delivered, 0);
    while (!__atomic_load_n(&a.done, __ATOMIC_ACQUIRE))
        assert_int_not_equal(sonde_poll_buffer(g_session, b, 1000000u, collector_cb, &col),
                             SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    pthread_join(t, NULL);
    poll_all(b, &col);
    assert_int_equal(a.full, 0);
    assert_int_equal(col.count, 20000);
    assert_seq(&col, 0, 0, 20000);
    const sonde_buffer_stats_t st = stats_of(b);
    assert_int_equal(st.records_emitted, 20000);
    assert_int_equal(st.records_delivered, 20000);
    assert_int_equal(st.records_dropped, 0);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
    collector_free(&col);
}

static void test_poll_discard_counts_losses(void **state) {
    (void)state;
    collector_t col;
    collector_init(&col);
    sonde_buffer_id_t b = make_poll_buffer(4 * 4096, SONDE_BUFFER_POLICY_DISCARD, 4096, 0);
    uint64_t full = 0;
    for (uint64_t i = 0; i < 5000; ++i) {
        sonde_status_t st = sonde_emit(b, SONDE_RECORD_KIND_USER, &i, sizeof i);
        if (st == SONDE_STATUS_ERROR_BUFFER_FULL)
            full++;
        else
            assert_int_equal(st, SONDE_STATUS_SUCCESS);
    }
    assert_true(full > 0);
    poll_all(b, &col);
    /* A poll frees the chunks: the next record carries the LOSS report in front of it. */
    uint64_t last = 5000;
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &last, sizeof last), SONDE_STATUS_SUCCESS);
    poll_all(b, &col);
    assert_int_equal(col.losses, full);
    assert_int_equal(col.count, 5001 - full);
    const sonde_buffer_stats_t st = stats_of(b);
    assert_int_equal(st.records_emitted, 5001);
    assert_int_equal(st.records_dropped, full);
    assert_int_equal(st.records_emitted, st.records_delivered + st.records_dropped);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
    collector_free(&col);
}

static void test_flush_stop_exit_make_records_pollable(void **state) {
    (void)state;
    g_creation_callback_calls = 0;
    collector_t col;
    collector_init(&col);
    sonde_buffer_id_t b = make_poll_buffer(1 << 20, SONDE_BUFFER_POLICY_LOSSLESS, 4096, 1000000000u);
    /* Thread exit: the thread's records stay, and the next poll delivers them. */
    producer_arg_t a = {b, 700, 0, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, producer, &a);
    pthread_join(t, NULL);
    /* Flush calls no callback; everything before it is pollable. */
    emit_seq(b, 0, 5);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_flush_data(g_session, (sonde_buffer_id_t){0}), SONDE_STATUS_SUCCESS);
    assert_int_equal(col.spans, 0);
    poll_all(b, &col);
    assert_int_equal(col.count, 705);
    /* Stop: the records before it are pollable while the session is stopped. */
    emit_seq(b, 5, 7);
    assert_int_equal(sonde_stop_session(g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &a, 8), SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE);
    poll_all(b, &col);
    assert_int_equal(col.count, 712);
    assert_int_equal(sonde_start_session(g_session), SONDE_STATUS_SUCCESS);
    /* Per thread, in order: the exited producer's 0..699, the main thread's 0..11. */
    uint64_t next_by[2] = {0, 0}, tid[2] = {0, 0};
    for (size_t i = 0; i < col.count; ++i) {
        int k = tid[0] == 0 || tid[0] == col.items[i].thread_id ? 0 : 1;
        if (tid[k] == 0) tid[k] = col.items[i].thread_id;
        assert_int_equal(tid[k], col.items[i].thread_id);
        uint64_t v;
        memcpy(&v, col.items[i].payload, sizeof v);
        assert_int_equal(v, next_by[k]++);
    }
    assert_true((next_by[0] == 700 && next_by[1] == 12) || (next_by[0] == 12 && next_by[1] == 700));
    const sonde_buffer_stats_t st = stats_of(b);
    assert_int_equal(st.records_emitted, 712);
    assert_int_equal(st.records_delivered, 712);
    assert_int_equal(g_creation_callback_calls, 0);
    /* Destroy discards what nobody polled and says so. */
    emit_seq(b, 12, 3);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_PARTIAL_INFO);
    assert_int_equal(sonde_poll_buffer(g_session, b, 0, collector_cb, &col),
                     SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    assert_int_equal(g_creation_callback_calls, 0);
    assert_int_equal(col.count, 712);
    collector_free(&col);
}

typedef struct {
    sonde_buffer_id_t b;
    sonde_status_t inner;
} inner_arg_t;

static void polling_cb(const sonde_record_header_t *b, const sonde_record_header_t *e, sonde_session_id_t s,
                       sonde_buffer_id_t bu, void *u) {
    (void)b, (void)e, (void)bu;
    inner_arg_t *a = (inner_arg_t *)u;
    a->inner = sonde_poll_buffer(s, a->b, 0, creation_cb, NULL);
}

typedef struct {
    sonde_buffer_id_t b;
    sonde_status_t st;
} waiter_arg_t;

static void *waiter(void *arg) {
    waiter_arg_t *w = (waiter_arg_t *)arg;
    w->st = sonde_poll_buffer(g_session, w->b, 30000000000u, creation_cb, NULL);
    return NULL;
}

static void test_poll_bad_arguments(void **state) {
    (void)state;
    sonde_buffer_id_t b, tb;
    const sonde_buffer_property_t poll_prop = {SONDE_BUFFER_PROPERTY_KIND_DELIVERY, 0,
                                               SONDE_BUFFER_DELIVERY_POLL};
    const sonde_buffer_property_t thread_prop = {SONDE_BUFFER_PROPERTY_KIND_DELIVERY, 0,
                                                 SONDE_BUFFER_DELIVERY_THREAD};
    const sonde_buffer_property_t bad_prop = {SONDE_BUFFER_PROPERTY_KIND_DELIVERY, 0, 7};
    /* A NULL callback is fine for POLL only. */
    assert_int_equal(sonde_create_buffer(g_session, 1 << 20, NULL, NULL, &thread_prop, 1, &tb),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_create_buffer(g_session, 1 << 20, creation_cb, NULL, &bad_prop, 1, &tb),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    const sonde_buffer_property_t twice[2] = {poll_prop, thread_prop};
    assert_int_equal(sonde_create_buffer(g_session, 1 << 20, creation_cb, NULL, twice, 2, &tb),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_create_buffer(g_session, 1 << 20, NULL, NULL, &poll_prop, 1, &b),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_create_buffer(g_session, 1 << 20, creation_cb, NULL, &thread_prop, 1, &tb),
                     SONDE_STATUS_SUCCESS);

    assert_int_equal(sonde_poll_buffer(g_session, b, 0, NULL, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_poll_buffer(g_session, tb, 0, creation_cb, NULL),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    sonde_buffer_id_t forged = {b.handle + ((uint64_t)1 << 32)};
    assert_int_equal(sonde_poll_buffer(g_session, forged, 0, creation_cb, NULL),
                     SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    sonde_session_id_t stale = {(uint64_t)999 << 32 | 7};
    assert_int_equal(sonde_poll_buffer(stale, b, 0, creation_cb, NULL), SONDE_STATUS_ERROR_SESSION_NOT_FOUND);

    /* From inside a callback, whichever buffer: refused (it would wait for deliveries). */
    sonde_buffer_id_t b2;
    assert_int_equal(sonde_create_buffer(g_session, 1 << 20, NULL, NULL, &poll_prop, 1, &b2),
                     SONDE_STATUS_SUCCESS);
    uint64_t v = 1;
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &v, sizeof v), SONDE_STATUS_SUCCESS);
    inner_arg_t in = {b2, SONDE_STATUS_SUCCESS};
    assert_int_equal(sonde_poll_buffer(g_session, b, 0, polling_cb, &in), SONDE_STATUS_SUCCESS);
    assert_int_equal(in.inner, SONDE_STATUS_ERROR_IN_CALLBACK);
    in.b = b;
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &v, sizeof v), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_poll_buffer(g_session, b, 0, polling_cb, &in), SONDE_STATUS_SUCCESS);
    assert_int_equal(in.inner, SONDE_STATUS_ERROR_IN_CALLBACK);

    /* Destroyed while a poller waits: the poller returns BUFFER_NOT_FOUND at once. Nothing was
     * left unpolled, so the destroy answers SUCCESS. */
    waiter_arg_t w = {b2, SONDE_STATUS_SUCCESS};
    pthread_t t;
    pthread_create(&t, NULL, waiter, &w);
    usleep(50000);
    const uint64_t t0 = now_ns();
    assert_int_equal(sonde_destroy_buffer(g_session, b2), SONDE_STATUS_SUCCESS);
    pthread_join(t, NULL);
    assert_true(now_ns() - t0 < 5000000000u);
    assert_int_equal(w.st, SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    assert_int_equal(sonde_poll_buffer(g_session, b2, 0, creation_cb, NULL),
                     SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);

    assert_int_equal(sonde_destroy_buffer(g_session, tb), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
}

static void test_poll_after_finalize(void **state) {
    (void)state;
    sonde_buffer_id_t b = make_poll_buffer(1 << 20, SONDE_BUFFER_POLICY_LOSSLESS, 4096, 1000000000u);
    emit_seq(b, 0, 10);
    /* Finalize discards what was not polled, calls nothing, and succeeds. */
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_poll_buffer(g_session, b, 0, creation_cb, NULL),
                     SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_create_session(NULL, &g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_poll_buffer(g_session, b, 0, creation_cb, NULL),
                     SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_poll_order_and_accounting),
        cmocka_unit_test(test_poll_timeout),
        cmocka_unit_test(test_poll_lossless_producer_waits_for_poll),
        cmocka_unit_test(test_poll_discard_counts_losses),
        cmocka_unit_test(test_flush_stop_exit_make_records_pollable),
        cmocka_unit_test(test_poll_bad_arguments),
        cmocka_unit_test(test_poll_after_finalize),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
