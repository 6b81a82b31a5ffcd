// Rules for structs that cross the ABI and start with uint32_t struct_size (see
// ARCHITECTURE.md, "ABI rules"): the core reads only what the caller's size covers and
// writes only that much.
//
//  - struct_size smaller than the struct's size in the release that introduced it (the
//    SONDE_<STRUCT>_SIZE_<M>_<N> literal next to it in its header, passed as `min_size`)
//                                                    -> SONDE_STATUS_ERROR_INCOMPATIBLE_ABI
//  - struct_size larger than Sonde's own sizeof and any byte beyond it non-zero, for an input
//                                                    -> SONDE_STATUS_ERROR_NOT_SUPPORTED
//    (the caller asks for something this library does not know; Linux's copy_struct_from_user
//    answers E2BIG in the same case)
//  - otherwise the known prefix is copied and the rest zero-filled.
//
// `min_size` is a pinned literal, never sizeof: the day a field is appended, callers built
// against the older header still pass it. A struct that is both input and output (the client
// info requests) is read with AbiTail::kOutput and written back with write_abi_struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <sonde/status.h>

namespace sonde {

// What the bytes of a caller struct beyond Sonde's own sizeof hold.
enum class AbiTail {
    kInput,   // fields of a newer caller that this library cannot honour: they must be zero
    kOutput,  // room for results only a newer library writes: neither checked nor touched
};

// Copies a caller struct of *src->struct_size bytes into `out` (a zero-initialised T).
// `min_size` is the struct's size in the release that introduced it.
template <typename T>
sonde_status_t read_abi_struct(const T *src, std::size_t min_size, T *out, AbiTail tail = AbiTail::kInput) {
    std::memset(static_cast<void *>(out), 0, sizeof(T));
    if (src == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    const uint32_t size = src->struct_size;
    if (size < min_size) return SONDE_STATUS_ERROR_INCOMPATIBLE_ABI;
    if (size > sizeof(T) && tail == AbiTail::kInput) {
        const auto *bytes = reinterpret_cast<const unsigned char *>(src);
        for (std::size_t i = sizeof(T); i < size; ++i)
            if (bytes[i] != 0) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    }
    std::memcpy(static_cast<void *>(out), src, size < sizeof(T) ? size : sizeof(T));
    out->struct_size = static_cast<uint32_t>(sizeof(T));
    return SONDE_STATUS_SUCCESS;
}

// Writes `value` into a caller struct whose struct_size says how much room it has; at most
// that many bytes are written and struct_size is left as the caller set it. `min_size` as for
// read_abi_struct.
template <typename T>
sonde_status_t write_abi_struct(const T &value, std::size_t min_size, T *dst) {
    if (dst == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    const uint32_t size = dst->struct_size;
    if (size < min_size) return SONDE_STATUS_ERROR_INCOMPATIBLE_ABI;
    const std::size_t n = size < sizeof(T) ? size : sizeof(T);
    std::memcpy(reinterpret_cast<unsigned char *>(dst) + sizeof(uint32_t),
                reinterpret_cast<const unsigned char *>(&value) + sizeof(uint32_t), n - sizeof(uint32_t));
    return SONDE_STATUS_SUCCESS;
}

}  // namespace sonde
