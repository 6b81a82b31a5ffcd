// Client concept, loading: loading a client plugin (through core::Plugin) or an entry point the
// program registers, instantiating it, the api table it is handed, and SONDE_CLIENTS parsing.
//
// Threads: load_client runs on the thread that calls sonde_load_client or
// sonde_register_client (or sonde_initialize, for SONDE_CLIENTS). It holds Registry::mu only
// around its table updates: the client's constructors and entry point run without it, since
// they may call back into Sonde (set_message, register_event). See registry.h for the locks.
#include "client/registry.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "core/plugin.h"

namespace sonde::client {

namespace {

sonde_status_t fail(Client *c, sonde_status_t st, std::string message) {
    c->state = SONDE_CLIENT_STATE_FAILED;
    c->status = st;
    if (!message.empty()) c->message = std::move(message);
    return st;
}

sonde_status_t api_set_message(sonde_client_id_t client, const char *message) {
    RegistryLock lock;
    Client *c = find_client(client.handle);
    if (c == nullptr) return SONDE_STATUS_ERROR_ILLEGAL_ID;
    if (message == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    c->message.assign(message, strnlen(message, 1023));
    return SONDE_STATUS_SUCCESS;
}

uint64_t api_get_timestamp() { return now_ns(); }

}  // namespace

// Data requests live in requests.cpp.
sonde_status_t api_get_method_info(sonde_client_id_t, sonde_method_id_t, uint64_t, sonde_method_info_t *);
sonde_status_t api_get_module_info(sonde_client_id_t, sonde_module_id_t, uint64_t, sonde_module_info_t *);
sonde_status_t api_get_thread_info(sonde_client_id_t, sonde_thread_id_t, uint64_t, sonde_thread_info_t *);
sonde_status_t api_get_thread_stack(sonde_client_id_t, sonde_thread_id_t, sonde_method_array_t *);
sonde_status_t api_get_module_list(sonde_client_id_t, sonde_module_array_t *);
sonde_status_t api_get_thread_list(sonde_client_id_t, sonde_thread_array_t *);

const sonde_api_t *api_table() {
    static const sonde_api_t table = {
        sizeof(sonde_api_t), SONDE_CLIENT_ABI_VERSION, api_register_event,  api_set_event_group_filter,
        api_get_method_info, api_get_module_info,      api_get_thread_info, api_get_thread_stack,
        api_get_module_list, api_get_thread_list,      sonde_status_name,   sonde_status_string,
        api_get_timestamp,   api_set_message,
    };
    return &table;
}

// Parses SONDE_CLIENTS ("path[=options][;path[=options]]") and loads each; failures are
// reported on stderr and do not stop the others. With SONDE_CLIENTS_STRICT=1 (`sonde run
// --strict`) a failure ends the process with status 125 once every client was tried: the
// program must not run without a client it was asked to run with.
void load_env_clients() {
    const char *env = secure_getenv("SONDE_CLIENTS");
    if (env == nullptr || *env == '\0') return;
    const char *strict_env = secure_getenv("SONDE_CLIENTS_STRICT");
    const bool strict = strict_env != nullptr && std::strcmp(strict_env, "1") == 0;
    size_t failed = 0;
    std::string all(env);
    size_t pos = 0;
    while (pos <= all.size()) {
        size_t end = all.find(';', pos);
        if (end == std::string::npos) end = all.size();
        std::string item = all.substr(pos, end - pos);
        pos = end + 1;
        if (item.empty()) continue;
        std::string path = item, options;
        const size_t eq = item.find('=');
        if (eq != std::string::npos) {
            path = item.substr(0, eq);
            options = item.substr(eq + 1);
        }
        sonde_client_id_t id{};
        const sonde_status_t st = load_client(path.c_str(), options.c_str(), nullptr, &id);
        if (st != SONDE_STATUS_SUCCESS) {
            RegistryLock lock;
            Client *c = find_client(id.handle);
            std::fprintf(stderr, "sonde: client '%s' failed: %s: %s\n", path.c_str(), sonde_status_name(st),
                         c != nullptr ? c->message.c_str() : sonde_status_string(st));
            ++failed;
        }
    }
    if (strict && failed > 0) {
        std::fprintf(
            stderr,
            "sonde: %zu client(s) failed to load (SONDE_CLIENTS_STRICT=1); the program does not run\n",
            failed);
        std::fflush(stderr);
        _exit(125);
    }
}

// ---- loading ----

sonde_status_t load_client(const char *path, const char *options, sonde_client_instantiate_fn fn,
                           sonde_client_id_t *out) {
    Registry &r = registry();
    Client *c = nullptr;
    {
        RegistryLock lock;
        if (r.clients.size() >= kMaxClients) return SONDE_STATUS_ERROR_LIMIT;
        c = new Client();
        c->index = static_cast<uint32_t>(r.clients.size());
        c->handle = make_handle(kTagClient, c->index);
        c->bit = uint64_t{1} << c->index;
        c->path = path != nullptr ? path : "";
        r.clients.push_back(c);
        if (out != nullptr) out->handle = c->handle;
    }
    // dlopen and the entry point run without the registry lock: a client's constructors and its
    // instantiate function may make calls (set_message, register_event) that take it.
    sonde_status_t st = SONDE_STATUS_SUCCESS;
    core::Plugin plugin;
    if (path != nullptr) {
        std::string error;
        st = plugin.open(path, &error);
        if (st != SONDE_STATUS_SUCCESS) {
            RegistryLock lock;
            return fail(c, st, std::move(error));
        }
        // The entry point counts only when the client defines it itself, not a dependency.
        std::string why_not;
        fn = plugin.function<sonde_client_instantiate_fn>(SONDE_CLIENT_ENTRY_NAME, &why_not);
        if (fn == nullptr) {
            plugin.close();
            RegistryLock lock;
            return fail(c, SONDE_STATUS_ERROR_LOAD_FAILED,
                        std::string("no entry point '" SONDE_CLIENT_ENTRY_NAME "' in '") + path + "'" +
                            (why_not.empty() ? "" : ": " + why_not));
        }
        st = plugin.check_required_abi(SONDE_CLIENT_REQUIRED_ABI_NAME, SONDE_CLIENT_ABI_VERSION, "client",
                                       "client ABI", &error);
        if (st != SONDE_STATUS_SUCCESS) {
            plugin.close();
            RegistryLock lock;
            return fail(c, st, std::move(error));
        }
    }
    {
        RegistryLock lock;
        c->dl = plugin.handle();
        c->state = SONDE_CLIENT_STATE_ACTIVE;
        c->instantiating = true;
    }
    try {
        st = fn(api_table(), sonde_client_id_t{c->handle}, options != nullptr ? options : "");
    } catch (...) {
        st = SONDE_STATUS_ERROR;
        RegistryLock lock;
        c->message = "the entry point threw a C++ exception";
    }
    bool deliver_init = false;
    {
        RegistryLock lock;
        c->instantiating = false;
        if (st != SONDE_STATUS_SUCCESS) {
            // Nothing of this client was published; it can go.
            for (auto &o : c->observers) o = Observer{};
            for (auto &f : c->filters) f = Filter{};
            fail(c, st,
                 c->message.empty() ? std::string("the entry point returned ") + sonde_status_name(st)
                                    : std::string());
            c->dl = nullptr;
            plugin.close();
            return st;
        }
        c->status = SONDE_STATUS_SUCCESS;
        plugin.release();  // a client that loaded is never unloaded
        recompute_for_client(c);
        publish_subs();
        if (g_running.load(std::memory_order_acquire)) {
            c->initialized = true;
            deliver_init = true;
        }
    }
    if (deliver_init) {
        deliver_lifecycle(SONDE_EVENT_RUNTIME_INIT, 0, c->bit);
        std::vector<Module *> mods;
        {
            RegistryLock lock;
            for (Module *m : r.modules)
                if (m->loaded.load(std::memory_order_relaxed)) mods.push_back(m);
        }
        for (Module *m : mods) deliver_module_event(SONDE_EVENT_MODULE_LOAD, m, c->bit);
        // The client's own dlopen may have brought modules in.
        refresh_modules();
    }
    return SONDE_STATUS_SUCCESS;
}

}  // namespace sonde::client
