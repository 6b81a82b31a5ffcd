// Raw 64-bit address reader (see raw64.h). Hot path: a copy of 8 bytes into each record.
#include "trace/raw64.h"

#include "trace/trace_format.h"
#include "trace/trace_stream.h"

namespace sonde::trace {

namespace {

constexpr size_t kWindow = 1u << 20;

class Raw64ShardReader final : public ShardReader {
public:
    Raw64ShardReader(const Source *source, uint32_t shard_id) : path_(source->path()), shard_id_(shard_id) {}

    bool start(const Source *source) {
        std::string err;
        const sonde_status_t s = win_.open(source, kWindow, 64, &err);
        if (s != SONDE_STATUS_SUCCESS) {
            status_ = s;
            error_ = err;
            return false;
        }
        return true;
    }

    size_t read(sonde_memref_t *out, size_t max) override {
        if (status_ != SONDE_STATUS_SUCCESS || win_.data() == nullptr) return 0;
        size_t n = 0;
        while (n < max) {
            const size_t pos = win_.pos();
            if (win_.len() - pos < 8) {
                if (win_.eof()) break;
                if (win_.refill()) continue;
                if (win_.status() != SONDE_STATUS_SUCCESS) {
                    status_ = win_.status();
                    error_ = win_.error();
                    return 0;
                }
                const size_t tail = win_.len();  // refill() moved the unconsumed bytes to the front
                if (tail != 0) {
                    status_ = SONDE_STATUS_ERROR_FORMAT;
                    error_ = fmt::at(
                        path_, win_.offset(),
                        "raw64 size is not a multiple of 8 (" + std::to_string(tail) + " trailing bytes)");
                    return 0;
                }
                break;
            }
            const size_t avail = (win_.len() - pos) / 8;
            const size_t k = avail < max - n ? avail : max - n;
            const unsigned char *p = win_.data() + pos;
            for (size_t i = 0; i < k; ++i) {
                sonde_memref_t &m = out[n + i];
                m.address = fmt::load64(p + 8 * i);
                m.pc = 0;
                m.timestamp = 0;
                m.shard = shard_id_;
                m.type = SONDE_MEMREF_READ;
                m.size = 8;
            }
            win_.set_pos(pos + 8 * k);
            n += k;
        }
        return n;
    }

private:
    std::string path_;
    uint32_t shard_id_;
    ByteWindow win_;
};

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
        return shard == 0 && records_ != 0 ? ByteWindow::memory(*source_, kWindow, 64) : 0;
    }
    uint64_t shard_bytes(size_t shard) const override { return shard == 0 ? source_->size() : 0; }
    std::unique_ptr<ShardReader> open_shard(size_t shard, uint32_t shard_id) const override {
        if (shard != 0) return nullptr;
        auto r = std::make_unique<Raw64ShardReader>(source_.get(), shard_id);
        r->start(source_.get());
        return r;
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
