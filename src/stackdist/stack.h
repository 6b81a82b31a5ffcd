// Exact LRU stack-distance engine of the stackdist concept (gem5 StackDistCalc semantics).
//
// A line's distance is the number of distinct other lines touched since its previous access
// (an immediate re-access is 0, a first access is kInfinity). The engine keeps:
//   - an open-addressing hash table, line -> (last access time << 1 | mark), 16 bytes a slot,
//     linear probing, load factor <= 3/4, backward-shift deletion;
//   - one bit per time slot (set while that time is some line's last access), in 64-bit words,
//     plus a Fenwick tree of per-block counts (8 words = 512 slots a block); distance(t) = live lines with time > t.
// When time runs out of slots, live times are renumbered 0..live-1 in order (compaction), so
// memory depends on distinct lines, not on trace length.
//
// Cost of access(): one hash probe sequence, one rank query (a short bit scan when the previous
// access is recent, otherwise up to 8 popcounts and a Fenwick walk of log2(slots/512) steps), and
// Fenwick updates only when the old and new times fall in different blocks. It allocates only when the table or the
// time range grows. Not thread-safe: one thread owns a Stack at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/huge_pages.h"
#include "stackdist/huge_alloc.h"

namespace sonde::stackdist {

inline constexpr uint64_t kInfinity = UINT64_MAX;
// Below this many first accesses in a chunk or slice, a merge runs on the calling thread:
// waking the workers costs more than their share of the work.
inline constexpr std::size_t kMinParallelMerge = 1 << 14;

struct Histogram;
class Pool;

class Stack {
public:
    explicit Stack(uint64_t initial_capacity = 0, bool verify = false);
    // Empties the stack: it then answers as Stack(initial_capacity, verify) would, and keeps
    // the memory of its arrays where they are large enough (no allocation, no page fault).
    void reset(uint64_t initial_capacity);

    // gem5 calcStackDistAndUpdate: distance of `addr`, the old node's mark; with add_new_node
    // the line becomes the most recent (unmarked), otherwise it is removed.
    uint64_t calc_and_update(uint64_t addr, bool add_new_node, bool *marked);
    // gem5 calcStackDist: distance without updating; returns the previous mark, sets `mark`.
    uint64_t calc(uint64_t addr, bool mark, bool *marked);
    // Hot path: calc_and_update(addr, true) without the mark and without verification.
    uint64_t access(uint64_t addr);
    // Batch hot path: access() every line in order and count each distance (unit weight) in
    // h, prefetching hash slots a few accesses ahead in a large table, and skipping the table
    // for a repeat of the previous line. is_write may be null (all reads).
    void access_many(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h);
    // Parallel chunk (private stack): like access_many for the n accesses at lines, except that
    // first accesses (infinite here) are not counted; their offsets are appended to `firsts`.
    void access_chunk(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h,
                      std::vector<uint32_t> &firsts);
    // After access_chunk: rank[j] = recency rank (0 = least recent) of lines[firsts[j]] among
    // the m lines of this stack. Compacts first.
    void chunk_ranks(const uint64_t *lines, const uint32_t *firsts, std::size_t m, uint32_t *rank);
    // Hint for batch loops: start loading addr's home slot (no effect on the answers).
    __attribute__((always_inline)) void prefetch(uint64_t addr) const {
        __builtin_prefetch(&table_[hash(addr) & mask_]);
    }

