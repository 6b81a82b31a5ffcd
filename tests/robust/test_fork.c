/* fork() with a started session: the child's calls fail fast with NOT_INITIALIZED instead of
 * waiting for a delivery thread it does not have, the child may initialise a runtime of its
 * own, nothing of the parent is delivered in the child, and the parent's accounting is
 * unaffected. The child reports through its exit status (no cmocka in the child). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/sonde.h>

#define CHILD_EMITS 1000

typedef struct tally_t {
    pthread_mutex_t mu;
    uint64_t records[4]; /* by tag: 1 parent, 2 child */
    uint64_t other;
    int fork_in_callback; /* the callback forks once when set */
    pid_t forked;
} tally_t;

typedef struct payload_t {
    uint64_t tag;
    uint64_t seq;
} payload_t;

static void tally_cb(const sonde_record_header_t *begin, const sonde_record_header_t *end,
                     sonde_session_id_t s, sonde_buffer_id_t b, void *user) {
    tally_t *t = (tally_t *)user;
    pthread_mutex_lock(&t->mu);
    for (const sonde_record_header_t *r = begin; r < end;) {
        const sonde_record_header_t *next = NULL;
        if (sonde_next_record(r, &next, s, b) != SONDE_STATUS_SUCCESS) {
            t->other++;
            break;
        }
        if (sonde_record_kind(r) == SONDE_RECORD_KIND_USER) {
            const payload_t *p = (const payload_t *)sonde_record_payload(r, NULL);
            if (p->tag < 4)
                t->records[p->tag]++;
            else
                t->other++;
        }
        r = next;
    }
    if (t->fork_in_callback) {
        t->fork_in_callback = 0;
        t->forked = fork();
    }
    pthread_mutex_unlock(&t->mu);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef struct setup_t {
    sonde_session_id_t s;
    sonde_buffer_id_t b;
} setup_t;

static setup_t start(tally_t *t) {
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    setup_t x;
    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_create_session(NULL, &x.s), SONDE_STATUS_SUCCESS);
    /* No interval and the largest watermark: records are delivered only when asked. */
    const sonde_buffer_property_t props[1] = {{SONDE_BUFFER_PROPERTY_KIND_WATERMARK, 0, 1u << 20}};
    assert_int_equal(sonde_create_buffer(x.s, 1u << 20, tally_cb, t, props, 1, &x.b), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(x.s), SONDE_STATUS_SUCCESS);
    return x;
}

static void emit_n(sonde_buffer_id_t b, uint64_t tag, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
        const payload_t p = {tag, i};
        assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &p, sizeof p), SONDE_STATUS_SUCCESS);
    }
}

/* The parent's buffer after the child is gone: exactly its own records, exactly once. */
static void check_parent(const setup_t *x, tally_t *t, uint64_t expect) {
    assert_int_equal(sonde_flush_data(x->s, x->b), SONDE_STATUS_SUCCESS);
    sonde_buffer_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    assert_int_equal(sonde_get_buffer_stats(x->s, x->b, &st), SONDE_STATUS_SUCCESS);
    assert_int_equal(st.records_emitted, expect);
    assert_int_equal(st.records_delivered, expect);
    assert_int_equal(st.records_dropped, 0);
    pthread_mutex_lock(&t->mu);
    assert_int_equal(t->records[1], expect);
    assert_int_equal(t->records[2], 0);
    assert_int_equal(t->other, 0);
    pthread_mutex_unlock(&t->mu);
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
    pthread_mutex_destroy(&t->mu);
}

static void wait_child(pid_t pid) {
    int status = -1;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status)) fail_msg("child killed by signal %d", WTERMSIG(status));
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) != 0) fail_msg("child check %d failed", WEXITSTATUS(status));
}

/* Every call of the parent's ids in the child: NOT_INITIALIZED, at once. Returns 0 or the
 * number of the failed check. */
