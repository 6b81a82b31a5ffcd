// Allocator of the stackdist concept for its large arrays (hash table, time bitmap, histogram
// counts, results): core::huge_alloc, so that blocks of 1 MiB or more are 2 MiB-aligned and
// advised for transparent huge pages (random probes into tens of megabytes do not also miss the
// TLB, and a growing array is faulted 2 MiB at a time; see core/huge_pages.h). Stateless.
#pragma once

#include <cstddef>

#include "core/huge_pages.h"

namespace sonde::stackdist {

template <typename T>
struct HugeAlloc {
    using value_type = T;

    HugeAlloc() = default;
    template <typename U>
    HugeAlloc(const HugeAlloc<U> &) noexcept {}

    T *allocate(std::size_t n) {
        if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
        return static_cast<T *>(core::huge_alloc(n * sizeof(T)));
    }
    void deallocate(T *p, std::size_t n) noexcept { core::huge_free(p, n * sizeof(T)); }
};

template <typename T, typename U>
bool operator==(const HugeAlloc<T> &, const HugeAlloc<U> &) {
    return true;
}
template <typename T, typename U>
bool operator!=(const HugeAlloc<T> &, const HugeAlloc<U> &) {
    return false;
}

}  // namespace sonde::stackdist
