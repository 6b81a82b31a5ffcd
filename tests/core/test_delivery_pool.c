/* The delivery pool (src/buffer/delivery.cpp, docs/buffers.md "Who runs callbacks"):
 *  - a callback that blocks does not hold up another buffer's deliveries: with one buffer's
 *    callback stuck, another buffer's watermark deliveries still arrive;
 *  - many producers into many buffers, with flushes, interval flushes and threads that exit
 *    while deliveries run: per buffer, the callbacks never overlap (but for the one with
 *    CONCURRENT_CALLBACKS), each producer's records arrive in order without a gap, and
 *    delivered == emitted exactly;
 *  - CONCURRENT_CALLBACKS: two callbacks of one buffer do run at once (one waits inside for
 *    the other), each span one producer's records in order; bad values are refused.
 * Built for ThreadSanitizer too (suite stress). */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/sonde.h>

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- a blocked callback does not block another buffer ---- */

static int g_release;          /* set to let buffer A's callback return */
static int g_a_inside;         /* A's callback runs */
static uint64_t g_b_delivered; /* records B's callback received */

static void cb_a(const sonde_record_header_t *begin, const sonde_record_header_t *end, sonde_session_id_t s,
                 sonde_buffer_id_t b, void *user_data) {
    (void)begin, (void)end, (void)s, (void)b, (void)user_data;
    __atomic_store_n(&g_a_inside, 1, __ATOMIC_RELEASE);
    const uint64_t t0 = now_ms();
    while (!__atomic_load_n(&g_release, __ATOMIC_ACQUIRE) && now_ms() - t0 < 20000) usleep(1000);
}

static void cb_b(const sonde_record_header_t *begin, const sonde_record_header_t *end, sonde_session_id_t s,
                 sonde_buffer_id_t b, void *user_data) {
    (void)s, (void)b, (void)user_data;
    uint64_t n = 0;
    for (const sonde_record_header_t *r = begin; r < end;
         r = (const sonde_record_header_t *)((const char *)r + r->size))
        if (r->kind >= SONDE_RECORD_KIND_USER) ++n;
    __atomic_add_fetch(&g_b_delivered, n, __ATOMIC_ACQ_REL);
}

static void fill_chunks(sonde_buffer_id_t b, int records) {
    uint64_t payload[6] = {0};
    for (int i = 0; i < records; ++i) {
        payload[0] = (uint64_t)i;
        assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, payload, sizeof payload),
                         SONDE_STATUS_SUCCESS);
    }
}

