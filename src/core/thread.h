// Sonde's own threads (the buffer delivery pool's workers): created past any
// pthread_create interposer and marked, so that the client concept does not report them as
// program threads.
#pragma once

#include <pthread.h>

namespace sonde::core {

// Creates a thread with the C library's pthread_create, looked up in libc itself so that an
// interposer (libsonde-instrument.so wraps pthread_create to report program threads) does not
// see it. Sanitizer builds keep the default lookup: their runtimes must intercept every thread
// creation (and are never combined with the preload). Returns pthread_create's result.
int create_internal_thread(pthread_t *thread, void *(*fn)(void *), void *arg);

// A thread Sonde runs for itself marks itself at start.
void mark_internal_thread();
bool is_internal_thread();

}  // namespace sonde::core