    // Merging a chunk processed on a private stack (the m distinct lines lines[firsts[j]], in
    // first-access order, with their recency ranks) into this stack, as if its accesses had
    // been made here, in three steps:
    //   merge_reserve(m) makes room for m new times above every live one and returns the base;
    //   merge_probe() moves the lines already here to their new times base + rank[j] and saves
    //     their old times in old[j] (kInfinity if absent). No insertion and no change to the
    //     time structures: several threads may run it at once on disjoint j ranges;
    //   merge_resolve() counts the first accesses' distances in order into h (an earlier first
    //     access is always more recent; a line not yet re-touched counts if its old time is
    //     later), inserts the new lines and sets the new times. It overwrites old[] with the
    //     distances (kInfinity for a line new here); with h null it only leaves them there.
    uint64_t merge_reserve(uint64_t m);
    void merge_probe(const uint64_t *lines, const uint32_t *firsts, const uint32_t *rank, std::size_t from,
                     std::size_t to, uint64_t base, uint64_t *old);
    void merge_resolve(const uint64_t *lines, const uint8_t *is_write, const uint32_t *firsts,
                       const uint32_t *rank, uint64_t *old, std::size_t m, uint64_t base, Histogram *h);
    // merge_probe() and merge_resolve() in one (after merge_reserve): the distances into h when
    // not null, into *distances when given, the stack as the two steps leave it. A chunk of
    // kMinParallelMerge first accesses or more, given a pool and tasks > 1, is merged by
    // `tasks` tasks of `pool` (see resolve_parallel in stack.cpp), this thread only counting
    // the histogram, inserting the new lines and setting the new times; any other on this
    // thread alone.
    void merge_parallel(const uint64_t *lines, const uint8_t *is_write, const uint32_t *firsts,
                        const uint32_t *rank, std::size_t m, uint64_t base, Pool *pool, unsigned tasks,
                        Histogram *h, std::vector<uint64_t> *distances = nullptr);
    // merge_last(), with the lookups and the distances spread over `tasks` tasks of `pool` under
    // the same conditions: the same answers; the stack is only read.
    void merge_last_parallel(const uint64_t *lines, const uint8_t *is_write, const uint32_t *firsts,
                             std::size_t m, Pool *pool, unsigned tasks, Histogram *h,
                             std::vector<uint64_t> *distances = nullptr);
    // The last chunk of a stream (no chunk is merged after it): counts its first accesses'
    // distances into h as the three steps above would, without making room for its lines or
    // adding them (no recency ranks needed). The stack ends as it was. Cost per line: a probe
    // (prefetched) and a rank query. With `distances`, the distances (kInfinity for a line new
    // here) are also stored there, in order; h may then be null, to count nothing.
    void merge_last(const uint64_t *lines, const uint8_t *is_write, const uint32_t *firsts, std::size_t m,
                    Histogram *h, std::vector<uint64_t> *distances = nullptr);

    // Lines in the stack.
    uint64_t size() const { return live_; }
    // Grows the table now, if it must grow to hold `lines` lines, so that no insertion grows it
    // until that many are in. The new table's slots are filled, and so its pages first touched,
    // by `tasks` tasks of `pool` on disjoint ranges (by this thread alone when pool is null);
    // this thread then moves the lines in. The parallel calculator calls it between batches,
    // while its pool is idle, with the lines it expects the batch to add: a growth, and the
    // kernel's zeroing of the new table's pages, then no longer falls on the thread whose merges
    // every worker waits for. May throw std::bad_alloc (the stack is then as it was).
    void reserve_lines(uint64_t lines, Pool *pool, unsigned tasks);
    // Bytes held by the structures (table, bitmap, Fenwick tree; not the verify stack).
    std::size_t bytes() const;

    // Verify mode: false once the naive stack disagreed with an answer.
    bool verify_ok() const { return verify_ok_; }
    // Test hook (not exported): perturb the engine's answer to the n-th verified call (1-based).
    void inject_fault(uint64_t nth_call) { fault_at_ = nth_call; }

private:
    struct Slot {
        uint64_t key;
        uint64_t val;  // time << 1 | mark
        // Leaves both words as they are, so that a new table's slots are written (and its pages
        // first touched) only by the fill that follows, which may run on several threads.
        Slot() {}
        Slot(uint64_t k, uint64_t v) : key(k), val(v) {}
    };
    static constexpr uint64_t kEmpty = UINT64_MAX;
    // merge_probe's old time for line kEmpty, which lives outside the table.
    static constexpr uint64_t kMaxKeyTime = UINT64_MAX - 1;
    // Words per Fenwick leaf: a rank query pops at most this many words, and a move between
    // two times in the same 512-slot block leaves the tree alone.
    static constexpr uint64_t kBlockWords = 8;

    static uint64_t hash(uint64_t key) { return (key * 0x9E3779B97F4A7C15ull) ^ (key >> 29); }
    Slot *find(uint64_t addr);
    // Returns the slot for addr, inserting an empty-valued one (found = false) if absent.
    Slot *find_or_insert(uint64_t addr, bool *found);
    void erase_slot(Slot *s);
    void grow_table();
    // Replaces the table by one of `size` slots (a power of two, more than the lines need),
    // filled by `tasks` tasks of `pool` (or this thread), and moves every line into it.
    void rehash(uint64_t size, Pool *pool, unsigned tasks);

