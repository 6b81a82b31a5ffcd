// Client concept, call graph: the method table (a method's first call symbolises it, asks the
// CALL_GRAPH filters and sends NEW_METHOD), the enter/leave hot path with its CALL_GRAPH
// delivery, and the staging of recorded events (the recorder of src/record is the sink).
//
// Hot path (sonde_method_enter / sonde_method_leave), per event when the method is known:
// one initial-exec TLS load, a probe of the lock-free method table (enter only; leave compares
// with the shadow stack's top), a store to the shadow stack, one load and test of the thread's
// staging pointer, and one AND of the method's precomputed mask with the thread's. Recording
// adds an rdtsc and two stores into the thread's own array. It takes no lock, does not
// allocate, and returns at once when Sonde itself is running on the thread (in_hook), so an
// observer that calls instrumented code, or a hook inside Sonde, never recurses. A method's
// first call takes Registry::mu once to symbolise it and ask the CALL_GRAPH filters; a full
// staging array is handed to the sink out of line (once per 512 events).
//
// Threads: enter and leave run on the instrumented thread and touch only its own ThreadState,
// the published method table and the published observer lists; inserting a method takes
// Registry::mu and may run on several threads at once. Recording: see registry.h.
#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <vector>

#include <sonde/instrument.h>
#include <sonde/trace_events.h>

#include "client/registry.h"

namespace sonde::client {

namespace {

constexpr uint64_t kCallItems = SONDE_DATA_METHOD_ID | SONDE_DATA_THREAD_ID | SONDE_DATA_TIMESTAMP |
                                SONDE_DATA_MODULE_ID | SONDE_DATA_CALL_SITE | SONDE_DATA_STACK_DEPTH |
                                SONDE_DATA_ADDRESS;

void grow_table(Registry &r) {
    MethodTable *old = g_table.load(std::memory_order_relaxed);
    const uint64_t cap = old == nullptr ? 4096 : (old->mask + 1) * 2;
    auto t = std::make_unique<MethodTable>(cap);
    for (Method *m : r.methods) t->insert(m);
    g_table.store(t.get(), std::memory_order_release);
    r.all_tables.push_back(std::move(t));
}

// NEW_METHOD to the clients that accept the method (Registry::mu held, like a filter).
void deliver_new_method(ThreadState *t, Method *m) {
    const Subs *s = g_subs[SONDE_EVENT_NEW_METHOD].load(std::memory_order_acquire);
    if (s == nullptr) return;
    const uint64_t mask =
        s->mask & m->notify.load(std::memory_order_relaxed) & t->notify.load(std::memory_order_relaxed);
    if (mask == 0) return;
    sonde_event_data_t d = event_base(SONDE_EVENT_NEW_METHOD, s, t);
    d.method.handle = make_handle(kTagMethod, m->index);
    if (m->module != nullptr)
        d.module.handle = make_handle(kTagModule, m->module->index);
    else
        d.valid_items &= ~uint64_t{SONDE_DATA_MODULE_ID};
    d.address = m->fn;
    d.size = m->size;
    d.name = m->name.c_str();
    deliver(s, mask, d);
}

// Slow path of a method's first call (on any thread): symbolise, ask the filters, insert.
__attribute__((noinline)) Method *insert_method(ThreadState *t, uint64_t fn) {
    if (fn == 0) return nullptr;  // no function sits at 0 (and 0 marks an empty slot)
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
            update_call_masks(nm);
            r.methods.push_back(nm);
            if (const RecordSink *sink = g_record_sink.load(std::memory_order_acquire))
                sink->method(sink->ctx, nm);
            // NEW_METHOD before the method is in the table: no thread can enter it before.
            deliver_new_method(t, nm);
            // A new table is filled with every method, this one included.
            if (tab == nullptr || (r.methods.size() * 2 > tab->mask + 1))
                grow_table(r);
            else
                tab->insert(nm);
            m = nm;
        }
    } catch (...) {
        m = nullptr;
    }
    --t->in_hook;
    return m;
}