static int child_checks(const setup_t *x, tally_t *t) {
    const payload_t p = {2, 0};
    const double t0 = now_ms();
    for (int i = 0; i < CHILD_EMITS; ++i)
        if (sonde_emit(x->b, SONDE_RECORD_KIND_USER, &p, sizeof p) != SONDE_STATUS_ERROR_NOT_INITIALIZED)
            return 1;
    const double elapsed = now_ms() - t0;
    if (elapsed > 100.0) return 2; /* the lossless timeout alone is 1 s per record */
    if (sonde_emit_timestamped(x->b, SONDE_RECORD_KIND_USER, &p, sizeof p) !=
        SONDE_STATUS_ERROR_NOT_INITIALIZED)
        return 3;
    void *slot = &slot;
    if (sonde_reserve(x->b, SONDE_RECORD_KIND_USER, 8, &slot) != SONDE_STATUS_ERROR_NOT_INITIALIZED ||
        slot != NULL)
        return 4;
    if (sonde_commit(x->b) != SONDE_STATUS_ERROR_NOT_INITIALIZED) return 5;
    if (sonde_flush_data(x->s, x->b) != SONDE_STATUS_ERROR_NOT_INITIALIZED) return 6;
    if (sonde_stop_session(x->s) != SONDE_STATUS_ERROR_NOT_INITIALIZED) return 7;
    sonde_buffer_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    if (sonde_get_buffer_stats(x->s, x->b, &st) != SONDE_STATUS_ERROR_NOT_INITIALIZED) return 8;
    if (sonde_destroy_buffer(x->s, x->b) != SONDE_STATUS_ERROR_NOT_INITIALIZED) return 9;
    if (sonde_destroy_session(x->s) != SONDE_STATUS_ERROR_NOT_INITIALIZED) return 10;
    sonde_session_id_t s2;
    if (sonde_create_session(NULL, &s2) != SONDE_STATUS_ERROR_NOT_INITIALIZED) return 11;
    sonde_buffer_id_t b2;
    if (sonde_create_buffer(x->s, 1u << 20, tally_cb, t, NULL, 0, &b2) != SONDE_STATUS_ERROR_NOT_INITIALIZED)
        return 12;
    if (sonde_is_initialized()) return 13;
    if (sonde_buffer_state_word(x->b) != NULL) return 14;
    if (sonde_finalize() != SONDE_STATUS_ERROR_NOT_INITIALIZED) return 15;

    /* A runtime of its own: fresh ids, the parent's stay stale, none of the parent's records
     * reach the child's callback. */
    pthread_mutex_lock(&t->mu);
    memset(t->records, 0, sizeof t->records);
    t->other = 0;
    pthread_mutex_unlock(&t->mu);
    if (sonde_initialize() != SONDE_STATUS_SUCCESS) return 16;
    setup_t y;
    if (sonde_create_session(NULL, &y.s) != SONDE_STATUS_SUCCESS) return 17;
    if (sonde_create_buffer(y.s, 1u << 20, tally_cb, t, NULL, 0, &y.b) != SONDE_STATUS_SUCCESS) return 18;
    if (y.b.handle == x->b.handle || y.s.handle == x->s.handle) return 19;
    if (sonde_start_session(y.s) != SONDE_STATUS_SUCCESS) return 20;
    if (sonde_emit(x->b, SONDE_RECORD_KIND_USER, &p, sizeof p) != SONDE_STATUS_ERROR_BUFFER_NOT_FOUND)
        return 21;
    if (sonde_flush_data(x->s, x->b) != SONDE_STATUS_ERROR_SESSION_NOT_FOUND) return 22;
    for (uint64_t i = 0; i < 10; ++i) {
        const payload_t q = {2, i};
        if (sonde_emit(y.b, SONDE_RECORD_KIND_USER, &q, sizeof q) != SONDE_STATUS_SUCCESS) return 23;
    }
    if (sonde_finalize() != SONDE_STATUS_SUCCESS) return 24;
    pthread_mutex_lock(&t->mu);
    const int ok = t->records[2] == 10 && t->records[1] == 0 && t->other == 0;
    pthread_mutex_unlock(&t->mu);
    return ok ? 0 : 25;
}

