/* Stress: four producers emit sequence-numbered records while a controller thread flushes,
 * stops and restarts the session at random. LOSSLESS: per producer, the delivered records are
 * exactly the accepted ones, in order, with no gap. DISCARD (slow consumer): per producer the
 * delivered records are in increasing order, and emitted == delivered + dropped exactly, with
 * every drop reported in-stream by LOSS records. DISCARD overloaded (stuck consumer): producers
 * that drop record after record never block, and the accounting stays exact. Built for
 * ThreadSanitizer too. */
#include <sys/resource.h>

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect.h" /* tests/common */
#include "gate.h"    /* tests/common */

#define PRODUCERS 4

typedef struct {
    uint64_t producer;
    uint64_t seq;
} payload_t;

typedef struct {
    sonde_buffer_id_t b;
    uint64_t producer;
    uint64_t n; /* in: minimum records; out: sequence numbers used */
    uint64_t accepted, full;
    int *stop;
} prod_arg_t;

static uint64_t scale(void) {
    const char *s = getenv("SONDE_STRESS_RECORDS");
    return s ? strtoull(s, NULL, 10) : 100000;
}

static void *producer(void *arg) {
    prod_arg_t *a = (prod_arg_t *)arg;
    payload_t p = {a->producer, 0};
    /* Run at least n records and until the controller has done enough operations. */
    while (p.seq < a->n || !__atomic_load_n(a->stop, __ATOMIC_ACQUIRE)) {
        if ((p.seq & 255) == 0) usleep(20); /* let the controller interleave */
        /* Past the minimum, only keep the controller company: a slow (sanitized, loaded)
         * controller must not turn into millions of collected records. */
        if (p.seq >= a->n) usleep(200);
        sonde_status_t st = sonde_emit(a->b, SONDE_RECORD_KIND_USER, &p, sizeof p);
        if (st == SONDE_STATUS_SUCCESS) {
            a->accepted++;
            p.seq++;
        } else if (st == SONDE_STATUS_ERROR_BUFFER_FULL) {
            a->full++;
            p.seq++;
        } else if (st != SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE) {
            fail_msg("emit: %s", sonde_status_name(st));
        }
    }
    a->n = p.seq;
    return NULL;
}

typedef struct {
    sonde_session_id_t s;
    sonde_buffer_id_t b;
    int done;
    uint64_t ops;
} ctl_arg_t;

static void *controller(void *arg) {
    ctl_arg_t *c = (ctl_arg_t *)arg;
    unsigned seed = 12345;
    while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
        int op = rand_r(&seed) % 3;
        if (op == 0) {
            assert_int_equal(sonde_flush_data(c->s, c->b), SONDE_STATUS_SUCCESS);
        } else {
            sonde_status_t st = sonde_stop_session(c->s);
            assert_true(st == SONDE_STATUS_SUCCESS);
            usleep(rand_r(&seed) % 50);
            assert_int_equal(sonde_start_session(c->s), SONDE_STATUS_SUCCESS);
        }
        __atomic_add_fetch(&c->ops, 1, __ATOMIC_RELEASE);
        usleep(rand_r(&seed) % 50);
    }
    return NULL;
}

/* Slow consumer for DISCARD: sleeps a little in every callback. */
static void slow_cb(const sonde_record_header_t *b, const sonde_record_header_t *e, sonde_session_id_t s,
                    sonde_buffer_id_t bu, void *u) {
    usleep(300);
    collector_cb(b, e, s, bu, u);
}

