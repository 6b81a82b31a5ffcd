// Reading records: kind, payload, timestamp, and sonde_next_record's validation against the
// span being delivered to a callback on this thread.
#include <cstring>

#include "buffer/internal.h"
#include "buffer/table.h"
#include "core/runtime.h"
#include <sonde/buffer.h>
#include <sonde/record.h>

namespace sonde::buffer {
namespace {

uint32_t min_payload(uint32_t kind) {
    switch (kind) {
        case SONDE_RECORD_KIND_THREAD: return sizeof(sonde_thread_record_t);
        case SONDE_RECORD_KIND_LOSS: return sizeof(sonde_loss_record_t);
        case SONDE_RECORD_KIND_TRACER: return sizeof(sonde_tracer_record_t);
        case SONDE_RECORD_KIND_PROFILER: return sizeof(sonde_profiler_record_t);
        case SONDE_RECORD_KIND_MEMREF: return sizeof(sonde_memref_record_t);
        case SONDE_RECORD_KIND_CALL: return sizeof(sonde_call_record_t);
        default: return 0;
    }
}

// Whether the header at p describes a record that lies entirely before `end`.
bool header_ok(const char *p, const char *end) {
    if (reinterpret_cast<uintptr_t>(p) & 7) return false;
    if (end - p < static_cast<ptrdiff_t>(sizeof(sonde_record_header_t))) return false;
    sonde_record_header_t h;
    std::memcpy(&h, p, sizeof h);
    if (h.size < 8 || (h.size & 7) != 0 || h.size > end - p) return false;
    if (h.flags & ~static_cast<uint16_t>(SONDE_RECORD_FLAG_TIMESTAMP)) return false;
    const uint32_t fixed = (h.flags & SONDE_RECORD_FLAG_TIMESTAMP) ? 16u : 8u;
    if (h.size < fixed) return false;
    if (h.kind == SONDE_RECORD_KIND_NONE) return false;
    if (h.kind < SONDE_RECORD_KIND_USER) {
        const uint32_t need = min_payload(h.kind);
        if (need == 0 || h.size - fixed < need) return false;
    }
    return true;
}

}  // namespace
}  // namespace sonde::buffer

using namespace sonde::buffer;

extern "C" {

SONDE_API uint32_t sonde_record_kind(const sonde_record_header_t *record) {
    return record ? static_cast<uint32_t>(record->kind) : static_cast<uint32_t>(SONDE_RECORD_KIND_NONE);
}

SONDE_API const void *sonde_record_payload(const sonde_record_header_t *record, uint32_t *payload_size) {
    if (payload_size) *payload_size = 0;
    if (record == nullptr) return nullptr;
    const uint32_t fixed = (record->flags & SONDE_RECORD_FLAG_TIMESTAMP) ? 16u : 8u;
    if (record->size < fixed) return nullptr;
    if (payload_size) *payload_size = record->size - fixed;
    return reinterpret_cast<const char *>(record) + fixed;
}

SONDE_API sonde_status_t sonde_record_timestamp(const sonde_record_header_t *record, uint64_t *timestamp_ns) {
    if (record == nullptr || timestamp_ns == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (!(record->flags & SONDE_RECORD_FLAG_TIMESTAMP) || record->size < 16)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    std::memcpy(timestamp_ns, reinterpret_cast<const char *>(record) + 8, 8);
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_next_record(const sonde_record_header_t *record,
                                           const sonde_record_header_t **next, sonde_session_id_t session,
                                           sonde_buffer_id_t buffer) {
    if (next == nullptr || record == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *next = nullptr;
    const Span *span = tls_span;
    if (span == nullptr || span->buffer != buffer.handle) {
        if (!sonde::core::initialized()) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
        sonde_status_t st = SONDE_STATUS_SUCCESS;
        if (!find_in_session(session.handle, buffer.handle, &st)) return st;
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    if (span->session != session.handle) return SONDE_STATUS_ERROR_SESSION_NOT_FOUND;
    const char *p = reinterpret_cast<const char *>(record);
    if (p < span->begin || p >= span->end) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (!header_ok(p, span->end)) return SONDE_STATUS_ERROR_RECORD_CORRUPTED;
    const char *n = p + record->size;
    if (n < span->end && !header_ok(n, span->end)) return SONDE_STATUS_ERROR_RECORD_CORRUPTED;
    *next = reinterpret_cast<const sonde_record_header_t *>(n);
    return SONDE_STATUS_SUCCESS;
}

}  // extern "C"
