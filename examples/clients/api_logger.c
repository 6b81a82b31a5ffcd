/*
 * api_logger: a Sonde client that logs the calls a program makes into traced shared-library
 * functions (`sonde run --api SPEC --client api_logger=...`), with their arguments and return
 * values. Options, separated by ',':
 *
 *   out=PATH            where the lines go (stderr without it)
 *   only=NAME[:NAME...] the functions to observe; the others are refused by the API_CALL filter
 *
 * One line per traced function (from the filter, asked once per function) and per event,
 * fields separated by tabs:
 *
 *   function <index> <name> <library> <declaration> <accepted: 0|1>
 *   enter    <correlation> <thread index> <function index> <depth> <name> <timestamp> <args...>
 *   leave    <correlation> <thread index> <function index> <depth> <name> <begin> <end> <return> <args...>
 *
 * Observers of API_CALL events run on the calling thread (several at once), so writes are
 * serialised by a mutex; the filter runs one function at a time (Sonde serialises filters).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/client.h>

static FILE *out;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char only[1024]; /* ":name:name:" or "" for every function */

static void print_args(const sonde_event_data_t *d) {
    for (uint32_t i = 0; i < d->argument_count; ++i) fprintf(out, "\t%" PRIu64, d->arguments[i]);
    fputc('\n', out);
}

static void on_enter(const sonde_event_data_t *d, void *user_data) {
    (void)user_data;
    if (d->struct_size < SONDE_EVENT_DATA_SIZE_1_2) return; /* a library older than 1.2 */
    pthread_mutex_lock(&mu);
    fprintf(out, "enter\t%" PRIu64 "\t%u\t%u\t%u\t%s\t%" PRIu64, d->correlation_id,
            sonde_thread_index(d->thread), sonde_api_function_index(d->api_function), d->stack_depth, d->name,
            d->timestamp);
    print_args(d);
    pthread_mutex_unlock(&mu);
}

static void on_leave(const sonde_event_data_t *d, void *user_data) {
    (void)user_data;
    if (d->struct_size < SONDE_EVENT_DATA_SIZE_1_2) return;
    pthread_mutex_lock(&mu);
    fprintf(out, "leave\t%" PRIu64 "\t%u\t%u\t%u\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64, d->correlation_id,
            sonde_thread_index(d->thread), sonde_api_function_index(d->api_function), d->stack_depth, d->name,
            d->begin_timestamp, d->timestamp, d->return_value);
    print_args(d);
    pthread_mutex_unlock(&mu);
}

static void on_shutdown(const sonde_event_data_t *d, void *user_data) {
    (void)d;
    (void)user_data;
    pthread_mutex_lock(&mu);
    fflush(out);
    pthread_mutex_unlock(&mu);
}

static bool filter(const sonde_filter_element_t *e, void *user_data) {
    (void)user_data;
    if (e->struct_size < SONDE_FILTER_ELEMENT_SIZE_1_2) return false;
    char key[260];
    snprintf(key, sizeof key, ":%s:", e->name);
    const bool yes = only[0] == '\0' || strstr(only, key) != NULL;
    pthread_mutex_lock(&mu);
    fprintf(out, "function\t%u\t%s\t%s\t%s\t%d\n", sonde_api_function_index(e->api_function), e->name,
            e->module_name, e->full_name, yes ? 1 : 0);
    pthread_mutex_unlock(&mu);
    return yes;
}

SONDE_EXPORT sonde_status_t sonde_client_instantiate(const sonde_api_t *api, sonde_client_id_t id,
                                                     const char *options) {
    if (api->abi_version < 1) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    out = stderr;
    char opts[2048];
    snprintf(opts, sizeof opts, "%s", options);
    for (char *save = NULL, *item = strtok_r(opts, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        if (strncmp(item, "out=", 4) == 0) {
            out = fopen(item + 4, "w");
            if (out == NULL) {
                api->set_message(id, "cannot open the out= file");
                return SONDE_STATUS_ERROR_IO;
            }
        } else if (strncmp(item, "only=", 5) == 0) {
            snprintf(only, sizeof only, ":%s:", item + 5);
        } else {
            api->set_message(id, "unknown option (out=PATH, only=NAME[:NAME...])");
            return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        }
    }
    const uint64_t items = SONDE_DATA_CORRELATION_ID | SONDE_DATA_THREAD_ID | SONDE_DATA_API_FUNCTION |
                           SONDE_DATA_STACK_DEPTH | SONDE_DATA_NAME | SONDE_DATA_TIMESTAMP |
                           SONDE_DATA_ARGUMENTS;
    /* A library older than 1.2 has no API_CALL group: it refuses these (INVALID_ARGUMENT,
     * NOT_SUPPORTED), and the client refuses to load with its message. */
    sonde_status_t st = api->set_event_group_filter(id, SONDE_EVENT_GROUP_API_CALL, filter, NULL);
    if (st == SONDE_STATUS_SUCCESS)
        st = api->register_event(id, SONDE_EVENT_API_CALL_ENTER, items, on_enter, NULL);
    if (st == SONDE_STATUS_SUCCESS)
        st =
            api->register_event(id, SONDE_EVENT_API_CALL_LEAVE,
                                items | SONDE_DATA_RETURN_VALUE | SONDE_DATA_BEGIN_TIMESTAMP, on_leave, NULL);
    if (st == SONDE_STATUS_SUCCESS) st = api->register_event(id, SONDE_EVENT_SHUTDOWN, 0, on_shutdown, NULL);
    if (st != SONDE_STATUS_SUCCESS) api->set_message(id, "this Sonde has no API_CALL events (1.2 needed)");
    return st;
}
