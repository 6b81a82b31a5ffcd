// Hooks: how the concepts built on the core (buffers, clients) learn about the runtime's
// lifecycle and its sessions without the core knowing them. The core includes no other
// concept's header; they include core/ and register here.
//
// Two kinds of hook, both registered from a static initialiser of their own translation unit
// (inside libsonde, so before any C entry point can run):
//
//  * SessionResources: the one owner of what a session holds (the buffer concept). Called in
//    the order below, on the thread that made the call:
//      - start_runtime:     in sonde_initialize, Runtime::mu held, before the runtime is
//                           published; a failure status makes sonde_initialize fail.
//      - set_active_locked: session start/stop, Runtime::mu held (so that the change is atomic
//                           with respect to buffer creation in that session). Must not call
//                           back into the core.
//      - stopped:           after sonde_stop_session changed the state and the lifecycle
//                           observers ran; no lock held. Delivers what was emitted before.
//      - destroyed:         after a session left the table (sonde_destroy_session or
//                           sonde_finalize); no lock held. Retires and drains its resources.
//      - stop_runtime:      at the end of sonde_finalize, after every session is destroyed.
//      - in_callback:       whether the calling thread runs inside a delivery callback (such a
//                           thread may not stop, destroy or finalize).
//      - forked_child:      in a child just forked (pthread_atfork child handler, registered
//                           once by the core), after the core reset its own state. The child
//                           has one thread, and any lock may have been held by a parent thread
//                           that does not exist in it: take no lock, allocate nothing, make
//                           every producer call of the parent's ids fail, and leave the
//                           parent's resources untouched (never deliver them). The child's
//                           next start_runtime starts afresh.
//  * LifecycleObserver: anyone interested (clients); at most 8. Called with no Sonde lock held:
//      - on_initialize: at the end of a successful sonde_initialize.
//      - on_finalize:   at the start of sonde_finalize, before sessions are destroyed.
//      - on_session_start / on_session_stop: after the state change.
#pragma once

#include <cstdint>

#include <sonde/status.h>

namespace sonde::core {

struct SessionResources {
    sonde_status_t (*start_runtime)();
    void (*stop_runtime)();
    void (*set_active_locked)(uint64_t session_handle, bool active);
    sonde_status_t (*stopped)(uint64_t session_handle);
    sonde_status_t (*destroyed)(uint64_t session_handle);
    bool (*in_callback)();
    void (*forked_child)();
};

// Sets the owner of session resources (one; every member non-null).
void set_session_resources(const SessionResources *resources);

struct LifecycleObserver {
    void (*on_initialize)();
    void (*on_finalize)();
    void (*on_session_start)(uint64_t session_handle);
    void (*on_session_stop)(uint64_t session_handle);
};

// Registers an observer (any member may be null). At most 8; call from static initialisers only.
void add_lifecycle_observer(const LifecycleObserver *observer);

}  // namespace sonde::core