static void run(uint32_t policy) {
    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    collector_t col;
    collector_init(&col);
    col.keep_losses = 1;
    sonde_session_id_t s;
    assert_int_equal(sonde_create_session(NULL, &s), SONDE_STATUS_SUCCESS);
    /* LOSSLESS waits for space up to its timeout, then drops. The default (1 s) is a real-time
     * promise a loaded CI machine running sanitizers cannot keep; this test checks ordering and
     * accounting, so it waits as long as it takes (a minute). */
    const sonde_buffer_property_t props[4] = {
        {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, policy},
        {SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096},
        {SONDE_BUFFER_PROPERTY_KIND_INTERVAL_FLUSH, 0, 1000000},
        {SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT, 0, 60000000000ull}};
    sonde_buffer_id_t b;
    const uint64_t size = policy == SONDE_BUFFER_POLICY_LOSSLESS ? (1 << 18) : 8 * 4096;
    assert_int_equal(
        sonde_create_buffer(s, size, policy == SONDE_BUFFER_POLICY_LOSSLESS ? collector_cb : slow_cb, &col,
                            props, 4, &b),
        SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_SUCCESS);
    ctl_arg_t ctl = {s, b, 0, 0};
    int producers_stop = 0;
    prod_arg_t pa[PRODUCERS];
    pthread_t pt[PRODUCERS], ct;
    pthread_create(&ct, NULL, controller, &ctl);
    for (uint64_t i = 0; i < PRODUCERS; ++i) {
        pa[i] = (prod_arg_t){b, i, scale(), 0, 0, &producers_stop};
        pthread_create(&pt[i], NULL, producer, &pa[i]);
    }
    while (__atomic_load_n(&ctl.ops, __ATOMIC_ACQUIRE) < 200) usleep(1000);
    __atomic_store_n(&producers_stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < PRODUCERS; ++i) pthread_join(pt[i], NULL);
    __atomic_store_n(&ctl.done, 1, __ATOMIC_RELEASE);
    pthread_join(ct, NULL);
    assert_int_equal(sonde_flush_data(s, b), SONDE_STATUS_SUCCESS);

    sonde_buffer_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    assert_int_equal(sonde_get_buffer_stats(s, b, &st), SONDE_STATUS_SUCCESS);
    uint64_t accepted = 0, full = 0;
    for (int i = 0; i < PRODUCERS; ++i) {
        accepted += pa[i].accepted;
        full += pa[i].full;
    }
    print_message("policy %s: %llu accepted, %llu dropped, %llu controller ops, %llu callbacks\n",
                  policy == SONDE_BUFFER_POLICY_LOSSLESS ? "LOSSLESS" : "DISCARD",
                  (unsigned long long)accepted, (unsigned long long)full, (unsigned long long)ctl.ops,
                  (unsigned long long)st.callbacks);
    assert_int_equal(st.records_emitted, accepted + full);
    assert_int_equal(st.records_dropped, full);
    assert_int_equal(st.records_emitted, st.records_delivered + st.records_dropped);
    assert_int_equal(col.bad_spans, 0);

    /* Per producer: order; LOSSLESS has no gap; under DISCARD every gap between two delivered
     * records is announced by LOSS records of that thread, ahead of the later record, whose
     * counts add up to the gap exactly. Drops after a producer's last delivered record are
     * reported when its thread exits if a chunk is free, so they may be reported or not. */
    uint64_t next[PRODUCERS] = {0}, seen[PRODUCERS] = {0}, announced[PRODUCERS] = {0};
    uint64_t thread_of[PRODUCERS] = {0};
    uint64_t pending_by_thread[64] = {0};
    uint64_t reported = 0;
    for (size_t i = 0; i < col.count; ++i) {
        if (col.items[i].kind == SONDE_RECORD_KIND_LOSS) {
            sonde_loss_record_t l;
            memcpy(&l, col.items[i].payload, sizeof l);
            assert_int_equal(l.thread_id, col.items[i].thread_id);
            assert_true(l.first_ns <= l.last_ns && l.count > 0);
            pending_by_thread[l.thread_id % 64] += l.count;
            reported += l.count;
            continue;
        }
        payload_t p;
        memcpy(&p, col.items[i].payload, sizeof p);
        assert_true(p.producer < PRODUCERS);
        if (thread_of[p.producer] == 0) thread_of[p.producer] = col.items[i].thread_id;
        assert_int_equal(thread_of[p.producer], col.items[i].thread_id);
        const uint64_t gap = p.seq - next[p.producer];
        assert_int_equal(pending_by_thread[col.items[i].thread_id % 64], gap);
        pending_by_thread[col.items[i].thread_id % 64] = 0;
        announced[p.producer] += gap;
        next[p.producer] = p.seq + 1;
        seen[p.producer]++;
    }
    uint64_t delivered = 0;
    for (int i = 0; i < PRODUCERS; ++i) {
        assert_int_equal(seen[i], pa[i].accepted);
        delivered += seen[i];
        /* Trailing drops, reported at exit or not: never more than there were. */
        assert_true(announced[i] + (pa[i].n - next[i]) == pa[i].full);
    }
    assert_int_equal(delivered, accepted);
    assert_true(reported <= full);
    if (policy == SONDE_BUFFER_POLICY_LOSSLESS)
        assert_int_equal(full, 0);
    else
        assert_true(full > 0 && reported > 0);

    assert_int_equal(sonde_destroy_session(s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
    collector_free(&col);
}

static void test_stress_lossless(void **state) {
    (void)state;
    run(SONDE_BUFFER_POLICY_LOSSLESS);
}

static void test_stress_discard(void **state) {
    (void)state;
    run(SONDE_BUFFER_POLICY_DISCARD);
}

/* ---- DISCARD overloaded ----------------------------------------------------------------
 * The consumer is stuck in its callback, so once the chunks are full every record is dropped.
 * Dropping takes no lock and makes no system call: producers that drop record after record
 * from several threads at once never go to sleep (a mutex they contended for would put them
 * to sleep, which getrusage counts as a voluntary context switch). Once the consumer is
 * released, each producer's next accepted record carries a LOSS record for all its drops and
 * emitted == delivered + dropped exactly. */

#define OVERLOAD_PRODUCERS 8
#define OVERLOAD_RECORDS 500000

typedef struct {
    sonde_buffer_id_t b;
    pthread_barrier_t *filled, *overloaded;
    uint64_t accepted, full; /* every phase */
    uint64_t overload_full;  /* drops among the OVERLOAD_RECORDS emitted past full */
    long overload_switches;  /* voluntary context switches of this thread meanwhile */
    sonde_status_t unexpected;
} overload_arg_t;

static int emit_one(overload_arg_t *a, uint64_t v) {
    const sonde_status_t st = sonde_emit(a->b, SONDE_RECORD_KIND_USER, &v, sizeof v);
    if (st == SONDE_STATUS_SUCCESS) {
        a->accepted++;
        return 1;
    }
    if (st == SONDE_STATUS_ERROR_BUFFER_FULL) {
        a->full++;
        return 0;
    }
    if (a->unexpected == SONDE_STATUS_SUCCESS) a->unexpected = st;
    return -1;
}

static void *overload_producer(void *arg) {
    overload_arg_t *a = (overload_arg_t *)arg;
    uint64_t v = 0;
    /* Fill until this thread finds no free chunk. */
    while (emit_one(a, v++) == 1) {
    }
    pthread_barrier_wait(a->filled);
    /* Every producer is out of room and the consumer is stuck: nothing can be accepted. */
    const uint64_t full_before = a->full;
    struct rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    for (int i = 0; i < OVERLOAD_RECORDS; ++i) emit_one(a, v++);
    getrusage(RUSAGE_THREAD, &r1);
    a->overload_full = a->full - full_before;
    a->overload_switches = r1.ru_nvcsw - r0.ru_nvcsw;
    pthread_barrier_wait(a->overloaded);
    /* The consumer is released: drop until a chunk comes back, then one record is accepted,
     * preceded in the stream by the LOSS record of every drop of this thread. */
    while (emit_one(a, v++) == 0) sched_yield();
    return NULL;
}

static void test_discard_overload_takes_no_lock(void **state) {
    (void)state;
    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    collector_t col;
    collector_init(&col);
    col.keep_losses = 1;
    sonde_session_id_t s;
    assert_int_equal(sonde_create_session(NULL, &s), SONDE_STATUS_SUCCESS);
    const sonde_buffer_property_t props[2] = {
        {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, SONDE_BUFFER_POLICY_DISCARD},
        {SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096}};
    sonde_buffer_id_t b;
    assert_int_equal(sonde_create_buffer(s, 8 * 4096, gated_cb, &col, props, 2, &b), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_SUCCESS);
    gate(0);
    const uint64_t t0 = sonde_get_timestamp();
    pthread_barrier_t filled, overloaded;
    pthread_barrier_init(&filled, NULL, OVERLOAD_PRODUCERS + 1);
    pthread_barrier_init(&overloaded, NULL, OVERLOAD_PRODUCERS + 1);
    overload_arg_t a[OVERLOAD_PRODUCERS];
    pthread_t t[OVERLOAD_PRODUCERS];
    for (int i = 0; i < OVERLOAD_PRODUCERS; ++i) {
        a[i] = (overload_arg_t){b, &filled, &overloaded, 0, 0, 0, 0, SONDE_STATUS_SUCCESS};
        pthread_create(&t[i], NULL, overload_producer, &a[i]);
    }
    pthread_barrier_wait(&filled);
    pthread_barrier_wait(&overloaded);
    gate(1);
    for (int i = 0; i < OVERLOAD_PRODUCERS; ++i) pthread_join(t[i], NULL);
    const uint64_t t1 = sonde_get_timestamp();
    pthread_barrier_destroy(&filled);
    pthread_barrier_destroy(&overloaded);
    assert_int_equal(sonde_flush_data(s, b), SONDE_STATUS_SUCCESS);

    uint64_t accepted = 0, full = 0;
    long switches = 0;
    for (int i = 0; i < OVERLOAD_PRODUCERS; ++i) {
        assert_int_equal(a[i].unexpected, SONDE_STATUS_SUCCESS);
        assert_int_equal(a[i].overload_full, OVERLOAD_RECORDS);
        accepted += a[i].accepted;
        full += a[i].full;
        switches += a[i].overload_switches;
    }
    print_message(
        "overloaded DISCARD: %llu accepted, %llu dropped, %ld voluntary context switches while "
        "%d threads dropped %d records each\n",
        (unsigned long long)accepted, (unsigned long long)full, switches, OVERLOAD_PRODUCERS,
        OVERLOAD_RECORDS);
    /* No producer slept while dropping (one switch of slack per thread for whatever the
     * system does to a thread that is not Sonde's doing). */
    assert_true(switches <= OVERLOAD_PRODUCERS);

    sonde_buffer_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    assert_int_equal(sonde_get_buffer_stats(s, b, &st), SONDE_STATUS_SUCCESS);
    assert_int_equal(st.records_emitted, accepted + full);
    assert_int_equal(st.records_dropped, full);
    assert_int_equal(st.records_delivered, accepted);
    assert_int_equal(col.losses, full); /* every drop reported in-stream */
    assert_int_equal(col.bad_spans, 0);

    /* Per thread: each gap in the sequence numbers is announced, exactly, by the LOSS records
     * ahead of the record after it, and every LOSS record's time range lies within the run. */
    uint64_t next[64] = {0}, pending[64] = {0}, users = 0;
    for (size_t i = 0; i < col.count; ++i) {
        const collected_t *it = &col.items[i];
        const unsigned th = (unsigned)(it->thread_id % 64);
        if (it->kind == SONDE_RECORD_KIND_LOSS) {
            sonde_loss_record_t l;
            memcpy(&l, it->payload, sizeof l);
            assert_int_equal(l.thread_id, it->thread_id);
            assert_true(l.count > 0);
            assert_true(t0 <= l.first_ns && l.first_ns <= l.last_ns && l.last_ns <= t1);
            pending[th] += l.count;
            continue;
        }
        uint64_t v;
        memcpy(&v, it->payload, sizeof v);
        assert_true(v >= next[th]);
        assert_int_equal(pending[th], v - next[th]);
        pending[th] = 0;
        next[th] = v + 1;
        users++;
    }
    assert_int_equal(users, accepted);
    for (int i = 0; i < 64; ++i) assert_int_equal(pending[i], 0); /* none after a last record */

    assert_int_equal(sonde_destroy_session(s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
    collector_free(&col);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stress_lossless),
        cmocka_unit_test(test_stress_discard),
        cmocka_unit_test(test_discard_overload_takes_no_lock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
