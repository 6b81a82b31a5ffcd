/*
 * What a CALL_GRAPH observer is given, event by event, on each of the delivery paths: a client
 * alone asking for the method and the thread (the path of the cheapest observers, which writes
 * one field per event), the same with a second client beside it (several observers), and
 * clients asking for other items. Every event must carry its own kind and method, the items
 * asked for, and zero in every other field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/sonde.h>

#define METHODS 8
#define EVENTS 64

/* Methods without symbols: addresses inside one array. */
static char methods[METHODS];

struct seen {
    uint32_t event;
    uint32_t method; /* sonde_method_index */
    sonde_event_data_t data;
};

struct log {
    struct seen e[EVENTS];
    int n;
};

static struct log first_log, second_log;
static uint32_t index_of[METHODS]; /* the method index of methods[i], from NEW_METHOD */

static void record(struct log *l, const sonde_event_data_t *d) {
    assert_true(l->n < EVENTS);
    l->e[l->n].event = d->event;
    l->e[l->n].method = sonde_method_index(d->method);
    memcpy(&l->e[l->n].data, d, sizeof *d);
    l->n++;
}

static void on_first(const sonde_event_data_t *d, void *user_data) { record(user_data, d); }

static void on_new_method(const sonde_event_data_t *d, void *user_data) {
    (void)user_data;
    for (int i = 0; i < METHODS; ++i)
        if (d->address == (uint64_t)(uintptr_t)&methods[i]) index_of[i] = sonde_method_index(d->method);
}

static uint64_t g_first_items = SONDE_DATA_METHOD_ID | SONDE_DATA_THREAD_ID;

static sonde_status_t first_client(const sonde_api_t *api, sonde_client_id_t id, const char *options) {
    (void)options;
    sonde_status_t st =
        api->register_event(id, SONDE_EVENT_METHOD_ENTER, g_first_items, on_first, &first_log);
    if (st == SONDE_STATUS_SUCCESS)
        st = api->register_event(id, SONDE_EVENT_METHOD_LEAVE, g_first_items, on_first, &first_log);
    if (st == SONDE_STATUS_SUCCESS)
        st = api->register_event(id, SONDE_EVENT_NEW_METHOD, SONDE_DATA_METHOD_ID | SONDE_DATA_ADDRESS,
                                 on_new_method, NULL);
    return st;
}

static sonde_status_t second_client(const sonde_api_t *api, sonde_client_id_t id, const char *options) {
    (void)options;
    sonde_status_t st = api->register_event(
        id, SONDE_EVENT_METHOD_ENTER, SONDE_DATA_METHOD_ID | SONDE_DATA_THREAD_ID, on_first, &second_log);
    if (st == SONDE_STATUS_SUCCESS)
        st = api->register_event(id, SONDE_EVENT_METHOD_LEAVE, SONDE_DATA_METHOD_ID | SONDE_DATA_THREAD_ID,
                                 on_first, &second_log);
    return st;
}

/* Calls 0 -> 1 -> 2, leaves them, then 3: eight events. */
static void calls(void) {
    for (int i = 0; i < 3; ++i) sonde_method_enter(&methods[i], NULL);
    for (int i = 2; i >= 0; --i) sonde_method_leave(&methods[i], NULL);
    sonde_method_enter(&methods[3], NULL);
    sonde_method_leave(&methods[3], NULL);
}

/* Whether the log holds calls()'s eight events, in order, each with the items `items` and every
 * other field zero (the thread's handle, the same in every event, set when asked for): NULL when
 * it does, else what differs. */
static const char *check_log(const struct log *l, uint64_t items) {
    static const uint32_t order[8][2] = {{SONDE_EVENT_METHOD_ENTER, 0}, {SONDE_EVENT_METHOD_ENTER, 1},
                                         {SONDE_EVENT_METHOD_ENTER, 2}, {SONDE_EVENT_METHOD_LEAVE, 2},
                                         {SONDE_EVENT_METHOD_LEAVE, 1}, {SONDE_EVENT_METHOD_LEAVE, 0},
                                         {SONDE_EVENT_METHOD_ENTER, 3}, {SONDE_EVENT_METHOD_LEAVE, 3}};
    static const uint32_t depth[8] = {0, 1, 2, 2, 1, 0, 0, 0};
    if (l->n != 8) return "not eight events";
    for (int k = 0; k < 8; ++k) {
        const sonde_event_data_t *d = &l->e[k].data;
        if (l->e[k].event != order[k][0]) return "an event of another kind";
        if (d->valid_items != items) return "other valid items";
        if ((items & SONDE_DATA_METHOD_ID) ? l->e[k].method != index_of[order[k][1]] : d->method.handle != 0)
            return "another method";
        if ((items & SONDE_DATA_THREAD_ID)
                ? d->thread.handle != l->e[0].data.thread.handle || d->thread.handle == 0
                : d->thread.handle != 0)
            return "another thread";
        if (d->stack_depth != ((items & SONDE_DATA_STACK_DEPTH) ? depth[k] : 0)) return "another depth";
        if (d->timestamp != 0 || d->call_site != 0 || d->address != 0 || d->module.handle != 0 ||
            d->name != NULL)
            return "a field not asked for is set";
    }
    return NULL;
}

static void test_one_client_method_and_thread(void **state) {
    (void)state;
    memset(&first_log, 0, sizeof first_log);
    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    sonde_client_id_t id;
    assert_int_equal(sonde_register_client(first_client, NULL, &id), SONDE_STATUS_SUCCESS);
    calls();
    assert_null(check_log(&first_log, SONDE_DATA_METHOD_ID | SONDE_DATA_THREAD_ID));
    /* A second observer of the same events: both see every event as it is. */
    memset(&first_log, 0, sizeof first_log);
    memset(&second_log, 0, sizeof second_log);
    sonde_client_id_t id2;
    assert_int_equal(sonde_register_client(second_client, NULL, &id2), SONDE_STATUS_SUCCESS);
    calls();
    assert_null(check_log(&first_log, SONDE_DATA_METHOD_ID | SONDE_DATA_THREAD_ID));
    assert_null(check_log(&second_log, SONDE_DATA_METHOD_ID | SONDE_DATA_THREAD_ID));
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
}

/* Other sets of items, each asked for by a client alone: clients stay registered for the
 * process's life, so each set runs in a child of this process, which has registered none yet
 * (this test runs first). */
static void test_one_client_other_items(void **state) {
    (void)state;
    const uint64_t sets[] = {SONDE_DATA_METHOD_ID, SONDE_DATA_THREAD_ID,
                             SONDE_DATA_METHOD_ID | SONDE_DATA_THREAD_ID | SONDE_DATA_STACK_DEPTH,
                             SONDE_DATA_STACK_DEPTH, 0};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; ++i) {
        const pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            g_first_items = sets[i];
            if (sonde_initialize() != SONDE_STATUS_SUCCESS) _exit(2);
            sonde_client_id_t id;
            if (sonde_register_client(first_client, NULL, &id) != SONDE_STATUS_SUCCESS) _exit(3);
            calls();
            const char *error = check_log(&first_log, sets[i]);
            if (error != NULL) fprintf(stderr, "items 0x%llx: %s\n", (unsigned long long)sets[i], error);
            _exit(error == NULL && sonde_finalize() == SONDE_STATUS_SUCCESS ? 0 : 1);
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_client_other_items),
        cmocka_unit_test(test_one_client_method_and_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
