// Client concept, user events: MEMORY_ACCESS (sonde_memory_access), USER_MARK and the named
// ranges of USER_RANGE_PUSH / USER_RANGE_POP.
//
// Threads: each runs on the thread that reports the event, with no lock held; a thread's range
// stack belongs to it. From inside Sonde (an observer, a filter) they answer IN_CALLBACK or
// return at once.
#include <sonde/instrument.h>
#include <sonde/trace_events.h>

#include "client/registry.h"

namespace sonde::client {

// Current method and depth of a thread, for MEMORY events.
static const Method *top_method(ThreadState *t, uint32_t *depth) {
    const uint32_t d = t->depth.load(std::memory_order_relaxed);
    *depth = d;
    if (d == 0 || d > kStackCapacity) return nullptr;
    return t->stack[d - 1].load(std::memory_order_relaxed);
}

}  // namespace sonde::client

using namespace sonde::client;

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

void deliver_user(uint32_t event, ThreadState *t, const char *text, const void *payload,
                  uint64_t payload_size, uint32_t depth) {
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

extern "C" SONDE_API sonde_status_t sonde_user_mark(const char *text, const void *payload,
                                                    uint64_t payload_size) {
    if (text == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    ThreadState *t = nullptr;
    const sonde_status_t st = event_thread(&t);
    if (st != SONDE_STATUS_SUCCESS) return st;
    record_text(t, SONDE_TRACE_EVENT_MARK, text, 0);
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
    record_text(t, SONDE_TRACE_EVENT_RANGE_PUSH, text, static_cast<uint16_t>(t->ranges.size() - 1));
    deliver_user(SONDE_EVENT_USER_RANGE_PUSH, t, text, nullptr, 0,
                 static_cast<uint32_t>(t->ranges.size() - 1));
    return SONDE_STATUS_SUCCESS;
}

extern "C" SONDE_API sonde_status_t sonde_user_range_pop(void) {
    ThreadState *t = nullptr;
    const sonde_status_t st = event_thread(&t);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if (t->ranges.empty()) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    record_text(t, SONDE_TRACE_EVENT_RANGE_POP, t->ranges.back().c_str(),
                static_cast<uint16_t>(t->ranges.size() - 1));
    deliver_user(SONDE_EVENT_USER_RANGE_POP, t, t->ranges.back().c_str(), nullptr, 0,
                 static_cast<uint32_t>(t->ranges.size() - 1));
    t->ranges.pop_back();
    return SONDE_STATUS_SUCCESS;
}
