/*
 * Client concurrency test (also run under ThreadSanitizer, suite 'stress'): four threads report
 * nested calls of many methods while the main thread loads a second client, makes data requests
 * about the running threads (info, stacks, lists) and emits marks. Every enter reaches the
 * counting client exactly once, and the observer's per-thread depth bookkeeping matches.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include <sonde/sonde.h>

#define THREADS 4
#define ROUNDS 20000
#define DEPTH 6

/* Methods: entry addresses inside one array, so there are many distinct methods without
 * symbols; only the counts matter here. */
static char methods[64];

static const sonde_api_t *api;
static sonde_client_id_t counter_id, late_id;
static atomic_ullong enters, leaves, late_enters;
static atomic_int running_threads;

static void on_enter(const sonde_event_data_t *d, void *user_data) {
    (void)user_data;
    assert_true(d->valid_items & SONDE_DATA_METHOD_ID);
    atomic_fetch_add_explicit(&enters, 1, memory_order_relaxed);
}

static void on_leave(const sonde_event_data_t *d, void *user_data) {
    (void)d;
    (void)user_data;
    atomic_fetch_add_explicit(&leaves, 1, memory_order_relaxed);
}

static void on_late_enter(const sonde_event_data_t *d, void *user_data) {
    (void)d;
    (void)user_data;
    atomic_fetch_add_explicit(&late_enters, 1, memory_order_relaxed);
}

static sonde_status_t counter_instantiate(const sonde_api_t *a, sonde_client_id_t id, const char *options) {
    (void)options;
    api = a;
    sonde_status_t st = a->register_event(id, SONDE_EVENT_METHOD_ENTER,
                                          SONDE_DATA_METHOD_ID | SONDE_DATA_THREAD_ID, on_enter, NULL);
    if (st == SONDE_STATUS_SUCCESS)
        st = a->register_event(id, SONDE_EVENT_METHOD_LEAVE, SONDE_DATA_STACK_DEPTH, on_leave, NULL);
    return st;
}

static sonde_status_t late_instantiate(const sonde_api_t *a, sonde_client_id_t id, const char *options) {
    (void)options;
    return a->register_event(id, SONDE_EVENT_METHOD_ENTER, 0, on_late_enter, NULL);
}

static void *worker(void *arg) {
    const int seed = (int)(intptr_t)arg;
    for (int r = 0; r < ROUNDS; ++r) {
        for (int d = 0; d < DEPTH; ++d) sonde_method_enter(&methods[(seed * 7 + r + d) % 64], NULL);
        for (int d = DEPTH - 1; d >= 0; --d) sonde_method_leave(&methods[(seed * 7 + r + d) % 64], NULL);
    }
    atomic_fetch_sub(&running_threads, 1);
    return NULL;
}

static void test_concurrent_events_and_requests(void **state) {
    (void)state;
    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_register_client(counter_instantiate, NULL, &counter_id), SONDE_STATUS_SUCCESS);
    pthread_t t[THREADS];
    atomic_store(&running_threads, THREADS);
    for (int i = 0; i < THREADS; ++i)
        assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
    int requests = 0;
    bool late_loaded = false;
    while (atomic_load(&running_threads) > 0) {
        sonde_thread_id_t ids[16];
        sonde_thread_array_t list = {ids, 16, 0};
        assert_int_equal(api->get_thread_list(counter_id, &list), SONDE_STATUS_SUCCESS);
        for (uint32_t i = 0; i < list.actual_size; ++i) {
            sonde_method_id_t stack[16];
            sonde_method_array_t s = {stack, 16, 0};
            const sonde_status_t st = api->get_thread_stack(counter_id, ids[i], &s);
            /* A thread that has ended has no stack; otherwise at most DEPTH frames. */
            assert_true(st == SONDE_STATUS_SUCCESS || st == SONDE_STATUS_ERROR);
            if (st == SONDE_STATUS_SUCCESS) assert_true(s.actual_size <= DEPTH);
            sonde_thread_info_t ti;
            memset(&ti, 0, sizeof ti);
            ti.struct_size = sizeof ti;
            assert_int_equal(
                api->get_thread_info(counter_id, ids[i], SONDE_DATA_STATE | SONDE_DATA_STACK_DEPTH, &ti),
                SONDE_STATUS_SUCCESS);
        }
        assert_int_equal(sonde_user_mark("tick", NULL, 0), SONDE_STATUS_SUCCESS);
        if (!late_loaded && ++requests == 10) {
            assert_int_equal(sonde_register_client(late_instantiate, NULL, &late_id), SONDE_STATUS_SUCCESS);
            late_loaded = true;
        }
    }
    for (int i = 0; i < THREADS; ++i) pthread_join(t[i], NULL);
    const unsigned long long total = (unsigned long long)THREADS * ROUNDS * DEPTH;
    assert_int_equal(atomic_load(&enters), total);
    assert_int_equal(atomic_load(&leaves), total);
    assert_true(atomic_load(&late_enters) <= total);
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_concurrent_events_and_requests)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
