/*
 * thread_module_logger: a Sonde client that logs thread starts and ends (with their names) and
 * module loads and unloads (with their paths), one line per event, to out=PATH (stderr
 * without it):
 *
 *   thread-start  <thread index>  <name>
 *   thread-end    <thread index>  <name>
 *   module-load   <module index>  <path>
 *   module-unload <module index>  <path>
 *
 * Observers of THREAD events run on the thread concerned, so writes are serialised by a mutex.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <sonde/client.h>

static FILE *out;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void log_line(const char *what, uint32_t index, const char *text) {
    pthread_mutex_lock(&mu);
    fprintf(out, "%s\t%u\t%s\n", what, index, text != NULL ? text : "");
    fflush(out);
    pthread_mutex_unlock(&mu);
}

static void on_thread(const sonde_event_data_t *d, void *user_data) {
    (void)user_data;
    log_line(d->event == SONDE_EVENT_THREAD_START ? "thread-start" : "thread-end",
             sonde_thread_index(d->thread), d->name);
}

static void on_module(const sonde_event_data_t *d, void *user_data) {
    (void)user_data;
    log_line(d->event == SONDE_EVENT_MODULE_LOAD ? "module-load" : "module-unload",
             sonde_module_index(d->module), d->name);
}

SONDE_EXPORT sonde_status_t sonde_client_instantiate(const sonde_api_t *api, sonde_client_id_t id,
                                                     const char *options) {
    if (api->abi_version < 1) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    out = stderr;
    if (strncmp(options, "out=", 4) == 0) {
        out = fopen(options + 4, "w");
        if (out == NULL) {
            api->set_message(id, "cannot open the out= file");
            return SONDE_STATUS_ERROR_IO;
        }
    }
    const uint64_t thread_items = SONDE_DATA_THREAD_ID | SONDE_DATA_NAME;
    const uint64_t module_items = SONDE_DATA_MODULE_ID | SONDE_DATA_PATH;
    sonde_status_t st = api->register_event(id, SONDE_EVENT_THREAD_START, thread_items, on_thread, NULL);
    if (st == SONDE_STATUS_SUCCESS)
        st = api->register_event(id, SONDE_EVENT_THREAD_END, thread_items, on_thread, NULL);
    if (st == SONDE_STATUS_SUCCESS)
        st = api->register_event(id, SONDE_EVENT_MODULE_LOAD, module_items, on_module, NULL);
    if (st == SONDE_STATUS_SUCCESS)
        st = api->register_event(id, SONDE_EVENT_MODULE_UNLOAD, module_items, on_module, NULL);
    return st;
}
