// The buffer table: which buffer occupies which slot, the slot generations, and the slot
// states the hot path reads (g_slot_state, buffer.h). The buffer concept owns it; sessions
// reach it only through the core's SessionResources hooks (registered in table.cpp).
//
// Table::mu protects `buffers` and `gen`. It is taken after the core's Runtime::mu when both
// are held (buffer creation and session start/stop) and before any Buffer lock; never while a
// callback runs on the calling thread's behalf.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "buffer/buffer.h"

namespace sonde::buffer {

struct Table {
    std::mutex mu;
    std::shared_ptr<Buffer> buffers[kMaxBuffers];
    uint32_t gen[kMaxBuffers] = {};
};

Table &table();

// The live buffer with this handle, or null (takes Table::mu).
std::shared_ptr<Buffer> find(uint64_t handle);
// The live buffer `buffer` of session `session`; on failure null and *status says which id is
// wrong (SESSION_NOT_FOUND before BUFFER_NOT_FOUND). Takes Table::mu, then Runtime::mu after
// releasing it.
std::shared_ptr<Buffer> find_in_session(uint64_t session, uint64_t buffer, sonde_status_t *status);
// Every live buffer of a session, or of every session when `session` is 0 (takes Table::mu).
std::vector<std::shared_ptr<Buffer>> buffers_of(uint64_t session);

// Puts `b` in a free slot, giving it its handle, stopped or active (Table::mu taken inside;
// the caller holds Runtime::mu so that the session cannot start or stop meanwhile).
sonde_status_t insert(const std::shared_ptr<Buffer> &b, bool active);
// Takes a buffer out of the table and makes its slot refuse producers (Table::mu taken inside).
// Returns false when another thread retired it first. Whoever retired it runs drain_and_detach.
bool retire(const std::shared_ptr<Buffer> &b);
// Retires every buffer of a session (of every session when 0) and returns those it retired.
std::vector<std::shared_ptr<Buffer>> retire_all(uint64_t session);

}  // namespace sonde::buffer
