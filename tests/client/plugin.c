/*
 * Test client plugins, one source built several ways (tests/client/meson.build):
 *   PLUGIN_OK        registers RUNTIME_INIT and writes "init" to the file named by its options
 *   PLUGIN_REFUSES   refuses the API with NOT_SUPPORTED and explains why with set_message
 *   PLUGIN_NEEDS_V99 requires client ABI version 99 (never instantiated)
 *   PLUGIN_THROWS    (C++) throws from its entry point
 *   PLUGIN_NOENTRY   exports no entry point (but links PLUGIN_OK, which does)
 */
#include <stdio.h>

#include <sonde/client.h>

#if defined(PLUGIN_OK)
static char path[1024];
static void on_init(const sonde_event_data_t *d, void *user_data) {
    (void)d;
    (void)user_data;
    FILE *f = fopen(path, "a");
    if (f != NULL) {
        fputs("init\n", f);
        fclose(f);
    }
}
SONDE_EXPORT sonde_status_t sonde_client_instantiate(const sonde_api_t *api, sonde_client_id_t id, const char *options) {
    snprintf(path, sizeof path, "%s", options);
    return api->register_event(id, SONDE_EVENT_RUNTIME_INIT, 0, on_init, NULL);
}
#elif defined(PLUGIN_REFUSES)
SONDE_EXPORT sonde_status_t sonde_client_instantiate(const sonde_api_t *api, sonde_client_id_t id, const char *options) {
    (void)options;
    api->set_message(id, "needs a newer Sonde");
    return SONDE_STATUS_ERROR_NOT_SUPPORTED;
}
#elif defined(PLUGIN_NEEDS_V99)
SONDE_EXPORT const uint32_t sonde_client_required_abi_version = 99;
SONDE_EXPORT sonde_status_t sonde_client_instantiate(const sonde_api_t *api, sonde_client_id_t id, const char *options) {
    (void)api;
    (void)id;
    (void)options;
    return SONDE_STATUS_SUCCESS;
}
#elif defined(PLUGIN_NOENTRY)
SONDE_EXPORT int plugin_noentry_marker(void) { return 1; }
#else
#error "build with one PLUGIN_* define"
#endif
