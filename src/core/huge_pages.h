// Large arrays backed by transparent huge pages (src/core): the calculator's tables and
// histograms (stackdist::HugeAlloc), and buffers that a parallel run writes soon after
// allocating them (decoded blocks' records, the reuse_distance tap's arena, gathered batches).
//
// Why: the first write to each 4 KiB page of fresh memory is a page fault. On bare metal that
// costs about a microsecond; on the paravirtualised VMs this project is built and tested on it
// was measured at about 10 us (72 MiB touched page by page: 180 ms; the same 72 MiB advised for
// huge pages: 4-13 ms once the VM had used the memory before, 44-69 ms the first time). Many
// threads faulting at once also queue on the process's memory map, and random probes into tens
// of megabytes miss the TLB less. A 2 MiB-aligned block advised with MADV_HUGEPAGE is faulted
// 2 MiB at a time where the kernel's THP setting is "always" or "madvise"; with "never" it
// behaves as plain memory.
//
// Blocks of kHugeMin bytes or more are rounded up to 2 MiB (at most doubling them), allocated
// 2 MiB-aligned by operator new and advised; smaller ones are plain operator new. Freeing needs
// the size. Thread-safe as operator new is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

namespace sonde::core {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kHugeMin = kHugePage / 2;

// A block of `bytes` (not initialised), as above. Throws std::bad_alloc.
void *huge_alloc(std::size_t bytes);
// The bytes a block of huge_alloc(bytes) holds: `bytes` rounded up to 2 MiB from kHugeMin on,
// else `bytes` (SIZE_MAX when the rounding wraps around).
constexpr std::size_t huge_room(std::size_t bytes) {
    if (bytes < kHugeMin) return bytes;
    const std::size_t rounded = (bytes + kHugePage - 1) & ~(kHugePage - 1);
    return rounded < bytes ? SIZE_MAX : rounded;
}
// Frees a block huge_alloc(bytes) returned (the same `bytes`). nullptr is ignored.
void huge_free(void *p, std::size_t bytes) noexcept;
// While a HugeHold is alive anywhere in the process, huge_free() keeps blocks of kHugeMin bytes
// or more (up to kHoldMax bytes in all; a block beyond that is freed) and huge_alloc() hands a
// kept block of the same rounded size out again, already faulted in, instead of asking for
// fresh memory: the first write to fresh memory is a page fault that the kernel pays by zeroing
// the page, and on a VM whose host backs guest memory lazily a fault can cost many times that.
// A parallel analyzer run over shards holds one (Analyzer::run_parallel): basic_counts'
// per-shard sets grow through the same sizes shard after shard, and a worker's next shard takes
// the tables the last one gave back. When the last hold ends, the kept blocks are freed; the
// most a hold adds to a run's peak memory is kHoldMax. Holds nest and may be taken on any
// thread.
class HugeHold {
public:
    HugeHold();
    ~HugeHold();
    HugeHold(const HugeHold &) = delete;
    HugeHold &operator=(const HugeHold &) = delete;
};
constexpr std::size_t kHoldMax = std::size_t{64} << 20;
// Bytes of the blocks kept now (0 when no hold is alive).
std::size_t huge_kept() noexcept;

// Advises the whole huge pages inside [p, p + bytes) of memory from another allocator (a
// std::string's reserved room, say) for transparent huge pages, before it is first written:
// a hint, ignored where it fails or covers no whole huge page.
void huge_advise(void *p, std::size_t bytes) noexcept;

// An owning array of `n` T in one huge_alloc block, not initialised (T must be trivially
// constructible and destructible). Move-only.
template <typename T>
class HugeArray {
    static_assert(std::is_trivially_destructible<T>::value, "HugeArray holds plain data");

public:
    HugeArray() = default;
    explicit HugeArray(std::size_t n) : p_(allocate(n)), n_(n) {}
    ~HugeArray() { huge_free(p_, n_ * sizeof(T)); }
    HugeArray(HugeArray &&o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
    HugeArray &operator=(HugeArray &&o) noexcept {
        if (this != &o) {
            huge_free(p_, n_ * sizeof(T));
            p_ = std::exchange(o.p_, nullptr);
            n_ = std::exchange(o.n_, 0);
        }
        return *this;
    }
    HugeArray(const HugeArray &) = delete;
    HugeArray &operator=(const HugeArray &) = delete;

    T *get() const { return p_; }
    std::size_t size() const { return n_; }
    // The elements the block holds: size() and the rest of its last huge page (a caller that
    // reuses the array for varying counts grows it only beyond this).
    std::size_t room() const { return n_ == 0 ? 0 : core::huge_room(n_ * sizeof(T)) / sizeof(T); }
    void reset() { *this = HugeArray(); }

private:
    static T *allocate(std::size_t n) {
        if (n == 0) return nullptr;
        if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
        return static_cast<T *>(huge_alloc(n * sizeof(T)));
    }

    T *p_ = nullptr;
    std::size_t n_ = 0;
};

}  // namespace sonde::core
