// DenseSet: a set of 64-bit keys for basic_counts' per-record inserts (distinct lines, distinct
// instruction addresses, thread ids), kept as 64-key words: key >> 6 names a word, key & 63 its
// bit, and each word in use is a 16-byte slot {word, bits} of one open-addressing table (linear
// probing, at most half full). Cost of insert: a compare with the last word touched (runs of
// nearby keys stay in one word) or a multiply and usually one probe, then a bit test.
//
// Why words, not keys: the keys a trace gives are dense. A program's lines sit side by side in
// its pages and its instructions a few bytes apart, so a word holds many keys, and a shard of
// 446 K distinct lines over 32 MiB takes 8 K words, a table of 256 KiB that stays in a core's L2,
// where a table of one slot a key (8 MiB) missed the L2 on nearly every insert and 16 workers'
// tables shared the L3 (docs/performance.md, "Distinct lines in words"). The worst case is a key
// alone in its word (a stride of 64 lines or more): 16 bytes a key where a key-per-slot table
// takes 8, so at most twice the memory. Uniting sets ORs their words (insert_all), a word at a
// time. Tables of 1 MiB or more are in huge pages (stackdist::HugeAlloc). One owner thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stackdist/huge_alloc.h"

namespace sonde::analysis {

class DenseSet {
public:
    // Adds `key`; true when it was not there.
    bool insert(uint64_t key) {
        const uint64_t bit = uint64_t(1) << (key & 63);
        uint64_t *bits =
            (key >> 6) == last_word_ && last_bits_ != nullptr ? last_bits_ : find_or_add(key >> 6);
        // Without a branch: whether a key is new is as good as random in a trace.
        const bool fresh = (*bits & bit) == 0;
        *bits |= bit;
        size_ += fresh;
        return fresh;
    }
    // Starts loading the slot that `key` would be looked up in first (a hint: nothing changes),
    // so that an insert a few records later finds it in the L1.
    void prefetch(uint64_t key) const {
        if (!slots_.empty()) __builtin_prefetch(&slots_[home(key >> 6)]);
    }
    // Adds the keys of `word` (keys word * 64 + b for each bit b of `bits`); returns how many
    // were not there.
    size_t insert_word(uint64_t word, uint64_t bits) {
        if (bits == 0) return 0;
        uint64_t *mine = find_or_add(word);
        const size_t fresh = static_cast<size_t>(__builtin_popcountll(bits & ~*mine));
        *mine |= bits;
        size_ += fresh;
        return fresh;
    }
    // Adds every key of `other`, a word at a time.
    void insert_all(const DenseSet &other) {
        reserve_words(other.words_);
        other.for_each_word([this](uint64_t w, uint64_t b) { insert_word(w, b); });
    }
    // Room for `more` words beyond those in use, in one growth.
    void reserve_words(size_t more) {
        size_t n = slots_.empty() ? 32 : slots_.size();
        while ((words_ + more + 1) * 2 > n) n *= 2;
        if (n != slots_.size()) grow(n);
    }
    size_t size() const { return size_; }
    // The words in use: the table holds twice as many slots or more.
    size_t words() const { return words_; }
    // Empties the set and frees its table.
    void release() noexcept {
        Slots().swap(slots_);
        size_ = 0;
        words_ = 0;
        shift_ = 64;
        last_bits_ = nullptr;
    }
    // Calls f(key) for every key, in no particular order.
    template <typename F>
    void for_each(F f) const {
        for_each_word([&f](uint64_t w, uint64_t bits) {
            for (; bits != 0; bits &= bits - 1) f((w << 6) | static_cast<uint64_t>(__builtin_ctzll(bits)));
        });
    }
    // Calls f(word, bits) for every word in use (bits is never 0).
    template <typename F>
    void for_each_word(F f) const {
        for (const Slot &s : slots_)
            if (s.word != kEmpty) f(s.word, s.bits);
    }

private:
    // A word is key >> 6 < 2^58, so an all-ones word marks an empty slot.
    static constexpr uint64_t kEmpty = ~uint64_t(0);
    struct Slot {
        uint64_t word;
        uint64_t bits;
    };
    // A word's home slot: the top bits of its product with the golden ratio (Fibonacci hashing),
    // which keeps the table's order when it doubles (a word at home h comes home at 2h or 2h + 1),
    // so grow() writes the new table nearly front to back.
    size_t home(uint64_t w) const { return static_cast<size_t>((w * 0x9E3779B97F4A7C15ull) >> shift_); }

    // The bits of `word`, its slot added (bits 0) when new; the word is the last one touched.
    uint64_t *find_or_add(uint64_t word) {
        if ((words_ + 1) * 2 > slots_.size()) grow(slots_.empty() ? 32 : slots_.size() * 2);
        const size_t mask = slots_.size() - 1;
        size_t i = home(word);
        while (slots_[i].word != word && slots_[i].word != kEmpty) i = (i + 1) & mask;
        Slot &s = slots_[i];
        if (s.word == kEmpty) {
            s.word = word;
            s.bits = 0;
            ++words_;
        }
        last_word_ = word;
        last_bits_ = &s.bits;
        return &s.bits;
    }
    void grow(size_t n) {  // n: a power of two, at least 2 * (words_ + 1)
        Slots old;
        old.swap(slots_);
        slots_.assign(n, Slot{kEmpty, 0});
        shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(n));
        const size_t mask = n - 1;
        for (const Slot &s : old) {
            if (s.word == kEmpty) continue;
            size_t i = home(s.word);
            while (slots_[i].word != kEmpty) i = (i + 1) & mask;
            slots_[i] = s;
        }
        last_bits_ = nullptr;  // the slots moved
    }

    using Slots = std::vector<Slot, stackdist::HugeAlloc<Slot>>;
    Slots slots_;
    size_t size_ = 0;      // keys
    size_t words_ = 0;     // slots in use
    unsigned shift_ = 64;  // 64 - log2(slots); home() is used only once the table has slots
    uint64_t last_word_ = 0;
    uint64_t *last_bits_ = nullptr;  // the slot of last_word_, or nullptr
};

}  // namespace sonde::analysis
