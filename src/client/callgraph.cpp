// Client concept: threads (registration, shadow stacks, THREAD events), the method table and
// the CALL_GRAPH hot path, and the MEMORY and USER events.
//
// Hot path (sonde_method_enter / sonde_method_leave), per event when the method is known:
// one initial-exec TLS load, a relaxed load of g_running, a probe of the lock-free method table
// (enter only; leave compares with the shadow stack's top), a store to the shadow stack, and an
// AND of three masks. It takes no lock, does not allocate, and returns at once when Sonde itself
// is running on the thread (in_hook), so an observer that calls instrumented code, or a hook
// inside Sonde, never recurses. A method's first call takes Registry::mu once to symbolise it
// and ask the CALL_GRAPH filters.
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "client/registry.h"
#include "core/clock.h"
#include "core/hooks.h"
#include "core/thread.h"
#include "sonde/client.h"

namespace sonde::client {

namespace {

// The calling thread's state; &g_busy while it is being registered or after it ended (its
// in_hook is set, so every hook returns at once).
__thread ThreadState *t_thread __attribute__((tls_model("initial-exec"))) = nullptr;
ThreadState g_busy;
struct BusyInit {
    BusyInit() { g_busy.in_hook = 1; }
} g_busy_init;

constexpr uint64_t kCallItems = SONDE_DATA_METHOD_ID | SONDE_DATA_THREAD_ID | SONDE_DATA_TIMESTAMP |
                                SONDE_DATA_MODULE_ID | SONDE_DATA_CALL_SITE | SONDE_DATA_STACK_DEPTH |
                                SONDE_DATA_ADDRESS;

// The common part of an explicit event's data: header, items, thread, timestamp.
sonde_event_data_t event_base(uint32_t event, const Subs *s, const ThreadState *t) {
    sonde_event_data_t d{};
    d.struct_size = sizeof d;
    d.event = event;
    d.valid_items = s->union_items & event_items(event);
    d.thread.handle = make_handle(kTagThread, t->index);
    if (d.valid_items & SONDE_DATA_TIMESTAMP) d.timestamp = now_ns();
    return d;
}

// Delivers THREAD_END when the thread exits (C++ thread_local destructor: runs on pthread_exit,
// on return from the start routine, and for the main thread in exit()).
struct ThreadExit {
    ThreadState *t = nullptr;
    ~ThreadExit();
};
thread_local ThreadExit t_exit;

ThreadExit::~ThreadExit() {
    if (t == nullptr) return;
    {
        RegistryLock lock;
        t->end_name = thread_name(t);
    }
    if (g_running.load(std::memory_order_acquire)) deliver_thread_event(SONDE_EVENT_THREAD_END, t, ~0ull);
    t_thread = &g_busy;
    t->alive.store(false, std::memory_order_release);
    std::lock_guard<std::mutex> g(t->stack_mu);
    if (t->stack != nullptr) munmap(static_cast<void *>(t->stack), sizeof(std::atomic<Method *>) * kStackCapacity);
    t->stack = nullptr;
}

void grow_table(Registry &r) {
    MethodTable *old = g_table.load(std::memory_order_relaxed);
    const uint64_t cap = old == nullptr ? 4096 : (old->mask + 1) * 2;
    auto t = std::make_unique<MethodTable>(cap);
    for (Method *m : r.methods)
        for (uint64_t i = MethodTable::hash(m->fn) & t->mask;; i = (i + 1) & t->mask)
            if (t->slots[i].load(std::memory_order_relaxed) == nullptr) {
                t->slots[i].store(m, std::memory_order_relaxed);
                break;
            }
    g_table.store(t.get(), std::memory_order_release);
    r.all_tables.push_back(std::move(t));
}

// Slow path of a method's first call (on any thread): symbolise, ask the filters, insert.
__attribute__((noinline)) Method *insert_method(ThreadState *t, uint64_t fn) {
    ++t->in_hook;
    Method *m = nullptr;
    try {
        Registry &r = registry();
        RegistryLock lock;
        MethodTable *tab = g_table.load(std::memory_order_acquire);
        m = tab != nullptr ? tab->find(fn) : nullptr;
        if (m == nullptr) {
            auto *nm = new Method();
            nm->fn = fn;
            nm->index = static_cast<uint32_t>(r.methods.size());
            symbolise(nm);
            const sonde_filter_element_t el = method_element(nm);
            uint64_t accept = ask_filters(SONDE_EVENT_GROUP_CALL_GRAPH, el, ~0ull);
            if (nm->module != nullptr) accept &= nm->module->accept.load(std::memory_order_relaxed);
            nm->notify.store(accept, std::memory_order_relaxed);
            r.methods.push_back(nm);
            if (tab == nullptr || (r.methods.size() * 2 > tab->mask + 1)) grow_table(r);
            tab = g_table.load(std::memory_order_relaxed);
            for (uint64_t i = MethodTable::hash(fn) & tab->mask;; i = (i + 1) & tab->mask)
                if (tab->slots[i].load(std::memory_order_relaxed) == nullptr) {
                    tab->slots[i].store(nm, std::memory_order_release);
                    break;
                }
            m = nm;
        }
    } catch (...) {
        m = nullptr;
    }
    --t->in_hook;
    return m;
}

__attribute__((noinline)) ThreadState *thread_slow() {
    if (!g_running.load(std::memory_order_acquire)) return nullptr;
    return register_current_thread();
}

// Delivers a CALL_GRAPH event of method m on thread t (the shadow stack already pushed for an
// enter, popped for a leave, so the method's depth follows from it). Five arguments, so the
// hot path reaches it with a tail call.
__attribute__((noinline)) void deliver_call(uint32_t event, const Subs *s, ThreadState *t, const Method *m,
                                            const void *call_site) {
    const uint64_t mask = s->mask & m->notify.load(std::memory_order_relaxed) & t->notify.load(std::memory_order_relaxed);
    const uint32_t depth = t->depth.load(std::memory_order_relaxed) - (event == SONDE_EVENT_METHOD_ENTER ? 1 : 0);
    ++t->in_hook;
    sonde_event_data_t d;
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.event = event;
    uint64_t items = s->union_items & kCallItems;
    if (items & SONDE_DATA_METHOD_ID) d.method.handle = make_handle(kTagMethod, m->index);
    if (items & SONDE_DATA_THREAD_ID) d.thread.handle = make_handle(kTagThread, t->index);
    if (items & SONDE_DATA_TIMESTAMP) d.timestamp = now_ns();
    if (items & SONDE_DATA_MODULE_ID) {
        if (m->module != nullptr)
            d.module.handle = make_handle(kTagModule, m->module->index);
        else
            items &= ~uint64_t{SONDE_DATA_MODULE_ID};
    }
    if (items & SONDE_DATA_CALL_SITE) d.call_site = reinterpret_cast<uint64_t>(call_site);
    if (items & SONDE_DATA_STACK_DEPTH) d.stack_depth = depth;
    if (items & SONDE_DATA_ADDRESS) d.address = m->fn;
    d.valid_items = items;
    // One observer that asked for exactly what is filled (the common case): call it directly.
    const Subs::Entry &e = s->entries[0];
    if (s->count == 1 && (e.items & items) == items) {
        try {
            e.fn(&d, e.user_data);
        } catch (...) {
        }
    } else {
        deliver(s, mask, d);
    }
    --t->in_hook;
}

__attribute__((noinline)) void leave_slow(ThreadState *t, uint64_t fn, const void *call_site, uint32_t d) {
    // The top of the shadow stack is not `fn`: frames were skipped (longjmp, an exception
    // through code without exit hooks) or the stack is deeper than recorded.
    const Method *m = nullptr;
    uint32_t at = d - 1;
    if (d <= kStackCapacity) {
        uint32_t i = d;
        while (i-- > 0) {
            const Method *e = t->stack[i].load(std::memory_order_relaxed);
            if (e != nullptr && e->fn == fn) {
                m = e;
                at = i;
                break;
            }
        }
        if (m == nullptr) return;  // a leave without an enter (began before Sonde): ignore
    } else {
        MethodTable *tab = g_table.load(std::memory_order_acquire);
        m = tab != nullptr ? tab->find(fn) : nullptr;
        if (m == nullptr) {
            t->depth.store(d - 1, std::memory_order_release);
            return;
        }
    }
    t->depth.store(at, std::memory_order_release);
    const Subs *s = g_subs[SONDE_EVENT_METHOD_LEAVE].load(std::memory_order_acquire);
    if (s == nullptr) return;
    const uint64_t mask = s->mask & m->notify.load(std::memory_order_relaxed) & t->notify.load(std::memory_order_relaxed);
    if (mask != 0) deliver_call(SONDE_EVENT_METHOD_LEAVE, s, t, m, call_site);
}

}  // namespace

MethodTable::MethodTable(uint64_t capacity) : mask(capacity - 1), slots(new std::atomic<Method *>[capacity]) {
    for (uint64_t i = 0; i < capacity; ++i) slots[i].store(nullptr, std::memory_order_relaxed);
}

uint64_t now_ns() { return clock::now_ns(); }

std::string thread_name(const ThreadState *t) {
    if (!t->alive.load(std::memory_order_acquire)) return t->end_name;
    char buf[64] = {0};
    if (t_thread == t) {
        if (prctl(PR_GET_NAME, buf, 0, 0, 0) == 0) return buf;
        return "";
    }
    // Another thread: its comm file (gone once the thread has exited).
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%llu/comm", static_cast<unsigned long long>(t->os_tid));
    FILE *f = std::fopen(path, "re");
    if (f == nullptr) return "";
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    std::string s(buf, n);
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
}

sonde_filter_element_t filter_element(uint32_t group, const char *name) {
    sonde_filter_element_t el{};
    el.struct_size = sizeof el;
    el.group = group;
    el.name = name;
    el.class_name = "";
    el.full_name = "";
    el.module_name = "";
    el.path = "";
    return el;
}

sonde_filter_element_t thread_element(const ThreadState *t, const char *name) {
    sonde_filter_element_t el = filter_element(SONDE_EVENT_GROUP_THREAD, name);
    el.thread.handle = make_handle(kTagThread, t->index);
    return el;
}

sonde_filter_element_t method_element(const Method *m) {
    sonde_filter_element_t el = filter_element(SONDE_EVENT_GROUP_CALL_GRAPH, m->name.c_str());
    el.method.handle = make_handle(kTagMethod, m->index);
    if (m->module != nullptr) el.module.handle = make_handle(kTagModule, m->module->index);
    el.class_name = m->class_name.c_str();
    el.full_name = m->full.c_str();
    el.module_name = m->module != nullptr ? m->module->name.c_str() : "";
    el.path = m->module != nullptr ? m->module->path.c_str() : "";
    el.visibility = m->visibility;
    return el;
}

ThreadState *current_thread(bool create) {
    ThreadState *t = t_thread;
    if (t == &g_busy) return nullptr;
    if (t != nullptr || !create) return t;
    return thread_slow();
}

ThreadState *register_current_thread() {
    if (t_thread != nullptr) return t_thread == &g_busy ? nullptr : t_thread;
    t_thread = &g_busy;
    if (core::is_internal_thread()) return nullptr;  // stays busy: Sonde's own thread
    ThreadState *t = nullptr;
    try {
        Registry &r = registry();
        RegistryLock lock;
        if (r.threads.size() >= kMaxThreads) return nullptr;  // stays busy: no events from it
        void *mem = mmap(nullptr, sizeof(std::atomic<Method *>) * kStackCapacity, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (mem == MAP_FAILED) return nullptr;
        t = new ThreadState();
        t->stack = static_cast<std::atomic<Method *> *>(mem);  // zero pages read as nullptr
        t->index = static_cast<uint32_t>(r.threads.size());
        t->os_tid = static_cast<uint64_t>(syscall(SYS_gettid));
        t->pthread = static_cast<unsigned long>(pthread_self());
        t->ranges.reserve(kMaxRangeDepth);
        r.threads.push_back(t);
        t_thread = t;  // thread_name() of the calling thread needs it
        const std::string name = thread_name(t);
        t_thread = &g_busy;
        t->notify.store(ask_filters(SONDE_EVENT_GROUP_THREAD, thread_element(t, name.c_str()), ~0ull),
                        std::memory_order_relaxed);
    } catch (...) {
        return nullptr;
    }
    t_exit.t = t;
    t_thread = t;
    if (g_running.load(std::memory_order_acquire)) deliver_thread_event(SONDE_EVENT_THREAD_START, t, ~0ull);
    return t;
}

void deliver_thread_event(uint32_t event, ThreadState *t, uint64_t only_clients) {
    const Subs *s = subs_of(event);
    if (s == nullptr) return;
    const uint64_t mask = s->mask & only_clients & t->notify.load(std::memory_order_relaxed);
    if (mask == 0) return;
    ThreadState *self = t_thread == &g_busy ? nullptr : t_thread;
    if (self != nullptr) ++self->in_hook;
    sonde_event_data_t d = event_base(event, s, t);
    d.os_thread_id = t->os_tid;
    std::string name;
    if (d.valid_items & SONDE_DATA_NAME) {
        if (event == SONDE_EVENT_THREAD_END) {
            RegistryLock lock;
            name = t->end_name;
        } else {
            name = thread_name(t);
        }
    }
    d.name = name.c_str();
    deliver(s, mask, d);
    if (self != nullptr) --self->in_hook;
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
    for (Method *m : r.methods) {
        uint64_t yes = ask_filters(SONDE_EVENT_GROUP_CALL_GRAPH, method_element(m), bit);
        if (m->module != nullptr) yes &= m->module->accept.load(std::memory_order_relaxed);
        if (yes != 0)
            m->notify.fetch_or(bit, std::memory_order_relaxed);
        else
            m->notify.fetch_and(~bit, std::memory_order_relaxed);
    }
}

// Current method and depth of a thread, for MEMORY events.
static const Method *top_method(ThreadState *t, uint32_t *depth) {
    const uint32_t d = t->depth.load(std::memory_order_relaxed);
    *depth = d;
    if (d == 0 || d > kStackCapacity) return nullptr;
    return t->stack[d - 1].load(std::memory_order_relaxed);
}

}  // namespace sonde::client

using namespace sonde::client;

// ---- hot path ----

namespace {

// Pushes m on t's shadow stack and delivers METHOD_ENTER to the clients that want it.
__attribute__((always_inline)) inline void enter_known(ThreadState *t, Method *m, const void *call_site) {
    const uint32_t d = t->depth.load(std::memory_order_relaxed);
    if (__builtin_expect(d < kStackCapacity, 1)) t->stack[d].store(m, std::memory_order_relaxed);
    t->depth.store(d + 1, std::memory_order_release);
    const Subs *s = g_subs[SONDE_EVENT_METHOD_ENTER].load(std::memory_order_acquire);
    if (s == nullptr || !g_running.load(std::memory_order_relaxed)) return;
    const uint64_t mask = s->mask & m->notify.load(std::memory_order_relaxed) & t->notify.load(std::memory_order_relaxed);
    if (mask != 0) deliver_call(SONDE_EVENT_METHOD_ENTER, s, t, m, call_site);
}

// The enter of a thread's first event or a method's first call.
__attribute__((noinline)) void enter_slow(const void *function, const void *call_site) {
    ThreadState *t = t_thread;
    if (t == nullptr) t = thread_slow();
    if (t == nullptr || t->in_hook != 0) return;
    const uint64_t fn = reinterpret_cast<uint64_t>(function);
    MethodTable *tab = g_table.load(std::memory_order_acquire);
    Method *m = tab != nullptr ? tab->find(fn) : nullptr;
    if (m == nullptr) {
        if (!g_running.load(std::memory_order_relaxed)) return;
        m = insert_method(t, fn);
        if (m == nullptr) return;
    }
    enter_known(t, m, call_site);
}

}  // namespace

// Hot path: a leaf with tail calls only (no frame) when the thread and the method are known.
extern "C" SONDE_API void sonde_method_enter(const void *function, const void *call_site) {
    ThreadState *t = t_thread;
    MethodTable *tab = g_table.load(std::memory_order_acquire);
    if (__builtin_expect(t == nullptr || tab == nullptr, 0)) return enter_slow(function, call_site);
    if (t->in_hook != 0) return;
    Method *m = tab->find(reinterpret_cast<uint64_t>(function));
    if (__builtin_expect(m == nullptr, 0)) return enter_slow(function, call_site);
    enter_known(t, m, call_site);
}

extern "C" SONDE_API void sonde_method_leave(const void *function, const void *call_site) {
    ThreadState *t = t_thread;
    if (t == nullptr || t->in_hook != 0) return;
    const uint32_t d = t->depth.load(std::memory_order_relaxed);
    if (d == 0) return;
    const uint64_t fn = reinterpret_cast<uint64_t>(function);
    const Method *m = d <= kStackCapacity ? t->stack[d - 1].load(std::memory_order_relaxed) : nullptr;
    if (__builtin_expect(m == nullptr || m->fn != fn, 0)) {
        leave_slow(t, fn, call_site, d);
        return;
    }
    t->depth.store(d - 1, std::memory_order_release);
    const Subs *s = g_subs[SONDE_EVENT_METHOD_LEAVE].load(std::memory_order_acquire);
    if (s == nullptr || !g_running.load(std::memory_order_relaxed)) return;
    const uint64_t mask = s->mask & m->notify.load(std::memory_order_relaxed) & t->notify.load(std::memory_order_relaxed);
    if (mask != 0) deliver_call(SONDE_EVENT_METHOD_LEAVE, s, t, m, call_site);
}

// ---- MEMORY and USER events ----

namespace {


// The calling thread for an explicit event, or why not.
sonde_status_t event_thread(ThreadState **out) {
    if (!g_running.load(std::memory_order_acquire)) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    if (t_thread == &g_busy) return SONDE_STATUS_ERROR_IN_CALLBACK;
    ThreadState *t = current_thread(true);
    if (t == nullptr) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    if (t->in_hook != 0) return SONDE_STATUS_ERROR_IN_CALLBACK;
    *out = t;
    return SONDE_STATUS_SUCCESS;
}

void deliver_user(uint32_t event, ThreadState *t, const char *text, const void *payload, uint64_t payload_size,
                  uint32_t depth) {
    const Subs *s = subs_of(event);
    if (s == nullptr) return;
    const uint64_t mask = s->mask & t->notify.load(std::memory_order_relaxed);
    if (mask == 0) return;
    ++t->in_hook;
    sonde_event_data_t d = event_base(event, s, t);
    d.name = text;
    d.payload = payload;
    d.payload_size = payload_size;
    d.stack_depth = depth;
    deliver(s, mask, d);
    --t->in_hook;
}

}  // namespace

extern "C" SONDE_API void sonde_memory_access(const void *address, uint64_t size, uint32_t access_type) {
    ThreadState *t = nullptr;
    if (event_thread(&t) != SONDE_STATUS_SUCCESS) return;
    const Subs *s = subs_of(SONDE_EVENT_MEMORY_ACCESS);
    if (s == nullptr) return;
    const uint64_t mask = s->mask & t->notify.load(std::memory_order_relaxed);
    if (mask == 0) return;
    ++t->in_hook;
    sonde_event_data_t d = event_base(SONDE_EVENT_MEMORY_ACCESS, s, t);
    d.address = reinterpret_cast<uint64_t>(address);
    d.size = size;
    d.access_type = access_type;
    uint32_t depth = 0;
    const Method *m = top_method(t, &depth);
    d.stack_depth = depth;
    if (m != nullptr)
        d.method.handle = make_handle(kTagMethod, m->index);
    else
        d.valid_items &= ~uint64_t{SONDE_DATA_METHOD_ID};
    deliver(s, mask, d);
    --t->in_hook;
}

extern "C" SONDE_API sonde_status_t sonde_user_mark(const char *text, const void *payload, uint64_t payload_size) {
    if (text == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    ThreadState *t = nullptr;
    const sonde_status_t st = event_thread(&t);
    if (st != SONDE_STATUS_SUCCESS) return st;
    deliver_user(SONDE_EVENT_USER_MARK, t, text, payload, payload_size, 0);
    return SONDE_STATUS_SUCCESS;
}

extern "C" SONDE_API sonde_status_t sonde_user_range_push(const char *text) {
    if (text == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    ThreadState *t = nullptr;
    const sonde_status_t st = event_thread(&t);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (t->ranges.size() >= kMaxRangeDepth) return SONDE_STATUS_ERROR_LIMIT;
    try {
        t->ranges.emplace_back(text);
    } catch (...) {
        return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    }
    deliver_user(SONDE_EVENT_USER_RANGE_PUSH, t, text, nullptr, 0, static_cast<uint32_t>(t->ranges.size() - 1));
    return SONDE_STATUS_SUCCESS;
}

extern "C" SONDE_API sonde_status_t sonde_user_range_pop(void) {
    ThreadState *t = nullptr;
    const sonde_status_t st = event_thread(&t);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (t->ranges.empty()) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    deliver_user(SONDE_EVENT_USER_RANGE_POP, t, t->ranges.back().c_str(), nullptr, 0,
                 static_cast<uint32_t>(t->ranges.size() - 1));
    t->ranges.pop_back();
    return SONDE_STATUS_SUCCESS;
}

extern "C" SONDE_API sonde_status_t sonde_register_thread(sonde_thread_id_t *out) {
    if (!g_running.load(std::memory_order_acquire)) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    if (t_thread == &g_busy) return SONDE_STATUS_ERROR_IN_CALLBACK;
    ThreadState *t = current_thread(true);
    if (t == nullptr) return SONDE_STATUS_ERROR_LIMIT;
    if (out != nullptr) out->handle = make_handle(kTagThread, t->index);
    return SONDE_STATUS_SUCCESS;
}
