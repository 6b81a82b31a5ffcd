/* Profile arrays under threads: N writers increment disjoint and shared record numbers in their
 * own buckets through the inline helpers and the summed result is exact; more threads than
 * buckets with the shared (atomic) helper stay exact; a monitor summing while writers run only
 * ever sees counts that grow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <pthread.h>

#include <cmocka.h>

#include <sonde/profile.h>

#define ITERS 100000u
#define MAX_THREADS 8

typedef struct worker_t {
    sonde_profile_array_t *arr;
    sonde_profile_buffer_t *pb;
    uint32_t id;
    uint32_t bucket; /* out */
    int shared;      /* use the atomic helper */
    pthread_barrier_t *start;
} worker_t;

/* Record 0 is counted by every thread, record 1 + id by thread id alone (field 0 by the view,
 * field 8 through the thread_record pointer). */
static void *worker(void *p) {
    worker_t *w = p;
    sonde_profile_view_t v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    if (sonde_profile_array_view(w->arr, w->pb, &v) != SONDE_STATUS_SUCCESS) return NULL;
    void *mine = NULL;
    if (sonde_profile_array_thread_record(w->arr, w->pb, 1 + w->id, &mine) != SONDE_STATUS_SUCCESS)
        return NULL;
    w->bucket = v.bucket;
    pthread_barrier_wait(w->start);
    uint64_t *second = (uint64_t *)((unsigned char *)mine + 8);
    for (uint32_t i = 0; i < ITERS; ++i) {
        if (w->shared) {
            sonde_profile_view_add_u64_shared(&v, 0, 0, 1);
            sonde_profile_view_add_u64_shared(&v, 1 + w->id, 0, 2);
            sonde_profile_counter_add_shared(second, 1);
        } else {
            sonde_profile_view_add_u64(&v, 0, 0, 1);
            sonde_profile_view_add_u64(&v, 1 + w->id, 0, 2);
            sonde_profile_counter_add(second, 1);
        }
    }
    return w;
}

static void run(uint32_t threads, uint32_t buckets, int shared) {
    sonde_profile_buffer_t *pb = NULL;
    sonde_profile_array_t *arr = NULL;
    assert_int_equal(sonde_profile_buffer_create(1 << 16, &pb), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_create(16, 1 + MAX_THREADS, buckets, 64, &arr),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_allocate(arr, pb), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_initialize(arr, pb), SONDE_STATUS_SUCCESS);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, threads);
    pthread_t tids[MAX_THREADS];
    worker_t ws[MAX_THREADS];
    for (uint32_t t = 0; t < threads; ++t) {
        ws[t] = (worker_t){arr, pb, t, UINT32_MAX, shared, &start};
        assert_int_equal(pthread_create(&tids[t], NULL, worker, &ws[t]), 0);
    }
    for (uint32_t t = 0; t < threads; ++t) {
        void *ret = NULL;
        pthread_join(tids[t], &ret);
        assert_ptr_equal(ret, &ws[t]);
    }
    pthread_barrier_destroy(&start);
    if (!shared) {
        /* New threads take consecutive indices, so with threads == buckets each has its own. */
        uint32_t seen = 0;
        for (uint32_t t = 0; t < threads; ++t) {
            assert_true(ws[t].bucket < buckets);
            assert_int_equal(seen & (1u << ws[t].bucket), 0);
            seen |= 1u << ws[t].bucket;
        }
    }
    uint64_t sum = 0;
    assert_int_equal(sonde_profile_array_sum_u64(arr, pb, 0, 0, &sum), SONDE_STATUS_SUCCESS);
    assert_int_equal(sum, (uint64_t)threads * ITERS);
    for (uint32_t t = 0; t < MAX_THREADS; ++t) {
        assert_int_equal(sonde_profile_array_sum_u64(arr, pb, 1 + t, 0, &sum), SONDE_STATUS_SUCCESS);
        assert_int_equal(sum, t < threads ? 2ull * ITERS : 0);
        assert_int_equal(sonde_profile_array_sum_u64(arr, pb, 1 + t, 8, &sum), SONDE_STATUS_SUCCESS);
        assert_int_equal(sum, t < threads ? (uint64_t)ITERS : 0);
        if (!shared && t < threads) {
            /* the disjoint record is non-zero only in its thread's bucket */
            for (uint32_t b = 0; b < buckets; ++b) {
                uint64_t rec[2];
                assert_int_equal(sonde_profile_array_read(arr, pb, rec, 1 + t, 1, b), SONDE_STATUS_SUCCESS);
                assert_int_equal(rec[0], b == ws[t].bucket ? 2ull * ITERS : 0);
            }
        }
    }
    sonde_profile_array_destroy(arr);
    sonde_profile_buffer_destroy(pb);
}

static void test_own_buckets(void **state) {
    (void)state;
    run(4, 4, 0);
}

static void test_shared_buckets(void **state) {
    (void)state;
    run(8, 2, 1);
}

typedef struct monitor_t {
    sonde_profile_array_t *arr;
    sonde_profile_buffer_t *pb;
    volatile int done;
    uint64_t samples, regressions, last;
} monitor_t;

static void *monitor(void *p) {
    monitor_t *m = p;
    uint64_t prev = 0;
    while (!__atomic_load_n(&m->done, __ATOMIC_ACQUIRE)) {
        uint64_t s = 0;
        if (sonde_profile_array_sum_u64(m->arr, m->pb, 0, 0, &s) != SONDE_STATUS_SUCCESS) break;
        if (s < prev) m->regressions++;
        prev = s;
        m->samples++;
    }
    m->last = prev;
    return NULL;
}

/* One writer per bucket counts up; a concurrent reader's sums never go backwards and never
 * exceed the final total. */
static void test_reader_races_writers(void **state) {
    (void)state;
    sonde_profile_buffer_t *pb = NULL;
    sonde_profile_array_t *arr = NULL;
    assert_int_equal(sonde_profile_buffer_create(1 << 16, &pb), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_create(16, 1 + MAX_THREADS, 2, 64, &arr), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_allocate(arr, pb), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_initialize(arr, pb), SONDE_STATUS_SUCCESS);
    monitor_t m = {arr, pb, 0, 0, 0, 0};
    pthread_t mt;
    assert_int_equal(pthread_create(&mt, NULL, monitor, &m), 0);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    pthread_t tids[2];
    worker_t ws[2];
    for (uint32_t t = 0; t < 2; ++t) {
        ws[t] = (worker_t){arr, pb, t, UINT32_MAX, 0, &start};
        assert_int_equal(pthread_create(&tids[t], NULL, worker, &ws[t]), 0);
    }
    for (uint32_t t = 0; t < 2; ++t) pthread_join(tids[t], NULL);
    __atomic_store_n(&m.done, 1, __ATOMIC_RELEASE);
    pthread_join(mt, NULL);
    pthread_barrier_destroy(&start);
    assert_int_equal(m.regressions, 0);
    assert_true(m.last <= 2ull * ITERS);
    uint64_t sum = 0;
    assert_int_equal(sonde_profile_array_sum_u64(arr, pb, 0, 0, &sum), SONDE_STATUS_SUCCESS);
    if (ws[0].bucket != ws[1].bucket) assert_int_equal(sum, 2ull * ITERS);
    sonde_profile_array_destroy(arr);
    sonde_profile_buffer_destroy(pb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_buckets),
        cmocka_unit_test(test_shared_buckets),
        cmocka_unit_test(test_reader_races_writers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
