// FlatSet: a set of 64-bit keys in one open-addressing table (linear probing, load at most one
// half), for the per-record set inserts of basic_counts (distinct lines, distinct instruction
// addresses). Cost of insert: a multiply, usually one probe, and a compare with the last key
// inserted (which short-cuts runs of the same key); growth doubles the table in one nearly
// sequential pass (see home()). Tables of 1 MiB or more are in huge pages (stackdist::HugeAlloc):
// a shard's set of a million lines grows through tables of 16 MiB and more, and on a VM whose
// 4 KiB fault costs ~10 us, faulting them page by page held two workers to 1.8x one
// (bench/scale case 4). One owner thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stackdist/huge_alloc.h"

namespace sonde::analysis {

class FlatSet {
public:
    // Adds `key`; true when it was not there.
    bool insert(uint64_t key) {
        if (key == last_ && has_last_) return false;
        last_ = key;
        has_last_ = true;
        if (key == kEmpty) {
            const bool fresh = !has_empty_key_;
            has_empty_key_ = true;
            return fresh;
        }
        if ((size_ + 1) * 2 > slots_.size()) grow();
        const size_t mask = slots_.size() - 1;
        for (size_t i = home(key);; i = (i + 1) & mask) {
            if (slots_[i] == key) return false;
            if (slots_[i] == kEmpty) {
                slots_[i] = key;
                ++size_;
                return true;
            }
        }
    }
    size_t size() const { return size_ + (has_empty_key_ ? 1 : 0); }
    // Empties the set and frees its table.
    void release() noexcept {
        Slots().swap(slots_);
        size_ = 0;
        shift_ = 64;
        has_empty_key_ = false;
        has_last_ = false;
    }
    // Calls f(key) for every key.
    template <typename F>
    void for_each(F f) const {
        for (uint64_t k : slots_)
            if (k != kEmpty) f(k);
        if (has_empty_key_) f(kEmpty);
    }
    // Adds keys[0..n), growing the table once for all of them.
    void insert_range(const uint64_t *keys, size_t n) {
        while ((size_ + n + 1) * 2 > slots_.size()) grow();
        for (size_t i = 0; i < n; ++i) insert(keys[i]);
    }
    void insert_all(const FlatSet &other) {
        // Room for both at once: one growth instead of one per doubling.
        while ((size_ + other.size_ + 1) * 2 > slots_.size()) grow();
        other.for_each([this](uint64_t k) { insert(k); });
    }

private:
    static constexpr uint64_t kEmpty = ~uint64_t(0);
    // A key's home slot: the top bits of its product with the golden ratio (Fibonacci hashing).
    // Taking the top bits keeps the table's order when it doubles: a key at home h comes home at
    // 2h or 2h + 1, so grow() moves the keys in the order it reads them and writes the new table
    // nearly front to back, where taking other bits scattered the writes over the whole new table
    // (for a shard's set of 8 MiB, a cache miss a key).
    size_t home(uint64_t k) const { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_); }
    void grow() {
        Slots old;
        old.swap(slots_);
        const size_t n = old.empty() ? 64 : old.size() * 2;
        slots_.assign(n, kEmpty);
        shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(n));  // n is a power of two
        size_ = 0;
        const size_t mask = n - 1;
        for (uint64_t k : old) {
            if (k == kEmpty) continue;
            size_t i = home(k);
            while (slots_[i] != kEmpty) i = (i + 1) & mask;
            slots_[i] = k;
            ++size_;
        }
    }

    using Slots = std::vector<uint64_t, stackdist::HugeAlloc<uint64_t>>;
    Slots slots_;
    size_t size_ = 0;
    unsigned shift_ = 64;  // 64 - log2(slots); home() is used only once the table has slots
    bool has_empty_key_ = false;
    uint64_t last_ = 0;
    bool has_last_ = false;
};

}  // namespace sonde::analysis
