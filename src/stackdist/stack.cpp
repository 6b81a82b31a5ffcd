// Exact LRU stack-distance engine of the stackdist concept: hash table, time bitmap, Fenwick
// tree, compaction and the verify-mode naive stack. See stack.h for the costs.
#include "stackdist/stack.h"

#include <algorithm>
#include <memory>
#include <type_traits>

#include "stackdist/histogram.h"
#include "stackdist/pool.h"

namespace sonde::stackdist {

namespace {

uint64_t pow2_at_least(uint64_t n, uint64_t floor) {
    uint64_t p = floor;
    while (p < n) p <<= 1;
    return p;
}

// Population count. kHw: the instruction (callers are compiled for a CPU that has it);
// otherwise the instruction only if the whole build targets it, else a branch-free SWAR count
// (libgcc's generic __popcountdi2 is a table-driven call, several times slower).
template <bool kHw>
__attribute__((always_inline)) inline uint64_t popcount(uint64_t x) {
#if !defined(__POPCNT__)
    if constexpr (!kHw) {
        x = x - ((x >> 1) & 0x5555555555555555ull);
        x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
        return (x * 0x0101010101010101ull) >> 56;
    }
#endif
    return static_cast<uint64_t>(__builtin_popcountll(x));
}

// x86 builds for the baseline ISA lack POPCNT, which the rank queries use all the time: the
// batch loops are compiled twice, and with_popcount() runs the POPCNT copy when the CPU has
// it. f is a lambda marked SONDE_STACK_LAMBDA, called with std::true_type or std::false_type,
// so that it and the hot helpers it calls are compiled inside the chosen copy.
#if (defined(__x86_64__) || defined(__i386__)) && !defined(__POPCNT__)
template <typename F>
__attribute__((target("popcnt"))) void run_popcnt(F &f) {
    f(std::true_type{});
}
template <typename F>
void run_generic(F &f) {
    f(std::false_type{});
}
bool cpu_has_popcnt() {
    static const bool have = __builtin_cpu_supports("popcnt");
    return have;
}
template <typename F>
void with_popcount(F &&f) {
    if (cpu_has_popcnt())
        run_popcnt(f);
    else
        run_generic(f);
}
#else
template <typename F>
void with_popcount(F &&f) {
    f(std::false_type{});  // popcount<false>: the instruction if the build targets it
}
#endif

// Bits 0..b of a word.
inline uint64_t mask_le(uint64_t b) { return b == 63 ? ~0ull : ((2ull << b) - 1); }

}  // namespace

// The per-access helpers are inlined into the batch loop (they are only called from here).
#define SONDE_STACK_HOT __attribute__((always_inline)) inline
#define SONDE_STACK_LAMBDA __attribute__((always_inline))

Stack::Stack(uint64_t initial_capacity, bool verify) : verify_(verify) { reset(initial_capacity); }

void Stack::reset(uint64_t initial_capacity) {
    const uint64_t cap = std::max<uint64_t>(initial_capacity, 64);
    // assign() refills the arrays in place when their capacity suffices.
    table_.assign(pow2_at_least(cap * 4 / 3 + 1, 16), Slot{kEmpty, 0});
    mask_ = table_.size() - 1;
    live_ = 0;
    has_max_key_ = false;
    max_key_val_ = 0;
    slots_ = pow2_at_least(cap * 4, 64 * kBlockWords);
    words_.assign(slots_ / 64, 0);
    fen_.assign(words_.size() / kBlockWords + 1, 0);
    now_ = 0;
    verify_ok_ = true;
    calls_ = 0;
    naive_.clear();
}

std::size_t Stack::bytes() const {
    return table_.capacity() * sizeof(Slot) + words_.capacity() * sizeof(uint64_t) +
           (fen_.capacity() + compact_base_.capacity()) * sizeof(uint32_t) +
           (merge_t_.size() + merge_d_.size()) * sizeof(uint64_t) + merge_fresh_.size();
}

Stack::Slot *Stack::find(uint64_t addr) {
    uint64_t i = hash(addr) & mask_;
    for (;;) {
        Slot &s = table_[i];
        if (s.key == addr) return &s;
        if (s.key == kEmpty) return nullptr;
        i = (i + 1) & mask_;
    }
}

SONDE_STACK_HOT Stack::Slot *Stack::find_or_insert(uint64_t addr, bool *found) {
    if ((live_ + 1) * 4 > table_.size() * 3) grow_table();
    uint64_t i = hash(addr) & mask_;
    for (;;) {
        Slot &s = table_[i];
        if (s.key == addr) {
            *found = true;
            return &s;
        }
        if (s.key == kEmpty) {
            s.key = addr;
            s.val = 0;
            *found = false;
            return &s;
        }
        i = (i + 1) & mask_;
    }
}

void Stack::erase_slot(Slot *s) {
    // Backward-shift deletion keeps every probe sequence unbroken without tombstones.
    uint64_t i = static_cast<uint64_t>(s - table_.data());
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & mask_;
        if (table_[j].key == kEmpty) break;
        const uint64_t home = hash(table_[j].key) & mask_;
        // Move j into the hole at i unless j's home lies cyclically in (i, j].
        const bool home_in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!home_in_range) {
            table_[i] = table_[j];
            i = j;
        }
    }
    table_[i].key = kEmpty;
}