// Fills the thread's event struct for a CALL_GRAPH event with the items of `items`; returns the
// valid ones. The struct is prepared once per set of items (prepare_call_data): every field an
// item of the set names is written here on each event (0 when the item is not available), every
// other field stays zero, so no clearing per event.
template <bool kTimestamp>
__attribute__((always_inline)) inline uint64_t fill_call(sonde_event_data_t &d, uint64_t items,
                                                         uint32_t event, ThreadState *t, const Method *m,
                                                         const void *call_site) {
    d.event = event;
    uint64_t valid = items;
    if (items & SONDE_DATA_METHOD_ID) d.method.handle = make_handle(kTagMethod, m->index);
    if (kTimestamp && (items & SONDE_DATA_TIMESTAMP)) d.timestamp = now_ns();
    if (items & SONDE_DATA_MODULE_ID) {
        d.module.handle = m->module != nullptr ? make_handle(kTagModule, m->module->index) : 0;
        if (m->module == nullptr) valid &= ~uint64_t{SONDE_DATA_MODULE_ID};
    }
    if (items & SONDE_DATA_CALL_SITE) d.call_site = reinterpret_cast<uint64_t>(call_site);
    if (items & SONDE_DATA_STACK_DEPTH)
        d.stack_depth =
            t->depth.load(std::memory_order_relaxed) - (event == SONDE_EVENT_METHOD_ENTER ? 1 : 0);
    if (items & SONDE_DATA_ADDRESS) d.address = m->fn;
    d.valid_items = valid;
    return valid;
}

__attribute__((noinline, cold)) void prepare_call_data(ThreadState *t, uint64_t items) {
    sonde_event_data_t &d = t->call_data;
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.thread.handle = (items & SONDE_DATA_THREAD_ID) ? make_handle(kTagThread, t->index) : 0;
    t->call_items = items;
}

// Every case but the common one: the event struct to prepare, several observers, or one that
// asked for items the event does not have.
__attribute__((noinline)) void deliver_call_general(const Subs *s, uint64_t mask, uint32_t event,
                                                    ThreadState *t, const Method *m, const void *call_site) {
    ++t->in_hook;
    const uint64_t items = s->union_items & kCallItems;
    if (t->call_items != items) prepare_call_data(t, items);
    sonde_event_data_t &d = t->call_data;
    const uint64_t valid = fill_call<true>(d, items, event, t, m, call_site);
    const Subs::Entry &e = s->entries[0];
    if (s->count == 1 && (e.items & valid) == valid) {
        try {
            e.fn(&d, e.user_data);
        } catch (...) {
        }
    } else {
        deliver(s, mask, d);
    }
    --t->in_hook;
}

// Delivers a CALL_GRAPH event of method m on thread t (the shadow stack already pushed for an
// enter, popped for a leave, so the method's depth follows from it). Five arguments, so the
// hot path reaches it with a tail call. The common case, one observer without timestamps whose
// items the thread's event struct is prepared for, is kept lean (no clock call to keep
// registers across): it calls the observer directly, and when the items are the method and the
// thread only, writes just the event's kind and method; everything else goes to
// deliver_call_general.
__attribute__((noinline)) void deliver_call(uint32_t event, uint64_t mask, ThreadState *t, const Method *m,
                                            const void *call_site) {
    const Subs *s = g_subs[event].load(std::memory_order_acquire);
    if (s == nullptr || !g_running.load(std::memory_order_relaxed)) return;
    mask &= s->mask;
    if (mask == 0) return;
    const uint64_t items = s->union_items & kCallItems;
    const Subs::Entry &e = s->entries[0];
    if (__builtin_expect(t->call_items != items || s->count != 1, 0))
        return deliver_call_general(s, mask, event, t, m, call_site);
    // The method and the thread, what the cheapest observers ask for (a counter per method and
    // thread): both always valid, the thread's already in the struct, so one field to write.
    // It calls the observer itself: sharing the call below with the other path (one jump more)
    // measured 1-3 ns slower per fib call under call_counter.
    if (items == (SONDE_DATA_METHOD_ID | SONDE_DATA_THREAD_ID)) {
        sonde_event_data_t &d = t->call_data;
        d.event = event;
        d.method.handle = make_handle(kTagMethod, m->index);
        d.valid_items = items;
        ++t->in_hook;
        try {
            e.fn(&d, e.user_data);
        } catch (...) {
        }
        --t->in_hook;
        return;
    }
    if (__builtin_expect((items & SONDE_DATA_TIMESTAMP) != 0, 0))
        return deliver_call_general(s, mask, event, t, m, call_site);
    sonde_event_data_t &d = t->call_data;
    const uint64_t valid = fill_call<false>(d, items, event, t, m, call_site);
    if (__builtin_expect((e.items & valid) != valid, 0))
        return deliver_call_general(s, mask, event, t, m, call_site);
    ++t->in_hook;
    try {
        e.fn(&d, e.user_data);
    } catch (...) {
    }
    --t->in_hook;
}

