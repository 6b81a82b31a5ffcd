/* A plugin built against the first-release layouts (old_layouts.h, no Sonde header), in one
 * shared object with two roles, both loaded by test_old_client.c:
 *  - a client (1.1): it checks the api table it is handed, observes RUNTIME_INIT and
 *    METHOD_ENTER through 1.1 event data, and asks for its thread's information with a 1.1
 *    thread info struct from inside RUNTIME_INIT;
 *  - an analysis tool (1.0): sonde_tool_create hands over a 1.0 tool table that counts records.
 * What it saw is left in the exported old_plugin_* variables for the test to read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "old_layouts.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT uint32_t old_plugin_api_size, old_plugin_api_version;
EXPORT uint32_t old_plugin_init_events, old_plugin_event_size;
EXPORT uint32_t old_plugin_thread_status = UINT32_MAX;
EXPORT uint64_t old_plugin_thread_items, old_plugin_thread_os_tid;
EXPORT char old_plugin_thread_name[32];
EXPORT uint64_t old_plugin_method, old_plugin_method_address;
EXPORT uint32_t old_plugin_register_failures; /* events 0..OLD_EVENT_COUNT-1 it could not observe */

static const api_v11 *api;
static id_v10 self;

static void on_event(const event_data_v11 *d, void *user_data) {
    (void)user_data;
    old_plugin_event_size = d->struct_size;
    if (d->struct_size < sizeof(event_data_v11)) return; /* a 1.1 client reads only 1.1 fields */
    if (d->event == OLD_EVENT_RUNTIME_INIT) {
        ++old_plugin_init_events;
        thread_info_v11 info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        info.name.entries = old_plugin_thread_name;
        info.name.size = sizeof old_plugin_thread_name;
        id_v10 calling_thread = {0};
        old_plugin_thread_status = api->get_thread_info(
            self, calling_thread, OLD_DATA_NAME | OLD_DATA_OS_THREAD_ID | OLD_DATA_STATE, &info);
        old_plugin_thread_items = info.valid_items;
        old_plugin_thread_os_tid = info.os_thread_id;
    } else if (d->event == OLD_EVENT_METHOD_ENTER && old_plugin_method == 0) {
        old_plugin_method = d->method.handle;
        old_plugin_method_address = d->address;
    }
}

EXPORT uint32_t sonde_client_instantiate(const api_v11 *table, id_v10 id, const char *options);
EXPORT uint32_t sonde_client_instantiate(const api_v11 *table, id_v10 id, const char *options) {
    (void)options;
    old_plugin_api_size = table->struct_size;
    old_plugin_api_version = table->abi_version;
    if (table->struct_size < sizeof(api_v11) || table->abi_version < 1) return OLD_NOT_SUPPORTED;
    api = table;
    self = id;
    /* Every event a 1.1 client knows (it loops to its SONDE_EVENT_COUNT, 14) is accepted by a
     * newer library whose event list grew. */
    for (uint32_t e = 0; e < OLD_EVENT_COUNT; ++e)
        if (api->register_event(id, e, 0, on_event, NULL) != OLD_SUCCESS) ++old_plugin_register_failures;
    uint32_t st = api->register_event(id, OLD_EVENT_RUNTIME_INIT, 0, on_event, NULL);
    if (st != OLD_SUCCESS) return st;
    return api->register_event(id, OLD_EVENT_METHOD_ENTER, OLD_DATA_METHOD_ID | OLD_DATA_ADDRESS, on_event,
                               NULL);
}

/* ---- the tool ---- */

typedef struct {
    uint64_t records;
    char json[64];
} counter_t;

static bool count_memref(void *tool, const memref_v10 *m) {
    if (m->type != 4) ++((counter_t *)tool)->records; /* 4: a marker */
    return true;
}
static const char *count_json(void *tool) {
    counter_t *c = (counter_t *)tool;
    snprintf(c->json, sizeof c->json, "{\"records\": %llu}", (unsigned long long)c->records);
    return c->json;
}
static void count_destroy(void *tool) { free(tool); }

EXPORT uint32_t sonde_tool_create(const char *options, const tool_ops_v10 **ops, void **data);
EXPORT uint32_t sonde_tool_create(const char *options, const tool_ops_v10 **ops, void **data) {
    (void)options;
    static tool_ops_v10 table;
    memset(&table, 0, sizeof table);
    table.struct_size = sizeof table;
    table.name = "old_counts";
    table.process_memref = count_memref;
    table.results_json = count_json;
    table.destroy = count_destroy;
    *data = calloc(1, sizeof(counter_t));
    *ops = &table;
    return *data != NULL ? OLD_SUCCESS : 14; /* OUT_OF_MEMORY */
}
