// Client concept, dispatch: the registry and the pointers published for the hot path, observer
// and filter registration (register_event and set_event_group_filter of the api table),
// publication of observer lists, delivery to observers, the group filters, and the lifecycle
// events (RUNTIME_INIT, SESSION_START / SESSION_STOP, SHUTDOWN).
//
// Threads: registration, publication and filter questions run on the thread of the client or of
// the event's element, with Registry::mu held. Delivery runs on the thread where the event
// happens, with no lock held. The lifecycle hooks run on the thread that calls sonde_initialize,
// sonde_finalize or the session functions. See registry.h for what each lock owns.
#include "client/registry.h"

#include <pthread.h>

#include <new>

#include <sonde/session.h>

#include "core/hooks.h"

namespace sonde::client {

thread_local int t_registry_depth = 0;
std::atomic<bool> g_running{false};
std::atomic<bool> g_registry_lost{false};
std::atomic<const Subs *> g_subs[SONDE_EVENT_COUNT];
std::atomic<MethodTable *> g_table{nullptr};

Registry &registry() {
    // Leaked on purpose: observers on other threads may still run while the process exits.
    static Registry *r = new Registry();
    return *r;
}

namespace {

constexpr uint64_t kLifecycleItems = SONDE_DATA_THREAD_ID | SONDE_DATA_TIMESTAMP;
constexpr uint64_t kApiItems = kLifecycleItems | SONDE_DATA_API_FUNCTION | SONDE_DATA_CORRELATION_ID |
                               SONDE_DATA_ARGUMENTS | SONDE_DATA_NAME | SONDE_DATA_MODULE_ID |
                               SONDE_DATA_STACK_DEPTH;

}  // namespace

uint64_t event_items(uint32_t event) {
    switch (event) {
        case SONDE_EVENT_RUNTIME_INIT:
        case SONDE_EVENT_SHUTDOWN: return kLifecycleItems;
        case SONDE_EVENT_SESSION_START:
        case SONDE_EVENT_SESSION_STOP: return kLifecycleItems | SONDE_DATA_SESSION_ID;
        case SONDE_EVENT_THREAD_START:
        case SONDE_EVENT_THREAD_END: return kLifecycleItems | SONDE_DATA_NAME | SONDE_DATA_OS_THREAD_ID;
        case SONDE_EVENT_MODULE_LOAD:
        case SONDE_EVENT_MODULE_UNLOAD:
            return kLifecycleItems | SONDE_DATA_MODULE_ID | SONDE_DATA_NAME | SONDE_DATA_PATH |
                   SONDE_DATA_ADDRESS | SONDE_DATA_SIZE;
        case SONDE_EVENT_METHOD_ENTER:
        case SONDE_EVENT_METHOD_LEAVE:
            return kLifecycleItems | SONDE_DATA_METHOD_ID | SONDE_DATA_MODULE_ID | SONDE_DATA_CALL_SITE |
                   SONDE_DATA_STACK_DEPTH | SONDE_DATA_ADDRESS;
        case SONDE_EVENT_MEMORY_ACCESS:
            return kLifecycleItems | SONDE_DATA_ADDRESS | SONDE_DATA_SIZE | SONDE_DATA_ACCESS_TYPE |
                   SONDE_DATA_METHOD_ID | SONDE_DATA_STACK_DEPTH;
        case SONDE_EVENT_NEW_METHOD:
            return kLifecycleItems | SONDE_DATA_METHOD_ID | SONDE_DATA_MODULE_ID | SONDE_DATA_ADDRESS |
                   SONDE_DATA_SIZE | SONDE_DATA_NAME;
        case SONDE_EVENT_USER_MARK: return kLifecycleItems | SONDE_DATA_NAME | SONDE_DATA_USER_PAYLOAD;
        case SONDE_EVENT_USER_RANGE_PUSH:
        case SONDE_EVENT_USER_RANGE_POP: return kLifecycleItems | SONDE_DATA_NAME | SONDE_DATA_STACK_DEPTH;
        case SONDE_EVENT_API_CALL_ENTER: return kApiItems;
        case SONDE_EVENT_API_CALL_LEAVE:
            return kApiItems | SONDE_DATA_RETURN_VALUE | SONDE_DATA_BEGIN_TIMESTAMP;
        default: return 0;
    }
}

Client *find_client(uint64_t handle) {
    Registry &r = registry();
    const int64_t i = handle_index(handle, kTagClient, r.clients.size());
    return i < 0 ? nullptr : r.clients[static_cast<size_t>(i)];
}

void publish_subs() {
    Registry &r = registry();
    for (uint32_t e = 0; e < SONDE_EVENT_COUNT; ++e) {
        auto s = std::make_unique<Subs>();
        for (Client *c : r.clients) {
            if (c->state != SONDE_CLIENT_STATE_ACTIVE || c->instantiating) continue;
            const Observer &o = c->observers[e];
            if (o.fn == nullptr) continue;
            s->entries[s->count++] = {o.fn, o.user_data, o.items, c->bit, c->index};
            s->mask |= c->bit;
            s->union_items |= o.items;
        }
        const Subs *old = g_subs[e].load(std::memory_order_relaxed);
        if (old != nullptr && old->count == 0 && s->count == 0) continue;
        g_subs[e].store(s.get(), std::memory_order_release);
        r.all_subs.push_back(std::move(s));
    }
    for (Method *m : r.methods) update_call_masks(m);
}

void deliver(const Subs *subs, uint64_t mask, sonde_event_data_t &full) {
    const uint64_t avail = full.valid_items;
    for (uint32_t i = 0; i < subs->count; ++i) {
        const Subs::Entry &e = subs->entries[i];
        if ((mask & e.bit) == 0) continue;
        const uint64_t items = e.items & avail;
        try {
            if (items == avail) {
                e.fn(&full, e.user_data);
                continue;
            }
            sonde_event_data_t d{};
            d.struct_size = sizeof d;
            d.event = full.event;
            d.valid_items = items;
            if (items & SONDE_DATA_METHOD_ID) d.method = full.method;
            if (items & SONDE_DATA_THREAD_ID) d.thread = full.thread;
            if (items & SONDE_DATA_MODULE_ID) d.module = full.module;
            if (items & SONDE_DATA_SESSION_ID) d.session = full.session;
            if (items & SONDE_DATA_TIMESTAMP) d.timestamp = full.timestamp;
            if (items & SONDE_DATA_CALL_SITE) d.call_site = full.call_site;
            if (items & SONDE_DATA_ADDRESS) d.address = full.address;
            if (items & SONDE_DATA_SIZE) d.size = full.size;
            if (items & SONDE_DATA_OS_THREAD_ID) d.os_thread_id = full.os_thread_id;
            if (items & SONDE_DATA_STACK_DEPTH) d.stack_depth = full.stack_depth;
            if (items & SONDE_DATA_ACCESS_TYPE) d.access_type = full.access_type;
            if (items & (SONDE_DATA_NAME | SONDE_DATA_PATH)) d.name = full.name;
            if (items & SONDE_DATA_USER_PAYLOAD) {
                d.payload = full.payload;
                d.payload_size = full.payload_size;
            }
            if (items & SONDE_DATA_API_FUNCTION) d.api_function = full.api_function;
            if (items & SONDE_DATA_CORRELATION_ID) d.correlation_id = full.correlation_id;
            if (items & SONDE_DATA_BEGIN_TIMESTAMP) d.begin_timestamp = full.begin_timestamp;
            if (items & SONDE_DATA_RETURN_VALUE) d.return_value = full.return_value;
            if (items & SONDE_DATA_ARGUMENTS) {
                d.arguments = full.arguments;
                d.argument_count = full.argument_count;
            }
            e.fn(&d, e.user_data);
        } catch (...) {
            // An observer must not throw; the exception stops here, the event goes on.
        }
    }
}

uint64_t ask_filters(uint32_t group, const sonde_filter_element_t &element, uint64_t clients) {
    Registry &r = registry();
    uint64_t accept = 0;
    for (Client *c : r.clients) {
        if ((clients & c->bit) == 0) continue;
        if (c->state != SONDE_CLIENT_STATE_ACTIVE) continue;
        const Filter &f = c->filters[group];
        bool yes = true;
        if (f.fn != nullptr) {
            try {
                yes = f.fn(&element, f.user_data);
            } catch (...) {
                yes = false;
            }
        }
        if (yes) accept |= c->bit;
    }
    return accept;
}

void recompute_for_client(Client *c) {
    Registry &r = registry();
    const uint64_t bit = c->bit;
    for (Module *mod : r.modules) {
        const uint64_t yes = ask_filters(SONDE_EVENT_GROUP_MODULE, module_element(mod), bit);
        if (yes != 0)
            mod->accept.fetch_or(bit, std::memory_order_relaxed);
        else
            mod->accept.fetch_and(~bit, std::memory_order_relaxed);
    }
    for (ThreadState *t : r.threads) {
        const std::string name = thread_name(t);
        const uint64_t yes = ask_filters(SONDE_EVENT_GROUP_THREAD, thread_element(t, name.c_str()), bit);
        if (yes != 0)
            t->notify.fetch_or(bit, std::memory_order_relaxed);
        else
            t->notify.fetch_and(~bit, std::memory_order_relaxed);
    }
    for (ApiFunction *a : r.api_functions) {
        if (api_function_accept(a, bit) != 0)
            a->notify.fetch_or(bit, std::memory_order_relaxed);
        else
            a->notify.fetch_and(~bit, std::memory_order_relaxed);
    }
    for (Method *m : r.methods) {
        uint64_t yes = ask_filters(SONDE_EVENT_GROUP_CALL_GRAPH, method_element(m), bit);
        if (m->module != nullptr) yes &= m->module->accept.load(std::memory_order_relaxed);
        if (yes != 0)
            m->notify.fetch_or(bit, std::memory_order_relaxed);
        else
            m->notify.fetch_and(~bit, std::memory_order_relaxed);
    }
}

// ---- observer and filter registration ----

sonde_status_t api_register_event(sonde_client_id_t client, uint32_t event, uint64_t data_items,
                                  sonde_event_handler_t handler, void *user_data) {
    if (registry_lost()) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    RegistryLock lock;
    Client *c = find_client(client.handle);
    if (c == nullptr || c->state != SONDE_CLIENT_STATE_ACTIVE) return SONDE_STATUS_ERROR_ILLEGAL_ID;
    if (event >= SONDE_EVENT_COUNT) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (handler == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if ((data_items & ~event_items(event)) != 0) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    c->observers[event] = {handler, user_data, data_items};
    if (!c->instantiating) publish_subs();
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t api_set_event_group_filter(sonde_client_id_t client, uint32_t group,
                                          sonde_filter_fn_t should_notify, void *user_data) {
    if (registry_lost()) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    RegistryLock lock;
    Client *c = find_client(client.handle);
    if (c == nullptr || c->state != SONDE_CLIENT_STATE_ACTIVE) return SONDE_STATUS_ERROR_ILLEGAL_ID;
    if (should_notify == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (group != SONDE_EVENT_GROUP_CALL_GRAPH && group != SONDE_EVENT_GROUP_THREAD &&
        group != SONDE_EVENT_GROUP_MODULE && group != SONDE_EVENT_GROUP_API_CALL)
        return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    if (!c->instantiating) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    c->filters[group] = {should_notify, user_data};
    return SONDE_STATUS_SUCCESS;
}

// ---- lifecycle ----

void deliver_lifecycle(uint32_t event, uint64_t session, uint64_t only_clients) {
    const Subs *s = subs_of(event);
    if (s == nullptr || (s->mask & only_clients) == 0) return;
    sonde_event_data_t d{};
    d.struct_size = sizeof d;
    d.event = event;
    d.valid_items = s->union_items & event_items(event);
    if (d.valid_items & SONDE_DATA_TIMESTAMP) d.timestamp = now_ns();
    if (d.valid_items & SONDE_DATA_THREAD_ID) {
        ThreadState *t = current_thread(true);
        if (t != nullptr)
            d.thread.handle = make_handle(kTagThread, t->index);
        else
            d.valid_items &= ~uint64_t{SONDE_DATA_THREAD_ID};
    }
    if (d.valid_items & SONDE_DATA_SESSION_ID) d.session.handle = session;
    deliver(s, only_clients, d);
}

namespace {

// Runtime initialised (core hook, calling thread, no Sonde lock held).
void on_initialize() {
    if (registry_lost()) return;
    Registry &r = registry();
    bool first = false;
    {
        RegistryLock lock;
        first = !r.env_loaded;
        r.env_loaded = true;
    }
    if (first) load_env_clients();
    uint64_t clients = 0;
    {
        RegistryLock lock;
        std::vector<Module *> loaded, unloaded;
        scan_modules(&loaded, &unloaded);
        register_current_thread();  // not running yet: its THREAD_START comes below
        for (Client *c : r.clients)
            if (c->state == SONDE_CLIENT_STATE_ACTIVE) {
                c->initialized = true;
                clients |= c->bit;
            }
        g_running.store(true, std::memory_order_release);
    }
    ThreadState *self = current_thread(false);
    deliver_lifecycle(SONDE_EVENT_RUNTIME_INIT, 0, clients);
    std::vector<Module *> mods;
    {
        RegistryLock lock;
        for (Module *m : r.modules)
            if (m->loaded.load(std::memory_order_relaxed)) mods.push_back(m);
    }
    for (Module *m : mods) deliver_module_event(SONDE_EVENT_MODULE_LOAD, m, clients);
    if (self != nullptr) deliver_thread_event(SONDE_EVENT_THREAD_START, self, clients);
}

void on_finalize() {
    if (registry_lost()) return;
    Registry &r = registry();
    uint64_t clients = 0;
    {
        RegistryLock lock;
        for (Client *c : r.clients)
            if (c->state == SONDE_CLIENT_STATE_ACTIVE && c->initialized) clients |= c->bit;
    }
    deliver_lifecycle(SONDE_EVENT_SHUTDOWN, 0, clients);
    RegistryLock lock;
    g_running.store(false, std::memory_order_release);
    for (Client *c : r.clients) c->initialized = false;
}

void on_session_start(uint64_t session) {
    if (g_running.load(std::memory_order_acquire))
        deliver_lifecycle(SONDE_EVENT_SESSION_START, session, ~0ull);
}

void on_session_stop(uint64_t session) {
    if (g_running.load(std::memory_order_acquire))
        deliver_lifecycle(SONDE_EVENT_SESSION_STOP, session, ~0ull);
}

const core::LifecycleObserver kObserver = {on_initialize, on_finalize, on_session_start, on_session_stop};

// Re-creates a mutex in place when a thread the child does not have held it (try_lock fails:
// the forking thread never holds these at a fork). No lock is waited for, nothing allocated.
template <typename Mutex>
void reset_if_held(Mutex &mu) {
    if (mu.try_lock())
        mu.unlock();
    else
        new (&mu) Mutex();
}

// The pthread_atfork child handler (see registry.h): the only thread of a child just forked.
// Waits for no lock and allocates nothing (the registry was made at load time).
void forked_child() {
    g_running.store(false, std::memory_order_release);
    Registry &r = registry();
    ThreadState *self = t_thread;
    if (self != nullptr && self != &g_busy) {
        reset_if_held(self->stack_mu);
        reset_if_held(self->rec_mu);
    }
    // A recursive mutex: try_lock also succeeds when the forking thread itself holds it (a
    // filter that forked), whose operation then completes in the child.
    if (!r.mu.try_lock()) {
        new (&r.mu) std::recursive_mutex();
        g_registry_lost.store(true, std::memory_order_release);
        return;
    }
    for (Client *c : r.clients) c->initialized = false;
    for (ThreadState *t : r.threads)
        if (t != self) t->alive.store(false, std::memory_order_release);
    r.mu.unlock();
}

struct RegisterObserver {
    RegisterObserver() {
        core::add_lifecycle_observer(&kObserver);
        registry();  // made at load time, so that the child handler never allocates
        pthread_atfork(nullptr, nullptr, forked_child);
    }
} g_register_observer;

}  // namespace

}  // namespace sonde::client
