// Status names and sentences. Owns nothing but two tables; callable before initialisation.
#include <sonde/status.h>

namespace {

struct StatusText {
    const char *name;
    const char *text;
};

constexpr StatusText kStatus[SONDE_STATUS_LAST] = {
    {"SONDE_STATUS_SUCCESS", "The call succeeded."},
    {"SONDE_STATUS_PARTIAL_INFO", "The call succeeded but some of the requested data is not available."},
    {"SONDE_STATUS_ERROR", "The call failed."},
    {"SONDE_STATUS_ERROR_NOT_INITIALIZED",
     "Sonde is not initialized: call sonde_initialize first (or it was finalized)."},
    {"SONDE_STATUS_ERROR_ALREADY_INITIALIZED", "Sonde is already initialized."},
    {"SONDE_STATUS_ERROR_INVALID_ARGUMENT", "An argument is outside its documented range."},
    {"SONDE_STATUS_ERROR_NULL_POINTER", "A required pointer argument is NULL."},
    {"SONDE_STATUS_ERROR_SESSION_NOT_FOUND", "No such session: the id is stale, forged or destroyed."},
    {"SONDE_STATUS_ERROR_BUFFER_NOT_FOUND", "No such buffer: the id is stale, forged or destroyed."},
    {"SONDE_STATUS_ERROR_SESSION_ACTIVE", "The session is started; this operation needs it stopped."},
    {"SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE", "The session is not started."},
    {"SONDE_STATUS_ERROR_RECORD_CORRUPTED", "A record header is invalid (bad size, kind or alignment)."},
    {"SONDE_STATUS_ERROR_CORRUPTED_SESSION_BUFFER",
     "Buffer memory was overwritten past a record (guard word broken)."},
    {"SONDE_STATUS_ERROR_BUFFER_FULL", "The buffer is full: the record was dropped and counted."},
    {"SONDE_STATUS_ERROR_OUT_OF_MEMORY", "Memory could not be allocated."},
    {"SONDE_STATUS_ERROR_BUFFER_TOO_SHORT",
     "The output array is too short; actual_size tells how many entries exist."},
    {"SONDE_STATUS_ERROR_ILLEGAL_ID", "The id is unknown or no longer valid."},
    {"SONDE_STATUS_ERROR_NOT_SUPPORTED",
     "The request, or a non-zero field Sonde does not know, is not supported."},
    {"SONDE_STATUS_ERROR_PHASE_FAILURE", "The call is not allowed in the current phase."},
    {"SONDE_STATUS_ERROR_INCOMPATIBLE_ABI", "The structure size or ABI version is older than Sonde accepts."},
    {"SONDE_STATUS_ERROR_IO", "An input/output operation failed."},
    {"SONDE_STATUS_ERROR_FORMAT", "The input is not in the expected format."},
    {"SONDE_STATUS_ERROR_CALLBACK_FAILED", "A user callback failed (threw an exception)."},
    {"SONDE_STATUS_ERROR_IN_CALLBACK", "This call is not allowed from inside the buffer's own callback."},
    {"SONDE_STATUS_ERROR_VERIFY_FAILED", "A verification check found a mismatch."},
    {"SONDE_STATUS_ERROR_TOOL", "An analysis tool reported an error."},
    {"SONDE_STATUS_ERROR_LOAD_FAILED", "A plugin could not be loaded."},
    {"SONDE_STATUS_ERROR_TIMEOUT", "A wait ran out of time."},
    {"SONDE_STATUS_ERROR_LIMIT", "A fixed capacity is exhausted."},
};

}  // namespace

extern "C" {

SONDE_API const char *sonde_status_name(sonde_status_t status) {
    return status < SONDE_STATUS_LAST ? kStatus[status].name : "SONDE_STATUS_UNKNOWN";
}

SONDE_API const char *sonde_status_string(sonde_status_t status) {
    return status < SONDE_STATUS_LAST ? kStatus[status].text : "Unknown status value.";
}

}  // extern "C"
