// The buffer C API (include/sonde/buffer.h) apart from the producer calls (emit.cpp) and record
// reading (record.cpp): create, flush, poll, statistics, destroy. Each entry point validates its
// arguments, finds its buffer through the table and calls into the buffer concept.
#include <cstring>

#include "buffer/buffer.h"
#include "buffer/table.h"
#include "core/abi_struct.h"
#include "core/guarded.h"
#include "core/runtime.h"

using namespace sonde;
using namespace sonde::buffer;

namespace {

sonde_status_t first_error(sonde_status_t a, sonde_status_t b) { return a != SONDE_STATUS_SUCCESS ? a : b; }

// Whether the properties ask for poll delivery, the one case where the callback may be NULL.
bool asks_for_poll(const sonde_buffer_property_t *properties, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i)
        if (properties[i].kind == SONDE_BUFFER_PROPERTY_KIND_DELIVERY &&
            properties[i].value == SONDE_BUFFER_DELIVERY_POLL)
            return true;
    return false;
}

}  // namespace

extern "C" {

SONDE_API sonde_status_t sonde_create_buffer(sonde_session_id_t session, uint64_t size,
                                             sonde_buffer_callback_t callback, void *user_data,
                                             const sonde_buffer_property_t *properties,
                                             uint32_t num_properties, sonde_buffer_id_t *out) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (out == nullptr || (properties == nullptr && num_properties != 0))
            return SONDE_STATUS_ERROR_NULL_POINTER;
        if (callback == nullptr && !asks_for_poll(properties, num_properties))
            return SONDE_STATUS_ERROR_NULL_POINTER;
        if (!core::session_exists(session.handle)) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
        std::shared_ptr<Buffer> b;
        sonde_status_t st =
            create_buffer(session.handle, size, callback, user_data, properties, num_properties, b);
        if (st != SONDE_STATUS_SUCCESS) return st;
        // Entered in the table atomically with respect to the session's start and stop.
        st = core::with_session(session.handle, [&](bool active) { return insert(b, active); });
        if (st != SONDE_STATUS_SUCCESS) return st;
        out->handle = b->handle;
        if (b->interval_ns != 0) delivery_reschedule();  // schedule its first interval
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API sonde_status_t sonde_flush_data(sonde_session_id_t session, sonde_buffer_id_t buffer) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (in_callback()) return SONDE_STATUS_ERROR_IN_CALLBACK;
        if (buffer.handle != 0) {
            sonde_status_t st = SONDE_STATUS_SUCCESS;
            const std::shared_ptr<Buffer> b = find_in_session(session.handle, buffer.handle, &st);
            if (!b) return st;
            return deliver(*b, true);
        }
        if (!core::session_exists(session.handle)) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
        sonde_status_t result = SONDE_STATUS_SUCCESS;
        uint32_t slot = 0;
        while (std::shared_ptr<Buffer> b = next_buffer(session.handle, &slot))
            result = first_error(result, deliver(*b, true));
        return result;
    });
}

SONDE_API sonde_status_t sonde_poll_buffer(sonde_session_id_t session, sonde_buffer_id_t buffer,
                                           uint64_t timeout_ns, sonde_buffer_callback_t callback,
                                           void *user_data) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (callback == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
        if (in_callback()) return SONDE_STATUS_ERROR_IN_CALLBACK;
        sonde_status_t st = SONDE_STATUS_SUCCESS;
        const std::shared_ptr<Buffer> b = find_in_session(session.handle, buffer.handle, &st);
        if (!b) return st;
        if (b->delivery != SONDE_BUFFER_DELIVERY_POLL) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        return poll(*b, timeout_ns, callback, user_data);
    });
}

SONDE_API sonde_status_t sonde_get_buffer_stats(sonde_session_id_t session, sonde_buffer_id_t buffer,
                                                sonde_buffer_stats_t *stats) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (stats == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
        if (stats->struct_size < SONDE_BUFFER_STATS_SIZE_1_0) return SONDE_STATUS_ERROR_INCOMPATIBLE_ABI;
        sonde_status_t st = SONDE_STATUS_SUCCESS;
        std::shared_ptr<Buffer> b = find_in_session(session.handle, buffer.handle, &st);
        if (!b) return st;
        sonde_buffer_stats_t s;
        std::memset(&s, 0, sizeof s);
        s.struct_size = sizeof s;
        fill_stats(*b, s);
        return write_abi_struct(s, SONDE_BUFFER_STATS_SIZE_1_0, stats);
    });
}

SONDE_API sonde_status_t sonde_destroy_buffer(sonde_session_id_t session, sonde_buffer_id_t buffer) {
    return guarded([&]() -> sonde_status_t {
        if (!core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        if (in_callback()) return SONDE_STATUS_ERROR_IN_CALLBACK;
        sonde_status_t st = SONDE_STATUS_SUCCESS;
        std::shared_ptr<Buffer> b = find_in_session(session.handle, buffer.handle, &st);
        if (!b) return st;
        if (!retire(b)) return SONDE_STATUS_ERROR_BUFFER_NOT_FOUND;  // destroyed meanwhile
        uint64_t discarded = 0;
        st = drain_and_detach(*b, &discarded);
        if (st == SONDE_STATUS_SUCCESS && discarded != 0) return SONDE_STATUS_PARTIAL_INFO;
        return st;
    });
}

}  // extern "C"