void Stack::grow_table() { rehash(table_.size() * 2, nullptr, 1); }

void Stack::rehash(uint64_t size, Pool *pool, unsigned tasks) {
    std::vector<Slot, HugeAlloc<Slot>> fresh;
    fresh.resize(size);  // Slot() writes nothing: the fill below is the first touch
    Slot *const out = fresh.data();
    auto fill = [&](unsigned i) {
        std::fill(out + size * i / tasks, out + size * (i + 1) / tasks, Slot{kEmpty, 0});
    };
    if (pool != nullptr && tasks > 1) {
        pool->run(tasks, fill);
    } else {
        tasks = 1;
        fill(0);
    }
    const uint64_t mask = size - 1;
    for (const Slot &s : table_) {
        if (s.key == kEmpty) continue;
        uint64_t i = hash(s.key) & mask;
        while (out[i].key != kEmpty) i = (i + 1) & mask;
        out[i] = s;
    }
    table_.swap(fresh);
    mask_ = mask;
}

void Stack::reserve_lines(uint64_t lines, Pool *pool, unsigned tasks) {
    // find_or_insert grows when (live + 1) * 4 > slots * 3: the table that holds `lines` without
    // growing has at least (lines + 1) * 4 / 3 slots.
    uint64_t size = table_.size();
    while ((lines + 1) * 4 > size * 3) size *= 2;
    if (size != table_.size()) rehash(size, pool, tasks);
}

template <bool kHw>
SONDE_STACK_HOT uint64_t Stack::rank_le(uint64_t t) const {
    const uint64_t w = t >> 6;
    const uint64_t b = w / kBlockWords;
    uint64_t r = popcount<kHw>(words_[w] & mask_le(t & 63));
    for (uint64_t i = b * kBlockWords; i < w; ++i) r += popcount<kHw>(words_[i]);
    for (uint64_t i = b; i > 0; i &= i - 1) r += fen_[i];
    return r;
}

template <bool kHw>
SONDE_STACK_HOT uint64_t Stack::distance_of(uint64_t t) const {
    // Live times in (t, now_). A recent t is answered by scanning a few words.
    const uint64_t w = t >> 6;
    const uint64_t last = (now_ - 1) >> 6;
    if (last - w <= 8) {
        uint64_t d = popcount<kHw>(words_[w] & ~mask_le(t & 63));
        for (uint64_t i = w + 1; i <= last; ++i) d += popcount<kHw>(words_[i]);
        return d;
    }
    return live_ - rank_le<kHw>(t);
}

SONDE_STACK_HOT void Stack::fen_add(uint64_t word, int64_t delta) {
    const uint64_t n = fen_.size() - 1;
    for (uint64_t i = word / kBlockWords + 1; i <= n; i += i & (~i + 1))
        fen_[i] = static_cast<uint32_t>(static_cast<int64_t>(fen_[i]) + delta);
}

SONDE_STACK_HOT void Stack::clear_time(uint64_t t) {
    words_[t >> 6] &= ~(1ull << (t & 63));
    fen_add(t >> 6, -1);
}

SONDE_STACK_HOT void Stack::set_now() {
    words_[now_ >> 6] |= 1ull << (now_ & 63);
    fen_add(now_ >> 6, +1);
    ++now_;
}

SONDE_STACK_HOT void Stack::move_time(uint64_t from) {
    const uint64_t wf = from >> 6, wn = now_ >> 6;
    words_[wf] &= ~(1ull << (from & 63));
    words_[wn] |= 1ull << (now_ & 63);
    if (wf / kBlockWords != wn / kBlockWords) {
        fen_add(wf, -1);
        fen_add(wn, +1);
    }
    ++now_;
}

template <bool kHw>
SONDE_STACK_HOT void Stack::rebuild_fenwick() {
    const uint64_t n = words_.size() / kBlockWords;
    fen_.assign(n + 1, 0);
    for (uint64_t w = 0; w < words_.size(); ++w)
        fen_[w / kBlockWords + 1] += static_cast<uint32_t>(popcount<kHw>(words_[w]));
    for (uint64_t i = 1; i <= n; ++i) {
        const uint64_t parent = i + (i & (~i + 1));
        if (parent <= n) fen_[parent] += fen_[i];
    }
}

