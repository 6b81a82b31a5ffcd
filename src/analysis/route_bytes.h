// The encoding of the references a rank of a byte-range partition sends another
// (PartitionHooks, builtin_tools.h; cache_sim's routes): 16 bytes per reference, in stream order: its address
// (8 bytes), its shard (4), its size (2) and whether it is an instruction fetch (2), each
// little-endian (the byte order of x86-64, the only platform Sonde is built for). Fixed-size
// records cost a copy each way, which on the ranks of one node is cheaper than packing them;
// they are kept in chunks, handed to the analyzer as pieces, so that nothing is copied to grow.
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
    // Hot path: one 16-byte store; a new 1 MiB chunk per 65,536 references (never a copy).
    void add(uint64_t address, uint16_t size, uint32_t shard, bool fetch) {
        if (len_ == kChunk) grow();
        const RoutedRef r{address, shard, size, static_cast<uint16_t>(fetch ? 1 : 0)};
        std::memcpy(chunks_.back().get() + len_, &r, sizeof r);
        len_ += sizeof r;
    }
    // The bytes, as pieces of whole references, appended to *pieces in order.
    void pieces(std::vector<std::pair<const void *, size_t>> *pieces) const {
        for (size_t i = 0; i < chunks_.size(); ++i)
            pieces->emplace_back(chunks_[i].get(), i + 1 < chunks_.size() ? kChunk : len_);
    }
    size_t size() const { return chunks_.empty() ? 0 : (chunks_.size() - 1) * kChunk + len_; }
    // Frees the bytes.
    void clear() {
        chunks_.clear();
        len_ = kChunk;
    }

private:
    static constexpr size_t kChunk = sizeof(RoutedRef) << 16;
    void grow() {
        chunks_.emplace_back(new unsigned char[kChunk]);
        len_ = 0;
    }
    std::vector<std::unique_ptr<unsigned char[]>> chunks_;  // not zero-filled: only what add() wrote
    size_t len_ = kChunk;                                   // bytes used in the last chunk
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