__attribute__((noinline)) void leave_slow(ThreadState *t, uint64_t fn, const void *call_site, uint32_t d) {
    // The top of the shadow stack is not `fn`: frames were skipped (longjmp, an exception
    // through code without exit hooks) or the stack is deeper than recorded.
    if (fn == 0) return;  // no method, as its enter was none: the frames stay
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
    if (t->rec_pos.load(std::memory_order_acquire) != nullptr)
        record_event(t, SONDE_TRACE_EVENT_METHOD_LEAVE, m->index, 0);
    const uint64_t mask =
        m->leave_mask.load(std::memory_order_relaxed) & t->notify.load(std::memory_order_relaxed);
    if (mask != 0) deliver_call(SONDE_EVENT_METHOD_LEAVE, mask, t, m, call_site);
}

}  // namespace

MethodTable::MethodTable(uint64_t capacity) : mask(capacity - 1), slots(new MethodSlot[capacity]) {
    for (uint64_t i = 0; i < capacity; ++i) {
        slots[i].fn.store(0, std::memory_order_relaxed);
        slots[i].method.store(nullptr, std::memory_order_relaxed);
    }
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

void update_call_masks(Method *m) {
    const uint64_t notify = m->notify.load(std::memory_order_relaxed);
    const Subs *enter = g_subs[SONDE_EVENT_METHOD_ENTER].load(std::memory_order_relaxed);
    const Subs *leave = g_subs[SONDE_EVENT_METHOD_LEAVE].load(std::memory_order_relaxed);
    m->enter_mask.store(enter != nullptr ? notify & enter->mask : 0, std::memory_order_relaxed);
    m->leave_mask.store(leave != nullptr ? notify & leave->mask : 0, std::memory_order_relaxed);
}

// ---- recording ----

std::atomic<const RecordSink *> g_record_sink{nullptr};

namespace {

bool g_recording_ran = false;  // Registry::mu

// Gives t a staging array (Registry::mu held; t never recorded before).
void enable_staging(ThreadState *t, const RecordSink *sink) {
    if (t->rec_base != nullptr || t->rec_closed) return;
    auto *mem = new CallEvent[kStageEvents];
    std::lock_guard<std::mutex> g(t->rec_mu);
    t->rec_base = t->rec_taken = mem;
    t->rec_end = mem + kStageEvents;
    t->rec_sink = sink;
    t->rec_pos.store(mem, std::memory_order_release);
}

// Owner only, rec_mu held: the array is closed; the thread stops recording and frees it.
void release_staging_locked(ThreadState *t) {
    t->rec_pos.store(nullptr, std::memory_order_relaxed);
    delete[] t->rec_base;
    t->rec_base = t->rec_taken = t->rec_end = nullptr;
}

}  // namespace

// The owner's array is full (p == rec_end): hands it to the sink and starts over, or stops
// recording on this thread when recording was stopped. Returns where to stage next, or nullptr.
__attribute__((noinline)) CallEvent *record_refill(ThreadState *t, CallEvent *p) {
    ++t->in_hook;
    std::lock_guard<std::mutex> g(t->rec_mu);
    CallEvent *next = nullptr;
    if (t->rec_closed) {
        release_staging_locked(t);
    } else {
        if (p > t->rec_taken) t->rec_sink->batch(t->rec_sink->ctx, t->index, t->rec_taken, p);
        t->rec_taken = t->rec_base;
        t->rec_pos.store(t->rec_base, std::memory_order_release);
        next = t->rec_base;
    }
    --t->in_hook;
    return next;
}

CallEvent *record_claim(ThreadState *t, uint32_t n) {
    CallEvent *p = t->rec_pos.load(std::memory_order_acquire);
    if (p == nullptr || n == 0 || n > kStageEvents) return nullptr;
    if (static_cast<uint32_t>(t->rec_end - p) < n) p = record_refill(t, p);
    return p;
}

void record_event(ThreadState *t, uint16_t kind, uint32_t id, uint16_t aux) {
    CallEvent *p = t->rec_pos.load(std::memory_order_acquire);
    if (p == nullptr) return;
    if (p == t->rec_end && (p = record_refill(t, p)) == nullptr) return;
    *p = CallEvent{clock::ticks(), id, kind, aux};
    t->rec_pos.store(p + 1, std::memory_order_release);
}

void record_text(ThreadState *t, uint16_t kind, const char *text, uint16_t aux) {
    if (t->rec_pos.load(std::memory_order_acquire) == nullptr) return;
    record_event(t, kind, t->rec_sink->intern(t->rec_sink->ctx, text), aux);
}

void record_thread_start(ThreadState *t, const std::string &name) {
    const RecordSink *sink = g_record_sink.load(std::memory_order_acquire);
    if (sink == nullptr) return;
    enable_staging(t, sink);
    sink->thread(sink->ctx, t, name);
    record_event(t, SONDE_TRACE_EVENT_THREAD_START, t->index, 0);
}

void record_thread_end(ThreadState *t) {
    if (t->rec_pos.load(std::memory_order_acquire) == nullptr) return;
    const RecordSink *sink = t->rec_sink;
    std::string name;
    {
        RegistryLock lock;
        name = t->end_name;
        sink->thread(sink->ctx, t, name);
    }
    record_event(t, SONDE_TRACE_EVENT_THREAD_NAME, sink->intern(sink->ctx, name.c_str()), 0);
    record_event(t, SONDE_TRACE_EVENT_THREAD_END, t->index, 0);
    std::lock_guard<std::mutex> g(t->rec_mu);
    CallEvent *p = t->rec_pos.load(std::memory_order_acquire);
    if (!t->rec_closed && p != nullptr && p > t->rec_taken) sink->batch(sink->ctx, t->index, t->rec_taken, p);
    t->rec_closed = true;
    release_staging_locked(t);
}

namespace {

// A fork child records nothing: its copy of the calling thread's staging is dropped (the
// recorder, which owns the file, stays the parent's).
void fork_child() {
    g_record_sink.store(nullptr, std::memory_order_relaxed);
    ThreadState *t = t_thread;
    if (t != nullptr && t != &g_busy) t->rec_pos.store(nullptr, std::memory_order_relaxed);
}

}  // namespace

bool start_recording(const RecordSink *sink) {
    Registry &r = registry();
    RegistryLock lock;
    if (g_recording_ran) return false;
    g_recording_ran = true;
    pthread_atfork(nullptr, nullptr, fork_child);
    g_record_sink.store(sink, std::memory_order_release);
    for (Module *m : r.modules) sink->module(sink->ctx, m);
    for (Method *m : r.methods) sink->method(sink->ctx, m);
    for (ThreadState *t : r.threads) {
        if (!t->alive.load(std::memory_order_acquire)) continue;
        enable_staging(t, sink);
        sink->thread(sink->ctx, t, thread_name(t));
    }
    return true;
}

void stop_recording(bool crashing) {
    Registry &r = registry();
    std::vector<ThreadState *> threads;
    const RecordSink *sink = g_record_sink.exchange(nullptr, std::memory_order_acq_rel);
    if (sink == nullptr) return;
    {
        RegistryLock lock;
        threads = r.threads;
        for (ThreadState *t : threads)
            if (t->alive.load(std::memory_order_acquire)) sink->thread(sink->ctx, t, thread_name(t));
    }
    for (ThreadState *t : threads) {
        // A crashing thread may hold its own rec_mu (it crashed inside a hand-over): its events
        // since the last hand-over are then lost rather than the handler deadlocking.
        std::unique_lock<std::mutex> g(t->rec_mu, std::defer_lock);
        if (crashing) {
            for (int i = 0; i < 1000 && !g.try_lock(); ++i) sched_yield();
            if (!g.owns_lock()) continue;
        } else {
            g.lock();
        }
        if (t->rec_closed || t->rec_base == nullptr) continue;
        CallEvent *p = t->rec_pos.load(std::memory_order_acquire);
        if (p != nullptr && p > t->rec_taken) sink->tail(sink->ctx, t->index, t->rec_taken, p);
        if (p != nullptr) t->rec_taken = p;
        t->rec_closed = true;
    }
}

}  // namespace sonde::client

