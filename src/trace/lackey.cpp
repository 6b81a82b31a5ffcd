// Lackey text reader (see lackey.h). Hot path: parse_() walks the decoded text once with a
// table-driven hex parser; it must not allocate or copy lines.
#include "trace/lackey.h"

#include <cstring>

#include "trace/trace_format.h"
#include "trace/trace_stream.h"

namespace sonde::trace {

namespace {

struct HexTable {
    unsigned char v[256];
    HexTable() {
        std::memset(v, 0xFF, sizeof v);
        for (int c = '0'; c <= '9'; ++c) v[c] = static_cast<unsigned char>(c - '0');
        for (int c = 'a'; c <= 'f'; ++c) v[c] = static_cast<unsigned char>(c - 'a' + 10);
        for (int c = 'A'; c <= 'F'; ++c) v[c] = static_cast<unsigned char>(c - 'A' + 10);
    }
};
const HexTable kHex;

constexpr size_t kBufferSize = 4u << 20;
constexpr size_t kMaxLine = 4096;

class LackeyShardReader final : public ShardReader {
public:
    LackeyShardReader(const Source *source, uint32_t shard_id) : path_(source->path()), shard_id_(shard_id) {}

    bool start(const Source *source) {
        std::string err;
        // kBufferSize, or less for a small file.
        const sonde_status_t s = win_.open(source, kBufferSize, 2 * kMaxLine, &err);
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
            const size_t len = win_.len();
            if (pos == len || (!win_.eof() && std::memchr(win_.data() + pos, '\n', len - pos) == nullptr)) {
                if (win_.eof()) break;
                if (!refill()) {
                    if (status_ != SONDE_STATUS_SUCCESS) return 0;
                    if (win_.pos() == win_.len()) break;
                }
                continue;
            }
            n += parse_(out + n, max - n);
            if (status_ != SONDE_STATUS_SUCCESS) return 0;
        }
        return n;
    }

private:
    // Keeps the unparsed tail (at most one line) and appends decoded text; false at the end.
    bool refill() {
        if (win_.len() - win_.pos() > kMaxLine) {
            fail(win_.offset() + win_.pos(), "line longer than " + std::to_string(kMaxLine) + " bytes");
            return false;
        }
        if (win_.refill()) return true;
        if (win_.status() != SONDE_STATUS_SUCCESS) {
            status_ = win_.status();
            error_ = win_.error();
        }
        return false;
    }

    void fail(uint64_t offset, const std::string &what) {
        status_ = SONDE_STATUS_ERROR_FORMAT;
        error_ =
            fmt::at(path_, offset, what + (win_.compressed() ? " (offset in the decompressed text)" : ""));
    }

    void bad_line(const unsigned char *line, const unsigned char *end) {
        size_t len = 0;
        while (line + len < end && line[len] != '\n' && len < 40) ++len;
        std::string shown;
        for (size_t i = 0; i < len; ++i)
            shown += (line[i] >= 0x20 && line[i] < 0x7F) ? static_cast<char>(line[i]) : '?';
        fail(win_.offset() + static_cast<uint64_t>(line - win_.data()),
             "bad lackey line " + std::to_string(line_ + 1) + ": \"" + shown + "\"");
    }

    // Parses complete lines (and at the end the last unterminated one) into out.
    size_t parse_(sonde_memref_t *out, size_t max) {
        const unsigned char *const base = win_.data();
        const unsigned char *p = base + win_.pos();
        const unsigned char *end = base + win_.len();
        const bool eof = win_.eof();
        size_t n = 0;
        while (n < max && p < end) {
            const unsigned char *nl =
                static_cast<const unsigned char *>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
            if (nl == nullptr) {
                if (!eof) break;
                nl = end;  // the last line has no newline
            }
            const unsigned char *line = p;
            const unsigned char *stop = nl;
            if (stop > line && stop[-1] == '\r') --stop;
            p = nl < end ? nl + 1 : end;
            ++line_;
            const size_t len = static_cast<size_t>(stop - line);
            if (len == 0) continue;
            if (line[0] == '=' && len >= 2 && line[1] == '=') continue;
            uint16_t type;
            if (len >= 4 && line[0] == 'I' && line[1] == ' ' && line[2] == ' ') {
                type = SONDE_MEMREF_IFETCH;
            } else if (len >= 4 && line[0] == ' ' && line[2] == ' ' &&
                       (line[1] == 'L' || line[1] == 'S' || line[1] == 'M')) {
                type = line[1] == 'L'   ? SONDE_MEMREF_READ
                       : line[1] == 'S' ? SONDE_MEMREF_WRITE
                                        : SONDE_MEMREF_MODIFY;
            } else {
                --line_;
                bad_line(line, end);
                return 0;
            }
            const unsigned char *q = line + 3;
            uint64_t addr = 0;
            int digits = 0;
            while (q < stop && kHex.v[*q] != 0xFF) {
                addr = (addr << 4) | kHex.v[*q++];
                ++digits;
            }
            uint32_t size = 0;
            int sdigits = 0;
            bool ok = digits > 0 && digits <= 16 && q < stop && *q == ',';
            if (ok) {
                ++q;
                while (q < stop && *q >= '0' && *q <= '9' && sdigits < 6) {
                    size = size * 10 + static_cast<uint32_t>(*q++ - '0');
                    ++sdigits;
                }
                ok = sdigits > 0 && q == stop && size <= 0xFFFF;
            }
            if (!ok) {
                --line_;
                bad_line(line, end);
                return 0;
            }
            if (type == SONDE_MEMREF_IFETCH) pc_ = addr;
            sonde_memref_t &m = out[n++];
            m.address = addr;
            m.pc = pc_;
            m.timestamp = 0;
            m.shard = shard_id_;
            m.type = type;
            m.size = static_cast<uint16_t>(size);
        }
        win_.set_pos(static_cast<size_t>(p - base));
        return n;
    }

    std::string path_;
    uint32_t shard_id_;
    ByteWindow win_;
    uint64_t line_ = 0;  // lines consumed
    uint64_t pc_ = 0;
};

class LackeyInput final : public Input {
public:
    explicit LackeyInput(std::unique_ptr<Source> source) {
        path_ = source->path();
        format_ = SONDE_TRACE_FORMAT_LACKEY;
        source_ = std::move(source);
    }
    size_t num_shards() const override { return 1; }
    uint64_t shard_records(size_t) const override {
        return source_->seekable() && source_->size() == 0 ? 0 : UINT64_MAX;
    }
    uint64_t shard_memory(size_t shard) const override {
        return shard == 0 ? ByteWindow::memory(*source_, kBufferSize, 2 * kMaxLine) : 0;
    }
    uint64_t shard_bytes(size_t shard) const override { return shard == 0 ? source_->size() : 0; }
    std::unique_ptr<ShardReader> open_shard(size_t shard, uint32_t shard_id) const override {
        if (shard != 0) return nullptr;
        auto r = std::make_unique<LackeyShardReader>(source_.get(), shard_id);
        r->start(source_.get());
        return r;
    }
};

}  // namespace

sonde_status_t open_lackey(std::unique_ptr<Source> source, std::unique_ptr<Input> *out, std::string *) {
    *out = std::make_unique<LackeyInput>(std::move(source));
    return SONDE_STATUS_SUCCESS;
}

}  // namespace sonde::trace
