// Allocator of the stackdist concept for its large arrays (hash table, time bitmap, histogram
// counts): blocks of 1 MiB or more are rounded up to 2 MiB, 2 MiB-aligned and advised for
// transparent huge pages, so random probes into tens of megabytes do not also miss the TLB, and
// a growing array is faulted 2 MiB at a time (on a VM where a 4 KiB fault cost ~10 us, a
// histogram growing to 1.9 M distances took 5 K of them; see core/huge_pages.h). Rounding at
// most doubles a block. Smaller blocks use plain operator new. Stateless; thread-safe as
// operator new is.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>

namespace sonde::stackdist {

template <typename T>
struct HugeAlloc {
    using value_type = T;
    static constexpr std::size_t kHuge = std::size_t{2} << 20;
    static constexpr std::size_t kThreshold = std::size_t{1} << 20;

    HugeAlloc() = default;
    template <typename U>
    HugeAlloc(const HugeAlloc<U> &) noexcept {}

    T *allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < kThreshold) return static_cast<T *>(::operator new(bytes));
        const std::size_t rounded = (bytes + kHuge - 1) & ~(kHuge - 1);
        void *p = ::operator new(rounded, std::align_val_t(kHuge));
        madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure only costs speed
        return static_cast<T *>(p);
    }
    void deallocate(T *p, std::size_t n) noexcept {
        if (n * sizeof(T) < kThreshold)
            ::operator delete(p);
        else
            ::operator delete(p, std::align_val_t(kHuge));
    }
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