template <bool kHw>
SONDE_STACK_HOT void Stack::compact_impl(uint64_t room) {
    // Renumber live times to 0..live-1 keeping their order; the slot range is at least four
    // times the live lines (and leaves `room` free slots), so compaction runs at most once every
    // 3/4 * slots accesses.
    const uint64_t n = words_.size();
    std::vector<uint32_t> &base = compact_base_;
    base.resize(n);
    uint64_t acc = 0;
    for (uint64_t i = 0; i < n; ++i) {
        base[i] = static_cast<uint32_t>(acc);
        acc += popcount<kHw>(words_[i]);
    }
    auto renumber = [&](uint64_t val) SONDE_STACK_LAMBDA {
        const uint64_t t = val >> 1;
        const uint64_t w = t >> 6;
        const uint64_t below = (t & 63) ? popcount<kHw>(words_[w] & ((1ull << (t & 63)) - 1)) : 0;
        return ((base[w] + below) << 1) | (val & 1);
    };
    for (Slot &s : table_)
        if (s.key != kEmpty) s.val = renumber(s.val);
    if (has_max_key_) max_key_val_ = renumber(max_key_val_);

    const uint64_t want = pow2_at_least(std::max(live_ * 4, live_ + room) + 64, 64 * kBlockWords);
    if (want > slots_) slots_ = want;
    words_.assign(slots_ / 64, 0);
    for (uint64_t i = 0; i < live_ / 64; ++i) words_[i] = ~0ull;
    if (live_ & 63) words_[live_ / 64] = (1ull << (live_ & 63)) - 1;
    rebuild_fenwick<kHw>();
    now_ = live_;
}

void Stack::compact(uint64_t room) {
    with_popcount([&](auto hw) SONDE_STACK_LAMBDA { compact_impl<decltype(hw)::value>(room); });
}

template <bool kHw>
SONDE_STACK_HOT uint64_t Stack::access_hot(uint64_t addr) {
    if (verify_) return calc_and_update(addr, true, nullptr);
    if (now_ == slots_) compact();
    uint64_t *val;
    bool found;
    if (addr == kEmpty) {
        found = has_max_key_;
        has_max_key_ = true;
        val = &max_key_val_;
    } else {
        val = &find_or_insert(addr, &found)->val;
    }
    uint64_t d;
    if (found) {
        const uint64_t t = *val >> 1;
        d = distance_of<kHw>(t);
        move_time(t);
    } else {
        d = kInfinity;
        ++live_;
        set_now();
    }
    *val = (now_ - 1) << 1;
    return d;
}

uint64_t Stack::access(uint64_t addr) { return access_hot(addr); }

// The batch loop. An access to the line just accessed is distance 0 and leaves the stack as it
// is (the line is already the most recent and unmarked), so it skips the table. Hash slots are
// prefetched a few accesses ahead once the table outgrows the L2 cache. `firsts` null: count
// every access; otherwise first accesses are not counted but their offsets listed.
template <bool kHw>
SONDE_STACK_HOT void Stack::batch_loop(const uint64_t *lines, const uint8_t *is_write, std::size_t n,
                                       Histogram &h, std::vector<uint32_t> *firsts) {
    constexpr std::size_t kAhead = 12;
    constexpr uint64_t kPrefetchSlots = (256u << 10) / sizeof(Slot);
    for (std::size_t i = 0; i < n; ++i) {
        if (mask_ >= kPrefetchSlots && i + kAhead < n) prefetch(lines[i + kAhead]);
        const uint64_t a = lines[i];
        const unsigned type = is_write != nullptr && is_write[i] != 0 ? 1u : 0u;
        if (i > 0 && a == lines[i - 1]) {
            h.add_unit(0, type);
            continue;
        }
        const uint64_t d = access_hot<kHw>(a);
        if (firsts != nullptr && d == kInfinity)
            firsts->push_back(static_cast<uint32_t>(i));
        else
            h.add_unit(d, type);
    }
}

void Stack::access_many(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h) {
    if (verify_) {
        for (std::size_t i = 0; i < n; ++i)
            h.add_unit(access(lines[i]), is_write != nullptr && is_write[i] != 0 ? 1u : 0u);
        return;
    }
    with_popcount([&](auto hw) SONDE_STACK_LAMBDA {
        if (is_write == nullptr)
            batch_loop<decltype(hw)::value>(lines, nullptr, n, h, nullptr);
        else
            batch_loop<decltype(hw)::value>(lines, is_write, n, h, nullptr);
    });
}

void Stack::access_chunk(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h,
                         std::vector<uint32_t> &firsts) {
    with_popcount([&](auto hw) SONDE_STACK_LAMBDA {
        if (is_write == nullptr)
            batch_loop<decltype(hw)::value>(lines, nullptr, n, h, &firsts);
        else
            batch_loop<decltype(hw)::value>(lines, is_write, n, h, &firsts);
    });
}

