// Huge-page-backed blocks (see huge_pages.h).
#include "core/huge_pages.h"

#include <sys/mman.h>

#include <mutex>
#include <utility>
#include <vector>

namespace sonde::core {

namespace {

// The blocks kept while a HugeHold is alive (huge_pages.h). Made once and never destroyed, so
// that a block freed during the program's exit finds it.
struct Kept {
    std::mutex mu;
    std::vector<std::pair<std::size_t, void *>> blocks;  // rounded size, block; guarded by mu
    std::size_t bytes = 0;                               // their sum; guarded by mu
    unsigned holds = 0;                                  // HugeHolds alive; guarded by mu
};
Kept &kept() {
    static Kept *k = new Kept;
    return *k;
}

void release(void *p) noexcept { ::operator delete(p, std::align_val_t(kHugePage)); }

}  // namespace

void *huge_alloc(std::size_t bytes) {
    if (bytes < kHugeMin) return ::operator new(bytes);
    const std::size_t rounded = huge_room(bytes);
    if (rounded == SIZE_MAX) throw std::bad_alloc();  // wrapped around
    {
        Kept &k = kept();
        std::lock_guard<std::mutex> g(k.mu);
        for (std::size_t i = k.blocks.size(); i-- > 0;) {
            if (k.blocks[i].first != rounded) continue;
            void *p = k.blocks[i].second;
            k.blocks[i] = k.blocks.back();
            k.blocks.pop_back();
            k.bytes -= rounded;
            return p;
        }
    }
    void *p = ::operator new(rounded, std::align_val_t(kHugePage));
    madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure only costs speed
    return p;
}

void huge_free(void *p, std::size_t bytes) noexcept {
    if (p == nullptr) return;
    if (bytes < kHugeMin) {
        ::operator delete(p);
        return;
    }
    const std::size_t rounded = huge_room(bytes);
    {
        Kept &k = kept();
        std::lock_guard<std::mutex> g(k.mu);
        if (k.holds != 0 && k.bytes + rounded <= kHoldMax) {
            try {
                k.blocks.emplace_back(rounded, p);
                k.bytes += rounded;
                return;
            } catch (...) {
                // No room to note it: freed below.
            }
        }
    }
    release(p);
}

std::size_t huge_kept() noexcept {
    Kept &k = kept();
    std::lock_guard<std::mutex> g(k.mu);
    std::size_t n = 0;
    for (const auto &b : k.blocks) n += b.first;  // the blocks themselves, not the running sum
    return n;
}

HugeHold::HugeHold() {
    Kept &k = kept();
    std::lock_guard<std::mutex> g(k.mu);
    ++k.holds;
}

HugeHold::~HugeHold() {
    std::vector<std::pair<std::size_t, void *>> blocks;
    {
        Kept &k = kept();
        std::lock_guard<std::mutex> g(k.mu);
        if (--k.holds != 0) return;
        blocks.swap(k.blocks);
        k.bytes = 0;
    }
    for (const auto &b : blocks) release(b.second);
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
