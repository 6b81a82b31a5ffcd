// Sonde's own threads: creation past interposers, and the mark that tells them apart.
#include "core/thread.h"

#include <dlfcn.h>

#include <cstring>

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
    return create(thread, nullptr, fn, arg);
}

void mark_internal_thread() { t_internal_thread = true; }
bool is_internal_thread() { return t_internal_thread; }

}  // namespace sonde::core
