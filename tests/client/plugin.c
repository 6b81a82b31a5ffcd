/*
 * Test client plugins, one source built several ways (tests/client/meson.build):
 *   PLUGIN_OK        registers RUNTIME_INIT and writes "init" to the file named by its options
 *   PLUGIN_REFUSES   refuses the API with NOT_SUPPORTED and explains why with set_message
 *   PLUGIN_NEEDS_V99 requires client ABI version 99 (never instantiated)
 *   PLUGIN_THROWS    (C++) throws from its entry point
 *   PLUGIN_NOENTRY   exports no entry point (but links PLUGIN_OK, which does)
 *   PLUGIN_ABI_PROVIDER          a library defining sonde_client_required_abi_version = 99
 *   PLUGIN_ABI_FROM_DEPENDENCY   a working client whose sonde_client_required_abi_version
 *                                comes from its dependency PLUGIN_ABI_PROVIDER only
 * The last two variants and PLUGIN_NOENTRY use what their dependency defines, so the link keeps
 * the dependency and their dynamic symbol tables hold the symbol as an undefined reference.
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
SONDE_EXPORT sonde_status_t sonde_client_instantiate(const sonde_api_t *api, sonde_client_id_t id,
                                                     const char *options) {
    snprintf(path, sizeof path, "%s", options);
    return api->register_event(id, SONDE_EVENT_RUNTIME_INIT, 0, on_init, NULL);
}
#elif defined(PLUGIN_REFUSES)
SONDE_EXPORT sonde_status_t sonde_client_instantiate(const sonde_api_t *api, sonde_client_id_t id,
                                                     const char *options) {
    (void)options;
    api->set_message(id, "needs a newer Sonde");
    return SONDE_STATUS_ERROR_NOT_SUPPORTED;
}
#elif defined(PLUGIN_NEEDS_V99)
SONDE_EXPORT const uint32_t sonde_client_required_abi_version = 99;
SONDE_EXPORT sonde_status_t sonde_client_instantiate(const sonde_api_t *api, sonde_client_id_t id,
                                                     const char *options) {
    (void)api;
    (void)id;
    (void)options;
    return SONDE_STATUS_SUCCESS;
}
#elif defined(PLUGIN_NOENTRY)
SONDE_EXPORT sonde_status_t sonde_client_instantiate(const sonde_api_t *api, sonde_client_id_t id,
                                                     const char *options);
SONDE_EXPORT sonde_status_t plugin_noentry_forward(const sonde_api_t *api, sonde_client_id_t id,
                                                   const char *options);
SONDE_EXPORT sonde_status_t plugin_noentry_forward(const sonde_api_t *api, sonde_client_id_t id,
                                                   const char *options) {
    return sonde_client_instantiate(api, id, options);
}
#elif defined(PLUGIN_ABI_PROVIDER)
SONDE_EXPORT const uint32_t sonde_client_required_abi_version = 99;
#elif defined(PLUGIN_ABI_FROM_DEPENDENCY)
SONDE_EXPORT extern const uint32_t sonde_client_required_abi_version;
SONDE_EXPORT sonde_status_t sonde_client_instantiate(const sonde_api_t *api, sonde_client_id_t id,
                                                     const char *options) {
    (void)options;
    if (sonde_client_required_abi_version != 99) {
        api->set_message(id, "the dependency's sonde_client_required_abi_version is not linked");
        return SONDE_STATUS_ERROR;
    }
    return SONDE_STATUS_SUCCESS;
}
#else
#error "build with one PLUGIN_* define"
#endif
