/*
 * Client concept tests against the public ABI (sonde/client.h): loading and its failure modes
 * (a missing file, not ELF, a FIFO, a directory, cut short, no entry point, a newer ABI,
 * refusing, throwing),
 * observers with exactly their data items, filters asked once, two clients seeing only their own
 * events, every data request and its statuses, the array protocol, phases, stale ids, and the
 * recursion guard. The tests share one process and run in order: the runtime is initialised by
 * the first test and finalised by the last.
 *
 * Call-graph events are driven with sonde_method_enter/leave on this file's static functions,
 * so the expected names, visibility and source lines are known.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sonde/sonde.h>

#include "cut_copy.h"

#define NOINLINE __attribute__((noinline, used))

/* The methods the tests report. Their DWARF line is the line of their definition. */
static const unsigned alpha_line = __LINE__ + 1; /* the line of alpha below */
NOINLINE static void alpha(void) { __asm__ volatile(""); }
NOINLINE static void beta(void) { __asm__ volatile(""); }
NOINLINE static void gamma_fn(void) { __asm__ volatile(""); }
NOINLINE static void delta_fn(void) { __asm__ volatile(""); }

#define FN(f) ((const void *)(uintptr_t)(f))

/* ---- client A: registered before initialisation; lifecycle, modules, threads ---- */

static const sonde_api_t *api;
static sonde_client_id_t client_a;
static sonde_status_t a_early_request, a_early_list, a_filter_in_instantiate;
static int a_init, a_shutdown, a_modules, a_threads_started, a_session_start, a_session_stop;
static sonde_session_id_t a_session_seen;

static void a_event(const sonde_event_data_t *d, void *user_data) {
    (void)user_data;
    switch (d->event) {
        case SONDE_EVENT_RUNTIME_INIT: ++a_init; break;
        case SONDE_EVENT_SHUTDOWN: ++a_shutdown; break;
        case SONDE_EVENT_MODULE_LOAD: ++a_modules; break;
        case SONDE_EVENT_THREAD_START: ++a_threads_started; break;
        case SONDE_EVENT_SESSION_START:
            ++a_session_start;
            a_session_seen = d->session;
            break;
        case SONDE_EVENT_SESSION_STOP: ++a_session_stop; break;
        default: break;
    }
}

static bool accept_all(const sonde_filter_element_t *el, void *user_data) {
    (void)el;
    (void)user_data;
    return true;
}

static sonde_status_t a_instantiate(const sonde_api_t *a, sonde_client_id_t id, const char *options) {
    api = a;
    assert_string_equal(options, "");
    sonde_method_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    a_early_request = a->get_method_info(id, (sonde_method_id_t){1}, SONDE_DATA_ADDRESS, &info);
    sonde_module_array_t mods = {NULL, 0, 0};
    a_early_list = a->get_module_list(id, &mods);
    a_filter_in_instantiate = a->set_event_group_filter(id, SONDE_EVENT_GROUP_MODULE, accept_all, NULL);
    const uint32_t events[] = {SONDE_EVENT_RUNTIME_INIT, SONDE_EVENT_SHUTDOWN,      SONDE_EVENT_MODULE_LOAD,
                               SONDE_EVENT_THREAD_START, SONDE_EVENT_SESSION_START, SONDE_EVENT_SESSION_STOP};
    for (size_t i = 0; i < sizeof events / sizeof events[0]; ++i) {
        const uint64_t items = events[i] == SONDE_EVENT_SESSION_START ? SONDE_DATA_SESSION_ID : 0;
        sonde_status_t st = a->register_event(id, events[i], items, a_event, NULL);
        if (st != SONDE_STATUS_SUCCESS) return st;
    }
    return SONDE_STATUS_SUCCESS;
}

