// Client concept, threads: the calling thread's ThreadState (t_thread), registration and the
// life of its shadow stack, thread names, THREAD_START / THREAD_END, and sonde_register_thread.
//
// Threads: a thread registers itself (its first event, or sonde_register_thread) with
// Registry::mu held and delivers its own THREAD_START; its THREAD_END runs on the ending thread,
// from a thread_local destructor. thread_name() of another thread reads /proc.
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>

#include <sonde/instrument.h>

#include "client/registry.h"
#include "core/hooks.h"
#include "core/thread.h"

namespace sonde::client {

// The calling thread's state; &g_busy while it is being registered or after it ended (its
// in_hook is set, so every hook returns at once).
__thread ThreadState *t_thread __attribute__((tls_model("initial-exec"))) = nullptr;
ThreadState g_busy;

namespace {

struct BusyInit {
    BusyInit() { g_busy.in_hook = 1; }
} g_busy_init;

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
    record_thread_end(t);
    t_thread = &g_busy;
    t->alive.store(false, std::memory_order_release);
    std::lock_guard<std::mutex> g(t->stack_mu);
    if (t->stack != nullptr)
        munmap(static_cast<void *>(t->stack), sizeof(std::atomic<Method *>) * kStackCapacity);
    t->stack = nullptr;
}

}  // namespace

__attribute__((noinline)) ThreadState *thread_slow() {
    if (!g_running.load(std::memory_order_acquire)) return nullptr;
    return register_current_thread();
}

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

sonde_filter_element_t thread_element(const ThreadState *t, const char *name) {
    sonde_filter_element_t el = filter_element(SONDE_EVENT_GROUP_THREAD, name);
    el.thread.handle = make_handle(kTagThread, t->index);
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
        record_thread_start(t, name);
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

}  // namespace sonde::client

using namespace sonde::client;

extern "C" SONDE_API sonde_status_t sonde_register_thread(sonde_thread_id_t *out) {
    if (!g_running.load(std::memory_order_acquire)) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    if (t_thread == &g_busy) return SONDE_STATUS_ERROR_IN_CALLBACK;
    ThreadState *t = current_thread(true);
    if (t == nullptr) return SONDE_STATUS_ERROR_LIMIT;
    if (out != nullptr) out->handle = make_handle(kTagThread, t->index);
    return SONDE_STATUS_SUCCESS;
}
