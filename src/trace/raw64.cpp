// Raw 64-bit address reader (see raw64.h). Hot path: a copy of 8 bytes into each record.
#include "trace/raw64.h"

#include "trace/trace_format.h"
#include "trace/trace_stream.h"

namespace sonde::trace {

namespace {

class Raw64ShardReader final : public ShardReader {
public:
    Raw64ShardReader(const std::string &path, uint32_t shard_id) : path_(path), shard_id_(shard_id) {}

    bool start() {
        std::string err;
        const sonde_status_t s = win_.open(path_, 1u << 20, 64, &err);
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

}  // namespace sonde::trace
