// The byte encoding of partial states that ranks of a partitioned run exchange
// (sonde_analyzer_export_state, sonde_tool_ops_t::export_state): little-endian fixed-width
// integers and length-prefixed byte strings, appended to a std::string. StateReader throws
// std::invalid_argument ("truncated state") when the bytes end early, so that a tool's
// merge_state fails with that message and never reads past the end. Both are used by one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace sonde::analysis {

class StateWriter {
public:
    void u8(uint8_t v) { out.push_back(static_cast<char>(v)); }
    // Integers are appended as their bytes in memory: little-endian on x86-64, the only
    // platform Sonde is built for (states of millions of integers append them one at a time).
    void u32(uint32_t v) { out.append(reinterpret_cast<const char *>(&v), 4); }
    void u64(uint64_t v) { out.append(reinterpret_cast<const char *>(&v), 8); }
    void bytes(const std::string &b) {
        u64(b.size());
        out += b;
    }
    // `n` more bytes for the caller to write in place (valid until the next append).
    char *extend(size_t n) {
        const size_t at = out.size();
        if (out.capacity() < at + n) out.reserve(std::max(at + n, 2 * out.capacity()));
        out.resize(at + n);
        return &out[at];
    }
    std::string out;
};

class StateReader {
public:
    StateReader(const void *data, size_t size)
        : p_(static_cast<const unsigned char *>(data)), end_(p_ + size) {}
    uint8_t u8() {
        need(1);
        return *p_++;
    }
    uint32_t u32() {
        need(4);
        uint32_t v;
        std::memcpy(&v, p_, 4);
        p_ += 4;
        return v;
    }
    uint64_t u64() {
        need(8);
        uint64_t v;
        std::memcpy(&v, p_, 8);
        p_ += 8;
        return v;
    }
    std::string bytes() {
        const uint64_t n = u64();
        need(n);
        std::string b(reinterpret_cast<const char *>(p_), static_cast<size_t>(n));
        p_ += n;
        return b;
    }
    // The next `n` bytes, in place (valid as long as the bytes read).
    const unsigned char *take(uint64_t n) {
        need(n);
        const unsigned char *at = p_;
        p_ += n;
        return at;
    }
    // A count of items of at least `item_bytes` each: refused when the rest cannot hold them,
    // so that a forged count never makes a reader reserve memory the bytes do not back.
    uint64_t count(size_t item_bytes) {
        const uint64_t n = u64();
        if (item_bytes != 0 && n > left() / item_bytes) throw std::invalid_argument("truncated state");
        return n;
    }
    size_t left() const { return static_cast<size_t>(end_ - p_); }
    bool at_end() const { return p_ == end_; }

private:
    void need(uint64_t n) const {
        if (n > static_cast<uint64_t>(end_ - p_)) throw std::invalid_argument("truncated state");
    }
    const unsigned char *p_;
    const unsigned char *end_;
};

}  // namespace sonde::analysis
