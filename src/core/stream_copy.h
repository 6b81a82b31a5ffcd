// Copies whose destination bypasses the caches (non-temporal stores), for large output that
// another thread reads later, or reads little of: written normally, each of its cache lines is
// first read in from memory (a read for ownership) and then crowds out the writer's working set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace sonde::core {

// Copies `bytes` bytes from src to dst (not overlapping). With SSE2 and dst 16-byte aligned, by
// non-temporal stores, then a store fence, so that what the thread publishes afterwards (through
// a mutex or an atomic) is seen after the copy; otherwise, and for a last part under 16 bytes,
// memcpy. src has no alignment requirement.
inline void stream_copy(void *dst, const void *src, size_t bytes) {
#if defined(__SSE2__)
    if (reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
        auto *d = static_cast<unsigned char *>(dst);
        const auto *s = static_cast<const unsigned char *>(src);
        const size_t whole = bytes & ~size_t{15};
        for (size_t i = 0; i < whole; i += 16)
            _mm_stream_si128(reinterpret_cast<__m128i *>(d + i),
                             _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i)));
        std::memcpy(d + whole, s + whole, bytes & 15);
        _mm_sfence();
        return;
    }
#endif
    std::memcpy(dst, src, bytes);
}

}  // namespace sonde::core
