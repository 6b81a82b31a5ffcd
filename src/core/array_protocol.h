// The array and string protocol of the C ABI (ARCHITECTURE.md, "Clients, events, data
// requests"): the caller hands `{ T *entries; uint32_t size; uint32_t actual_size; }` (or the
// three as arguments); Sonde fills the first `size` entries, sets `actual_size` to how many
// exist, and answers BUFFER_TOO_SHORT when `size` is too small. Strings are arrays of char whose
// actual_size counts the NUL. Used by the client data requests (src/client/requests.cpp) and the
// stackdist histogram queries (src/stackdist/api.cpp). Callers check their pointers first.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <sonde/status.h>

namespace sonde {

// True when an array announces storage (size > 0) but has none: the caller answers NULL_POINTER.
template <typename Array>
bool lacks_storage(const Array &a) {
    return a.entries == nullptr && a.size > 0;
}

// Sets entries[i] = item(i) for the first min(size, count) entries and *actual_size = count (at
// most UINT32_MAX). SUCCESS, or BUFFER_TOO_SHORT when size < count. `entries` may be NULL when
// `size` is 0.
template <typename T, typename Item>
sonde_status_t fill_array(T *entries, uint32_t size, uint32_t *actual_size, std::size_t count, Item item) {
    const std::size_t n = std::min<std::size_t>(count, size);
    for (std::size_t i = 0; i < n; ++i) entries[i] = item(i);
    *actual_size = static_cast<uint32_t>(std::min<std::size_t>(count, UINT32_MAX));
    return count > size ? SONDE_STATUS_ERROR_BUFFER_TOO_SHORT : SONDE_STATUS_SUCCESS;
}

// fill_array on an `{entries, size, actual_size}` struct.
template <typename Array, typename Item>
sonde_status_t fill_array(Array &a, std::size_t count, Item item) {
    return fill_array(a.entries, a.size, &a.actual_size, count, item);
}

// Writes `v` into a string struct: at most `size - 1` bytes and a NUL (nothing when size is 0 or
// there is no storage), and actual_size = v.size() + 1. True when all of it fitted.
template <typename String>
bool fill_string(String &s, const std::string &v) {
    s.actual_size = static_cast<uint32_t>(v.size() + 1);
    if (s.size == 0 || s.entries == nullptr) return false;
    const std::size_t n = std::min<std::size_t>(s.size - 1, v.size());
    std::memcpy(s.entries, v.data(), n);
    s.entries[n] = '\0';
    return v.size() + 1 <= s.size;
}

}  // namespace sonde
