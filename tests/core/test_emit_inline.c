/* Header-inline emission (sonde_buffer_producer, sonde_emit_inline): the records equal
 * sonde_emit's, every unusual case answers as sonde_emit does, and a producer used where it
 * does not belong (another thread, after its thread's exit, after its buffer's destruction, in
 * a forked child) never writes into a chunk that is not the caller's. The concurrent cases run
 * under ThreadSanitizer too (suite stress). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect.h" /* tests/common */

static sonde_session_id_t g_session;

static int setup(void **state) {
    (void)state;
    if (sonde_initialize() != SONDE_STATUS_SUCCESS) return -1;
    return sonde_create_session(NULL, &g_session) == SONDE_STATUS_SUCCESS ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    sonde_destroy_session(g_session);
    return sonde_finalize() == SONDE_STATUS_SUCCESS ? 0 : -1;
}

static sonde_buffer_id_t make_buffer(collector_t *col, uint64_t chunk) {
    const sonde_buffer_property_t props[1] = {{SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, chunk}};
    sonde_buffer_id_t b = {0};
    assert_int_equal(sonde_create_buffer(g_session, 1 << 20, collector_cb, col, props, 1, &b),
                     SONDE_STATUS_SUCCESS);
    return b;
}

/* A collector, a buffer of 4 KiB chunks into it, and the session started. */
static sonde_buffer_id_t started_buffer(collector_t *col) {
    collector_init(col);
    const sonde_buffer_id_t b = make_buffer(col, 4096);
    assert_int_equal(sonde_start_session(g_session), SONDE_STATUS_SUCCESS);
    return b;
}

static sonde_producer_t producer_for(sonde_buffer_id_t b) {
    sonde_producer_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = SONDE_PRODUCER_SIZE_1_2;
    assert_int_equal(sonde_buffer_producer(b, &p), SONDE_STATUS_SUCCESS);
    return p;
}

static sonde_buffer_stats_t stats_of(sonde_buffer_id_t b) {
    sonde_buffer_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    assert_int_equal(sonde_get_buffer_stats(g_session, b, &st), SONDE_STATUS_SUCCESS);
    return st;
}

/* Ends a test's buffer: every one of `records` emitted is delivered, none dropped; then the
 * session stops and the buffer and collector go. */