using namespace sonde::client;

// ---- hot path ----

namespace {

// An enter or leave of a recording thread when the thread's array is full (handed over first)
// or the clock does not count TSC ticks: stages it, then delivers it like the plain path.
__attribute__((noinline)) void call_recorded_slow(uint32_t event, ThreadState *t, const Method *m,
                                                  const void *call_site) {
    const bool enter = event == SONDE_EVENT_METHOD_ENTER;
    record_event(t, enter ? SONDE_TRACE_EVENT_METHOD_ENTER : SONDE_TRACE_EVENT_METHOD_LEAVE, m->index, 0);
    const uint64_t mask = (enter ? m->enter_mask : m->leave_mask).load(std::memory_order_relaxed) &
                          t->notify.load(std::memory_order_relaxed);
    if (mask != 0) deliver_call(event, mask, t, m, call_site);
}

// An enter or leave of a recording thread (out of line, so that the path without recording
// stays a leaf): an rdtsc and two stores into the thread's array, then the delivery like the
// plain path. Itself a leaf with tail calls only (no frame, no register saved): the hand-over of
// a full array and a clock without the TSC take call_recorded_slow.
__attribute__((noinline)) void call_recorded(uint32_t event, ThreadState *t, const Method *m,
                                             const void *call_site, CallEvent *p) {
    if (__builtin_expect(p == t->rec_end || !sonde::clock::ticks_are_tsc(), 0))
        return call_recorded_slow(event, t, m, call_site);
    const bool enter = event == SONDE_EVENT_METHOD_ENTER;
    *p = CallEvent{
        __rdtsc(), m->index,
        static_cast<uint16_t>(enter ? SONDE_TRACE_EVENT_METHOD_ENTER : SONDE_TRACE_EVENT_METHOD_LEAVE), 0};
    t->rec_pos.store(p + 1, std::memory_order_release);
    const uint64_t mask = (enter ? m->enter_mask : m->leave_mask).load(std::memory_order_relaxed) &
                          t->notify.load(std::memory_order_relaxed);
    if (mask != 0) return deliver_call(event, mask, t, m, call_site);
}

// Pushes m on t's shadow stack, stages the enter when the thread records and delivers
// METHOD_ENTER to the clients that want it.
__attribute__((always_inline)) inline void enter_known(ThreadState *t, Method *m, const void *call_site) {
    const uint32_t d = t->depth.load(std::memory_order_relaxed);
    if (__builtin_expect(d < kStackCapacity, 1)) t->stack[d].store(m, std::memory_order_relaxed);
    t->depth.store(d + 1, std::memory_order_release);
    CallEvent *p = t->rec_pos.load(std::memory_order_acquire);
    if (p != nullptr) return call_recorded(SONDE_EVENT_METHOD_ENTER, t, m, call_site, p);
    const uint64_t mask =
        m->enter_mask.load(std::memory_order_relaxed) & t->notify.load(std::memory_order_relaxed);
    if (mask != 0) deliver_call(SONDE_EVENT_METHOD_ENTER, mask, t, m, call_site);
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
    CallEvent *p = t->rec_pos.load(std::memory_order_acquire);
    if (p != nullptr) return call_recorded(SONDE_EVENT_METHOD_LEAVE, t, m, call_site, p);
    const uint64_t mask =
        m->leave_mask.load(std::memory_order_relaxed) & t->notify.load(std::memory_order_relaxed);
    if (mask != 0) deliver_call(SONDE_EVENT_METHOD_LEAVE, mask, t, m, call_site);
}