void Stack::chunk_ranks(const uint64_t *lines, const uint32_t *firsts, std::size_t m, uint32_t *rank) {
    compact();  // live times become 0..live-1: a line's time is its recency rank
    constexpr std::size_t kAhead = 12;
    for (std::size_t j = 0; j < m; ++j) {
        if (j + kAhead < m) prefetch(lines[firsts[j + kAhead]]);
        const uint64_t a = lines[firsts[j]];
        const uint64_t val = a == kEmpty ? max_key_val_ : find(a)->val;
        rank[j] = static_cast<uint32_t>(val >> 1);
    }
}

uint64_t Stack::merge_reserve(uint64_t m) {
    if (now_ + m > slots_) compact(m);
    return now_;
}

void Stack::merge_probe(const uint64_t *lines, const uint32_t *firsts, const uint32_t *rank, std::size_t from,
                        std::size_t to, uint64_t base, uint64_t *old) {
    // Reads keys and writes the values of distinct lines only: concurrent calls on disjoint
    // ranges touch disjoint memory. Line kEmpty (outside the table) is left to merge_resolve.
    constexpr std::size_t kAhead = 12;
    for (std::size_t j = from; j < to; ++j) {
        if (j + kAhead < to) prefetch(lines[firsts[j + kAhead]]);
        const uint64_t a = lines[firsts[j]];
        if (a == kEmpty) {
            old[j] = kMaxKeyTime;
            continue;
        }
        Slot *s = find(a);
        if (s == nullptr) {
            old[j] = kInfinity;
            continue;
        }
        old[j] = s->val >> 1;
        s->val = (base + rank[j]) << 1;
    }
}

void Stack::merge_resolve(const uint64_t *lines, const uint8_t *is_write, const uint32_t *firsts,
                          const uint32_t *rank, uint64_t *old, std::size_t m, uint64_t base, Histogram *h) {
    // First access j of the chunk: the j earlier first accesses are all more recent, and so is
    // every line here whose old time is later, unless the chunk has re-touched it already (its
    // old time is cleared after its query). Until the new times are set, live_ counts the set
    // bits, so that distance_of() counts exactly those lines; now_ stays at base. The
    // distances replace the old times and go to the histogram in a second pass, where its
    // scattered counters can be loaded several at a time.
    const uint64_t lines_before = live_;
    std::vector<std::size_t> fresh;  // lines absent before (and line kEmpty): set up below
    with_popcount([&](auto hw) SONDE_STACK_LAMBDA {
        for (std::size_t j = 0; j < m; ++j) {
            uint64_t t = old[j];
            if (t == kMaxKeyTime) {
                fresh.push_back(j);
                t = has_max_key_ ? max_key_val_ >> 1 : kInfinity;
            } else if (t == kInfinity) {
                fresh.push_back(j);
            }
            if (t == kInfinity) {
                old[j] = kInfinity;
                continue;
            }
            old[j] = j + distance_of<decltype(hw)::value>(t);
            clear_time(t);
            --live_;
        }
    });
    constexpr std::size_t kAhead = 16;
    for (std::size_t j = 0; h != nullptr && j < m; ++j) {
        if (j + kAhead < m) h->prefetch(old[j + kAhead]);
        h->add_unit(old[j], is_write != nullptr && is_write[firsts[j]] != 0 ? 1u : 0u);
    }
    live_ = lines_before;
    merge_insert(lines, firsts, rank, fresh, m, base);
}