static void test_phase_before_init(void **state) {
    (void)state;
    assert_int_equal(sonde_register_client(a_instantiate, NULL, &client_a), SONDE_STATUS_SUCCESS);
    assert_int_equal(a_early_request, SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(a_early_list, SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(a_filter_in_instantiate, SONDE_STATUS_SUCCESS);
    assert_int_equal(a_init, 0);
    /* Requests through the table answer PHASE_FAILURE until the runtime is initialised. */
    sonde_thread_array_t threads = {NULL, 0, 0};
    assert_int_equal(sonde_get_client_api()->get_thread_list(client_a, &threads),
                     SONDE_STATUS_ERROR_PHASE_FAILURE);
    /* Explicit events before initialisation are not delivered and say so. */
    assert_int_equal(sonde_user_mark("early", NULL, 0), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    sonde_method_enter(FN(alpha), NULL);
    sonde_method_leave(FN(alpha), NULL);

    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    assert_int_equal(a_init, 1);
    assert_true(a_modules >= 3); /* this program, libsonde, libc at least */
    assert_int_equal(a_threads_started, 1);
    assert_int_equal(sonde_get_client_api()->get_thread_list(client_a, &threads),
                     SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_true(threads.actual_size >= 1);
}

/* ---- loading failures ---- */

static const char *plugin_dir(void) {
    const char *d = getenv("SONDE_TEST_PLUGIN_DIR");
    assert_non_null(d);
    return d;
}

static void expect_failed(sonde_client_id_t id, sonde_status_t status, const char *message_part) {
    char path[512], message[1024];
    sonde_client_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.path = (sonde_string_t){path, sizeof path, 0};
    info.message = (sonde_string_t){message, sizeof message, 0};
    assert_int_equal(sonde_get_client_info(id, &info), SONDE_STATUS_SUCCESS);
    assert_int_equal(info.state, SONDE_CLIENT_STATE_FAILED);
    assert_int_equal(info.status, status);
    if (strstr(message, message_part) == NULL) fail_msg("message '%s' lacks '%s'", message, message_part);
    /* A failed client cannot make requests. */
    sonde_thread_array_t threads = {NULL, 0, 0};
    assert_int_equal(api->get_thread_list(id, &threads), SONDE_STATUS_ERROR_ILLEGAL_ID);
}

/* Copies of the first 100 bytes and the first half of `whole` (its program headers, then a
 * loadable segment, past the end) are refused with LOAD_FAILED, saying so. */
static void expect_cut_short_refused(const char *whole) {
    const size_t keeps[] = {100, 0};
    for (size_t i = 0; i < sizeof keeps / sizeof keeps[0]; ++i) {
        char cut[] = "/tmp/sonde-cut-client-XXXXXX";
        assert_true(cut_copy(whole, keeps[i], cut) != 0);
        sonde_client_id_t id;
        assert_int_equal(sonde_load_client(cut, "", &id), SONDE_STATUS_ERROR_LOAD_FAILED);
        expect_failed(id, SONDE_STATUS_ERROR_LOAD_FAILED, "is not a whole shared object");
        expect_failed(id, SONDE_STATUS_ERROR_LOAD_FAILED, "cut short");
        unlink(cut);
    }
}

/* The file plugin_ok writes "init" into at each RUNTIME_INIT; test_shutdown's second
 * initialisation writes it again, and removes it. */
static char g_ok_out[] = "/tmp/sonde-plugin-ok-XXXXXX";

static void test_load_failures(void **state) {
    (void)state;
    char path[1024];
    sonde_client_id_t id;
    const int modules_before = a_modules;

    assert_int_equal(sonde_load_client("/nonexistent/client.so", "", &id), SONDE_STATUS_ERROR_LOAD_FAILED);
    expect_failed(id, SONDE_STATUS_ERROR_LOAD_FAILED, "cannot open");

    char text[] = "/tmp/sonde-not-elf-XXXXXX";
    const int fd = mkstemp(text);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not a shared object\n", 20), 20);
    close(fd);
    assert_int_equal(sonde_load_client(text, "", &id), SONDE_STATUS_ERROR_LOAD_FAILED);
    expect_failed(id, SONDE_STATUS_ERROR_LOAD_FAILED, "dlopen failed");
    unlink(text);

    /* A FIFO with no writer would block dlopen for ever; a directory is no client either. */
    char fifo[] = "/tmp/sonde-fifo-client-XXXXXX";
    assert_non_null(mkdtemp(fifo));
    snprintf(path, sizeof path, "%s/client.so", fifo);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(sonde_load_client(path, "", &id), SONDE_STATUS_ERROR_LOAD_FAILED);
    expect_failed(id, SONDE_STATUS_ERROR_LOAD_FAILED, "is not a regular file");
    unlink(path);
    assert_int_equal(sonde_load_client(fifo, "", &id), SONDE_STATUS_ERROR_LOAD_FAILED);
    expect_failed(id, SONDE_STATUS_ERROR_LOAD_FAILED, "is a directory");
    rmdir(fifo);

    /* A copy of a good client cut short: dlopen would map its segments past the end of the
     * file and the first touch of one would kill this program (SIGBUS); the loader refuses it. */
    snprintf(path, sizeof path, "%s/plugin_ok.so", plugin_dir());
    expect_cut_short_refused(path);

    /* No entry point of its own: the one of its dependency does not count. */
    snprintf(path, sizeof path, "%s/plugin_noentry.so", plugin_dir());
    assert_int_equal(sonde_load_client(path, "", &id), SONDE_STATUS_ERROR_LOAD_FAILED);
    expect_failed(id, SONDE_STATUS_ERROR_LOAD_FAILED, "no entry point");
    expect_failed(id, SONDE_STATUS_ERROR_LOAD_FAILED, "not defined in the plugin");

    snprintf(path, sizeof path, "%s/plugin_needs_v99.so", plugin_dir());
    assert_int_equal(sonde_load_client(path, "", &id), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    expect_failed(id, SONDE_STATUS_ERROR_INCOMPATIBLE_ABI, "version 99");

    snprintf(path, sizeof path, "%s/plugin_refuses.so", plugin_dir());
    assert_int_equal(sonde_load_client(path, "", &id), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    expect_failed(id, SONDE_STATUS_ERROR_NOT_SUPPORTED, "needs a newer Sonde");

    snprintf(path, sizeof path, "%s/plugin_throws.so", plugin_dir());
    assert_int_equal(sonde_load_client(path, "", &id), SONDE_STATUS_ERROR);
    expect_failed(id, SONDE_STATUS_ERROR, "exception");

    /* Bad arguments. */
    assert_int_equal(sonde_load_client(NULL, "", &id), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_load_client(path, "", NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_register_client(NULL, "", &id), SONDE_STATUS_ERROR_NULL_POINTER);

    /* A good client still loads after all that, and gets RUNTIME_INIT at once. */
    char *out = g_ok_out;
    const int ofd = mkstemp(out);
    assert_true(ofd >= 0);
    close(ofd);
    snprintf(path, sizeof path, "%s/plugin_ok.so", plugin_dir());
    assert_int_equal(sonde_load_client(path, out, &id), SONDE_STATUS_SUCCESS);
    char buf[64] = {0};
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    unlink(out);
    assert_string_equal(buf, "init\n");
    /* Client A, loaded first, kept running: it saw the good plugin's module load. */
    assert_true(a_modules > modules_before);

    sonde_client_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(sonde_get_client_info(id, &info), SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_int_equal(info.state, SONDE_CLIENT_STATE_ACTIVE);
    assert_int_equal(info.status, SONDE_STATUS_SUCCESS);
    assert_int_equal(info.path.actual_size, strlen(path) + 1);
    assert_int_equal(sonde_get_client_info((sonde_client_id_t){0}, &info), SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(sonde_get_client_info(id, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    info.struct_size = 4;
    assert_int_equal(sonde_get_client_info(id, &info), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);

    sonde_client_id_t ids[16];
    sonde_client_array_t list = {ids, 2, 0};
    assert_int_equal(sonde_get_client_list(&list), SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_int_equal(list.actual_size, 12); /* A, ten failures (two cut short), the good one */
    assert_int_equal(ids[0].handle, client_a.handle);
    list.size = 16;
    assert_int_equal(sonde_get_client_list(&list), SONDE_STATUS_SUCCESS);
    assert_int_equal(ids[11].handle, id.handle);
    assert_int_equal(sonde_get_client_list(NULL), SONDE_STATUS_ERROR_NULL_POINTER);
}

/* An optional symbol counts only when the client defines it itself: a
 * sonde_client_required_abi_version (99) that comes from a library the client links is not the
 * client's, so it loads as a client that requires nothing. */
static void test_optional_symbol_from_dependency(void **state) {
    (void)state;
    char path[1024], message[1024];
    sonde_client_id_t id;
    snprintf(path, sizeof path, "%s/plugin_abi_from_dependency.so", plugin_dir());
    assert_int_equal(sonde_load_client(path, "", &id), SONDE_STATUS_SUCCESS);
    sonde_client_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.message = (sonde_string_t){message, sizeof message, 0};
    assert_int_equal(sonde_get_client_info(id, &info),
                     SONDE_STATUS_ERROR_BUFFER_TOO_SHORT); /* no path storage */
    assert_int_equal(info.state, SONDE_CLIENT_STATE_ACTIVE);
    assert_int_equal(info.status, SONDE_STATUS_SUCCESS);
    assert_string_equal(message, "");
}

/* ---- two clients with different events and filters ---- */

struct seen {
    int count;
    sonde_event_data_t last[8];
};

static sonde_client_id_t client_b, client_c;
static struct seen b_enter, c_leave, c_mark, b_mark;
static int b_filter_calls_alpha;
static sonde_method_id_t alpha_id, beta_id;

static void record(const sonde_event_data_t *d, void *user_data) {
    struct seen *s = user_data;
    if (s->count < 8) s->last[s->count] = *d;
    ++s->count;
}

static bool b_only_alpha(const sonde_filter_element_t *el, void *user_data) {
    (void)user_data;
    assert_int_equal(el->group, SONDE_EVENT_GROUP_CALL_GRAPH);
    if (strcmp(el->name, "alpha") == 0) {
        ++b_filter_calls_alpha;
        assert_int_equal(el->visibility, SONDE_VISIBILITY_LOCAL);
        assert_string_equal(el->class_name, "");
        assert_string_equal(el->module_name, "test_client");
        return true;
    }
    return false;
}

static sonde_status_t b_instantiate(const sonde_api_t *a, sonde_client_id_t id, const char *options) {
    (void)options;
    sonde_status_t st = a->set_event_group_filter(id, SONDE_EVENT_GROUP_CALL_GRAPH, b_only_alpha, NULL);
    if (st == SONDE_STATUS_SUCCESS)
        st = a->register_event(id, SONDE_EVENT_METHOD_ENTER, SONDE_DATA_METHOD_ID | SONDE_DATA_STACK_DEPTH,
                               record, &b_enter);
    return st;
}

static sonde_status_t c_instantiate(const sonde_api_t *a, sonde_client_id_t id, const char *options) {
    assert_string_equal(options, "c-options");
    sonde_status_t st = a->register_event(
        id, SONDE_EVENT_METHOD_LEAVE,
        SONDE_DATA_METHOD_ID | SONDE_DATA_STACK_DEPTH | SONDE_DATA_TIMESTAMP | SONDE_DATA_THREAD_ID |
            SONDE_DATA_CALL_SITE | SONDE_DATA_ADDRESS | SONDE_DATA_MODULE_ID,
        record, &c_leave);
    if (st == SONDE_STATUS_SUCCESS)
        st = a->register_event(id, SONDE_EVENT_USER_MARK, SONDE_DATA_NAME | SONDE_DATA_USER_PAYLOAD, record,
                               &c_mark);
    return st;
}

static void test_two_clients(void **state) {
    (void)state;
    assert_int_equal(sonde_register_client(b_instantiate, NULL, &client_b), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_register_client(c_instantiate, "c-options", &client_c), SONDE_STATUS_SUCCESS);
    const uint64_t t0 = sonde_get_timestamp();
    for (int round = 0; round < 2; ++round) {
        sonde_method_enter(FN(alpha), (const void *)0x1234);
        sonde_method_enter(FN(beta), (const void *)0x5678);
        sonde_method_leave(FN(beta), (const void *)0x5678);
        sonde_method_leave(FN(alpha), (const void *)0x1234);
    }
    static const char payload[] = {1, 2, 3};
    assert_int_equal(sonde_user_mark("hello", payload, sizeof payload), SONDE_STATUS_SUCCESS);

    /* B: only alpha's enters, only the two items it asked for; its filter was asked once. */
    assert_int_equal(b_filter_calls_alpha, 1);
    assert_int_equal(b_enter.count, 2);
    const sonde_event_data_t *e = &b_enter.last[0];
    assert_int_equal(e->event, SONDE_EVENT_METHOD_ENTER);
    assert_int_equal(e->valid_items, SONDE_DATA_METHOD_ID | SONDE_DATA_STACK_DEPTH);
    assert_int_equal(e->stack_depth, 0);
    assert_int_equal(e->timestamp, 0);
    assert_int_equal(e->call_site, 0);
    assert_int_equal(e->thread.handle, 0);
    assert_true(e->struct_size >= sizeof(sonde_event_data_t));
    alpha_id = e->method;
    assert_int_equal(b_mark.count, 0);

    /* C: every leave (beta at depth 1, then alpha at depth 0), with all it asked for. */
    assert_int_equal(c_leave.count, 4);
    assert_int_equal(c_leave.last[0].stack_depth, 1);
    assert_int_equal(c_leave.last[1].stack_depth, 0);
    assert_int_equal(c_leave.last[1].method.handle, alpha_id.handle);
    beta_id = c_leave.last[0].method;
    assert_int_not_equal(beta_id.handle, alpha_id.handle);
    assert_int_equal(c_leave.last[0].address, (uint64_t)(uintptr_t)FN(beta));
    assert_int_equal(c_leave.last[0].call_site, 0x5678);
    assert_true(c_leave.last[0].timestamp >= t0);
    assert_int_not_equal(c_leave.last[0].thread.handle, 0);
    assert_int_not_equal(c_leave.last[0].module.handle, 0);
    assert_int_equal(c_leave.last[0].valid_items & SONDE_DATA_NAME, 0);
    /* Method ids are dense: alpha and beta were the first two methods seen. */
    assert_true(sonde_method_index(alpha_id) < 2 && sonde_method_index(beta_id) < 2);

    assert_int_equal(c_mark.count, 1);
    assert_string_equal(c_mark.last[0].name, "hello");
    assert_int_equal(c_mark.last[0].payload_size, 3);
    assert_int_equal(c_mark.last[0].valid_items, SONDE_DATA_NAME | SONDE_DATA_USER_PAYLOAD);
}

/* ---- registration errors ---- */

static void test_registration_errors(void **state) {
    (void)state;
    assert_int_equal(api->set_event_group_filter(client_b, SONDE_EVENT_GROUP_CALL_GRAPH, b_only_alpha, NULL),
                     SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(api->set_event_group_filter(client_b, SONDE_EVENT_GROUP_USER, b_only_alpha, NULL),
                     SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(api->set_event_group_filter(client_b, SONDE_EVENT_GROUP_THREAD, NULL, NULL),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(api->register_event(client_b, SONDE_EVENT_COUNT, 0, record, NULL),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(api->register_event(client_b, SONDE_EVENT_USER_MARK, 0, NULL, NULL),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(
        api->register_event(client_b, SONDE_EVENT_USER_MARK, SONDE_DATA_ACCESS_TYPE, record, NULL),
        SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(api->register_event((sonde_client_id_t){12345}, SONDE_EVENT_USER_MARK, 0, record, NULL),
                     SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(api->set_message(client_b, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    /* Registering after instantiation works and takes effect at once. */
    assert_int_equal(api->register_event(client_b, SONDE_EVENT_USER_MARK, SONDE_DATA_NAME, record, &b_mark),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_user_mark("to-b", NULL, 0), SONDE_STATUS_SUCCESS);
    assert_int_equal(b_mark.count, 1);
    assert_string_equal(b_mark.last[0].name, "to-b");
    assert_int_equal(sonde_user_mark(NULL, NULL, 0), SONDE_STATUS_ERROR_NULL_POINTER);
}

/* ---- data requests ---- */

static void test_method_info(void **state) {
    (void)state;
    char name[64], cls[64], full[128], mangled[64], file[512];
    sonde_method_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.name = (sonde_string_t){name, sizeof name, 0};
    info.class_name = (sonde_string_t){cls, sizeof cls, 0};
    info.full_name = (sonde_string_t){full, sizeof full, 0};
    info.mangled_name = (sonde_string_t){mangled, sizeof mangled, 0};
    info.source_file = (sonde_string_t){file, sizeof file, 0};
    const uint64_t all = SONDE_DATA_NAME | SONDE_DATA_CLASS_NAME | SONDE_DATA_FULL_NAME |
                         SONDE_DATA_MANGLED_NAME | SONDE_DATA_MODULE_ID | SONDE_DATA_SOURCE_FILE |
                         SONDE_DATA_SOURCE_LINE | SONDE_DATA_ADDRESS | SONDE_DATA_SIZE |
                         SONDE_DATA_VISIBILITY;
    assert_int_equal(api->get_method_info(client_a, alpha_id, all, &info), SONDE_STATUS_SUCCESS);
    assert_int_equal(info.valid_items, all);
    assert_string_equal(name, "alpha");
    assert_string_equal(cls, "");
    assert_string_equal(full, "alpha");
    assert_string_equal(mangled, "alpha");
    assert_int_equal(info.name.actual_size, 6);
    assert_int_equal(info.visibility, SONDE_VISIBILITY_LOCAL);
    assert_int_equal(info.address, (uint64_t)(uintptr_t)FN(alpha));
    assert_true(info.size > 0);
    assert_int_equal(info.source_line, alpha_line);
    assert_non_null(strstr(file, "test_client.c"));

    /* The array protocol on a string: exact size, too small, none at all. */
    info.name.size = 6;
    assert_int_equal(api->get_method_info(client_a, alpha_id, SONDE_DATA_NAME | SONDE_DATA_ADDRESS, &info),
                     SONDE_STATUS_SUCCESS);
    assert_string_equal(name, "alpha");
    info.name.size = 3;
    assert_int_equal(api->get_method_info(client_a, alpha_id, SONDE_DATA_NAME | SONDE_DATA_ADDRESS, &info),
                     SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_string_equal(name, "al");
    assert_int_equal(info.name.actual_size, 6);
    assert_int_equal(info.valid_items, SONDE_DATA_ADDRESS); /* the other item is still filled */
    info.name = (sonde_string_t){NULL, 0, 0};
    assert_int_equal(api->get_method_info(client_a, alpha_id, SONDE_DATA_NAME, &info),
                     SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_int_equal(info.name.actual_size, 6);
    info.name = (sonde_string_t){NULL, 5, 0};
    assert_int_equal(api->get_method_info(client_a, alpha_id, SONDE_DATA_NAME, &info),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    info.name = (sonde_string_t){name, sizeof name, 0};

    /* Statuses. */
    assert_int_equal(api->get_method_info(client_a, alpha_id, SONDE_DATA_NAME, NULL),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(api->get_method_info(client_a, alpha_id, SONDE_DATA_ACCESS_TYPE, &info),
                     SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(api->get_method_info(client_a, (sonde_method_id_t){0}, SONDE_DATA_NAME, &info),
                     SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(
        api->get_method_info(client_a, (sonde_method_id_t){alpha_id.handle + 100000}, SONDE_DATA_NAME, &info),
        SONDE_STATUS_ERROR_ILLEGAL_ID);
    sonde_thread_id_t self_thread;
    assert_int_equal(sonde_register_thread(&self_thread), SONDE_STATUS_SUCCESS);
    assert_int_equal(
        api->get_method_info(client_a, (sonde_method_id_t){self_thread.handle}, SONDE_DATA_NAME, &info),
        SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(api->get_method_info((sonde_client_id_t){99}, alpha_id, SONDE_DATA_NAME, &info),
                     SONDE_STATUS_ERROR_ILLEGAL_ID);
    info.struct_size = 8;
    assert_int_equal(api->get_method_info(client_a, alpha_id, SONDE_DATA_NAME, &info),
                     SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    info.struct_size = sizeof info;

    /* No symbol at all: an address outside every module. */
    static char not_code[64];
    sonde_method_enter(not_code, NULL);
    sonde_method_leave(not_code, NULL);
    /* A function of a stripped library: a name, but no DWARF line. */
    sonde_method_enter(FN(getpid), NULL);
    sonde_method_leave(FN(getpid), NULL);
    sonde_method_id_t ids[64];
    sonde_method_array_t stack = {ids, 64, 0};
    sonde_method_enter(FN(not_code), NULL);
    assert_int_equal(api->get_thread_stack(client_a, (sonde_thread_id_t){0}, &stack), SONDE_STATUS_SUCCESS);
    assert_int_equal(stack.actual_size, 1);
    sonde_method_leave(FN(not_code), NULL);
    assert_int_equal(api->get_method_info(client_a, ids[0], SONDE_DATA_NAME | SONDE_DATA_ADDRESS, &info),
                     SONDE_STATUS_PARTIAL_INFO);
    assert_int_equal(info.valid_items, SONDE_DATA_ADDRESS);
    sonde_method_enter(FN(getpid), NULL);
    assert_int_equal(api->get_thread_stack(client_a, (sonde_thread_id_t){0}, &stack), SONDE_STATUS_SUCCESS);
    sonde_method_leave(FN(getpid), NULL);
    assert_int_equal(api->get_method_info(client_a, ids[0], SONDE_DATA_NAME | SONDE_DATA_SOURCE_LINE, &info),
                     SONDE_STATUS_PARTIAL_INFO);
    assert_int_equal(info.valid_items, SONDE_DATA_NAME);
    assert_non_null(strstr(name, "getpid")); /* getpid or its alias __getpid */
}

static void test_module_info(void **state) {
    (void)state;
    char name[256], path[1024];
    sonde_method_info_t mi;
    memset(&mi, 0, sizeof mi);
    mi.struct_size = sizeof mi;
    assert_int_equal(api->get_method_info(client_a, alpha_id, SONDE_DATA_MODULE_ID, &mi),
                     SONDE_STATUS_SUCCESS);
    sonde_module_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.name = (sonde_string_t){name, sizeof name, 0};
    info.path = (sonde_string_t){path, sizeof path, 0};
    const uint64_t all =
        SONDE_DATA_NAME | SONDE_DATA_PATH | SONDE_DATA_ADDRESS | SONDE_DATA_SIZE | SONDE_DATA_STATE;
    assert_int_equal(api->get_module_info(client_a, mi.module, all, &info), SONDE_STATUS_SUCCESS);
    assert_string_equal(name, "test_client");
    assert_non_null(strstr(path, "/test_client"));
    assert_int_equal(info.loaded, 1);
    assert_true(info.address <= (uint64_t)(uintptr_t)FN(alpha));
    assert_true(info.address + info.size > (uint64_t)(uintptr_t)FN(alpha));
    assert_int_equal(api->get_module_info(client_a, mi.module, SONDE_DATA_METHOD_ID, &info),
                     SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(
        api->get_module_info(client_a, (sonde_module_id_t){alpha_id.handle}, SONDE_DATA_NAME, &info),
        SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(api->get_module_info(client_a, mi.module, SONDE_DATA_NAME, NULL),
                     SONDE_STATUS_ERROR_NULL_POINTER);

    /* The module list in the array protocol: size 0, too small, exact, larger. */
    sonde_module_id_t ids[256];
    sonde_module_array_t list = {NULL, 0, 0};
    assert_int_equal(api->get_module_list(client_a, &list), SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    const uint32_t n = list.actual_size;
    assert_true(n >= 3 && n < 256);
    list = (sonde_module_array_t){ids, 1, 0};
    assert_int_equal(api->get_module_list(client_a, &list), SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_int_equal(list.actual_size, n);
    list = (sonde_module_array_t){ids, n, 0};
    assert_int_equal(api->get_module_list(client_a, &list), SONDE_STATUS_SUCCESS);
    list = (sonde_module_array_t){ids, 256, 0};
    assert_int_equal(api->get_module_list(client_a, &list), SONDE_STATUS_SUCCESS);
    assert_int_equal(list.actual_size, n);
    bool found = false;
    for (uint32_t i = 0; i < n; ++i) found |= ids[i].handle == mi.module.handle;
    assert_true(found);
    list = (sonde_module_array_t){NULL, 3, 0};
    assert_int_equal(api->get_module_list(client_a, &list), SONDE_STATUS_ERROR_NULL_POINTER);

    /* The vdso has a name but no file: asking for its path is PARTIAL_INFO. */
    bool vdso = false;
    for (uint32_t i = 0; i < n; ++i) {
        info.name = (sonde_string_t){name, sizeof name, 0};
        info.path = (sonde_string_t){path, sizeof path, 0};
        if (api->get_module_info(client_a, ids[i], SONDE_DATA_NAME, &info) != SONDE_STATUS_SUCCESS) continue;
        if (strstr(name, "vdso") == NULL) continue;
        vdso = true;
        assert_int_equal(api->get_module_info(client_a, ids[i], SONDE_DATA_NAME | SONDE_DATA_PATH, &info),
                         SONDE_STATUS_PARTIAL_INFO);
        assert_int_equal(info.valid_items, SONDE_DATA_NAME);
    }
    assert_true(vdso);
}

/* A thread that enters alpha, then waits; the main thread looks at its stack. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int phase;
static sonde_thread_id_t other_id;

static void *other_thread(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "other");
    assert_int_equal(sonde_register_thread(&other_id), SONDE_STATUS_SUCCESS);
    sonde_method_enter(FN(alpha), NULL);
    sonde_method_enter(FN(gamma_fn), NULL);
    pthread_mutex_lock(&mu);
    phase = 1;
    pthread_cond_broadcast(&cv);
    while (phase != 2) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    sonde_method_leave(FN(gamma_fn), NULL);
    sonde_method_leave(FN(alpha), NULL);
    return NULL;
}

static void test_thread_requests(void **state) {
    (void)state;
    sonde_method_id_t ids[8];
    sonde_method_array_t stack = {ids, 8, 0};
    /* The calling thread (zero id). */
    sonde_method_enter(FN(alpha), NULL);
    sonde_method_enter(FN(beta), NULL);
    assert_int_equal(api->get_thread_stack(client_a, (sonde_thread_id_t){0}, &stack), SONDE_STATUS_SUCCESS);
    assert_int_equal(stack.actual_size, 2);
    assert_int_equal(ids[0].handle, beta_id.handle); /* innermost first */
    assert_int_equal(ids[1].handle, alpha_id.handle);
    stack.size = 1;
    assert_int_equal(api->get_thread_stack(client_a, (sonde_thread_id_t){0}, &stack),
                     SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_int_equal(stack.actual_size, 2);
    assert_int_equal(ids[0].handle, beta_id.handle);
    stack.size = 8;

    char name[64];
    sonde_thread_info_t ti;
    memset(&ti, 0, sizeof ti);
    ti.struct_size = sizeof ti;
    ti.name = (sonde_string_t){name, sizeof name, 0};
    const uint64_t all =
        SONDE_DATA_NAME | SONDE_DATA_OS_THREAD_ID | SONDE_DATA_STACK_DEPTH | SONDE_DATA_STATE;
    assert_int_equal(api->get_thread_info(client_a, (sonde_thread_id_t){0}, all, &ti), SONDE_STATUS_SUCCESS);
    assert_int_equal(ti.os_thread_id, (uint64_t)syscall(SYS_gettid));
    assert_int_equal(ti.stack_depth, 2);
    assert_int_equal(ti.alive, 1);
    assert_string_equal(name, "test_client");
    sonde_method_leave(FN(beta), NULL);
    sonde_method_leave(FN(alpha), NULL);

    /* A frame skipped (longjmp): leaving alpha unwinds beta too. */
    const int leaves = c_leave.count;
    sonde_method_enter(FN(alpha), NULL);
    sonde_method_enter(FN(beta), NULL);
    sonde_method_leave(FN(alpha), NULL);
    assert_int_equal(api->get_thread_stack(client_a, (sonde_thread_id_t){0}, &stack), SONDE_STATUS_SUCCESS);
    assert_int_equal(stack.actual_size, 0);
    assert_int_equal(c_leave.count, leaves + 1);
    assert_int_equal(c_leave.last[leaves < 8 ? leaves : 7].stack_depth, 0);

    /* Another thread, while it runs and after it ended. */
    pthread_t t;
    phase = 0;
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    pthread_mutex_lock(&mu);
    while (phase != 1) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    assert_int_equal(api->get_thread_stack(client_a, other_id, &stack), SONDE_STATUS_SUCCESS);
    assert_int_equal(stack.actual_size, 2);
    assert_int_equal(ids[1].handle, alpha_id.handle);
    assert_int_equal(api->get_thread_info(client_a, other_id, all, &ti), SONDE_STATUS_SUCCESS);
    assert_string_equal(name, "other");
    assert_int_equal(ti.stack_depth, 2);
    pthread_mutex_lock(&mu);
    phase = 2;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    assert_int_equal(api->get_thread_info(client_a, other_id, all, &ti), SONDE_STATUS_SUCCESS);
    assert_int_equal(ti.alive, 0);
    assert_string_equal(name, "other"); /* its name when it ended */
    assert_int_equal(api->get_thread_stack(client_a, other_id, &stack), SONDE_STATUS_ERROR);

    /* Statuses. */
    assert_int_equal(api->get_thread_stack(client_a, other_id, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    sonde_method_array_t bad = {NULL, 4, 0};
    assert_int_equal(api->get_thread_stack(client_a, other_id, &bad), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(api->get_thread_stack(client_a, (sonde_thread_id_t){alpha_id.handle}, &stack),
                     SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(api->get_thread_info(client_a, other_id, SONDE_DATA_ADDRESS, &ti),
                     SONDE_STATUS_ERROR_NOT_SUPPORTED);
    ti.name = (sonde_string_t){name, 2, 0};
    assert_int_equal(api->get_thread_info(client_a, other_id, SONDE_DATA_NAME, &ti),
                     SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_int_equal(ti.name.actual_size, 6);

    sonde_thread_id_t tids[64];
    sonde_thread_array_t list = {tids, 64, 0};
    assert_int_equal(api->get_thread_list(client_a, &list), SONDE_STATUS_SUCCESS);
    assert_true(list.actual_size >= 2);
    assert_int_equal(tids[sonde_thread_index(other_id)].handle, other_id.handle);
    list.size = 1;
    assert_int_equal(api->get_thread_list(client_a, &list), SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
}

/* ---- thread filter, user ranges, memory events, recursion guard ---- */

static sonde_client_id_t client_d;
static struct seen d_marks, d_ranges, d_memory;
static int d_nested_enter_events, d_mark_status_inside;

static bool d_reject_named(const sonde_filter_element_t *el, void *user_data) {
    (void)user_data;
    return strcmp(el->name, "reject-me") != 0;
}

static void d_on_enter(const sonde_event_data_t *d, void *user_data) {
    (void)d;
    (void)user_data;
    ++d_nested_enter_events;
    /* Instrumented code called from an observer is not reported, and explicit events refuse. */
    sonde_method_enter(FN(gamma_fn), NULL);
    sonde_method_leave(FN(gamma_fn), NULL);
    d_mark_status_inside = (int)sonde_user_mark("inside", NULL, 0);
}

static sonde_status_t d_instantiate(const sonde_api_t *a, sonde_client_id_t id, const char *options) {
    (void)options;
    sonde_status_t st = a->set_event_group_filter(id, SONDE_EVENT_GROUP_THREAD, d_reject_named, NULL);
    if (st == SONDE_STATUS_SUCCESS)
        st = a->register_event(id, SONDE_EVENT_USER_MARK, SONDE_DATA_NAME, record, &d_marks);
    if (st == SONDE_STATUS_SUCCESS)
        st = a->register_event(id, SONDE_EVENT_USER_RANGE_PUSH, SONDE_DATA_NAME | SONDE_DATA_STACK_DEPTH,
                               record, &d_ranges);
    if (st == SONDE_STATUS_SUCCESS)
        st = a->register_event(id, SONDE_EVENT_USER_RANGE_POP, SONDE_DATA_NAME | SONDE_DATA_STACK_DEPTH,
                               record, &d_ranges);
    if (st == SONDE_STATUS_SUCCESS)
        st = a->register_event(
            id, SONDE_EVENT_MEMORY_ACCESS,
            SONDE_DATA_ADDRESS | SONDE_DATA_SIZE | SONDE_DATA_ACCESS_TYPE | SONDE_DATA_METHOD_ID, record,
            &d_memory);
    if (st == SONDE_STATUS_SUCCESS) st = a->register_event(id, SONDE_EVENT_METHOD_ENTER, 0, d_on_enter, NULL);
    return st;
}

static void *rejected_thread(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "reject-me");
    sonde_register_thread(NULL);
    sonde_user_mark("from-rejected", NULL, 0);
    return NULL;
}

static void test_thread_filter_user_memory(void **state) {
    (void)state;
    assert_int_equal(sonde_register_client(d_instantiate, NULL, &client_d), SONDE_STATUS_SUCCESS);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, rejected_thread, NULL), 0);
    pthread_join(t, NULL);
    assert_int_equal(sonde_user_mark("from-main", NULL, 0), SONDE_STATUS_SUCCESS);
    assert_int_equal(d_marks.count, 1);
    assert_string_equal(d_marks.last[0].name, "from-main");

    assert_int_equal(sonde_user_range_push("outer"), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_user_range_push("inner"), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_user_range_pop(), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_user_range_pop(), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_user_range_pop(), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_user_range_push(NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(d_ranges.count, 4);
    assert_int_equal(d_ranges.last[1].event, SONDE_EVENT_USER_RANGE_PUSH);
    assert_int_equal(d_ranges.last[1].stack_depth, 1);
    assert_int_equal(d_ranges.last[2].event, SONDE_EVENT_USER_RANGE_POP);
    assert_string_equal(d_ranges.last[2].name, "inner");
    assert_string_equal(d_ranges.last[3].name, "outer");
    int depth = 0;
    while (sonde_user_range_push("deep") == SONDE_STATUS_SUCCESS) ++depth;
    assert_int_equal(depth, 256);
    assert_int_equal(sonde_user_range_push("deep"), SONDE_STATUS_ERROR_LIMIT);
    while (sonde_user_range_pop() == SONDE_STATUS_SUCCESS) --depth;
    assert_int_equal(depth, 0);

    int word = 0;
    sonde_method_enter(FN(beta), NULL);
    sonde_memory_access(&word, sizeof word, SONDE_ACCESS_WRITE);
    sonde_method_leave(FN(beta), NULL);
    assert_int_equal(d_memory.count, 1);
    assert_int_equal(d_memory.last[0].address, (uint64_t)(uintptr_t)&word);
    assert_int_equal(d_memory.last[0].size, sizeof word);
    assert_int_equal(d_memory.last[0].access_type, SONDE_ACCESS_WRITE);
    assert_int_equal(d_memory.last[0].method.handle, beta_id.handle);

    /* The enter of beta above reached D's observer once; its nested gamma_fn did not. */
    assert_int_equal(d_nested_enter_events, 1);
    assert_int_equal(d_mark_status_inside, SONDE_STATUS_ERROR_IN_CALLBACK);
}

/* ---- NEW_METHOD: once per method, before its first enter, with its items ---- */

static struct {
    uint32_t events[8];
    uint64_t method[8], address[8], valid[8];
    char name[8][32];
    int n;
} nm_log;

static void nm_event(const sonde_event_data_t *d, void *user_data) {
    (void)user_data;
    if (nm_log.n == 8) return;
    const int i = nm_log.n++;
    nm_log.events[i] = d->event;
    nm_log.method[i] = d->method.handle;
    nm_log.address[i] = d->address;
    nm_log.valid[i] = d->valid_items;
    snprintf(nm_log.name[i], sizeof nm_log.name[i], "%s", d->name != NULL ? d->name : "");
}

static sonde_status_t nm_instantiate(const sonde_api_t *a, sonde_client_id_t id, const char *options) {
    (void)options;
    assert_int_equal(a->register_event(id, SONDE_EVENT_NEW_METHOD, SONDE_DATA_ACCESS_TYPE, nm_event, NULL),
                     SONDE_STATUS_ERROR_NOT_SUPPORTED);
    sonde_status_t st = a->register_event(
        id, SONDE_EVENT_NEW_METHOD,
        SONDE_DATA_METHOD_ID | SONDE_DATA_NAME | SONDE_DATA_ADDRESS | SONDE_DATA_MODULE_ID | SONDE_DATA_SIZE,
        nm_event, NULL);
    if (st == SONDE_STATUS_SUCCESS)
        st = a->register_event(id, SONDE_EVENT_METHOD_ENTER, SONDE_DATA_METHOD_ID, nm_event, NULL);
    return st;
}

static void test_new_method(void **state) {
    (void)state;
    assert_int_equal(SONDE_EVENT_NEW_METHOD, SONDE_EVENT_COUNT_1_1);
    sonde_client_id_t id;
    assert_int_equal(sonde_register_client(nm_instantiate, NULL, &id), SONDE_STATUS_SUCCESS);
    memset(&nm_log, 0, sizeof nm_log);
    sonde_method_enter(FN(alpha), NULL); /* seen before this client: no NEW_METHOD */
    sonde_method_leave(FN(alpha), NULL);
    sonde_method_enter(FN(delta_fn), NULL);
    sonde_method_leave(FN(delta_fn), NULL);
    /* A NULL function is no method: ignored, without a NEW_METHOD, an enter or a frame. */
    for (int i = 0; i < 3; ++i) {
        sonde_method_enter(NULL, NULL);
        sonde_method_leave(NULL, NULL);
    }
    sonde_method_enter(FN(delta_fn), NULL);
    sonde_method_leave(NULL, NULL);
    sonde_method_leave(FN(delta_fn), NULL);
    assert_int_equal(nm_log.n, 4);
    assert_int_equal(nm_log.events[0], SONDE_EVENT_METHOD_ENTER);
    assert_int_equal(nm_log.events[1], SONDE_EVENT_NEW_METHOD);
    assert_int_equal(nm_log.events[2], SONDE_EVENT_METHOD_ENTER);
    assert_int_equal(nm_log.events[3], SONDE_EVENT_METHOD_ENTER);
    assert_string_equal(nm_log.name[1], "delta_fn");
    assert_int_equal(nm_log.address[1], (uint64_t)(uintptr_t)FN(delta_fn));
    assert_int_equal(nm_log.method[1], nm_log.method[2]);
    assert_int_equal(nm_log.valid[1], SONDE_DATA_METHOD_ID | SONDE_DATA_NAME | SONDE_DATA_ADDRESS |
                                          SONDE_DATA_MODULE_ID | SONDE_DATA_SIZE);
}

/* API_CALL (1.2): the group takes a filter during instantiation, its events take their own
 * items and refuse the others (RETURN_VALUE and BEGIN_TIMESTAMP exist only on the leave). */
static sonde_status_t api_group_result[6];

static bool api_accept(const sonde_filter_element_t *e, void *user_data) {
    (void)e;
    (void)user_data;
    return true;
}

static void api_event_handler(const sonde_event_data_t *d, void *user_data) {
    (void)d;
    (void)user_data;
}

static sonde_status_t api_instantiate(const sonde_api_t *a, sonde_client_id_t id, const char *options) {
    (void)options;
    const uint64_t items = SONDE_DATA_API_FUNCTION | SONDE_DATA_CORRELATION_ID | SONDE_DATA_ARGUMENTS |
                           SONDE_DATA_NAME | SONDE_DATA_MODULE_ID | SONDE_DATA_STACK_DEPTH |
                           SONDE_DATA_THREAD_ID | SONDE_DATA_TIMESTAMP;
    api_group_result[0] = a->set_event_group_filter(id, SONDE_EVENT_GROUP_API_CALL, api_accept, NULL);
    api_group_result[1] = a->set_event_group_filter(id, SONDE_EVENT_GROUP_API_CALL + 1, api_accept, NULL);
    api_group_result[2] = a->register_event(id, SONDE_EVENT_API_CALL_ENTER, items, api_event_handler, NULL);
    api_group_result[3] =
        a->register_event(id, SONDE_EVENT_API_CALL_ENTER, SONDE_DATA_RETURN_VALUE, api_event_handler, NULL);
    api_group_result[4] = a->register_event(id, SONDE_EVENT_API_CALL_LEAVE,
                                            items | SONDE_DATA_RETURN_VALUE | SONDE_DATA_BEGIN_TIMESTAMP,
                                            api_event_handler, NULL);
    api_group_result[5] =
        a->register_event(id, SONDE_EVENT_METHOD_ENTER, SONDE_DATA_CORRELATION_ID, api_event_handler, NULL);
    return SONDE_STATUS_SUCCESS;
}

static void test_api_call_group(void **state) {
    (void)state;
    assert_int_equal(SONDE_EVENT_GROUP_API_CALL, SONDE_EVENT_GROUP_COUNT_1_1);
    assert_int_equal(SONDE_EVENT_API_CALL_ENTER, SONDE_EVENT_NEW_METHOD + 1);
    sonde_client_id_t id;
    assert_int_equal(sonde_register_client(api_instantiate, NULL, &id), SONDE_STATUS_SUCCESS);
    assert_int_equal(api_group_result[0], SONDE_STATUS_SUCCESS);
    assert_int_equal(api_group_result[1], SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(api_group_result[2], SONDE_STATUS_SUCCESS);
    assert_int_equal(api_group_result[3], SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(api_group_result[4], SONDE_STATUS_SUCCESS);
    assert_int_equal(api_group_result[5], SONDE_STATUS_ERROR_NOT_SUPPORTED);
}

static void test_session_events(void **state) {
    (void)state;
    sonde_session_id_t s;
    assert_int_equal(sonde_create_session(NULL, &s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(s), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_stop_session(s), SONDE_STATUS_SUCCESS);
    assert_int_equal(a_session_start, 1);
    assert_int_equal(a_session_stop, 1);
    assert_int_equal(a_session_seen.handle, s.handle);
    assert_int_equal(sonde_destroy_session(s), SONDE_STATUS_SUCCESS);
}

static void test_shutdown(void **state) {
    (void)state;
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
    assert_int_equal(a_shutdown, 1);
    sonde_method_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(api->get_method_info(client_a, alpha_id, SONDE_DATA_ADDRESS, &info),
                     SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_user_mark("late", NULL, 0), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    assert_int_equal(sonde_refresh_modules(), SONDE_STATUS_ERROR_NOT_INITIALIZED);
    const int enters = b_enter.count;
    sonde_method_enter(FN(alpha), NULL);
    sonde_method_leave(FN(alpha), NULL);
    assert_int_equal(b_enter.count, enters);
    /* A second initialisation delivers RUNTIME_INIT again; ids stay valid. */
    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    assert_int_equal(a_init, 2);
    char buf[64] = {0};
    FILE *f = fopen(g_ok_out, "r"); /* the dlopen'ed client got RUNTIME_INIT again too */
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    unlink(g_ok_out);
    assert_string_equal(buf, "init\n");
    assert_int_equal(api->get_method_info(client_a, alpha_id, SONDE_DATA_ADDRESS, &info),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
    assert_int_equal(a_shutdown, 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phase_before_init),
        cmocka_unit_test(test_load_failures),
        cmocka_unit_test(test_optional_symbol_from_dependency),
        cmocka_unit_test(test_two_clients),
        cmocka_unit_test(test_registration_errors),
        cmocka_unit_test(test_method_info),
        cmocka_unit_test(test_module_info),
        cmocka_unit_test(test_thread_requests),
        cmocka_unit_test(test_thread_filter_user_memory),
        cmocka_unit_test(test_new_method),
        cmocka_unit_test(test_api_call_group),
        cmocka_unit_test(test_session_events),
        cmocka_unit_test(test_shutdown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
