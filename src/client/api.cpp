// Client concept, the C layer of the program-side functions: argument checks, then the
// registry (loader.cpp, requests.cpp, modules.cpp). The hot-path and event functions live beside
// their data: sonde_method_enter/leave in callgraph.cpp, sonde_register_thread in threads.cpp,
// sonde_memory_access and the USER functions in user_events.cpp.
#include <sonde/instrument.h>

#include "client/registry.h"
#include "client/requests.h"
#include "core/guarded.h"

using namespace sonde::client;

extern "C" SONDE_API sonde_status_t sonde_load_client(const char *path, const char *options,
                                                      sonde_client_id_t *out) {
    if (path == nullptr || out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    out->handle = 0;
    if (registry_lost()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    if (t_registry_depth > 0) return SONDE_STATUS_ERROR_IN_CALLBACK;
    return sonde::guarded([&] { return load_client(path, options, nullptr, out); });
}

extern "C" SONDE_API sonde_status_t sonde_register_client(sonde_client_instantiate_fn instantiate,
                                                          const char *options, sonde_client_id_t *out) {
    if (instantiate == nullptr || out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    out->handle = 0;
    if (registry_lost()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    if (t_registry_depth > 0) return SONDE_STATUS_ERROR_IN_CALLBACK;
    return sonde::guarded([&] { return load_client(nullptr, options, instantiate, out); });
}

extern "C" SONDE_API sonde_status_t sonde_get_client_info(sonde_client_id_t client,
                                                          sonde_client_info_t *info) {
    if (registry_lost()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    return sonde::guarded([&] { return client_info(client, info); });
}

extern "C" SONDE_API sonde_status_t sonde_get_client_list(sonde_client_array_t *clients) {
    if (registry_lost()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    return sonde::guarded([&] { return client_list(clients); });
}

extern "C" SONDE_API const sonde_api_t *sonde_get_client_api(void) { return api_table(); }

extern "C" SONDE_API sonde_status_t sonde_refresh_modules(void) {
    if (registry_lost()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    return sonde::guarded([] { return refresh_modules(); });
}
