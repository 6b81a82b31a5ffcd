// Client concept, API calls: the API_CALL group (API_CALL_ENTER and API_CALL_LEAVE), fed by the
// API tracer of src/apitrace through the sink src/record/api_calls.cpp gives it.
//
// A traced function becomes an ApiFunction when the tracer publishes it, before any import slot
// leads to its wrapper: the API_CALL filters are asked then, once per function and client (and
// again for a client that becomes active later, with the other groups' questions), and the
// answer is kept in `notify`, ANDed with the MODULE filter of the function's library.
//
// Threads: api_function_added runs on the thread that starts tracing or loads a library (the
// tracer's lock held, then Registry::mu: that order only). api_call_event runs on the thread of
// the traced call, possibly inside a signal handler: it reads the published table (append-only,
// entries never freed), the calling thread's ThreadState and the published observer lists, and
// takes no lock and allocates nothing once the thread is registered (its first event registers
// it, as a first method event does).
#include <sonde/client.h>

#include "client/registry.h"

namespace sonde::client {

namespace {

constexpr uint32_t kMaxApiFunctions = 1u << 16;  // the tracer's own bound on function ids

// Entry `id` is the traced function of that id once announced; written once (Registry::mu
// held), read by the hot path.
std::atomic<ApiFunction *> g_api[kMaxApiFunctions];

uint64_t api_handle(const ApiFunction *a) { return make_handle(kTagApiFunction, a->index); }

Module *module_by_path(const std::string &path) {
    for (Module *m : registry().modules)
        if (m->loaded.load(std::memory_order_relaxed) && m->path == path) return m;
    return nullptr;
}

}  // namespace

sonde_filter_element_t api_function_element(const ApiFunction *a) {
    sonde_filter_element_t el = filter_element(SONDE_EVENT_GROUP_API_CALL, a->name.c_str());
    el.full_name = a->declaration.c_str();
    el.module_name = a->library.c_str();
    el.path = a->path.c_str();
    if (a->module != nullptr) el.module.handle = make_handle(kTagModule, a->module->index);
    el.api_function.handle = api_handle(a);
    return el;
}

uint64_t api_function_accept(const ApiFunction *a, uint64_t clients) {
    uint64_t yes = ask_filters(SONDE_EVENT_GROUP_API_CALL, api_function_element(a), clients);
    if (a->module != nullptr) yes &= a->module->accept.load(std::memory_order_relaxed);
    return yes;
}

void api_function_added(uint32_t id, const std::string &name, const std::string &declaration,
                        const std::string &library, const std::string &path) {
    if (id >= kMaxApiFunctions || registry_lost()) return;
    try {
        // The library may have been loaded just now (a dlopen the tracer saw first): the
        // registry learns of it, with its MODULE_LOAD events, before the function names it.
        bool known = false;
        {
            RegistryLock lock;
            known = module_by_path(path) != nullptr;
        }
        if (!known) {
            if (g_running.load(std::memory_order_acquire)) {
                refresh_modules();
            } else {  // before RUNTIME_INIT, which announces every module scanned by then
                std::vector<Module *> loaded, unloaded;
                RegistryLock lock;
                scan_modules(&loaded, &unloaded);
            }
        }
        RegistryLock lock;
        Registry &r = registry();
        if (g_api[id].load(std::memory_order_relaxed) != nullptr) return;
        auto *a = new ApiFunction();
        a->id = id;
        a->index = static_cast<uint32_t>(r.api_functions.size());
        a->name = name;
        a->declaration = declaration;
        a->library = library;
        a->path = path;
        a->module = module_by_path(path);
        a->notify.store(api_function_accept(a, ~0ull), std::memory_order_relaxed);
        r.api_functions.push_back(a);
        g_api[id].store(a, std::memory_order_release);
    } catch (...) {
        // Out of memory: the function's calls are not delivered to clients (the trace, if one is
        // recorded, still has them).
    }
}

void api_call_event(uint32_t event, const ApiCall &rec) {
    if (!g_running.load(std::memory_order_acquire)) return;
    const Subs *s = subs_of(event);
    if (s == nullptr || rec.function >= kMaxApiFunctions) return;
    const ApiFunction *a = g_api[rec.function].load(std::memory_order_acquire);
    if (a == nullptr) return;
    uint64_t mask = s->mask & a->notify.load(std::memory_order_relaxed);
    if (mask == 0) return;
    ThreadState *t = t_thread;
    if (t == nullptr) t = current_thread(true);
    if (t == nullptr || t == &g_busy || t->in_hook != 0) return;
    mask &= t->notify.load(std::memory_order_relaxed);
    if (mask == 0) return;
    ++t->in_hook;
    sonde_event_data_t d{};
    d.struct_size = sizeof d;
    d.event = event;
    d.valid_items = s->union_items & event_items(event);
    d.thread.handle = make_handle(kTagThread, t->index);
    d.api_function.handle = api_handle(a);
    d.correlation_id = rec.correlation;
    d.arguments = rec.args;
    d.argument_count = rec.nargs;
    d.name = a->name.c_str();
    d.stack_depth = rec.depth;
    if (a->module != nullptr)
        d.module.handle = make_handle(kTagModule, a->module->index);
    else
        d.valid_items &= ~uint64_t{SONDE_DATA_MODULE_ID};
    if (event == SONDE_EVENT_API_CALL_LEAVE) {
        d.timestamp = clock::ticks_to_ns(rec.end);
        d.begin_timestamp = clock::ticks_to_ns(rec.begin);
        d.return_value = rec.ret;
    } else if (d.valid_items & SONDE_DATA_TIMESTAMP) {
        d.timestamp = now_ns();
    }
    deliver(s, mask, d);
    --t->in_hook;
}

}  // namespace sonde::client
