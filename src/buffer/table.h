// The buffer table: which buffer occupies which slot, the slot generations, and the slot
// states the hot path reads (g_slot_state, buffer.h). The buffer concept owns it; sessions
// reach it only through the core's SessionResources hooks (registered in table.cpp).
//
// Table::mu protects `buffers`, `gen`, `inherited` and `parked`. It is taken after the core's
// Runtime::mu when both are held (buffer creation and session start/stop) and before any Buffer
// lock; never while a callback runs on the calling thread's behalf.
//
// fork(): the child's copy of the table names the parent's buffers. The child handler
// (forked_child, table.cpp) makes every slot refuse producers and marks the table inherited;
// the child's next sonde_initialize parks those buffers in `parked`, where they are never
// delivered, locked or freed (their locks and condition variables may name threads that do
// not exist in the child), and keeps the slot generations so that the parent's ids stay stale.
//
// Walking buffers (next_buffer, retire_next) allocates nothing, so that flush, stop, destroy
// and finalize cannot fail half-way for lack of memory.
#pragma once

#include <memory>
#include <mutex>

#include "buffer/buffer.h"

namespace sonde::buffer {

struct Table {
    std::mutex mu;
    std::shared_ptr<Buffer> buffers[kMaxBuffers];
    uint32_t gen[kMaxBuffers] = {};
    bool inherited = false;          // set in a forked child: `buffers` are the parent's
    std::shared_ptr<Buffer> parked;  // a forked child's inherited buffers (Buffer::parked_next)
};

Table &table();

// The live buffer with this handle, or null (takes Table::mu).
std::shared_ptr<Buffer> find(uint64_t handle);
// The live buffer `buffer` of session `session`; on failure null and *status says which id is
// wrong (SESSION_NOT_FOUND before BUFFER_NOT_FOUND). Takes Table::mu, then Runtime::mu after
// releasing it.
std::shared_ptr<Buffer> find_in_session(uint64_t session, uint64_t buffer, sonde_status_t *status);
// The live buffer of a session (of every session when `session` is 0) in the lowest slot at or
// after *slot, or null; on success *slot is set past it, so that a loop visits each buffer
// once. Takes Table::mu; allocates nothing.
std::shared_ptr<Buffer> next_buffer(uint64_t session, uint32_t *slot);

// Puts `b` in a free slot, giving it its handle, stopped or active (Table::mu taken inside;
// the caller holds Runtime::mu so that the session cannot start or stop meanwhile).
sonde_status_t insert(const std::shared_ptr<Buffer> &b, bool active);
// Takes a buffer out of the table and makes its slot refuse producers (Table::mu taken inside).
// Returns false when another thread retired it first. Whoever retired it runs drain_and_detach.
bool retire(const std::shared_ptr<Buffer> &b);
// Retires one buffer of a session (of any session when 0) and returns it, or null when none is
// left. Call until null; allocates nothing.
std::shared_ptr<Buffer> retire_next(uint64_t session);

// A forked child: moves the parent's buffers out of the table into `parked` (Table::mu taken
// inside). Called by the child's sonde_initialize.
void park_inherited();

}  // namespace sonde::buffer
