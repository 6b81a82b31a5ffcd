// The encoding of the references a rank of a byte-range partition sends another
// (PartitionHooks, builtin_tools.h; cache_sim's routes): 16 bytes per reference, in stream order: its address
// (8 bytes), its shard (4), its size (2) and whether it is an instruction fetch (2), each
// little-endian (the byte order of x86-64, the only platform Sonde is built for). Fixed-size
// records cost a copy each way, which on the ranks of one node is cheaper than packing them;
// they are kept in chunks, handed to the analyzer as pieces, so that nothing is copied to grow.
// Chunks double from 64 KiB to 4 MiB, and those of 4 MiB are 2 MiB-aligned and advised for
// transparent huge pages: a rank may write hundreds of megabytes of routes once, and faulting
// them in 4 KiB pages cost a tenth of its run, while a run of many ranks keeps a writer per
// pair of ranks, most of them small.
// RouteWriter and RouteReader belong to one thread each; RouteReader refuses bytes that are not
// whole records.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "stackdist/huge_alloc.h"

namespace sonde::analysis {

// One reference, as it travels.
struct RoutedRef {
    uint64_t address;
    uint32_t shard;
    uint16_t size;
    uint16_t fetch;
};
static_assert(sizeof(RoutedRef) == 16, "a routed reference is 16 bytes");

class RouteWriter {
public:
    RouteWriter() = default;
    RouteWriter(const RouteWriter &) = delete;
    RouteWriter &operator=(const RouteWriter &) = delete;
    RouteWriter(RouteWriter &&o) noexcept : chunks_(std::move(o.chunks_)), len_(o.len_) { o.len_ = 0; }
    RouteWriter &operator=(RouteWriter &&o) noexcept {
        if (this != &o) {
            clear();
            chunks_ = std::move(o.chunks_);
            len_ = o.len_;
            o.len_ = 0;
        }
        return *this;
    }
    ~RouteWriter() { clear(); }

    // Hot path: one 16-byte store; a new chunk when the last is full (never a copy).
    void add(uint64_t address, uint16_t size, uint32_t shard, bool fetch) {
        if (chunks_.empty() || len_ == chunks_.back().bytes) grow();
        const RoutedRef r{address, shard, size, static_cast<uint16_t>(fetch ? 1 : 0)};
        std::memcpy(chunks_.back().data + len_, &r, sizeof r);
        len_ += sizeof r;
    }
    // The bytes, as pieces of whole references, appended to *pieces in order.
    void pieces(std::vector<std::pair<const void *, size_t>> *pieces) const {
        for (size_t i = 0; i < chunks_.size(); ++i)
            pieces->emplace_back(chunks_[i].data, i + 1 < chunks_.size() ? chunks_[i].bytes : len_);
    }
    size_t size() const {
        size_t n = len_;
        for (size_t i = 0; i + 1 < chunks_.size(); ++i) n += chunks_[i].bytes;
        return n;
    }
    // Frees the bytes.
    void clear() {
        for (const Chunk &c : chunks_) Alloc().deallocate(c.data, c.bytes);
        chunks_.clear();
        len_ = 0;
    }

private:
    static constexpr size_t kFirst = sizeof(RoutedRef) << 12;  // 64 KiB
    static constexpr size_t kLast = sizeof(RoutedRef) << 18;   // 4 MiB: huge pages from here
    using Alloc = stackdist::HugeAlloc<unsigned char>;
    struct Chunk {
        unsigned char *data;  // not zero-filled: only what add() wrote
        size_t bytes;
    };
    void grow() {
        const size_t bytes = chunks_.empty() ? kFirst : std::min(kLast, chunks_.back().bytes * 2);
        chunks_.reserve(chunks_.size() + 1);  // room first: the push below cannot throw
        chunks_.push_back(Chunk{Alloc().allocate(bytes), bytes});
        len_ = 0;
    }
    std::vector<Chunk> chunks_;
    size_t len_ = 0;  // bytes used in the last chunk
};

class RouteReader {
public:
    // Throws std::invalid_argument when the bytes are not whole references.
    RouteReader(const void *data, size_t size)
        : p_(static_cast<const unsigned char *>(data)), end_(p_ + size) {
        if (size % sizeof(RoutedRef) != 0) throw std::invalid_argument("truncated routes");
    }
    bool at_end() const { return p_ == end_; }
    // The next reference (call only while !at_end()).
    RoutedRef next() {
        RoutedRef r;
        std::memcpy(&r, p_, sizeof r);
        p_ += sizeof r;
        return r;
    }

private:
    const unsigned char *p_;
    const unsigned char *end_;
};

}  // namespace sonde::analysis
