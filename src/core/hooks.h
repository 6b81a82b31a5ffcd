// Lifecycle hooks: how other concepts inside libsonde (clients, instrumentation) learn about
// runtime initialisation, finalisation and session start/stop without the core knowing them.
//
// Observers register from a static initialiser of their own translation unit (inside
// libsonde, so before any C entry point can run). Hooks are called with no Sonde lock held:
//  - on_initialize: at the end of a successful sonde_initialize, on the calling thread.
//  - on_finalize:   at the start of sonde_finalize, before sessions are destroyed.
//  - on_session_start / on_session_stop: after the state change, on the calling thread.
#pragma once

#include <cstdint>

namespace sonde::core {

struct LifecycleObserver {
    void (*on_initialize)();
    void (*on_finalize)();
    void (*on_session_start)(uint64_t session_handle);
    void (*on_session_stop)(uint64_t session_handle);
};

// Registers an observer (any member may be null). At most 8; call from static initialisers only.
void add_lifecycle_observer(const LifecycleObserver *observer);

// Threads Sonde runs for itself (the delivery thread) mark themselves at start; the client
// concept does not report them as program threads.
void mark_internal_thread();
bool is_internal_thread();

}  // namespace sonde::core