static void finish(sonde_buffer_id_t b, collector_t *col, uint64_t records) {
    const sonde_buffer_stats_t st = stats_of(b);
    assert_int_equal(st.records_emitted, records);
    assert_int_equal(st.records_delivered, records);
    assert_int_equal(st.records_dropped, 0);
    assert_int_equal(sonde_stop_session(g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
    collector_free(col);
}

static void test_producer_arguments(void **state) {
    (void)state;
    collector_t col;
    collector_init(&col);
    sonde_buffer_id_t b = make_buffer(&col, 4096);
    sonde_producer_t p;
    memset(&p, 0, sizeof p);
    assert_int_equal(sonde_buffer_producer(b, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    p.struct_size = SONDE_PRODUCER_SIZE_1_2 - 8;
    assert_int_equal(sonde_buffer_producer(b, &p), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    p.struct_size = SONDE_PRODUCER_SIZE_1_2;
    const sonde_buffer_id_t zero = {0};
    assert_int_equal(sonde_buffer_producer(zero, &p), SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    sonde_buffer_id_t stale = b;
    stale.handle += 1ull << 32; /* another generation of the same slot */
    assert_int_equal(sonde_buffer_producer(stale, &p), SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    assert_null(p.writer); /* a failed producer sends records to sonde_emit */
    uint64_t v = 7;
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, &v, 8),
                     SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    /* A producer of a stopped session's buffer is given; records are refused until it starts. */
    p = producer_for(b);
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, &v, 8),
                     SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE);
    /* A larger struct_size is accepted (a later version's struct). */
    struct {
        sonde_producer_t p;
        uint64_t more;
    } big;
    memset(&big, 0, sizeof big);
    big.p.struct_size = sizeof big;
    assert_int_equal(sonde_buffer_producer(b, &big.p), SONDE_STATUS_SUCCESS);
    assert_int_equal(big.p.buffer.handle, b.handle);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(collector_count(&col), 0);
    collector_free(&col);
}

/* Inline and out-of-line records interleave in one order with the same bytes; small chunks
 * make the inline path hand over to sonde_emit for every refill. */
static void test_inline_records_equal_emit(void **state) {
    (void)state;
    collector_t col;
    sonde_buffer_id_t b = started_buffer(&col);
    sonde_producer_t p = producer_for(b);
    enum { N = 6000 };
    for (uint32_t i = 0; i < N; ++i) {
        unsigned char payload[40];
        for (uint32_t k = 0; k < sizeof payload; ++k) payload[k] = (unsigned char)(i * 7 + k + 1);
        memcpy(payload, &i, 4);
        const uint32_t size = 4 + i % 37; /* 4..40 bytes: every padding */
        const uint32_t kind = SONDE_RECORD_KIND_USER + i % 3;
        const sonde_status_t st =
            i % 5 == 4 ? sonde_emit(b, kind, payload, size) : sonde_emit_inline(&p, kind, payload, size);
        assert_int_equal(st, SONDE_STATUS_SUCCESS);
    }
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, NULL, 0), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(collector_count(&col), N + 1);
    assert_int_equal(col.bad_spans, 0);
    const uint64_t tid = col.items[0].thread_id;
    for (uint32_t i = 0; i < N; ++i) {
        const collected_t *c = &col.items[i];
        const uint32_t size = 4 + i % 37;
        assert_int_equal(c->thread_id, tid);
        assert_int_equal(c->kind, SONDE_RECORD_KIND_USER + i % 3);
        assert_int_equal(c->flags, 0);
        assert_int_equal(c->payload_size, (size + 7) & ~7u); /* padded to 8 */
        uint32_t seq;
        memcpy(&seq, c->payload, 4);
        assert_int_equal(seq, i);
        for (uint32_t k = 4; k < size; ++k) assert_int_equal(c->payload[k], (unsigned char)(i * 7 + k + 1));
        for (uint32_t k = size; k < c->payload_size; ++k) assert_int_equal(c->payload[k], 0);
    }
    assert_int_equal(col.items[N].payload_size, 0);
    finish(b, &col, N + 1);
}

/* Every case the fast path does not take answers as sonde_emit does. */
static void test_unusual_cases_answer_as_emit(void **state) {
    (void)state;
    collector_t col;
    sonde_buffer_id_t b = started_buffer(&col);
    sonde_producer_t p = producer_for(b);
    unsigned char big[200];
    memset(big, 0xAB, sizeof big);
    /* Kinds: THREAD is the library's; a standard kind needs its struct; user kinds end at MAX. */
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_THREAD, big, 16),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER_MAX + 1, big, 8),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, NULL, 8), SONDE_STATUS_ERROR_NULL_POINTER);
    /* Over 128 bytes: out of line, delivered whole. */
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, big, sizeof big), SONDE_STATUS_SUCCESS);
    /* An open reservation: refused, and the reservation stays usable. */
    void *slot = NULL;
    assert_int_equal(sonde_reserve(b, SONDE_RECORD_KIND_USER, 8, &slot), SONDE_STATUS_SUCCESS);
    uint64_t v = 42;
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_ERROR_PHASE_FAILURE);
    memcpy(slot, &v, 8);
    assert_int_equal(sonde_commit(b), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    /* Stopped, then started again: refused, then recorded through the same producer. */
    assert_int_equal(sonde_stop_session(g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, &v, 8),
                     SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE);
    assert_int_equal(sonde_start_session(g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(collector_count(&col), 4);
    assert_int_equal(stats_of(b).records_emitted, 4);
    /* Destroyed: the producer is stale; a new buffer in the same slot receives nothing from it. */
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, &v, 8),
                     SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    collector_t col2;
    collector_init(&col2);
    sonde_buffer_id_t b2 = make_buffer(&col2, 4096);
    assert_int_equal((uint32_t)b2.handle, (uint32_t)b.handle); /* the slot is reused */
    assert_int_equal(sonde_emit(b2, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    for (int i = 0; i < 100; ++i)
        assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, &v, 8),
                         SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    assert_int_equal(sonde_flush_data(g_session, b2), SONDE_STATUS_SUCCESS);
    assert_int_equal(collector_count(&col2), 1);
    assert_int_equal(sonde_stop_session(g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_destroy_buffer(g_session, b2), SONDE_STATUS_SUCCESS);
    collector_free(&col2);
    collector_free(&col);
}

typedef struct {
    sonde_producer_t *p; /* a producer, maybe another thread's */
    sonde_buffer_id_t b;
    uint64_t first, n;
    int fill; /* fill *p on this thread first */
    sonde_status_t last;
} emit_arg_t;

static void *emit_worker(void *arg) {
    emit_arg_t *a = (emit_arg_t *)arg;
    if (a->fill) {
        memset(a->p, 0, sizeof *a->p);
        a->p->struct_size = SONDE_PRODUCER_SIZE_1_2;
        a->last = sonde_buffer_producer(a->b, a->p);
        if (a->last != SONDE_STATUS_SUCCESS) return NULL;
    }
    for (uint64_t i = 0; i < a->n; ++i) {
        const uint64_t v = a->first + i;
        a->last = sonde_emit_inline(a->p, SONDE_RECORD_KIND_USER, &v, 8);
        if (a->last != SONDE_STATUS_SUCCESS) break;
    }
    return NULL;
}

/* Checks the records: thread k wrote [k * per_thread, (k + 1) * per_thread) in order, each
 * thread under one id, no two threads under the same one. */
static void check_threads(const collector_t *col, size_t threads, uint64_t per_thread) {
    uint64_t tids[16] = {0}, next[16] = {0};
    assert_true(threads <= 16);
    assert_int_equal(col->bad_spans, 0);
    for (size_t i = 0; i < col->count; ++i) {
        uint64_t v;
        memcpy(&v, col->items[i].payload, 8);
        const size_t k = (size_t)(v / per_thread);
        assert_true(k < threads);
        if (tids[k] == 0) tids[k] = col->items[i].thread_id;
        assert_int_equal(col->items[i].thread_id, tids[k]);
        assert_int_equal(v, k * per_thread + next[k]);
        next[k]++;
    }
    for (size_t k = 0; k < threads; ++k) assert_int_equal(next[k], per_thread);
    for (size_t k = 0; k < threads; ++k)
        for (size_t j = k + 1; j < threads; ++j) assert_true(tids[k] != tids[j]);
}

/* Another thread using this thread's producer, and a thread using the producer of a thread
 * that has exited (whose thread pointer and thread state it may well get): each record lands
 * in the calling thread's own chunk, under its own thread id, in order. */
static void test_foreign_and_orphaned_producers(void **state) {
    (void)state;
    collector_t col;
    sonde_buffer_id_t b = started_buffer(&col);
    sonde_producer_t mine = producer_for(b);
    enum { PER = 3000 };
    emit_arg_t borrow = {&mine, b, PER, PER, 0, SONDE_STATUS_SUCCESS};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, emit_worker, &borrow), 0);
    for (uint64_t i = 0; i < PER; ++i)
        assert_int_equal(sonde_emit_inline(&mine, SONDE_RECORD_KIND_USER, &i, 8), SONDE_STATUS_SUCCESS);
    pthread_join(t, NULL);
    assert_int_equal(borrow.last, SONDE_STATUS_SUCCESS);
    static sonde_producer_t kept; /* filled by a thread that exits */
    emit_arg_t first = {&kept, b, 2 * PER, PER, 1, SONDE_STATUS_SUCCESS};
    assert_int_equal(pthread_create(&t, NULL, emit_worker, &first), 0);
    pthread_join(t, NULL);
    assert_int_equal(first.last, SONDE_STATUS_SUCCESS);
    emit_arg_t second = {&kept, b, 3 * PER, PER, 0, SONDE_STATUS_SUCCESS};
    assert_int_equal(pthread_create(&t, NULL, emit_worker, &second), 0);
    pthread_join(t, NULL);
    assert_int_equal(second.last, SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(collector_count(&col), 4 * PER);
    check_threads(&col, 4, PER);
    finish(b, &col, 4 * PER);
}

/* Many producers emitting inline while another thread flushes, stops and starts the session:
 * every record accepted is delivered once, in each thread's order; nothing is lost or made
 * up. (Refused records are those of a stopped session.) */
typedef struct {
    sonde_buffer_id_t b;
    uint64_t first, n, accepted, refused;
} churn_arg_t;

static void *churn_worker(void *arg) {
    churn_arg_t *a = (churn_arg_t *)arg;
    sonde_producer_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = SONDE_PRODUCER_SIZE_1_2;
    if (sonde_buffer_producer(a->b, &p) != SONDE_STATUS_SUCCESS) return NULL;
    uint64_t v = a->first;
    for (uint64_t i = 0; i < a->n; ++i) {
        const sonde_status_t st = sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, &v, 8);
        if (st == SONDE_STATUS_SUCCESS) {
            ++a->accepted;
            ++v;
        } else {
            assert_int_equal(st, SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE);
            ++a->refused;
        }
    }
    return NULL;
}

static void test_concurrent_inline_producers(void **state) {
    (void)state;
    collector_t col;
    sonde_buffer_id_t b = started_buffer(&col);
    enum { THREADS = 4, PER = 40000 };
    churn_arg_t a[THREADS];
    pthread_t t[THREADS];
    for (int k = 0; k < THREADS; ++k) {
        a[k] = (churn_arg_t){b, (uint64_t)k * 1000000u, PER, 0, 0};
        assert_int_equal(pthread_create(&t[k], NULL, churn_worker, &a[k]), 0);
    }
    for (int round = 0; round < 20; ++round) {
        assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
        if (round % 4 == 1) {
            assert_int_equal(sonde_stop_session(g_session), SONDE_STATUS_SUCCESS);
            usleep(200);
            assert_int_equal(sonde_start_session(g_session), SONDE_STATUS_SUCCESS);
        }
        usleep(300);
    }
    uint64_t accepted = 0;
    for (int k = 0; k < THREADS; ++k) {
        pthread_join(t[k], NULL);
        accepted += a[k].accepted;
        assert_int_equal(a[k].accepted + a[k].refused, PER);
    }
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(collector_count(&col), accepted);
    assert_int_equal(col.bad_spans, 0);
    uint64_t next[THREADS] = {0};
    for (size_t i = 0; i < col.count; ++i) {
        uint64_t v;
        memcpy(&v, col.items[i].payload, 8);
        const uint64_t k = v / 1000000u;
        assert_true(k < THREADS);
        assert_int_equal(v % 1000000u, next[k]);
        next[k]++;
    }
    for (int k = 0; k < THREADS; ++k) assert_int_equal(next[k], a[k].accepted);
    finish(b, &col, accepted);
}

/* In a forked child the parent's producer refuses, as sonde_emit does there. */
static void test_forked_child_refuses(void **state) {
    (void)state;
    collector_t col;
    sonde_buffer_id_t b = started_buffer(&col);
    sonde_producer_t p = producer_for(b);
    uint64_t v = 1;
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    const pid_t pid = fork();
    if (pid == 0) {
        const sonde_status_t st = sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, &v, 8);
        _exit(st == SONDE_STATUS_ERROR_NOT_INITIALIZED ? 0 : 10 + (int)st);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(collector_count(&col), 2);
    assert_int_equal(sonde_stop_session(g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
    collector_free(&col);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_producer_arguments),
        cmocka_unit_test(test_inline_records_equal_emit),
        cmocka_unit_test(test_unusual_cases_answer_as_emit),
        cmocka_unit_test(test_foreign_and_orphaned_producers),
        cmocka_unit_test(test_concurrent_inline_producers),
        cmocka_unit_test(test_forked_child_refuses),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
