// UnionSet: the union of the key sets that parallel workers build (basic_counts' distinct lines
// and instruction addresses over all shards), kept as kParts DenseSets split by a hash of the
// key's word (key >> 6), each behind its own mutex. A worker adds its set when it ends a piece
// of a shard: it first sorts the words into their parts without a lock, then ORs them in part
// by part, taking whichever part's lock is free first, so workers that end pieces at once work
// on different parts. The union is thus built on the workers while the run goes on, not by one
// thread at the end.
//
// Threads: add() from any thread at once; size(), for_each() and clear() only when no add() is
// running (the analyzer's run has returned; the caller orders them).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "analysis/dense_set.h"

namespace sonde::analysis {

class UnionSet {
public:
    static constexpr unsigned kParts = 64;

    // The part a word falls in: the top bits of a hash unrelated to DenseSet's own (the top bits
    // of a product with the golden ratio), so that each part's words spread over its table as
    // any words do.
    static unsigned part_of(uint64_t k) {
        k ^= k >> 33;
        k *= 0xFF51AFD7ED558CCDull;
        k ^= k >> 33;
        k *= 0xC4CEB9FE1A85EC53ull;
        k ^= k >> 33;
        return static_cast<unsigned>(k >> 58);  // kParts = 2^6
    }

    // Adds every key of `set`. Thread-safe; throws std::bad_alloc.
    void add(const DenseSet &set) {
        if (set.size() == 0) return;
        std::array<std::vector<Word>, kParts> buckets;
        const size_t guess = set.words() / kParts + set.words() / (4 * kParts) + 8;
        for (auto &b : buckets) b.reserve(guess);
        set.for_each_word([&](uint64_t w, uint64_t bits) { buckets[part_of(w)].push_back(Word{w, bits}); });
        std::array<bool, kParts> pending{};
        unsigned left = 0;
        for (unsigned p = 0; p < kParts; ++p) left += pending[p] = !buckets[p].empty();
        while (left != 0) {
            bool progressed = false;
            for (unsigned p = 0; p < kParts; ++p) {
                if (!pending[p]) continue;
                // Released however insert_words ends (it throws std::bad_alloc when the part cannot grow).
                const std::unique_lock<std::mutex> lock(mu_[p], std::try_to_lock);
                if (!lock.owns_lock()) continue;
                insert_words(parts_[p], buckets[p]);
                pending[p] = false;
                --left;
                progressed = true;
            }
            if (progressed || left == 0) continue;
            // Every part left is busy: wait for the first of them rather than spin.
            unsigned p = 0;
            while (!pending[p]) ++p;
            const std::lock_guard<std::mutex> lock(mu_[p]);
            insert_words(parts_[p], buckets[p]);
            pending[p] = false;
            --left;
        }
    }
    size_t size() const {
        size_t n = 0;
        for (const DenseSet &s : parts_) n += s.size();
        return n;
    }
    template <typename F>
    void for_each(F f) const {
        for (const DenseSet &s : parts_) s.for_each(f);
    }
    void clear() {
        for (DenseSet &s : parts_) s.release();
    }

private:
    struct Word {
        uint64_t word, bits;
    };
    static void insert_words(DenseSet &part, const std::vector<Word> &words) {
        part.reserve_words(words.size());
        for (const Word &w : words) part.insert_word(w.word, w.bits);
    }

    std::array<DenseSet, kParts> parts_;
    std::array<std::mutex, kParts> mu_;
};

}  // namespace sonde::analysis
