// analysis/dense_set.h and analysis/union_set.h (internal headers): basic_counts' key sets. A
// DenseSet must hold exactly the keys a std::set would, for dense keys (many to a 64-key word),
// sparse ones (one to a word), the ends of the key space (0, 2^64 - 1) and runs of one word
// across the table's growth (the last word's slot moves when the table doubles); insert_word,
// insert_all, reserve_words and release must agree with it too. A UnionSet fed by several
// threads at once must hold the union of their sets (this test also runs under
// ThreadSanitizer, suite 'stress').
#include <algorithm>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "analysis/dense_set.h"
#include "analysis/union_set.h"
#include "check.hpp"

using sonde::analysis::DenseSet;
using sonde::analysis::UnionSet;
using sonde_test::check;

namespace {

uint64_t next(uint64_t &x) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

std::vector<uint64_t> keys_of(const DenseSet &s) {
    std::vector<uint64_t> k;
    s.for_each([&](uint64_t v) { k.push_back(v); });
    std::sort(k.begin(), k.end());
    return k;
}

size_t words_of(const std::set<uint64_t> &keys) {
    std::set<uint64_t> w;
    for (uint64_t k : keys) w.insert(k >> 6);
    return w.size();
}

// Inserts `keys` one by one into a DenseSet and a std::set; every answer, the size, the words and
// the keys must agree.
void same_as_std_set(const char *what, const std::vector<uint64_t> &keys) {
    DenseSet d;
    std::set<uint64_t> ref;
    unsigned wrong = 0;
    for (uint64_t k : keys) wrong += d.insert(k) != ref.insert(k).second;
    check(wrong == 0, what, wrong);
    check(d.size() == ref.size(), what, d.size());
    check(d.words() == words_of(ref), what, d.words());
    check(keys_of(d) == std::vector<uint64_t>(ref.begin(), ref.end()), what, 0);
}

void test_inserts() {
    uint64_t x = 0x9E3779B97F4A7C15ull;
    std::vector<uint64_t> dense, sparse, ends, runs;
    for (int i = 0; i < 200000; ++i) dense.push_back(next(x) % 100000);         // ~16 keys a word
    for (int i = 0; i < 100000; ++i) sparse.push_back((next(x) % 50000) << 6);  // one key a word
    for (int i = 0; i < 100000; ++i) sparse.push_back(next(x));                 // anywhere
    for (uint64_t k :
         {uint64_t{0}, ~uint64_t{0}, ~uint64_t{0} - 63, uint64_t{63}, uint64_t{64}, ~uint64_t{0}})
        ends.push_back(k);
    // Runs within one word broken by a new word now and then, so that the table grows while a
    // run's word is the last one touched.
    for (uint64_t w = 0; w < 20000; ++w)
        for (uint64_t b = 0; b < 64; b += 1 + next(x) % 9) {
            runs.push_back((w * 977) << 6 | b);
            runs.push_back((w * 977) << 6 | b);
        }
    same_as_std_set("dense keys", dense);
    same_as_std_set("sparse keys", sparse);
    same_as_std_set("the ends of the key space", ends);
    same_as_std_set("runs within a word across growth", runs);
    same_as_std_set("no keys", {});
}

void test_words_and_unions() {
    DenseSet d;
    check(d.insert_word(5, 0) == 0 && d.size() == 0 && d.words() == 0, "an empty word adds nothing",
          d.size());
    check(d.insert_word(5, 0xF0) == 4, "a word's new bits are counted", d.size());
    check(d.insert_word(5, 0xFF) == 4, "only the bits not there are new", d.size());
    check(d.size() == 8 && d.words() == 1, "one word of 8 keys", d.size());
    check(!d.insert(5 * 64 + 7) && d.insert(5 * 64 + 8), "insert sees insert_word's bits", d.size());

    uint64_t x = 12345;
    DenseSet a, b, both;
    std::set<uint64_t> ref;
    std::vector<uint64_t> range;
    for (int i = 0; i < 50000; ++i) {
        const uint64_t ka = next(x) % 300000, kb = next(x) % 300000 + 150000;
        a.insert(ka);
        b.insert(kb);
        range.push_back(ka);
        range.push_back(kb);
        ref.insert(ka);
        ref.insert(kb);
    }
    both.insert_all(a);
    both.insert_all(b);
    check(keys_of(both) == std::vector<uint64_t>(ref.begin(), ref.end()), "insert_all: the union",
          both.size());
    check(both.size() == ref.size(), "insert_all: the union's size", both.size());
    // reserve_words grows the table without an insert, and the next insert may be into the word
    // touched last: that word's slot has moved.
    DenseSet g;
    g.insert(range[0] ^ 1);
    g.reserve_words(range.size());
    for (uint64_t k : range) g.insert(k);
    ref.insert(range[0] ^ 1);
    check(keys_of(g) == std::vector<uint64_t>(ref.begin(), ref.end()), "inserts after reserve_words",
          g.size());

    both.release();
    check(both.size() == 0 && both.words() == 0 && keys_of(both).empty(), "release empties", both.size());
    check(both.insert(42) && !both.insert(42) && both.size() == 1, "a released set is used again",
          both.size());
}

// Four threads add overlapping sets to one UnionSet at once, each several times.
void test_union_set() {
    constexpr int kThreads = 4;
    std::vector<DenseSet> sets(kThreads);
    std::set<uint64_t> ref;
    uint64_t x = 777;
    for (int t = 0; t < kThreads; ++t)
        for (int i = 0; i < 40000; ++i) {
            const uint64_t k = (next(x) % 200000) + uint64_t(t) * 50000;
            sets[t].insert(k);
            ref.insert(k);
        }
    UnionSet u;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int rep = 0; rep < 3; ++rep) u.add(sets[t]);
        });
    for (std::thread &t : threads) t.join();
    check(u.size() == ref.size(), "the union of sets added at once", u.size());
    std::vector<uint64_t> keys;
    u.for_each([&](uint64_t k) { keys.push_back(k); });
    std::sort(keys.begin(), keys.end());
    check(keys == std::vector<uint64_t>(ref.begin(), ref.end()), "the union's keys", keys.size());
    u.clear();
    check(u.size() == 0, "clear empties the union", u.size());
}

}  // namespace

int main() {
    test_inserts();
    test_words_and_unions();
    test_union_set();
    return sonde_test::finish("analysis_dense_set");
}