    // Hot helpers; kHw: compiled for a CPU with POPCNT (see with_popcount in stack.cpp).
    template <bool kHw = false>
    uint64_t access_hot(uint64_t addr);  // access(), inlined into the batch loop
    template <bool kHw>
    void batch_loop(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h,
                    std::vector<uint32_t> *firsts);
    template <bool kHw = false>
    uint64_t rank_le(uint64_t t) const;  // live times <= t
    template <bool kHw = false>
    uint64_t distance_of(uint64_t t) const;
    void fen_add(uint64_t word, int64_t delta);
    void move_time(uint64_t from);  // clear `from`, set now_, advance now_
    void set_now();                 // set now_, advance now_
    void clear_time(uint64_t t);
    void compact(uint64_t room = 0);  // renumber live times 0..live-1; keep room free slots
    // Step 1 of the parallel merges, on k tasks of pool: for first access j, its line's old time
    // t[j] (kInfinity: absent), its distance d0[j] in the stack as it is (0 when absent), and,
    // with rank (merge_parallel), the line moved to time base + rank[j] and fresh_at[j] = 1 when
    // the line is new here or is line kEmpty. The time structures are only read.
    void lookup_parallel(const uint64_t *lines, const uint32_t *firsts, const uint32_t *rank, std::size_t m,
                         uint64_t base, Pool &pool, unsigned k, uint64_t *t, uint64_t *d0, uint8_t *fresh_at);
    // The distances of the m first accesses whose old times are t (kInfinity: none) and whose
    // distances in the stack before the merge are d0, into d (which may be d0); with `clear`,
    // the old times are cleared from the time structures (merge_parallel's core, on `tasks`
    // tasks of `pool`).
    void resolve_parallel(const uint64_t *t, const uint64_t *d0, uint64_t *d, std::size_t m, Pool &pool,
                          unsigned tasks, bool clear);
    // Counts distance d[j] of first access j (its write flag at is_write[firsts[j]]) into h
    // (may be null).
    static void count_distances(const uint64_t *d, std::size_t m, const uint8_t *is_write,
                                const uint32_t *firsts, Histogram *h);
    // The end of a merge: inserts the lines absent before (`fresh`, ascending; line kEmpty
    // among them whenever it is in the chunk), sets times base .. base + m - 1, now_ after them.
    // With a pool and tasks > 1, a large `fresh` is inserted by insert_fresh_parallel.
    void merge_insert(const uint64_t *lines, const uint32_t *firsts, const uint32_t *rank,
                      const std::vector<std::size_t> &fresh, std::size_t m, uint64_t base,
                      Pool *pool = nullptr, unsigned tasks = 1);
    // merge_insert's table insertions on `tasks` tasks of `pool`, for a large `fresh`: the table
    // is grown first so that nothing grows it meanwhile, and each task claims its lines' empty
    // slots with a compare-and-swap of the key (the lines are distinct and absent, so a slot
    // another task claimed first only moves the probe on). Line kEmpty stays with merge_insert:
    // returns the j (a value of `fresh`) whose line is kEmpty, or SIZE_MAX when none is.
    std::size_t insert_fresh_parallel(const uint64_t *lines, const uint32_t *firsts, const uint32_t *rank,
                                      const std::vector<std::size_t> &fresh, uint64_t base, Pool &pool,
                                      unsigned tasks);
    template <bool kHw>
    void compact_impl(uint64_t room);
    template <bool kHw>
    void rebuild_fenwick();

    uint64_t verify_answer(uint64_t addr, bool update, bool add, bool new_mark, bool *vmark);
    void check(uint64_t got_dist, bool got_mark, uint64_t want_dist, bool want_mark);

    std::vector<Slot, HugeAlloc<Slot>> table_;
    uint64_t mask_ = 0;
    uint64_t live_ = 0;
    // Line UINT64_MAX (the empty-key value) lives outside the table.
    bool has_max_key_ = false;
    uint64_t max_key_val_ = 0;

    std::vector<uint64_t, HugeAlloc<uint64_t>> words_;
    std::vector<uint32_t> fen_;  // 1-based Fenwick tree over per-block (8-word) counts
    // compact()'s live times before each word, kept between compactions: allocating and
    // freeing it each time costs page faults and, with threads, TLB shootdowns.
    std::vector<uint32_t> compact_base_;
    // merge_parallel's and merge_last_parallel's arrays (old times, distances, fresh flags),
    // kept between merges for the same reason (each task's range of them was first written, and
    // faulted in, by that task, in every batch); grown, never shrunk.
    core::HugeArray<uint64_t> merge_t_, merge_d_;
    core::HugeArray<uint8_t> merge_fresh_;
    void merge_room(std::size_t m, bool fresh);
    uint64_t slots_ = 0;  // time slots (multiple of 64)
    uint64_t now_ = 0;

    bool verify_ = false;
    bool verify_ok_ = true;
    uint64_t calls_ = 0;
    uint64_t fault_at_ = 0;
    std::vector<std::pair<uint64_t, bool>> naive_;  // verify stack, most recent last
};

}  // namespace sonde::stackdist
