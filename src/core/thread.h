// Sonde's own threads (the buffer delivery pool's workers): created past any
// pthread_create interposer and marked, so that the client concept does not report them as
// program threads.
#pragma once

#include <pthread.h>

namespace sonde::core {

// Creates a thread with the C library's pthread_create, looked up in libc itself so that an
// interposer (libsonde-instrument.so wraps pthread_create to report program threads) does not
// see it. Sanitizer builds keep the default lookup: their runtimes must intercept every thread
// creation (and are never combined with the preload). Returns pthread_create's result, once
// the new thread runs `fn`: a thread still starting may be inside the C library's or a
// sanitizer runtime's allocator, and a fork at that moment would leave the child an allocator
// lock that nobody releases. The C library's malloc makes fork safe; the sanitizers' allocator
// in GCC 12's runtimes does not, and a child that started Sonde again hung in it.
int create_internal_thread(pthread_t *thread, void *(*fn)(void *), void *arg);

// A thread Sonde runs for itself marks itself at start.
void mark_internal_thread();
bool is_internal_thread();

}  // namespace sonde::core