std::size_t Stack::insert_fresh_parallel(const uint64_t *lines, const uint32_t *firsts, const uint32_t *rank,
                                         const std::vector<std::size_t> &fresh, uint64_t base, Pool &pool,
                                         unsigned tasks) {
    reserve_lines(live_ + fresh.size(), &pool, tasks);
    const std::size_t n = fresh.size();
    std::vector<uint64_t> added(tasks, 0);
    std::vector<std::size_t> empty_at(tasks, SIZE_MAX);  // where a task met line kEmpty
    Slot *const table = table_.data();
    const uint64_t mask = mask_;
    pool.run(tasks, [&](unsigned i) {
        uint64_t count = 0;
        for (std::size_t f = n * i / tasks, end = n * (i + 1) / tasks; f < end; ++f) {
            const std::size_t j = fresh[f];
            const uint64_t a = lines[firsts[j]];
            if (a == kEmpty) {  // lives outside the table: merge_insert's
                empty_at[i] = j;
                continue;
            }
            for (uint64_t s = hash(a) & mask;; s = (s + 1) & mask) {
                uint64_t key = __atomic_load_n(&table[s].key, __ATOMIC_RELAXED);
                if (key == kEmpty && __atomic_compare_exchange_n(&table[s].key, &key, a, false,
                                                                 __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
                    table[s].val = (base + rank[j]) << 1;  // the slot is this task's from here on
                    ++count;
                    break;
                }
            }
        }
        added[i] = count;
    });
    for (uint64_t c : added) live_ += c;
    for (std::size_t j : empty_at)
        if (j != SIZE_MAX) return j;
    return SIZE_MAX;
}

void Stack::merge_insert(const uint64_t *lines, const uint32_t *firsts, const uint32_t *rank,
                         const std::vector<std::size_t> &fresh, std::size_t m, uint64_t base, Pool *pool,
                         unsigned tasks) {
    auto set_max_key = [&](std::size_t j) {
        if (!has_max_key_) ++live_;
        has_max_key_ = true;
        max_key_val_ = (base + rank[j]) << 1;
    };
    if (pool != nullptr && tasks > 1 && fresh.size() >= kMinParallelMerge) {
        const std::size_t j = insert_fresh_parallel(lines, firsts, rank, fresh, base, *pool, tasks);
        if (j != SIZE_MAX) set_max_key(j);
    } else {
        for (std::size_t j : fresh) {
            const uint64_t a = lines[firsts[j]];
            if (a == kEmpty) {
                set_max_key(j);
                continue;
            }
            bool found;
            find_or_insert(a, &found)->val = (base + rank[j]) << 1;
            ++live_;
        }
    }
    // Times base .. base + m - 1 are now all live: fill their words and block counts.
    const uint64_t end = base + m;
    for (uint64_t t = base; t < end;) {
        const uint64_t w = t >> 6;
        const uint64_t hi = std::min<uint64_t>(end, (w + 1) << 6);
        const uint64_t bits = hi - t;
        words_[w] |= (bits == 64 ? ~0ull : ((1ull << bits) - 1)) << (t & 63);
        t = hi;
    }
    for (uint64_t b = base / (64 * kBlockWords); b * 64 * kBlockWords < end; ++b) {
        const uint64_t lo = std::max(base, b * 64 * kBlockWords);
        const uint64_t hi = std::min(end, (b + 1) * 64 * kBlockWords);
        fen_add(b * kBlockWords, static_cast<int64_t>(hi - lo));
    }
    now_ = end;
}

void Stack::lookup_parallel(const uint64_t *lines, const uint32_t *firsts, const uint32_t *rank,
                            std::size_t m, uint64_t base, Pool &pool, unsigned k, uint64_t *t, uint64_t *d0,
                            uint8_t *fresh_at) {
    auto from = [&](unsigned i) { return m * i / k; };
    pool.run(k, [&](unsigned i) {
        with_popcount([&](auto hw) SONDE_STACK_LAMBDA {
            constexpr std::size_t kAhead = 12;
            const std::size_t lo = from(i), hi = from(i + 1);
            for (std::size_t j = lo; j < hi; ++j) {
                if (j + kAhead < hi) prefetch(lines[firsts[j + kAhead]]);
                const uint64_t a = lines[firsts[j]];
                uint64_t tj = kInfinity;
                bool here = false;
                if (a == kEmpty) {
                    if (has_max_key_) tj = max_key_val_ >> 1;
                } else if (Slot *sl = find(a)) {
                    tj = sl->val >> 1;
                    here = true;
                    if (rank != nullptr) sl->val = (base + rank[j]) << 1;
                }
                if (fresh_at != nullptr) fresh_at[j] = here ? 0 : 1;
                t[j] = tj;
                d0[j] = tj == kInfinity ? 0 : distance_of<decltype(hw)::value>(tj);
            }
        });
    });
}

void Stack::merge_parallel(const uint64_t *lines, const uint8_t *is_write, const uint32_t *firsts,
                           const uint32_t *rank, std::size_t m, uint64_t base, Pool *pool, unsigned tasks,
                           Histogram *h, std::vector<uint64_t> *distances) {
    if (pool == nullptr || tasks < 2 || m < kMinParallelMerge) {
        // merge_resolve leaves the distances where merge_probe put the old times.
        std::vector<uint64_t> local;
        std::vector<uint64_t> &old = distances != nullptr ? *distances : local;
        old.resize(m);
        merge_probe(lines, firsts, rank, 0, m, base, old.data());
        merge_resolve(lines, is_write, firsts, rank, old.data(), m, base, h);
        return;
    }
    // The probe and the rank queries on every task, the distances by resolve_parallel (which
    // clears the old times); this thread then counts the distances into h in order, inserts the
    // new lines and sets the new times.
    const unsigned k = tasks;
    merge_room(m, true);
    uint64_t *const t = merge_t_.get();
    uint64_t *const d = merge_d_.get();            // each distance replaces its D (resolve_parallel)
    uint8_t *const fresh_at = merge_fresh_.get();  // 1: line absent here, or line kEmpty
    lookup_parallel(lines, firsts, rank, m, base, *pool, k, t, d, fresh_at);
    resolve_parallel(t, d, d, m, *pool, k, true);
    count_distances(d, m, is_write, firsts, h);
    std::size_t new_lines = 0;
    for (std::size_t j = 0; j < m; ++j) new_lines += fresh_at[j];
    std::vector<std::size_t> fresh;
    fresh.reserve(new_lines);
    for (std::size_t j = 0; j < m; ++j)
        if (fresh_at[j] != 0) fresh.push_back(j);
    merge_insert(lines, firsts, rank, fresh, m, base, pool, k);
    if (distances != nullptr) distances->assign(d, d + m);
}

void Stack::merge_last_parallel(const uint64_t *lines, const uint8_t *is_write, const uint32_t *firsts,
                                std::size_t m, Pool *pool, unsigned tasks, Histogram *h,
                                std::vector<uint64_t> *distances) {
    if (pool == nullptr || tasks < 2 || m < kMinParallelMerge) {
        merge_last(lines, is_write, firsts, m, h, distances);
        return;
    }
    // As merge_parallel without moving, clearing or inserting anything: the stack is only read.
    const unsigned k = tasks;
    merge_room(m, false);
    uint64_t *const t = merge_t_.get();
    uint64_t *const d = merge_d_.get();
    lookup_parallel(lines, firsts, nullptr, m, 0, *pool, k, t, d, nullptr);
    resolve_parallel(t, d, d, m, *pool, k, false);
    count_distances(d, m, is_write, firsts, h);
    if (distances != nullptr) distances->assign(d, d + m);
}

void Stack::merge_room(std::size_t m, bool fresh) {
    // Grown by a quarter beyond the need, so that batches of about the same size reuse them.
    const std::size_t want = m + m / 4;
    if (merge_t_.size() < m) {
        merge_t_.reset();
        merge_d_.reset();
        merge_t_ = core::HugeArray<uint64_t>(want);
        merge_d_ = core::HugeArray<uint64_t>(want);
    }
    if (fresh && merge_fresh_.size() < m) {
        merge_fresh_.reset();
        merge_fresh_ = core::HugeArray<uint8_t>(want);
    }
}

void Stack::count_distances(const uint64_t *d, std::size_t m, const uint8_t *is_write, const uint32_t *firsts,
                            Histogram *h) {
    constexpr std::size_t kAhead = 16;
    for (std::size_t j = 0; h != nullptr && j < m; ++j) {
        if (j + kAhead < m) h->prefetch(d[j + kAhead]);
        h->add_unit(d[j], is_write != nullptr && is_write[firsts[j]] != 0 ? 1u : 0u);
    }
}

void Stack::resolve_parallel(const uint64_t *t, const uint64_t *d0, uint64_t *d, std::size_t m, Pool &pool,
                             unsigned tasks, bool clear) {
    // merge_resolve's distance of first access j is j plus the lines here more recent than its
    // old time t[j] once the earlier first accesses' old times are cleared:
    //     d[j] = j + D(t[j]) - #{i < j : t[i] > t[j]},
    // with D the distance in the stack as it was (d0; old times are distinct). The count of
    // earlier, later-timed first accesses is split two ways: j's range of positions (one per
    // task) and the old times' value buckets (at most 64, split at quantiles of a sample of the
    // times, rounded to whole 512-slot blocks so that each bucket owns its words and blocks).
    //   1. Each range sweeps its positions: an earlier access of the same range in a higher
    //      bucket is counted there (per-bucket running counts), and each finite time goes to
    //      its (range, bucket) list, in position order.
    //   2. Each bucket takes its lists in range order, adds the earlier ranges' accesses of
    //      higher buckets (a constant per range), and counts the earlier ones of its own with
    //      later times by sweeping a bitmap of its time range with a Fenwick tree of 512-slot
    //      blocks (as the stack's own). With `clear`, it then clears its old times' bits, and
    //      this thread updates the block counts once per block.
    const unsigned k = std::max(1u, tasks);
    const unsigned nb = std::min(k, 64u);
    constexpr uint64_t kBlockSlots = 64 * kBlockWords;
    auto from = [&](unsigned i) { return m * i / k; };

    // The buckets' boundaries, from a sample of the old times.
    std::vector<uint64_t> split;
    {
        std::vector<uint64_t> sample;
        const std::size_t stride = std::max<std::size_t>(1, m / (std::size_t{nb} * 32));
        for (std::size_t j = 0; j < m; j += stride)
            if (t[j] != kInfinity) sample.push_back(t[j]);
        std::sort(sample.begin(), sample.end());
        for (unsigned v = 1; v < nb && !sample.empty(); ++v)
            split.push_back(sample[sample.size() * v / nb] / kBlockSlots * kBlockSlots);
    }
    const unsigned buckets = static_cast<unsigned>(split.size()) + 1;

    // 1. Each range.
    struct Entry {
        uint32_t j;       // position (its time is t[j])
        uint32_t higher;  // earlier positions of the same range in higher buckets
    };
    std::vector<std::vector<Entry>> lists(std::size_t{k} * buckets);  // [range * buckets + bucket]
    pool.run(k, [&](unsigned i) {
        std::vector<uint32_t> running(buckets, 0);
        std::vector<Entry> *mine = &lists[std::size_t{i} * buckets];
        const std::size_t lo = from(i), hi = from(i + 1);
        for (auto *l = mine; l != mine + buckets; ++l) l->reserve((hi - lo) / buckets + 16);
        for (std::size_t j = lo; j < hi; ++j) {
            const uint64_t x = t[j];
            if (x == kInfinity) {
                d[j] = kInfinity;
                continue;
            }
            unsigned v = 0;
            if (split.size() <= 8) {
                while (v < split.size() && split[v] <= x) ++v;
            } else {
                v = static_cast<unsigned>(std::upper_bound(split.begin(), split.end(), x) - split.begin());
            }
            uint32_t above = 0;
            for (unsigned u = v + 1; u < buckets; ++u) above += running[u];
            ++running[v];
            mine[v].push_back(Entry{static_cast<uint32_t>(j), above});
        }
    });
    // before[i * buckets + v]: the accesses of ranges before i in buckets above v.
    std::vector<uint32_t> before(std::size_t{k} * buckets, 0);
    for (unsigned i = 1; i < k; ++i)
        for (unsigned v = 0; v < buckets; ++v) {
            uint32_t above = 0;
            for (unsigned u = v + 1; u < buckets; ++u)
                above += static_cast<uint32_t>(lists[std::size_t{i - 1} * buckets + u].size());
            before[std::size_t{i} * buckets + v] = before[std::size_t{i - 1} * buckets + v] + above;
        }

    // 2. Each bucket.
    std::vector<std::vector<std::pair<uint64_t, uint32_t>>> cleared(buckets);
    pool.run(buckets, [&](unsigned v) {
        uint64_t top = 0;
        bool any = false;
        for (unsigned i = 0; i < k; ++i)
            for (const Entry &e : lists[std::size_t{i} * buckets + v]) {
                top = std::max(top, t[e.j]);
                any = true;
            }
        if (!any) return;
        const uint64_t first_block = (v == 0 ? 0 : split[v - 1]) / kBlockSlots;
        const uint64_t origin = first_block * kBlockSlots, blocks = top / kBlockSlots + 1 - first_block;
        std::vector<uint64_t> bits(blocks * kBlockWords, 0);
        std::vector<uint32_t> fen(blocks + 1, 0);  // 1-based, counts per block
        with_popcount([&](auto hw) SONDE_STACK_LAMBDA {
            constexpr bool kHw = decltype(hw)::value;
            uint64_t q = 0;  // entries of this bucket so far
            for (unsigned i = 0; i < k; ++i) {
                const uint32_t cross = before[std::size_t{i} * buckets + v];
                for (const Entry &e : lists[std::size_t{i} * buckets + v]) {
                    const uint64_t x = t[e.j] - origin, w = x >> 6, b = w / kBlockWords;
                    // Earlier entries with times <= x: this block's words, the blocks before.
                    uint64_t not_later = popcount<kHw>(bits[w] & mask_le(x & 63));
                    for (uint64_t r = b * kBlockWords; r < w; ++r) not_later += popcount<kHw>(bits[r]);
                    for (uint64_t r = b; r > 0; r &= r - 1) not_later += fen[r];
                    bits[w] |= 1ull << (x & 63);
                    for (uint64_t r = b + 1; r <= blocks; r += r & (~r + 1)) ++fen[r];
                    d[e.j] = e.j + d0[e.j] - cross - e.higher - (q - not_later);
                    ++q;
                }
            }
        });
        if (!clear) return;
        // Clear the bucket's old times in the stack, block by block (its bitmap holds them).
        std::vector<std::pair<uint64_t, uint32_t>> &tally = cleared[v];
        for (uint64_t b = 0; b < blocks; ++b) {
            uint32_t in_block = 0;
            for (uint64_t r = b * kBlockWords; r < (b + 1) * kBlockWords; ++r) {
                if (bits[r] == 0) continue;
                words_[origin / 64 + r] &= ~bits[r];
                in_block += static_cast<uint32_t>(popcount<false>(bits[r]));
            }
            if (in_block != 0) tally.emplace_back(first_block + b, in_block);
        }
    });
    for (const auto &tally : cleared)
        for (const auto &bc : tally) fen_add(bc.first * kBlockWords, -static_cast<int64_t>(bc.second));
}

void Stack::merge_last(const uint64_t *lines, const uint8_t *is_write, const uint32_t *firsts, std::size_t m,
                       Histogram *h, std::vector<uint64_t> *distances) {
    // As merge_resolve: first access j follows the j earlier first accesses and the lines here
    // whose times are later than its line's, less those the chunk has re-touched (their times are
    // cleared after their query). The cleared times are set again at the end.
    std::vector<uint64_t> old(m), dist(m);
    constexpr std::size_t kAhead = 12;
    for (std::size_t j = 0; j < m; ++j) {
        if (j + kAhead < m) prefetch(lines[firsts[j + kAhead]]);
        const uint64_t a = lines[firsts[j]];
        const Slot *s = a == kEmpty ? nullptr : find(a);
        old[j] = a == kEmpty    ? (has_max_key_ ? max_key_val_ >> 1 : kInfinity)
                 : s != nullptr ? s->val >> 1
                                : kInfinity;
    }
    const uint64_t lines_before = live_;
    with_popcount([&](auto hw) SONDE_STACK_LAMBDA {
        for (std::size_t j = 0; j < m; ++j) {
            if (old[j] == kInfinity) {
                dist[j] = kInfinity;
                continue;
            }
            dist[j] = j + distance_of<decltype(hw)::value>(old[j]);
            clear_time(old[j]);
            --live_;
        }
    });
    constexpr std::size_t kAheadHist = 16;
    for (std::size_t j = 0; h != nullptr && j < m; ++j) {
        if (j + kAheadHist < m) h->prefetch(dist[j + kAheadHist]);
        h->add_unit(dist[j], is_write != nullptr && is_write[firsts[j]] != 0 ? 1u : 0u);
    }
    for (std::size_t j = 0; j < m; ++j) {
        if (old[j] == kInfinity) continue;
        words_[old[j] >> 6] |= 1ull << (old[j] & 63);
        fen_add(old[j] >> 6, +1);
    }
    live_ = lines_before;
    if (distances != nullptr) *distances = std::move(dist);
}

uint64_t Stack::calc_and_update(uint64_t addr, bool add_new_node, bool *marked) {
    if (now_ == slots_) compact();
    uint64_t d = kInfinity;
    bool mark = false;
    if (addr == kEmpty) {
        if (has_max_key_) {
            const uint64_t t = max_key_val_ >> 1;
            mark = (max_key_val_ & 1) != 0;
            d = distance_of(t);
            clear_time(t);
            --live_;
            has_max_key_ = false;
        }
        if (add_new_node) {
            has_max_key_ = true;
            ++live_;
            max_key_val_ = now_ << 1;
            set_now();
        }
    } else if (add_new_node) {
        bool found;
        Slot *s = find_or_insert(addr, &found);
        if (found) {
            const uint64_t t = s->val >> 1;
            mark = (s->val & 1) != 0;
            d = distance_of(t);
            clear_time(t);
        } else {
            ++live_;
        }
        s->val = now_ << 1;
        set_now();
    } else if (Slot *s = find(addr)) {
        const uint64_t t = s->val >> 1;
        mark = (s->val & 1) != 0;
        d = distance_of(t);
        clear_time(t);
        --live_;
        erase_slot(s);
    }
    if (verify_) {
        bool vmark = false;
        const uint64_t vd = verify_answer(addr, true, add_new_node, false, &vmark);
        check(d, mark, vd, vmark);
        ++calls_;
    }
    if (marked) *marked = mark;
    return d;
}

uint64_t Stack::calc(uint64_t addr, bool new_mark, bool *marked) {
    uint64_t d = kInfinity;
    bool mark = false;
    uint64_t *val = nullptr;
    if (addr == kEmpty) {
        if (has_max_key_) val = &max_key_val_;
    } else if (Slot *s = find(addr)) {
        val = &s->val;
    }
    if (val) {
        mark = (*val & 1) != 0;
        d = distance_of(*val >> 1);
        *val = (*val & ~1ull) | (new_mark ? 1 : 0);
    }
    if (verify_) {
        bool vmark = false;
        const uint64_t vd = verify_answer(addr, false, false, new_mark, &vmark);
        check(d, mark, vd, vmark);
        ++calls_;
    }
    if (marked) *marked = mark;
    return d;
}

uint64_t Stack::verify_answer(uint64_t addr, bool update, bool add, bool new_mark, bool *vmark) {
    // Naive stack: scan from the most recent end, counting the lines passed.
    uint64_t d = 0;
    auto it = naive_.end();
    while (it != naive_.begin()) {
        --it;
        if (it->first == addr) {
            *vmark = it->second;
            if (!update) {
                it->second = new_mark;
                return d;
            }
            naive_.erase(it);
            if (add) naive_.emplace_back(addr, false);
            return d;
        }
        ++d;
    }
    *vmark = false;
    if (update && add) naive_.emplace_back(addr, false);
    return kInfinity;
}

void Stack::check(uint64_t got_dist, bool got_mark, uint64_t want_dist, bool want_mark) {
    const bool fault = fault_at_ != 0 && calls_ + 1 == fault_at_;
    if (fault) got_dist += 1;  // the injected fault the verifier must catch
    if (got_dist != want_dist || got_mark != want_mark) verify_ok_ = false;
}

}  // namespace sonde::stackdist
