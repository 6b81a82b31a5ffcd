// Raw 64-bit address reader (see raw64.h). Hot path: a copy of 8 bytes into each record.
#include "trace/raw64.h"

#include <cstring>

#include "trace/trace_format.h"
#include "trace/trace_stream.h"

namespace sonde::analysis {

namespace {

class Raw64ShardReader final : public ShardReader {
public:
    Raw64ShardReader(const std::string &path, uint32_t shard_id) : path_(path), shard_id_(shard_id) {}

    bool start() {
        std::string err;
        const sonde_status_t s = stream_.open(path_, &err);
        if (s != SONDE_STATUS_SUCCESS) {
            status_ = s;
            error_ = err;
            return false;
        }
        const uint64_t guess = stream_.file_size() * (stream_.compressed() ? 32 : 1) + 64;
        cap_ = guess < (1u << 20) ? static_cast<size_t>(guess) : (1u << 20);
        buf_.reset(new unsigned char[cap_]);
        return true;
    }

    size_t read(sonde_memref_t *out, size_t max) override {
        if (status_ != SONDE_STATUS_SUCCESS || !buf_) return 0;
        size_t n = 0;
        while (n < max) {
            if (len_ - pos_ < 8) {
                if (eof_) break;
                const size_t tail = len_ - pos_;
                std::memmove(buf_.get(), buf_.get() + pos_, tail);
                offset_ += pos_;
                pos_ = 0;
                len_ = tail;
                const size_t got = stream_.fill(buf_.get() + len_, cap_ - len_);
                if (got == 0) {
                    if (stream_.status() != SONDE_STATUS_SUCCESS) {
                        status_ = stream_.status();
                        error_ = stream_.error();
                        return 0;
                    }
                    eof_ = true;
                    if (tail != 0) {
                        status_ = SONDE_STATUS_ERROR_FORMAT;
                        error_ = fmt::at(path_, offset_,
                                         "raw64 size is not a multiple of 8 (" + std::to_string(tail) +
                                             " trailing bytes)");
                        return 0;
                    }
                    break;
                }
                len_ += got;
                continue;
            }
            const size_t avail = (len_ - pos_) / 8;
            const size_t k = avail < max - n ? avail : max - n;
            const unsigned char *p = buf_.get() + pos_;
            for (size_t i = 0; i < k; ++i) {
                sonde_memref_t &m = out[n + i];
                m.address = fmt::load64(p + 8 * i);
                m.pc = 0;
                m.timestamp = 0;
                m.shard = shard_id_;
                m.type = SONDE_MEMREF_READ;
                m.size = 8;
            }
            pos_ += 8 * k;
            n += k;
        }
        return n;
    }

private:
    std::string path_;
    uint32_t shard_id_;
    ByteStream stream_;
    std::unique_ptr<unsigned char[]> buf_;  // not zero-filled
    size_t cap_ = 0;
    size_t pos_ = 0;
    size_t len_ = 0;
    uint64_t offset_ = 0;
    bool eof_ = false;
};

class Raw64Input final : public Input {
public:
    explicit Raw64Input(const std::string &path) {
        path_ = path;
        format_ = SONDE_TRACE_FORMAT_RAW64;
    }
    size_t num_shards() const override { return 1; }
    uint64_t shard_records(size_t) const override { return records_; }
    std::unique_ptr<ShardReader> open_shard(size_t shard, uint32_t shard_id) const override {
        if (shard != 0) return nullptr;
        auto r = std::make_unique<Raw64ShardReader>(path_, shard_id);
        r->start();
        return r;
    }
    uint64_t records_ = UINT64_MAX;
};

}  // namespace

sonde_status_t open_raw64(const std::string &path, std::unique_ptr<Input> *out, std::string *error) {
    ByteStream probe;
    const sonde_status_t s = probe.open(path, error);
    if (s != SONDE_STATUS_SUCCESS) return s;
    auto in = std::make_unique<Raw64Input>(path);
    if (!probe.compressed()) {
        const uint64_t size = probe.file_size();
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

}  // namespace sonde::analysis
