// Huge-page-backed regions (see huge_pages.h).
#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace sonde::core {

void *huge_map(std::size_t bytes) {
    const std::size_t size = huge_round(bytes);
    if (size < bytes) throw std::bad_alloc();  // wrapped around
    // Map one huge page more than needed and cut the region down to an aligned one.
    const std::size_t span = size + kHugePage;
    if (span < size) throw std::bad_alloc();
    void *raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto base = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (base + kHugePage - 1) & ~static_cast<std::uintptr_t>(kHugePage - 1);
    const std::size_t head = aligned - base;
    const std::size_t tail = span - head - size;
    if (head != 0) munmap(raw, head);
    if (tail != 0) munmap(reinterpret_cast<void *>(aligned + size), tail);
    void *p = reinterpret_cast<void *>(aligned);
    madvise(p, size, MADV_HUGEPAGE);  // a hint: failure costs speed only
    return p;
}

void huge_unmap(void *p, std::size_t bytes) noexcept {
    if (p != nullptr) munmap(p, huge_round(bytes));
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
