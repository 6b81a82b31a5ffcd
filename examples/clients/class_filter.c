/*
 * class_filter: a Sonde client notified only of the methods of one C++ class (or namespace),
 * in the spirit of Martini's filter example. Its CALL_GRAPH filter is asked once per method and
 * accepts those whose class is the one named by the option class=NAME; it counts their calls
 * and writes "CALLS<TAB>Class::method" lines at shutdown to out=PATH (stdout without it).
 *
 *   sonde run --client ./class_filter.so=class=Circle,out=circle.txt -- ./shapes
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/client.h>

#define MAX_METHODS 4096

static const sonde_api_t *api;
static sonde_client_id_t self;
static char wanted[256];
static char out_path[4096];
static _Atomic uint64_t counts[MAX_METHODS];
static _Atomic uint64_t handles[MAX_METHODS];

static bool only_the_class(const sonde_filter_element_t *el, void *user_data) {
    (void)user_data;
    return strcmp(el->class_name, wanted) == 0;
}

static void on_enter(const sonde_event_data_t *d, void *user_data) {
    (void)user_data;
    const uint32_t i = sonde_method_index(d->method);
    if (i >= MAX_METHODS) return;
    if (atomic_fetch_add_explicit(&counts[i], 1, memory_order_relaxed) == 0)
        atomic_store_explicit(&handles[i], d->method.handle, memory_order_relaxed);
}

static void on_shutdown(const sonde_event_data_t *d, void *user_data) {
    (void)d;
    (void)user_data;
    FILE *f = out_path[0] != '\0' ? fopen(out_path, "w") : stdout;
    if (f == NULL) return;
    for (uint32_t i = 0; i < MAX_METHODS; ++i) {
        const uint64_t c = atomic_load(&counts[i]);
        if (c == 0) continue;
        char name[256], cls[256];
        sonde_method_info_t info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        info.name = (sonde_string_t){name, sizeof name, 0};
        info.class_name = (sonde_string_t){cls, sizeof cls, 0};
        sonde_method_id_t id = {atomic_load(&handles[i])};
        if (api->get_method_info(self, id, SONDE_DATA_NAME | SONDE_DATA_CLASS_NAME, &info) ==
            SONDE_STATUS_SUCCESS)
            fprintf(f, "%llu\t%s::%s\n", (unsigned long long)c, cls, name);
    }
    if (f != stdout) fclose(f);
}

/* Options: class=NAME[,out=PATH]. */
static int parse(const char *options) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", options);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (strncmp(tok, "class=", 6) == 0)
            snprintf(wanted, sizeof wanted, "%s", tok + 6);
        else if (strncmp(tok, "out=", 4) == 0)
            snprintf(out_path, sizeof out_path, "%s", tok + 4);
        else
            return -1;
    }
    return wanted[0] != '\0' ? 0 : -1;
}

SONDE_EXPORT sonde_status_t sonde_client_instantiate(const sonde_api_t *a, sonde_client_id_t id,
                                                     const char *options) {
    if (a->abi_version < 1) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    api = a;
    self = id;
    if (parse(options) != 0) {
        a->set_message(id, "options: class=NAME[,out=PATH]");
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    sonde_status_t st = a->set_event_group_filter(id, SONDE_EVENT_GROUP_CALL_GRAPH, only_the_class, NULL);
    if (st == SONDE_STATUS_SUCCESS)
        st = a->register_event(id, SONDE_EVENT_METHOD_ENTER, SONDE_DATA_METHOD_ID, on_enter, NULL);
    if (st == SONDE_STATUS_SUCCESS) st = a->register_event(id, SONDE_EVENT_SHUTDOWN, 0, on_shutdown, NULL);
    return st;
}
