// operator new and delete of the test executable: every form is counted (fault_should_fail)
// and served by the real malloc, also in sanitizer builds, whose runtime would otherwise serve
// operator new itself; delete is free. See fault_alloc.h.
#include <cstdlib>
#include <new>

#include "fault_alloc.h"

namespace {

void *allocate(std::size_t n) {
    if (fault_should_fail()) throw std::bad_alloc();
    void *p = fault_raw_malloc(n == 0 ? 1 : n);
    if (p == nullptr) throw std::bad_alloc();
    return p;
}

void *allocate_nothrow(std::size_t n) noexcept {
    if (fault_should_fail()) return nullptr;
    return fault_raw_malloc(n == 0 ? 1 : n);
}

void *allocate_aligned(std::size_t n, std::align_val_t a) {
    const std::size_t align = static_cast<std::size_t>(a);
    if (fault_should_fail()) throw std::bad_alloc();
    void *p = nullptr;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, n == 0 ? 1 : n) != 0)
        throw std::bad_alloc();
    return p;
}

}  // namespace

void *operator new(std::size_t n) { return allocate(n); }
void *operator new[](std::size_t n) { return allocate(n); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return allocate_nothrow(n); }
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return allocate_nothrow(n); }
void *operator new(std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }
void *operator new[](std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }
void *operator new(std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept {
    try {
        return allocate_aligned(n, a);
    } catch (...) {
        return nullptr;
    }
}
void *operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept {
    try {
        return allocate_aligned(n, a);
    } catch (...) {
        return nullptr;
    }
}

void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { std::free(p); }
