// Readers: the Sonde trace input (index or recovery scan, per-shard chunk reading), format
// selection for Input::open, and the serial timestamp-interleaved view (see source.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <queue>

#include "trace/drmemtrace.h"
#include "trace/lackey.h"
#include "trace/raw64.h"
#include "trace/source.h"
#include "trace/trace_format.h"
#include "trace/trace_stream.h"

namespace sonde::trace {

namespace {

struct ChunkRef {
    uint64_t offset;
    uint32_t records;
};

// Reads exactly `size` bytes at `offset`; returns bytes read (short at end of file), or -1.
ssize_t pread_full(int fd, void *dst, size_t size, uint64_t offset) {
    size_t done = 0;
    while (done < size) {
        const ssize_t n = ::pread(fd, static_cast<unsigned char *>(dst) + done, size - done,
                                  static_cast<off_t>(offset + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (n == 0) break;
        done += static_cast<size_t>(n);
    }
    return static_cast<ssize_t>(done);
}

class SondeInput final : public Input {
public:
    ~SondeInput() override {
        if (fd_ >= 0) ::close(fd_);
    }

    sonde_status_t open(const std::string &path, std::string *error) {
        path_ = path;
        format_ = SONDE_TRACE_FORMAT_SONDE;
        fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd_ < 0 || ::fstat(fd_, &st) != 0) {
            *error = path + ": cannot open: " + std::strerror(errno);
            return SONDE_STATUS_ERROR_IO;
        }
        size_ = static_cast<uint64_t>(st.st_size);
        unsigned char h[fmt::kHeaderSize];
        const ssize_t got = pread_full(fd_, h, sizeof h, 0);
        if (got < 0) {
            *error = fmt::at(path, 0, std::string("read failed: ") + std::strerror(errno));
            return SONDE_STATUS_ERROR_IO;
        }
        if (got >= 8 && std::memcmp(h, fmt::kFileMagic, 8) != 0) {
            *error = fmt::at(path, 0, "bad magic (not a Sonde trace)");
            return SONDE_STATUS_ERROR_FORMAT;
        }
        if (static_cast<size_t>(got) < fmt::kHeaderSize) {
            *error = fmt::at(path, static_cast<uint64_t>(got),
                             "truncated header (" + std::to_string(got) + " of 64 bytes)");
            return SONDE_STATUS_ERROR_FORMAT;
        }
        if (fmt::load32(h + 8) != fmt::kVersion) {
            *error = fmt::at(path, 8,
                             "unsupported version " + std::to_string(fmt::load32(h + 8)) +
                                 " (this reader knows version 1)");
            return SONDE_STATUS_ERROR_FORMAT;
        }
        if (fmt::load64(h + 56) != fmt::checksum64(h, 56)) {
            *error = fmt::at(path, 56, "header checksum mismatch");
            return SONDE_STATUS_ERROR_FORMAT;
        }
        if (fmt::load32(h + 12) != fmt::kHeaderSize || fmt::load32(h + 16) != fmt::kRecordSize) {
            *error = fmt::at(path, 12, "unsupported header or record size");
            return SONDE_STATUS_ERROR_FORMAT;
        }
        std::string why;
        if (!load_index(&why)) {
            warnings_.push_back(path + ": " + why);
            scan();
        }
        return SONDE_STATUS_SUCCESS;
    }

    size_t num_shards() const override { return shards_.size(); }
    uint64_t shard_records(size_t shard) const override {
        if (shard >= shards_.size()) return 0;
        uint64_t n = 0;
        for (const ChunkRef &c : shards_[shard]) n += c.records;
        return n;
    }
    std::unique_ptr<ShardReader> open_shard(size_t shard, uint32_t shard_id) const override;

    int fd_ = -1;
    uint64_t size_ = 0;
    std::vector<std::vector<ChunkRef>> shards_;

private:
    void add_chunk(uint32_t shard, uint64_t offset, uint32_t records) {
        if (shard >= shards_.size()) shards_.resize(shard + 1);
        shards_[shard].push_back(ChunkRef{offset, records});
    }

    // Reads footer and index; false (with the reason) when either is missing or damaged.
    bool load_index(std::string *why) {
        if (size_ < fmt::kHeaderSize + fmt::kFooterSize) {
            *why = "no footer (the writer did not finish)";
            return false;
        }
        unsigned char f[fmt::kFooterSize];
        const uint64_t foff = size_ - fmt::kFooterSize;
        if (pread_full(fd_, f, sizeof f, foff) != static_cast<ssize_t>(sizeof f) ||
            std::memcmp(f, fmt::kFooterMagic, 8) != 0) {
            *why = "no footer (the writer did not finish)";
            return false;
        }
        if (fmt::load64(f + 24) != fmt::checksum64(f, 24)) {
            *why = "offset " + std::to_string(foff + 24) + ": footer checksum mismatch";
            return false;
        }
        const uint64_t ioff = fmt::load64(f + 8);
        const uint64_t isize = fmt::load64(f + 16);
        if (ioff < fmt::kHeaderSize || isize < fmt::kIndexHeaderSize + 8 || ioff + isize != foff ||
            (isize - fmt::kIndexHeaderSize - 8) % fmt::kIndexEntrySize != 0) {
            *why = "offset " + std::to_string(foff + 8) + ": footer points to an invalid index";
            return false;
        }
        std::vector<unsigned char> idx(isize);
        if (pread_full(fd_, idx.data(), isize, ioff) != static_cast<ssize_t>(isize)) {
            *why = "offset " + std::to_string(ioff) + ": index unreadable";
            return false;
        }
        if (std::memcmp(idx.data(), fmt::kIndexMagic, 8) != 0 ||
            fmt::load64(idx.data() + isize - 8) != fmt::checksum64(idx.data(), isize - 8)) {
            *why = "offset " + std::to_string(ioff) + ": index damaged (magic or checksum)";
            return false;
        }
        const uint32_t nchunks = fmt::load32(idx.data() + 8);
        const uint32_t nshards = fmt::load32(idx.data() + 12);
        if (static_cast<uint64_t>(nchunks) * fmt::kIndexEntrySize != isize - fmt::kIndexHeaderSize - 8 ||
            nshards > fmt::kMaxShard + 1) {
            *why = "offset " + std::to_string(ioff) + ": index counts do not match its size";
            return false;
        }
        shards_.assign(nshards, {});
        for (uint32_t i = 0; i < nchunks; ++i) {
            const unsigned char *e = idx.data() + fmt::kIndexHeaderSize + i * fmt::kIndexEntrySize;
            const uint64_t off = fmt::load64(e);
            const uint32_t shard = fmt::load32(e + 8);
            const uint32_t recs = fmt::load32(e + 12);
            if (off < fmt::kHeaderSize || off + fmt::kChunkHeaderSize > ioff || shard >= nshards ||
                recs == 0 || recs > fmt::kMaxChunkRecords) {
                shards_.clear();
                *why = "offset " + std::to_string(ioff + fmt::kIndexHeaderSize + i * fmt::kIndexEntrySize) +
                       ": invalid index entry " + std::to_string(i);
                return false;
            }
            shards_[shard].push_back(ChunkRef{off, recs});
        }
        return true;
    }

    // Recovery: walks the chunks from the header on, keeping every complete, intact chunk.
    void scan() {
        uint64_t off = fmt::kHeaderSize;
        uint64_t chunks = 0, records = 0;
        std::string stop;
        std::vector<unsigned char> payload;
        while (off < size_) {
            unsigned char hb[fmt::kChunkHeaderSize];
            const ssize_t got = pread_full(fd_, hb, sizeof hb, off);
            if (got >= 8 && std::memcmp(hb, fmt::kIndexMagic, 8) == 0) {
                stop = "stopped at the incomplete index at offset " + std::to_string(off);
                break;
            }
            if (got != static_cast<ssize_t>(sizeof hb)) {
                stop = "truncated chunk header at offset " + std::to_string(off) + " (" +
                       std::to_string(size_ - off) + " trailing bytes ignored)";
                break;
            }
            fmt::ChunkHeader ch;
            const std::string bad = fmt::decode_chunk_header(hb, &ch);
            if (!bad.empty()) {
                stop = "stopped at offset " + std::to_string(off) + ": " + bad;
                break;
            }
            const uint64_t pend = off + fmt::kChunkHeaderSize + ch.compressed_size;
            if (pend > size_) {
                stop = "truncated chunk at offset " + std::to_string(off) + " (" +
                       std::to_string(size_ - off) + " of " + std::to_string(pend - off) + " bytes)";
                break;
            }
            payload.resize(ch.compressed_size);
            if (pread_full(fd_, payload.data(), payload.size(), off + fmt::kChunkHeaderSize) !=
                    static_cast<ssize_t>(payload.size()) ||
                fmt::checksum64(payload.data(), payload.size()) != ch.payload_checksum) {
                stop = "stopped at offset " + std::to_string(off + fmt::kChunkHeaderSize) +
                       ": chunk payload checksum mismatch";
                break;
            }
            add_chunk(ch.shard, off, ch.records);
            ++chunks;
            records += ch.records;
            off = pend;
        }
        warnings_.push_back(path_ + ": recovered " + std::to_string(chunks) + " complete chunks (" +
                            std::to_string(records) + " records) by scanning" +
                            (stop.empty() ? std::string() : "; " + stop));
    }
};

// Reads one shard's chunks in file order. Cost per chunk: one pread, a checksum over the
// compressed bytes and one zstd decompression into a reused buffer; per record, one pass of
// column decoding straight into the caller's array (no intermediate copy, no allocation).
class SondeShardReader final : public ShardReader {
public:
    SondeShardReader(const SondeInput *in, const std::vector<ChunkRef> *chunks, uint32_t shard, uint32_t id)
        : in_(in), chunks_(chunks), shard_(shard), id_(id) {}
    ~SondeShardReader() override {
        if (dctx_ != nullptr) ZSTD_freeDCtx(dctx_);
    }

    size_t read(sonde_memref_t *out, size_t max) override {
        if (status_ != SONDE_STATUS_SUCCESS) return 0;
        size_t n = 0;
        while (n < max) {
            if (pos_ == count_) {
                if (next_ == chunks_->size() || !load(chunks_->at(next_++))) break;
            }
            const size_t k = std::min(count_ - pos_, max - n);
            fmt::decode_columns(payload_.get(), count_, pos_, k, id_, state_, out + n);
            pos_ += k;
            n += k;
        }
        return status_ == SONDE_STATUS_SUCCESS ? n : 0;
    }

private:
    bool fail(uint64_t offset, const std::string &what) {
        status_ = SONDE_STATUS_ERROR_FORMAT;
        error_ = fmt::at(in_->path(), offset, what);
        return false;
    }

    bool load(const ChunkRef &c) {
        unsigned char hb[fmt::kChunkHeaderSize];
        const ssize_t got = pread_full(in_->fd_, hb, sizeof hb, c.offset);
        if (got < 0) {
            status_ = SONDE_STATUS_ERROR_IO;
            error_ = fmt::at(in_->path(), c.offset, std::string("read failed: ") + std::strerror(errno));
            return false;
        }
        if (got != static_cast<ssize_t>(sizeof hb))
            return fail(c.offset, "truncated chunk header (" + std::to_string(got) + " of 48 bytes)");
        fmt::ChunkHeader h;
        const std::string bad = fmt::decode_chunk_header(hb, &h);
        if (!bad.empty()) return fail(c.offset, bad);
        if (h.shard != shard_ || h.records != c.records)
            return fail(c.offset, "chunk header does not match the index (shard " + std::to_string(h.shard) +
                                      ", " + std::to_string(h.records) + " records)");
        cbuf_.resize(h.compressed_size);
        const uint64_t poff = c.offset + fmt::kChunkHeaderSize;
        const ssize_t pgot = pread_full(in_->fd_, cbuf_.data(), cbuf_.size(), poff);
        if (pgot < 0) {
            status_ = SONDE_STATUS_ERROR_IO;
            error_ = fmt::at(in_->path(), poff, std::string("read failed: ") + std::strerror(errno));
            return false;
        }
        if (static_cast<size_t>(pgot) != cbuf_.size())
            return fail(poff, "truncated chunk (" + std::to_string(pgot) + " of " +
                                  std::to_string(cbuf_.size()) + " payload bytes)");
        if (fmt::checksum64(cbuf_.data(), cbuf_.size()) != h.payload_checksum)
            return fail(poff, "chunk payload checksum mismatch");
        if (dctx_ == nullptr) {
            dctx_ = ZSTD_createDCtx();
            if (dctx_ == nullptr) throw std::bad_alloc();
        }
        const size_t want = static_cast<size_t>(h.records) * fmt::kRecordSize;
        if (payload_cap_ < want) {
            payload_.reset(new unsigned char[want]);
            payload_cap_ = want;
        }
        const size_t r = ZSTD_decompressDCtx(dctx_, payload_.get(), want, cbuf_.data(), cbuf_.size());
        if (ZSTD_isError(r)) return fail(poff, std::string("zstd: ") + ZSTD_getErrorName(r));
        if (r != want)
            return fail(poff, "chunk decompresses to " + std::to_string(r) + " bytes, expected " +
                                  std::to_string(want));
        pos_ = 0;
        count_ = h.records;
        state_[0] = state_[1] = state_[2] = 0;
        return true;
    }

    const SondeInput *in_;
    const std::vector<ChunkRef> *chunks_;
    uint32_t shard_;
    uint32_t id_;
    size_t next_ = 0;
    size_t pos_ = 0;
    size_t count_ = 0;
    std::unique_ptr<unsigned char[]> payload_;  // decompressed column payload, not zero-filled
    size_t payload_cap_ = 0;
    uint64_t state_[3] = {0, 0, 0};  // running address, pc, timestamp
    std::vector<unsigned char> cbuf_;
    ZSTD_DCtx *dctx_ = nullptr;
};

std::unique_ptr<ShardReader> SondeInput::open_shard(size_t shard, uint32_t shard_id) const {
    if (shard >= shards_.size()) return nullptr;
    return std::make_unique<SondeShardReader>(this, &shards_[shard], static_cast<uint32_t>(shard), shard_id);
}

bool ends_with(const std::string &s, const std::string &suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// AUTO: magic first, then extension, then a look at the first decoded bytes.
sonde_status_t detect(const std::string &path, uint32_t *format, std::string *error) {
    ByteStream probe;
    const sonde_status_t s = probe.open(path, error);
    if (s != SONDE_STATUS_SUCCESS) return s;
    unsigned char head[64];
    size_t n = 0;
    while (n < sizeof head) {
        const size_t got = probe.fill(head + n, sizeof head - n);
        if (got == 0) break;
        n += got;
    }
    if (!probe.compressed() && n >= 8 && std::memcmp(head, fmt::kFileMagic, 8) == 0) {
        *format = SONDE_TRACE_FORMAT_SONDE;
        return SONDE_STATUS_SUCCESS;
    }
    std::string base = path;
    if (ends_with(base, ".zst")) base.resize(base.size() - 4);
    if (ends_with(base, ".sonde")) {
        *format = SONDE_TRACE_FORMAT_SONDE;
        return SONDE_STATUS_SUCCESS;
    }
    if (ends_with(base, ".lackey") || ends_with(base, ".txt") || ends_with(base, ".log")) {
        *format = SONDE_TRACE_FORMAT_LACKEY;
        return SONDE_STATUS_SUCCESS;
    }
    if (ends_with(base, ".raw64") || ends_with(base, ".raw") || ends_with(base, ".l64") ||
        ends_with(base, ".bin")) {
        *format = SONDE_TRACE_FORMAT_RAW64;
        return SONDE_STATUS_SUCCESS;
    }
    if (n >= 3 &&
        ((head[0] == '=' && head[1] == '=') || (head[0] == 'I' && head[1] == ' ' && head[2] == ' ') ||
         (head[0] == ' ' && (head[1] == 'L' || head[1] == 'S' || head[1] == 'M') && head[2] == ' '))) {
        *format = SONDE_TRACE_FORMAT_LACKEY;
        return SONDE_STATUS_SUCCESS;
    }
    *error =
        fmt::at(path, 0, "cannot tell the format (no Sonde magic, unknown extension); name it explicitly");
    return SONDE_STATUS_ERROR_FORMAT;
}

}  // namespace

sonde_status_t Input::open(const std::string &path, uint32_t format, std::unique_ptr<Input> *out,
                           std::string *error) {
    out->reset();
    error->clear();
    if (format > SONDE_TRACE_FORMAT_DRMEMTRACE) {
        *error = path + ": unknown format value " + std::to_string(format);
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (format == SONDE_TRACE_FORMAT_AUTO && drmemtrace_claims(path)) format = SONDE_TRACE_FORMAT_DRMEMTRACE;
    if (format == SONDE_TRACE_FORMAT_AUTO) {
        const sonde_status_t s = detect(path, &format, error);
        if (s != SONDE_STATUS_SUCCESS) return s;
    }
    if (format == SONDE_TRACE_FORMAT_DRMEMTRACE) return open_drmemtrace(path, out, error);
    if (format == SONDE_TRACE_FORMAT_LACKEY) return open_lackey(path, out, error);
    if (format == SONDE_TRACE_FORMAT_RAW64) return open_raw64(path, out, error);
    auto in = std::make_unique<SondeInput>();
    const sonde_status_t s = in->open(path, error);
    if (s != SONDE_STATUS_SUCCESS) return s;
    *out = std::move(in);
    return SONDE_STATUS_SUCCESS;
}

// ---- serial view ----

namespace {
constexpr size_t kSerialBatch = 4096;
}

struct SerialReader::Impl {
    struct Shard {
        std::unique_ptr<ShardReader> reader;
        std::unique_ptr<sonde_memref_t[]> buf;  // kSerialBatch records, not zero-filled
        size_t pos = 0;
        size_t len = 0;
        uint64_t last_ts = 0;
        bool done = false;
    };
    std::vector<Shard> shards;
    std::vector<uint32_t> bases;
    bool markers = false;
    bool started = false;
    // Min-heap of (effective timestamp of next record, global shard).
    using Key = std::pair<uint64_t, uint32_t>;
    std::priority_queue<Key, std::vector<Key>, std::greater<Key>> heap;
    int64_t current = -1;
    int64_t last_emitted = -1;
};

SerialReader::SerialReader(const std::vector<const Input *> &inputs, bool thread_switch_markers)
    : impl_(std::make_unique<Impl>()) {
    impl_->markers = thread_switch_markers;
    uint32_t base = 0;
    for (const Input *in : inputs) {
        impl_->bases.push_back(base);
        for (size_t s = 0; s < in->num_shards(); ++s) {
            Impl::Shard sh;
            sh.reader = in->open_shard(s, base + static_cast<uint32_t>(s));
            impl_->shards.push_back(std::move(sh));
        }
        base += static_cast<uint32_t>(in->num_shards());
    }
}

SerialReader::~SerialReader() = default;

size_t SerialReader::num_shards() const { return impl_->shards.size(); }

uint32_t SerialReader::shard_base(size_t input) const {
    return input < impl_->bases.size() ? impl_->bases[input] : static_cast<uint32_t>(impl_->shards.size());
}

size_t SerialReader::read(sonde_memref_t *out, size_t max) {
    if (status_ != SONDE_STATUS_SUCCESS) return 0;
    Impl &im = *impl_;
    // Makes sure shard i has a buffered record; false when it is finished (or failed).
    auto ready = [&](uint32_t i) -> bool {
        Impl::Shard &sh = im.shards[i];
        if (sh.pos < sh.len) return true;
        if (sh.done) return false;
        if (!sh.buf) sh.buf.reset(new sonde_memref_t[kSerialBatch]);
        sh.len = sh.reader->read(sh.buf.get(), kSerialBatch);
        sh.pos = 0;
        if (sh.len == 0) {
            sh.done = true;
            if (sh.reader->status() != SONDE_STATUS_SUCCESS) {
                status_ = sh.reader->status();
                error_ = sh.reader->error();
            }
            return false;
        }
        return true;
    };
    auto next_ts = [&](uint32_t i) -> uint64_t {
        const Impl::Shard &sh = im.shards[i];
        const uint64_t t = sh.buf[sh.pos].timestamp;
        return t != 0 ? t : sh.last_ts;
    };
    if (!im.started) {
        im.started = true;
        for (uint32_t i = 0; i < im.shards.size(); ++i) {
            if (ready(i)) im.heap.emplace(next_ts(i), i);
            if (status_ != SONDE_STATUS_SUCCESS) return 0;
        }
    }
    size_t n = 0;
    while (n < max) {
        if (im.current < 0) {
            if (im.heap.empty()) break;
            im.current = im.heap.top().second;
            im.heap.pop();
        }
        const uint32_t cur = static_cast<uint32_t>(im.current);
        Impl::Shard &sh = im.shards[cur];
        if (im.markers && im.last_emitted != im.current) {
            sonde_memref_t &m = out[n++];
            m.address = sh.buf[sh.pos].shard;
            m.pc = 0;
            m.timestamp = next_ts(cur);
            m.shard = sh.buf[sh.pos].shard;
            m.type = SONDE_MEMREF_MARKER;
            m.size = SONDE_MARKER_THREAD_SWITCH;
            im.last_emitted = im.current;
            continue;
        }
        const uint64_t bound = im.heap.empty() ? UINT64_MAX : im.heap.top().first;
        // Run of the current shard while it is not later than every other shard.
        while (n < max && sh.pos < sh.len) {
            const sonde_memref_t &r = sh.buf[sh.pos];
            const uint64_t t = r.timestamp != 0 ? r.timestamp : sh.last_ts;
            if (t > bound) break;
            sh.last_ts = t;
            out[n++] = r;
            ++sh.pos;
        }
        im.last_emitted = im.current;
        if (n == max && sh.pos < sh.len) break;
        if (!ready(cur)) {
            if (status_ != SONDE_STATUS_SUCCESS) return 0;
            im.current = -1;
            continue;
        }
        const uint64_t t = next_ts(cur);
        if (t > bound) {
            im.heap.emplace(t, cur);
            im.current = -1;
        }
    }
    return n;
}

}  // namespace sonde::trace