static void test_blocked_callback(void **state) {
    (void)state;
    sonde_session_id_t s;
    sonde_buffer_id_t a, b;
    /* 4 KiB chunks, delivery as soon as one chunk is sealed. */
    const sonde_buffer_property_t props[] = {{SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096},
                                             {SONDE_BUFFER_PROPERTY_KIND_WATERMARK, 0, 4096}};
    assert_int_equal(sonde_create_session(NULL, &s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_create_buffer(s, 64 * 1024, cb_a, NULL, props, 2, &a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_create_buffer(s, 64 * 1024, cb_b, NULL, props, 2, &b), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_SUCCESS);
    fill_chunks(a, 150); /* 150 x 56 bytes: one chunk sealed */
    uint64_t t0 = now_ms();
    while (!__atomic_load_n(&g_a_inside, __ATOMIC_ACQUIRE) && now_ms() - t0 < 10000) usleep(1000);
    assert_true(__atomic_load_n(&g_a_inside, __ATOMIC_ACQUIRE));
    fill_chunks(b, 300); /* several chunks sealed into B while A's callback is stuck */
    t0 = now_ms();
    while (__atomic_load_n(&g_b_delivered, __ATOMIC_ACQUIRE) == 0 && now_ms() - t0 < 10000) usleep(1000);
    const uint64_t seen = __atomic_load_n(&g_b_delivered, __ATOMIC_ACQUIRE);
    __atomic_store_n(&g_release, 1, __ATOMIC_RELEASE);
    assert_true(seen > 0); /* B was delivered while A's callback ran */
    assert_int_equal(sonde_flush_data(s, (sonde_buffer_id_t){0}), SONDE_STATUS_SUCCESS);
    assert_int_equal(__atomic_load_n(&g_b_delivered, __ATOMIC_ACQUIRE), 300);
    assert_int_equal(sonde_destroy_session(s), SONDE_STATUS_SUCCESS);
}

/* ---- many producers, many buffers ---- */

#define BUFFERS 4
#define PRODUCERS 6

typedef struct {
    uint64_t producer;
    uint64_t seq;
} rec_t;

typedef struct {
    int concurrent;           /* the buffer has CONCURRENT_CALLBACKS: overlap allowed */
    int inside;               /* callbacks of this buffer running now */
    int overlap;              /* ever more than one at once */
    uint64_t next[PRODUCERS]; /* next expected sequence number per producer */
    uint64_t out_of_order;
    uint64_t delivered;
} check_t;

static check_t g_check[BUFFERS];

/* Only one callback of a buffer runs at a time (asserted by `inside`), or for a concurrent
 * buffer one per producer (its spans are serialised), so `next[producer]` needs no lock. */
static void cb_check(const sonde_record_header_t *begin, const sonde_record_header_t *end,
                     sonde_session_id_t s, sonde_buffer_id_t b, void *user_data) {
    (void)s, (void)b;
    check_t *c = user_data;
    if (__atomic_add_fetch(&c->inside, 1, __ATOMIC_ACQ_REL) != 1 && !c->concurrent)
        __atomic_store_n(&c->overlap, 1, __ATOMIC_RELAXED);
    for (const sonde_record_header_t *r = begin; r < end;
         r = (const sonde_record_header_t *)((const char *)r + r->size)) {
        if (r->kind < SONDE_RECORD_KIND_USER) continue;
        rec_t v;
        memcpy(&v, sonde_record_payload(r, NULL), sizeof v);
        if (v.producer >= PRODUCERS || v.seq != c->next[v.producer])
            __atomic_add_fetch(&c->out_of_order, 1, __ATOMIC_RELAXED);
        else
            c->next[v.producer] = v.seq + 1;
        __atomic_add_fetch(&c->delivered, 1, __ATOMIC_RELAXED);
    }
    __atomic_sub_fetch(&c->inside, 1, __ATOMIC_ACQ_REL);
}

typedef struct {
    sonde_buffer_id_t *buffers;
    uint64_t producer;
    uint64_t records;
} prod_t;

static void *produce(void *arg) {
    prod_t *p = arg;
    for (uint64_t i = 0; i < p->records; ++i) {
        const rec_t v = {p->producer, i};
        for (int k = 0; k < BUFFERS; ++k)
            assert_int_equal(sonde_emit(p->buffers[k], SONDE_RECORD_KIND_USER, &v, sizeof v),
                             SONDE_STATUS_SUCCESS);
    }
    return NULL; /* the thread's exit delivers what it still holds */
}

static int g_stop_flusher;

static void *flusher(void *arg) {
    sonde_session_id_t *s = arg;
    while (!__atomic_load_n(&g_stop_flusher, __ATOMIC_ACQUIRE)) {
        assert_int_equal(sonde_flush_data(*s, (sonde_buffer_id_t){0}), SONDE_STATUS_SUCCESS);
        usleep(500);
    }
    return NULL;
}

static void test_many_buffers(void **state) {
    (void)state;
    const char *env = getenv("SONDE_STRESS_RECORDS");
    const uint64_t records = env ? strtoull(env, NULL, 10) / 4 : 20000;
    sonde_session_id_t s;
    sonde_buffer_id_t bufs[BUFFERS];
    memset(g_check, 0, sizeof g_check);
    assert_int_equal(sonde_create_session(NULL, &s), SONDE_STATUS_SUCCESS);
    for (int k = 0; k < BUFFERS; ++k) {
        /* LOSSLESS, small chunks, a low watermark; two buffers also flush on an interval. */
        /* Buffer 3 takes concurrent callbacks. */
        const sonde_buffer_property_t props[] = {
            {SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096},
            {SONDE_BUFFER_PROPERTY_KIND_WATERMARK, 0, 8192},
            {SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT, 0, 30000000000ull},
            {k == 3 ? SONDE_BUFFER_PROPERTY_KIND_CONCURRENT_CALLBACKS
                    : SONDE_BUFFER_PROPERTY_KIND_INTERVAL_FLUSH,
             0, k == 3 ? 1 : 2000000}};
        g_check[k].concurrent = k == 3;
        assert_int_equal(sonde_create_buffer(s, 128 * 1024, cb_check, &g_check[k], props,
                                             k < 2 || k == 3 ? 4 : 3, &bufs[k]),
                         SONDE_STATUS_SUCCESS);
    }
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_SUCCESS);
    pthread_t th[PRODUCERS], fl;
    prod_t args[PRODUCERS];
    assert_int_equal(pthread_create(&fl, NULL, flusher, &s), 0);
    for (int i = 0; i < PRODUCERS; ++i) {
        /* Half the producers emit a tenth as much and exit early, while the others run. */
        args[i] = (prod_t){bufs, (uint64_t)i, i % 2 ? records / 10 : records};
        assert_int_equal(pthread_create(&th[i], NULL, produce, &args[i]), 0);
    }
    for (int i = 0; i < PRODUCERS; ++i) pthread_join(th[i], NULL);
    __atomic_store_n(&g_stop_flusher, 1, __ATOMIC_RELEASE);
    pthread_join(fl, NULL);
    assert_int_equal(sonde_flush_data(s, (sonde_buffer_id_t){0}), SONDE_STATUS_SUCCESS);
    uint64_t want = 0;
    for (int i = 0; i < PRODUCERS; ++i) want += args[i].records;
    for (int k = 0; k < BUFFERS; ++k) {
        sonde_buffer_stats_t st;
        memset(&st, 0, sizeof st);
        st.struct_size = sizeof st;
        assert_int_equal(sonde_get_buffer_stats(s, bufs[k], &st), SONDE_STATUS_SUCCESS);
        assert_int_equal(st.records_emitted, want);
        assert_int_equal(st.records_dropped, 0);
        assert_int_equal(st.records_delivered, want);
        assert_int_equal(__atomic_load_n(&g_check[k].delivered, __ATOMIC_ACQUIRE), want);
        assert_int_equal(__atomic_load_n(&g_check[k].out_of_order, __ATOMIC_ACQUIRE), 0);
        assert_int_equal(__atomic_load_n(&g_check[k].overlap, __ATOMIC_ACQUIRE), 0);
        for (int i = 0; i < PRODUCERS; ++i) assert_int_equal(g_check[k].next[i], args[i].records);
    }
    assert_int_equal(sonde_destroy_session(s), SONDE_STATUS_SUCCESS);
}

/* ---- CONCURRENT_CALLBACKS ---- */

static int g_inside, g_max_inside;
static uint64_t g_next[2], g_bad_order, g_concurrent_delivered;
static int g_go_exit;

static void cb_concurrent(const sonde_record_header_t *begin, const sonde_record_header_t *end,
                          sonde_session_id_t s, sonde_buffer_id_t b, void *user_data) {
    (void)s, (void)b, (void)user_data;
    const int now = __atomic_add_fetch(&g_inside, 1, __ATOMIC_ACQ_REL);
    if (now >= 2) __atomic_store_n(&g_max_inside, now, __ATOMIC_RELEASE);
    /* The first span to arrive waits (10 s at most) for a second one to run beside it. */
    const uint64_t t0 = now_ms();
    while (now == 1 && __atomic_load_n(&g_max_inside, __ATOMIC_ACQUIRE) < 2 && now_ms() - t0 < 10000)
        usleep(500);
    for (const sonde_record_header_t *r = begin; r < end;
         r = (const sonde_record_header_t *)((const char *)r + r->size)) {
        if (r->kind < SONDE_RECORD_KIND_USER) continue;
        rec_t v;
        memcpy(&v, sonde_record_payload(r, NULL), sizeof v);
        if (v.producer >= 2 || v.seq != g_next[v.producer])
            __atomic_add_fetch(&g_bad_order, 1, __ATOMIC_RELAXED);
        else
            g_next[v.producer] = v.seq + 1;
        __atomic_add_fetch(&g_concurrent_delivered, 1, __ATOMIC_RELAXED);
    }
    __atomic_sub_fetch(&g_inside, 1, __ATOMIC_ACQ_REL);
}

typedef struct {
    sonde_buffer_id_t b;
    uint64_t producer;
} one_t;

static void *produce_one(void *arg) {
    one_t *o = arg;
    for (uint64_t i = 0; i < 200; ++i) { /* 200 x 24 bytes: a chunk of 4 KiB sealed */
        const rec_t v = {o->producer, i};
        assert_int_equal(sonde_emit(o->b, SONDE_RECORD_KIND_USER, &v, sizeof v), SONDE_STATUS_SUCCESS);
    }
    while (!__atomic_load_n(&g_go_exit, __ATOMIC_ACQUIRE)) usleep(1000);
    return NULL;
}

static void test_concurrent_callbacks(void **state) {
    (void)state;
    sonde_session_id_t s;
    sonde_buffer_id_t b;
    assert_int_equal(sonde_create_session(NULL, &s), SONDE_STATUS_SUCCESS);
    const sonde_buffer_property_t bad[] = {{SONDE_BUFFER_PROPERTY_KIND_CONCURRENT_CALLBACKS, 0, 2}};
    assert_int_equal(sonde_create_buffer(s, 64 * 1024, cb_concurrent, NULL, bad, 1, &b),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    const sonde_buffer_property_t polled[] = {
        {SONDE_BUFFER_PROPERTY_KIND_CONCURRENT_CALLBACKS, 0, 1},
        {SONDE_BUFFER_PROPERTY_KIND_DELIVERY, 0, SONDE_BUFFER_DELIVERY_POLL}};
    assert_int_equal(sonde_create_buffer(s, 64 * 1024, cb_concurrent, NULL, polled, 2, &b),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    const sonde_buffer_property_t props[] = {{SONDE_BUFFER_PROPERTY_KIND_CONCURRENT_CALLBACKS, 0, 1},
                                             {SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096},
                                             {SONDE_BUFFER_PROPERTY_KIND_WATERMARK, 0, 4096}};
    assert_int_equal(sonde_create_buffer(s, 64 * 1024, cb_concurrent, NULL, props, 3, &b),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_SUCCESS);
    pthread_t th[2];
    one_t args[2] = {{b, 0}, {b, 1}};
    for (int i = 0; i < 2; ++i) assert_int_equal(pthread_create(&th[i], NULL, produce_one, &args[i]), 0);
    const uint64_t t0 = now_ms();
    while (__atomic_load_n(&g_max_inside, __ATOMIC_ACQUIRE) < 2 && now_ms() - t0 < 15000) usleep(1000);
    assert_true(__atomic_load_n(&g_max_inside, __ATOMIC_ACQUIRE) >= 2); /* two callbacks of b at once */
    assert_int_equal(sonde_flush_data(s, b), SONDE_STATUS_SUCCESS);
    __atomic_store_n(&g_go_exit, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; ++i) pthread_join(th[i], NULL);
    assert_int_equal(sonde_flush_data(s, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(__atomic_load_n(&g_concurrent_delivered, __ATOMIC_ACQUIRE), 400);
    assert_int_equal(__atomic_load_n(&g_bad_order, __ATOMIC_ACQUIRE), 0);
    assert_int_equal(g_next[0], 200);
    assert_int_equal(g_next[1], 200);
    assert_int_equal(sonde_destroy_session(s), SONDE_STATUS_SUCCESS);
}

int main(void) {
    /* Four workers at most, whatever the machine: the first test needs two. */
    setenv("SONDE_DELIVERY_THREADS", "4", 1);
    if (sonde_initialize() != SONDE_STATUS_SUCCESS) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocked_callback),
        cmocka_unit_test(test_many_buffers),
        cmocka_unit_test(test_concurrent_callbacks),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    sonde_finalize();
    return rc;
}
