// Raw 64-bit address reader (see raw64.h), in blocks of the stream decoded on the reader's
// decode threads (block_decode.h). Hot path: a copy of 8 bytes into each record.
#include "trace/raw64.h"

#include <algorithm>

#include "trace/block_decode.h"
#include "trace/trace_format.h"
#include "trace/trace_stream.h"

namespace sonde::trace {

namespace {

constexpr size_t kBlockBytes = 512u << 10;
constexpr size_t kMinBlockBytes = 64u << 10;

// Blocks of whole 8-byte addresses (block_decode.h); nothing is carried between blocks.
class Raw64Format final : public StreamFormat {
public:
    Raw64Format(std::string path, uint32_t shard_id) : path_(std::move(path)), shard_id_(shard_id) {}
    size_t cut(const unsigned char *, size_t len, bool) const override { return len - len % 8; }
    size_t max_records(size_t bytes) const override { return bytes / 8; }
    size_t max_record_bytes() const override { return 7; }
    std::string tail_error(uint64_t at, size_t bytes) const override {
        return fmt::at(path_, at,
                       "raw64 size is not a multiple of 8 (" + std::to_string(bytes) + " trailing bytes)");
    }
    void decode(DecodedBlock &b) const override {
        const unsigned char *p = b.bytes.get();
        const size_t n = b.len / 8;
        sonde_memref_t *out = b.records.get();
        for (size_t i = 0; i < n; ++i) {
            sonde_memref_t &m = out[i];
            m.address = fmt::load64(p + 8 * i);
            m.pc = 0;
            m.timestamp = 0;
            m.shard = shard_id_;
            m.type = SONDE_MEMREF_READ;
            m.size = 8;
        }
        b.count = n;
        b.carry_until = 0;
    }
    std::string finish(DecodedBlock &, uint64_t *, uint64_t) const override { return std::string(); }

private:
    std::string path_;
    uint32_t shard_id_;
};

// Decoded bytes per block for `decoded` bytes of addresses: kBlockBytes, less for a small input
// (so that several threads share it), at least kMinBlockBytes.
size_t block_bytes_for(uint64_t decoded, unsigned threads) {
    const uint64_t share = (decoded / (2 * uint64_t{threads}) + 8) & ~uint64_t{7};
    return static_cast<size_t>(std::clamp<uint64_t>(share, kMinBlockBytes, kBlockBytes));
}

size_t block_bytes(const Source &source, unsigned threads) {
    if (!source.seekable()) return kBlockBytes;
    return block_bytes_for(source.size() * (source.zstd() ? 8 : 1), threads);
}

// The first address at or after byte `at` of a plain file of `size` bytes (a multiple of 8).
uint64_t address_at_or_after(uint64_t at, uint64_t size) {
    return at >= size ? size : (at + 7) & ~uint64_t{7};
}

class Raw64Input final : public Input {
public:
    explicit Raw64Input(std::unique_ptr<Source> source) {
        path_ = source->path();
        format_ = SONDE_TRACE_FORMAT_RAW64;
        source_ = std::move(source);
    }
    size_t num_shards() const override { return 1; }
    uint64_t shard_records(size_t) const override { return records_; }
    uint64_t shard_memory(size_t shard) const override {
        if (shard != 0 || records_ == 0) return 0;
        const unsigned threads = decode_threads();
        return StreamBlocks::memory(Raw64Format(path_, 0), threads, block_bytes(*source_, threads)) +
               ByteStream::memory(*source_);
    }
    uint64_t shard_bytes(size_t shard) const override { return shard == 0 ? source_->size() : 0; }
    std::unique_ptr<ShardReader> open_shard(size_t shard, uint32_t shard_id) const override {
        if (shard != 0) return nullptr;
        const unsigned threads = decode_threads();
        return open_stream_shard<Raw64Format>(source_.get(), threads, block_bytes(*source_, threads), path_,
                                              shard_id);
    }
    // A plain file: its size is a multiple of 8 (checked at open), so a range [begin, end)
    // holds the addresses that start there, from the first multiple of 8 at or after begin.
    bool byte_ranges() const override { return source_->seekable() && !source_->zstd(); }
    std::unique_ptr<ShardReader> open_range(uint32_t shard_id, uint64_t begin, uint64_t end) const override {
        if (!byte_ranges()) return nullptr;
        const uint64_t size = source_->size();
        const uint64_t from = address_at_or_after(begin, size);
        const uint64_t to = std::max(from, address_at_or_after(end, size));
        const unsigned threads = decode_threads();
        return open_stream_range<Raw64Format>(source_.get(), threads, block_bytes_for(to - from, threads),
                                              from, to, 0, path_, shard_id);
    }
    uint64_t records_ = UINT64_MAX;
};

}  // namespace

sonde_status_t open_raw64(std::unique_ptr<Source> source, std::unique_ptr<Input> *out, std::string *error) {
    // A plain file's size is checked now; a stream's (zstd, pipe) when its end is reached.
    const bool plain_file = source->seekable() && !source->zstd();
    const uint64_t size = source->size();
    const std::string path = source->path();
    auto in = std::make_unique<Raw64Input>(std::move(source));
    if (plain_file) {
        if (size % 8 != 0) {
            *error = fmt::at(path, size - size % 8,
                             "raw64 size " + std::to_string(size) + " is not a multiple of 8 (" +
                                 std::to_string(size % 8) + " trailing bytes)");
            return SONDE_STATUS_ERROR_FORMAT;
        }
        in->records_ = size / 8;
    }
    *out = std::move(in);
    return SONDE_STATUS_SUCCESS;
}

}  // namespace sonde::trace
