// Sonde's own threads: creation past interposers, and the mark that tells them apart.
#include "core/thread.h"

#include <dlfcn.h>

#include <condition_variable>
#include <cstring>
#include <mutex>

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SONDE_SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SONDE_SANITIZED_BUILD 1
#endif
#endif

namespace sonde::core {

namespace {

__thread bool t_internal_thread = false;

// What a new internal thread starts from: the creator's routine, and the handshake that tells
// the creator the thread runs (the creator waits, so this lives on its stack).
struct Start {
    void *(*fn)(void *);
    void *arg;
    std::mutex mu;
    std::condition_variable cv;
    bool running = false;
};

void *start_trampoline(void *p) {
    Start *s = static_cast<Start *>(p);
    void *(*fn)(void *) = s->fn;
    void *arg = s->arg;
    {
        std::lock_guard<std::mutex> g(s->mu);
        s->running = true;
        s->cv.notify_one();  // under the lock: the creator may free *s once it sees `running`
    }
    return fn(arg);
}

}  // namespace

int create_internal_thread(pthread_t *thread, void *(*fn)(void *), void *arg) {
    using create_fn = int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    create_fn create = pthread_create;
#ifndef SONDE_SANITIZED_BUILD
    if (void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD)) {
        if (void *real = dlsym(libc, "pthread_create")) std::memcpy(&create, &real, sizeof real);
        dlclose(libc);
    }
#endif
    Start s;
    s.fn = fn;
    s.arg = arg;
    const int rc = create(thread, nullptr, start_trampoline, &s);
    if (rc != 0) return rc;
    std::unique_lock<std::mutex> lk(s.mu);
    s.cv.wait(lk, [&s] { return s.running; });
    return 0;
}

void mark_internal_thread() { t_internal_thread = true; }
bool is_internal_thread() { return t_internal_thread; }

}  // namespace sonde::core
