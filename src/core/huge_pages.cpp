// Huge-page-backed blocks (see huge_pages.h).
#include "core/huge_pages.h"

#include <sys/mman.h>

namespace sonde::core {

void *huge_alloc(std::size_t bytes) {
    if (bytes < kHugeMin) return ::operator new(bytes);
    const std::size_t rounded = huge_room(bytes);
    if (rounded == SIZE_MAX) throw std::bad_alloc();  // wrapped around
    void *p = ::operator new(rounded, std::align_val_t(kHugePage));
    madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure only costs speed
    return p;
}

void huge_free(void *p, std::size_t bytes) noexcept {
    if (p == nullptr) return;
    if (bytes < kHugeMin)
        ::operator delete(p);
    else
        ::operator delete(p, std::align_val_t(kHugePage));
}

void huge_advise(void *p, std::size_t bytes) noexcept {
    const auto begin = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t end = begin + bytes;
    const std::uintptr_t first = (begin + kHugePage - 1) & ~static_cast<std::uintptr_t>(kHugePage - 1);
    const std::uintptr_t last = end & ~static_cast<std::uintptr_t>(kHugePage - 1);
    if (p == nullptr || end < begin || last <= first) return;
    madvise(reinterpret_cast<void *>(first), last - first, MADV_HUGEPAGE);
}

}  // namespace sonde::core
