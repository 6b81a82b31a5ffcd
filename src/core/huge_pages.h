// Large arrays backed by transparent huge pages (src/core), for buffers that a parallel run
// writes soon after allocating them: decoded blocks' records, the reuse_distance tap's arrays.
//
// Why: the first write to each 4 KiB page of fresh memory is a page fault. On bare metal that
// costs about a microsecond; on the paravirtualised VMs this project is built and tested on it
// was measured at about 10 us (72 MiB touched page by page: 180 ms; the same 72 MiB advised for
// huge pages: 4-13 ms once the VM had used the memory before, 44-69 ms the first time). Many
// threads faulting at once also queue on the process's memory map. A 2 MiB-aligned region
// advised with MADV_HUGEPAGE is faulted 2 MiB at a time where the kernel's THP setting is
// "always" or "madvise"; with "never" it behaves as plain memory.
//
// Regions are mapped with mmap, rounded up to 2 MiB, and unmapped when freed (the size is
// needed then; HugeArray keeps it). Thread-safe: no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

namespace sonde::core {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

// `bytes` rounded up to a multiple of kHugePage.
constexpr std::size_t huge_round(std::size_t bytes) { return (bytes + kHugePage - 1) & ~(kHugePage - 1); }

// A zero-filled region of huge_round(bytes) bytes, 2 MiB-aligned, advised for huge pages.
// Throws std::bad_alloc when it cannot be mapped. bytes > 0.
void *huge_map(std::size_t bytes);
// Unmaps a region huge_map(bytes) returned (the same `bytes`). nullptr is ignored.
void huge_unmap(void *p, std::size_t bytes) noexcept;
// Advises the whole huge pages inside [p, p + bytes) of memory from another allocator (a
// std::string's reserved room, say) for transparent huge pages, before it is first written:
// a hint, ignored where it fails or covers no whole huge page.
void huge_advise(void *p, std::size_t bytes) noexcept;

// An owning array of `n` T, not initialised (T must be trivially constructible and
// destructible). Arrays of kHugeArrayMin bytes or more are a huge_map region each; smaller ones
// come from operator new, so that rounding up to a huge page never more than doubles the
// memory an array may touch. Move-only.
constexpr std::size_t kHugeArrayMin = kHugePage / 2;

template <typename T>
class HugeArray {
    static_assert(std::is_trivially_destructible<T>::value, "HugeArray holds plain data");

public:
    HugeArray() = default;
    explicit HugeArray(std::size_t n) : p_(allocate(n)), n_(n) {}
    ~HugeArray() { release(p_, n_); }
    HugeArray(HugeArray &&o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
    HugeArray &operator=(HugeArray &&o) noexcept {
        if (this != &o) {
            release(p_, n_);
            p_ = std::exchange(o.p_, nullptr);
            n_ = std::exchange(o.n_, 0);
        }
        return *this;
    }
    HugeArray(const HugeArray &) = delete;
    HugeArray &operator=(const HugeArray &) = delete;

    T *get() const { return p_; }
    std::size_t size() const { return n_; }
    void reset() { *this = HugeArray(); }

private:
    static T *allocate(std::size_t n) {
        if (n == 0) return nullptr;
        if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
        const std::size_t bytes = n * sizeof(T);
        return static_cast<T *>(bytes >= kHugeArrayMin ? huge_map(bytes) : ::operator new(bytes));
    }
    static void release(T *p, std::size_t n) noexcept {
        if (p == nullptr) return;
        if (n * sizeof(T) >= kHugeArrayMin)
            huge_unmap(p, n * sizeof(T));
        else
            ::operator delete(p);
    }

    T *p_ = nullptr;
    std::size_t n_ = 0;
};

}  // namespace sonde::core