static void test_child_fails_fast(void **state) {
    (void)state;
    tally_t t;
    const setup_t x = start(&t);
    emit_n(x.b, 1, 100);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(20); /* a hang becomes a signal the parent sees */
        _exit(child_checks(&x, &t));
    }
    wait_child(pid);
    emit_n(x.b, 1, 50);
    check_parent(&x, &t, 150);
}

/* A producer thread forks: in the child that thread leaves through pthread_exit, whose key
 * destructors must neither deliver the parent's records nor wait for the parent's buffers
 * (a thread of the child joins it, then ends the child). */
typedef struct thread_arg_t {
    setup_t x;
    tally_t *t;
    pid_t child;
} thread_arg_t;

/* In the child: waits for the forking thread to end (its key destructors run then), then ends
 * the process without running exit handlers (the parent's other threads are gone). */
static void *join_then_exit(void *arg) {
    const pthread_t forking = *(const pthread_t *)arg;
    _exit(pthread_join(forking, NULL) == 0 ? 0 : 32);
    return NULL;
}

static void *fork_from_producer(void *arg) {
    thread_arg_t *a = (thread_arg_t *)arg;
    for (uint64_t i = 0; i < 20; ++i) {
        const payload_t p = {1, i};
        if (sonde_emit(a->x.b, SONDE_RECORD_KIND_USER, &p, sizeof p) != SONDE_STATUS_SUCCESS) return NULL;
    }
    /* An open reservation at the fork: the child cannot commit it, the parent can. */
    void *payload = NULL;
    if (sonde_reserve(a->x.b, SONDE_RECORD_KIND_USER, sizeof(payload_t), &payload) != SONDE_STATUS_SUCCESS)
        return NULL;
    const payload_t p = {1, 20};
    memcpy(payload, &p, sizeof p);
    a->child = fork();
    if (a->child == 0) {
        alarm(20);
        if (sonde_commit(a->x.b) != SONDE_STATUS_ERROR_NOT_INITIALIZED) _exit(31);
        const int rc = child_checks(&a->x, a->t);
        if (rc != 0) _exit(rc);
        static pthread_t self;
        self = pthread_self();
        pthread_t joiner;
        if (pthread_create(&joiner, NULL, join_then_exit, &self) != 0) _exit(33);
        pthread_exit(NULL); /* a hang here leaves the joiner waiting: the alarm fires */
    }
    if (sonde_commit(a->x.b) != SONDE_STATUS_SUCCESS) a->child = -2;
    return NULL;
}

static void test_fork_from_producer_thread(void **state) {
    (void)state;
    tally_t t;
    thread_arg_t a;
    a.x = start(&t);
    a.t = &t;
    a.child = -1;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fork_from_producer, &a), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(a.child > 0);
    wait_child(a.child);
    check_parent(&a.x, &t, 21);
}

/* A callback forks: in the child it returns into Sonde's delivery, which stops there (the
 * rest belongs to the parent) and answers NOT_INITIALIZED. The parent delivers everything
 * once. */
static void test_fork_in_callback(void **state) {
    (void)state;
    tally_t t;
    const setup_t x = start(&t);
    emit_n(x.b, 1, 30);
    t.fork_in_callback = 1;
    const sonde_status_t st = sonde_flush_data(x.s, x.b);
    if (t.forked == 0) {
        alarm(20);
        /* The child: the callback ran once, before the fork, and never again here. */
        _exit(st == SONDE_STATUS_ERROR_NOT_INITIALIZED && !sonde_is_initialized() ? 0 : 41);
    }
    assert_int_equal(st, SONDE_STATUS_SUCCESS);
    assert_true(t.forked > 0);
    wait_child(t.forked);
    emit_n(x.b, 1, 5);
    check_parent(&x, &t, 35);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_child_fails_fast),
        cmocka_unit_test(test_fork_from_producer_thread),
        cmocka_unit_test(test_fork_in_callback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
