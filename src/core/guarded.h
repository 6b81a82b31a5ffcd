// The C boundary's exception guard: runs a C++ body and maps any exception to a status, so
// that no C++ exception crosses the ABI. Every extern "C" entry point that can throw uses it.
#pragma once

#include <new>

#include <sonde/status.h>

namespace sonde {

template <typename F>
sonde_status_t guarded(F &&f) noexcept {
    try {
        return f();
    } catch (const std::bad_alloc &) {
        return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    } catch (...) {
        return SONDE_STATUS_ERROR;
    }
}

}  // namespace sonde
