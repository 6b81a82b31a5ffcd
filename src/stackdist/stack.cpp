// Exact LRU stack-distance engine of the stackdist concept: hash table, time bitmap, Fenwick
// tree, compaction and the verify-mode naive stack. See stack.h for the costs.
#include "stackdist/stack.h"

#include <algorithm>

#include "stackdist/histogram.h"

namespace sonde::stackdist {

namespace {

uint64_t pow2_at_least(uint64_t n, uint64_t floor) {
    uint64_t p = floor;
    while (p < n) p <<= 1;
    return p;
}

// Population count: the instruction when the build targets it, otherwise a branch-free SWAR
// count (libgcc's generic __popcountdi2 is a table-driven call, several times slower).
inline uint64_t popcount(uint64_t x) {
#if defined(__POPCNT__)
    return static_cast<uint64_t>(__builtin_popcountll(x));
#else
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
    return (x * 0x0101010101010101ull) >> 56;
#endif
}

// popcount for the two builds of the hot helpers: the instruction inside functions compiled
// with target("popcnt"), the SWAR count elsewhere.
template <bool Popcnt>
__attribute__((always_inline)) inline uint64_t popc(uint64_t x) {
    if constexpr (Popcnt)
        return static_cast<uint64_t>(__builtin_popcountll(x));
    else
        return popcount(x);
}

// Whether the CPU has POPCNT (x86-64-v2 and later); read once.
bool cpu_has_popcnt() {
    static const bool has = __builtin_cpu_supports("popcnt");
    return has;
}

// Bits 0..b of a word.
inline uint64_t mask_le(uint64_t b) { return b == 63 ? ~0ull : ((2ull << b) - 1); }

}  // namespace

// The per-access helpers are inlined into the batch loop (they are only called from here).
#define SONDE_STACK_HOT __attribute__((always_inline)) inline

Stack::Stack(uint64_t initial_capacity, bool verify) : verify_(verify) {
    const uint64_t cap = std::max<uint64_t>(initial_capacity, 64);
    table_.assign(pow2_at_least(cap * 4 / 3 + 1, 16), Slot{kEmpty, 0});
    mask_ = table_.size() - 1;
    slots_ = pow2_at_least(cap * 4, 64 * kBlockWords);
    words_.assign(slots_ / 64, 0);
    fen_.assign(words_.size() / kBlockWords + 1, 0);
}

std::size_t Stack::bytes() const {
    return table_.capacity() * sizeof(Slot) + words_.capacity() * sizeof(uint64_t) +
           fen_.capacity() * sizeof(uint32_t);
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

void Stack::grow_table() {
    std::vector<Slot, HugeAlloc<Slot>> old;
    old.swap(table_);
    table_.assign(old.size() * 2, Slot{kEmpty, 0});
    mask_ = table_.size() - 1;
    for (const Slot &s : old) {
        if (s.key == kEmpty) continue;
        uint64_t i = hash(s.key) & mask_;
        while (table_[i].key != kEmpty) i = (i + 1) & mask_;
        table_[i] = s;
    }
}

template <bool Popcnt>
SONDE_STACK_HOT uint64_t Stack::rank_le(uint64_t t) const {
    const uint64_t w = t >> 6;
    const uint64_t b = w / kBlockWords;
    uint64_t r = popc<Popcnt>(words_[w] & mask_le(t & 63));
    for (uint64_t i = b * kBlockWords; i < w; ++i) r += popc<Popcnt>(words_[i]);
    for (uint64_t i = b; i > 0; i &= i - 1) r += fen_[i];
    return r;
}

template <bool Popcnt>
SONDE_STACK_HOT uint64_t Stack::distance_of(uint64_t t) const {
    // Live times in (t, now_). A recent t is answered by scanning a few words.
    const uint64_t w = t >> 6;
    const uint64_t last = (now_ - 1) >> 6;
    if (last - w <= 8) {
        uint64_t d = popc<Popcnt>(words_[w] & ~mask_le(t & 63));
        for (uint64_t i = w + 1; i <= last; ++i)
            d += popc<Popcnt>(words_[i]);
        return d;
    }
    return live_ - rank_le<Popcnt>(t);
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

void Stack::rebuild_fenwick() {
    const uint64_t n = words_.size() / kBlockWords;
    fen_.assign(n + 1, 0);
    for (uint64_t w = 0; w < words_.size(); ++w)
        fen_[w / kBlockWords + 1] += static_cast<uint32_t>(popcount(words_[w]));
    for (uint64_t i = 1; i <= n; ++i) {
        const uint64_t parent = i + (i & (~i + 1));
        if (parent <= n) fen_[parent] += fen_[i];
    }
}

void Stack::compact() {
    // Renumber live times to 0..live-1 keeping their order; the slot range is at least four
    // times the live lines, so compaction runs at most once every 3/4 * slots accesses.
    const uint64_t n = words_.size();
    std::vector<uint32_t> base(n);
    uint64_t acc = 0;
    for (uint64_t i = 0; i < n; ++i) {
        base[i] = static_cast<uint32_t>(acc);
        acc += popcount(words_[i]);
    }
    auto renumber = [&](uint64_t val) {
        const uint64_t t = val >> 1;
        const uint64_t w = t >> 6;
        const uint64_t below =
            (t & 63) ? popcount(words_[w] & ((1ull << (t & 63)) - 1)) : 0;
        return ((base[w] + below) << 1) | (val & 1);
    };
    for (Slot &s : table_)
        if (s.key != kEmpty) s.val = renumber(s.val);
    if (has_max_key_) max_key_val_ = renumber(max_key_val_);

    const uint64_t want = pow2_at_least(live_ * 4 + 64, 64 * kBlockWords);
    if (want > slots_) slots_ = want;
    words_.assign(slots_ / 64, 0);
    for (uint64_t i = 0; i < live_ / 64; ++i) words_[i] = ~0ull;
    if (live_ & 63) words_[live_ / 64] = (1ull << (live_ & 63)) - 1;
    rebuild_fenwick();
    now_ = live_;
}

void Stack::recency_order(std::vector<uint64_t> &out) {
    // Compaction first: live times become 0..live-1, so the time -> line array is dense.
    compact();
    out.assign(live_, 0);
    for (const Slot &s : table_)
        if (s.key != kEmpty) out[s.val >> 1] = s.key;
    if (has_max_key_) out[max_key_val_ >> 1] = kEmpty;
}

template <bool Popcnt>
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
        d = distance_of<Popcnt>(t);
        move_time(t);
    } else {
        d = kInfinity;
        ++live_;
        set_now();
    }
    *val = (now_ - 1) << 1;
    return d;
}

uint64_t Stack::access(uint64_t addr) { return access_hot<false>(addr); }

void Stack::touch(uint64_t addr) {
    if (verify_ || addr == kEmpty) {
        access(addr);
        return;
    }
    if (now_ == slots_) compact();
    bool found;
    Slot *s = find_or_insert(addr, &found);
    if (found) {
        move_time(s->val >> 1);
    } else {
        ++live_;
        set_now();
    }
    s->val = (now_ - 1) << 1;
}

template <bool Popcnt>
SONDE_STACK_HOT void Stack::many(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h) {
    constexpr std::size_t kAhead = 12;
    if (is_write == nullptr) {
        for (std::size_t i = 0; i < n; ++i) {
            if (i + kAhead < n) prefetch(lines[i + kAhead]);
            h.add_unit(access_hot<Popcnt>(lines[i]), 0);
        }
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (i + kAhead < n) prefetch(lines[i + kAhead]);
        h.add_unit(access_hot<Popcnt>(lines[i]), is_write[i] != 0 ? 1u : 0u);
    }
}

template <bool Popcnt>
SONDE_STACK_HOT void Stack::indexed(const uint64_t *lines, const uint8_t *is_write, const std::size_t *idx,
                                    std::size_t n, Histogram &h) {
    constexpr std::size_t kAhead = 12;
    for (std::size_t i = 0; i < n; ++i) {
        if (i + kAhead < n) prefetch(lines[idx[i + kAhead]]);
        const std::size_t j = idx[i];
        h.add_unit(access_hot<Popcnt>(lines[j]), is_write != nullptr && is_write[j] != 0 ? 1u : 0u);
    }
}

template <bool Popcnt>
SONDE_STACK_HOT void Stack::chunk(const uint64_t *lines, const uint8_t *is_write, std::size_t begin,
                                  std::size_t end, Histogram &h, std::vector<std::size_t> &firsts) {
    constexpr std::size_t kAhead = 12;
    for (std::size_t i = begin; i < end; ++i) {
        if (i + kAhead < end) prefetch(lines[i + kAhead]);
        const uint64_t d = access_hot<Popcnt>(lines[i]);
        if (d == kInfinity)
            firsts.push_back(i);
        else
            h.add_unit(d, is_write != nullptr && is_write[i] != 0 ? 1u : 0u);
    }
}

// The batch entry points: each loop exists compiled for POPCNT and for the baseline; the
// CPU decides which runs.
void Stack::access_many(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h) {
    if (cpu_has_popcnt())
        many_popcnt_(lines, is_write, n, h);
    else
        many<false>(lines, is_write, n, h);
}

__attribute__((target("popcnt"))) void Stack::many_popcnt_(const uint64_t *lines, const uint8_t *is_write,
                                                           std::size_t n, Histogram &h) {
    many<true>(lines, is_write, n, h);
}

void Stack::access_indexed(const uint64_t *lines, const uint8_t *is_write, const std::size_t *idx, std::size_t n,
                           Histogram &h) {
    if (cpu_has_popcnt())
        indexed_popcnt_(lines, is_write, idx, n, h);
    else
        indexed<false>(lines, is_write, idx, n, h);
}

__attribute__((target("popcnt"))) void Stack::indexed_popcnt_(const uint64_t *lines, const uint8_t *is_write,
                                                              const std::size_t *idx, std::size_t n, Histogram &h) {
    indexed<true>(lines, is_write, idx, n, h);
}

void Stack::access_chunk(const uint64_t *lines, const uint8_t *is_write, std::size_t begin, std::size_t end,
                         Histogram &h, std::vector<std::size_t> &firsts) {
    if (cpu_has_popcnt())
        chunk_popcnt_(lines, is_write, begin, end, h, firsts);
    else
        chunk<false>(lines, is_write, begin, end, h, firsts);
}

__attribute__((target("popcnt"))) void Stack::chunk_popcnt_(const uint64_t *lines, const uint8_t *is_write,
                                                            std::size_t begin, std::size_t end, Histogram &h,
                                                            std::vector<std::size_t> &firsts) {
    chunk<true>(lines, is_write, begin, end, h, firsts);
}

void Stack::touch_many(const uint64_t *lines, std::size_t n) {
    constexpr std::size_t kAhead = 12;
    for (std::size_t i = 0; i < n; ++i) {
        if (i + kAhead < n) prefetch(lines[i + kAhead]);
        touch(lines[i]);
    }
}

uint64_t Stack::calc_and_update(uint64_t addr, bool add_new_node, bool *marked) {
    if (now_ == slots_) compact();
    uint64_t d = kInfinity;
    bool mark = false;
    if (addr == kEmpty) {
        if (has_max_key_) {
            const uint64_t t = max_key_val_ >> 1;
            mark = (max_key_val_ & 1) != 0;
            d = distance_of<false>(t);
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
            d = distance_of<false>(t);
            clear_time(t);
        } else {
            ++live_;
        }
        s->val = now_ << 1;
        set_now();
    } else if (Slot *s = find(addr)) {
        const uint64_t t = s->val >> 1;
        mark = (s->val & 1) != 0;
        d = distance_of<false>(t);
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
        d = distance_of<false>(*val >> 1);
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
