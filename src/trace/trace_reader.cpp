// Readers: the Sonde trace input (index or recovery scan, per-shard chunk reading), format
// selection for Input::open, and the serial timestamp-interleaved view (see source.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <queue>

#include "core/stream_copy.h"
#include "trace/block_decode.h"
#include "trace/drmemtrace.h"
#include "trace/lackey.h"
#include "trace/raw64.h"
#include "trace/source.h"
#include "trace/trace_format.h"
#include "trace/trace_stream.h"

namespace sonde::trace {

namespace {

// One chunk of a shard: where it is, how far it may extend (the next chunk in file order, or
// the index), its record count, and the index entries of it and of what follows it.
struct ChunkRef {
    uint64_t offset;
    uint64_t end;  // first byte after the largest extent the chunk may have
    uint32_t records;
    uint32_t entry;         // its index entry, kNoEntry for a chunk found by the recovery scan
    uint32_t next;          // the index entry of the chunk at `end`, kNoEntry when `end` is the index
    uint64_t first_ts = 0;  // event chunks: the time range of their events
    uint64_t last_ts = 0;
};

// A table block (methods, modules, threads, strings) of a 1.1 trace.
struct TableRef {
    uint64_t offset;
    uint32_t type;
    uint32_t count;
};
constexpr uint32_t kNoEntry = UINT32_MAX;

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
    explicit SondeInput(std::unique_ptr<Source> source) {
        path_ = source->path();
        format_ = SONDE_TRACE_FORMAT_SONDE;
        source_ = std::move(source);
    }

    sonde_status_t open(std::string *error) {
        const std::string &path = path_;
        // A pipe or FIFO: its index is at its end, so the stream is copied to a temporary file
        // as it arrives (read once), then read from there.
        if (!source_->seekable()) {
            const sonde_status_t st = source_->spool(error);
            if (st != SONDE_STATUS_SUCCESS) return st;
        }
        fd_ = source_->fd();
        size_ = source_->size();
        if (size_ == 0) {
            *error = fmt::at(path, 0,
                             "empty file (0 bytes, no records): a Sonde trace starts with a 64-byte header");
            return SONDE_STATUS_ERROR_FORMAT;
        }
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
        minor_ = fmt::load32(h + 28);
        std::string why;
        const int index = load_index(&why, error);
        if (index < 0) return SONDE_STATUS_ERROR_FORMAT;
        if (index == 0) {
            warnings_.push_back(path + ": " + why);
            complete_ = false;
            shards_.clear();
            event_shards_.clear();
            table_refs_.clear();
            scan();
        }
        load_tables();
        return SONDE_STATUS_SUCCESS;
    }

    size_t num_event_shards() const override { return event_shards_.size(); }
    uint64_t event_shard_events(size_t shard) const override {
        if (shard >= event_shards_.size()) return 0;
        uint64_t n = 0;
        for (const ChunkRef &c : event_shards_[shard]) n += c.records;
        return n;
    }
    std::unique_ptr<EventReader> open_event_shard(size_t shard) const override;
    void event_time_range(uint64_t *first, uint64_t *last) const override {
        *first = *last = 0;
        bool any = false;
        for (const auto &sh : event_shards_)
            for (const ChunkRef &c : sh) {
                if (!any || c.first_ts < *first) *first = c.first_ts;
                if (!any || c.last_ts > *last) *last = c.last_ts;
                any = true;
            }
    }
    std::vector<std::vector<ChunkRef>> event_shards_;

    size_t num_shards() const override { return shards_.size(); }
    uint64_t shard_records(size_t shard) const override {
        if (shard >= shards_.size()) return 0;
        uint64_t n = 0;
        for (const ChunkRef &c : shards_[shard]) n += c.records;
        return n;
    }
    uint64_t shard_bytes(size_t shard) const override {
        if (shard >= shards_.size()) return 0;
        uint64_t n = 0;
        for (const ChunkRef &c : shards_[shard]) n += c.end - c.offset;
        return n;
    }
    // The header's minor version (which record kinds the chunks may hold).
    uint32_t minor() const { return minor_; }
    uint64_t shard_memory(size_t shard) const override {
        if (shard >= shards_.size()) return 0;
        // The decoded columns of its largest chunk and that chunk's compressed bytes (held
        // together while it decompresses); with decode threads, that for every thread (the
        // buffers are lent to a decoding thread, SondeChunkJobs) and the chunk's records for
        // every block in flight.
        uint64_t m = 0;
        for (const ChunkRef &c : shards_[shard])
            m = std::max<uint64_t>(m, uint64_t(c.records) * fmt::kRecordSize + (c.end - c.offset));
        const unsigned threads = decode_threads();
        if (threads > 1 && shards_[shard].size() > 1) {
            uint64_t largest = 0;
            for (const ChunkRef &c : shards_[shard]) largest = std::max<uint64_t>(largest, c.records);
            m = threads * m + BlockDecoder::slots(threads) * largest * sizeof(sonde_memref_t);
        }
        return m;
    }
    std::unique_ptr<ShardReader> open_shard(size_t shard, uint32_t shard_id) const override;
    size_t shard_pieces(size_t shard) const override {
        return shard < shards_.size() ? std::max<size_t>(1, shards_[shard].size()) : 1;
    }
    std::unique_ptr<ShardReader> open_shard_piece(size_t shard, uint32_t shard_id, size_t piece,
                                                  size_t pieces) const override;

    // "FILE: offset N: index entry K: what" for index entry k.
    std::string entry_error(uint32_t k, const std::string &what) const {
        return fmt::at(path_, index_offset_ + fmt::kIndexHeaderSize + uint64_t(k) * fmt::kIndexEntrySize,
                       "index entry " + std::to_string(k) + ": " + what);
    }

    int fd_ = -1;
    uint64_t size_ = 0;
    uint64_t index_offset_ = 0;
    std::vector<std::vector<ChunkRef>> shards_;

private:
    void add_event_chunk(uint32_t shard, uint64_t offset, uint64_t end, uint32_t records, uint64_t first,
                         uint64_t last) {
        if (shard >= event_shards_.size()) event_shards_.resize(shard + 1);
        event_shards_[shard].push_back(ChunkRef{offset, end, records, kNoEntry, kNoEntry, first, last});
    }

    // The extension index of a 1.1 trace (event chunks and tables), ending before `limit`.
    bool load_ext_index(uint64_t off, uint64_t limit, std::string *why) {
        unsigned char hx[fmt::kExtIndexHeaderSize];
        if (off < fmt::kHeaderSize || off + sizeof hx > limit ||
            pread_full(fd_, hx, sizeof hx, off) != static_cast<ssize_t>(sizeof hx) ||
            std::memcmp(hx, fmt::kExtIndexMagic, 8) != 0) {
            *why = "offset " + std::to_string(off) + ": extension index missing or damaged";
            return false;
        }
        const uint32_t nev = fmt::load32(hx + 8);
        const uint32_t nshards = fmt::load32(hx + 12);
        const uint32_t ntab = fmt::load32(hx + 16);
        const uint64_t size = fmt::kExtIndexHeaderSize + uint64_t{nev} * fmt::kIndexEntrySize +
                              uint64_t{ntab} * fmt::kExtTableEntrySize + 8;
        if (nshards > fmt::kMaxShard + 1 || off + size > limit) {
            *why = "offset " + std::to_string(off) + ": extension index counts out of range";
            return false;
        }
        std::vector<unsigned char> x(size);
        if (pread_full(fd_, x.data(), size, off) != static_cast<ssize_t>(size) ||
            fmt::load64(x.data() + size - 8) != fmt::checksum64(x.data(), size - 8)) {
            *why = "offset " + std::to_string(off) + ": extension index checksum mismatch";
            return false;
        }
        event_shards_.assign(nshards, {});
        const unsigned char *q = x.data() + fmt::kExtIndexHeaderSize;
        for (uint32_t i = 0; i < nev; ++i, q += fmt::kIndexEntrySize) {
            const uint64_t eoff = fmt::load64(q);
            const uint32_t shard = fmt::load32(q + 8);
            const uint32_t recs = fmt::load32(q + 12);
            if (eoff < fmt::kHeaderSize || eoff + fmt::kChunkHeaderSize > off || shard >= nshards ||
                recs == 0 || recs > fmt::kMaxChunkRecords) {
                *why = "offset " + std::to_string(off) + ": invalid event index entry " + std::to_string(i);
                return false;
            }
            event_shards_[shard].push_back(
                ChunkRef{eoff, off, recs, kNoEntry, kNoEntry, fmt::load64(q + 16), fmt::load64(q + 24)});
        }
        for (uint32_t i = 0; i < ntab; ++i, q += fmt::kExtTableEntrySize) {
            const uint64_t toff = fmt::load64(q);
            if (toff < fmt::kHeaderSize || toff + fmt::kChunkHeaderSize > off) {
                *why = "offset " + std::to_string(off) + ": invalid table index entry " + std::to_string(i);
                return false;
            }
            table_refs_.push_back(TableRef{toff, fmt::load32(q + 8), fmt::load32(q + 12)});
        }
        return true;
    }

    // Reads every table block and applies it; a damaged one is skipped with a warning.
    void load_tables() {
        std::vector<unsigned char> comp, raw;
        for (const TableRef &t : table_refs_) {
            unsigned char hb[fmt::kChunkHeaderSize];
            fmt::ChunkHeader h;
            std::string bad;
            if (pread_full(fd_, hb, sizeof hb, t.offset) != static_cast<ssize_t>(sizeof hb))
                bad = "truncated table header";
            else
                bad = fmt::decode_block_header(hb, &h);
            if (bad.empty() && h.magic != fmt::kTableMagic) bad = "not a table block";
            if (bad.empty()) {
                comp.resize(h.compressed_size);
                raw.resize(static_cast<size_t>(h.first_ts));
                const uint64_t poff = t.offset + fmt::kChunkHeaderSize;
                if (pread_full(fd_, comp.data(), comp.size(), poff) != static_cast<ssize_t>(comp.size()))
                    bad = "truncated table";
                else if (fmt::checksum64(comp.data(), comp.size()) != h.payload_checksum)
                    bad = "table payload checksum mismatch";
                else {
                    const size_t r = ZSTD_decompress(raw.data(), raw.size(), comp.data(), comp.size());
                    fmt::throw_if_zstd_out_of_memory(r);
                    if (ZSTD_isError(r) || r != raw.size())
                        bad = "table does not decompress to its size";
                    else
                        bad = tables_.apply(h.shard, h.records, raw.data(), raw.size());
                }
            }
            if (!bad.empty()) warnings_.push_back(fmt::at(path_, t.offset, bad + " (table skipped)"));
        }
        tables_.link();
    }

    uint32_t minor_ = 0;
    std::vector<TableRef> table_refs_;

public:
    // The index and extension index of a complete trace as they stand (AppendPoint); false
    // with *error when they cannot be read again.
    bool append_point(AppendPoint *out, std::string *error) const {
        unsigned char h[fmt::kHeaderSize], f[fmt::kFooterSize];
        if (pread_full(fd_, h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) ||
            pread_full(fd_, f, sizeof f, size_ - fmt::kFooterSize) != static_cast<ssize_t>(sizeof f)) {
            *error = path_ + ": cannot read its header and footer again";
            return false;
        }
        out->minor = minor_;
        out->chunk_records = fmt::load32(h + 24);
        const uint64_t isize = fmt::load64(f + 16);
        std::vector<unsigned char> idx(isize);
        if (pread_full(fd_, idx.data(), isize, index_offset_) != static_cast<ssize_t>(isize)) {
            *error = fmt::at(path_, index_offset_, "cannot read the index again");
            return false;
        }
        out->num_shards = fmt::load32(idx.data() + 12);
        const uint32_t nchunks = fmt::load32(idx.data() + 8);
        auto chunk_at = [](const unsigned char *e) {
            return AppendPoint::Chunk{fmt::load64(e), fmt::load32(e + 8), fmt::load32(e + 12),
                                      fmt::load64(e + 16), fmt::load64(e + 24)};
        };
        for (uint32_t k = 0; k < nchunks; ++k)
            out->chunks.push_back(
                chunk_at(idx.data() + fmt::kIndexHeaderSize + uint64_t(k) * fmt::kIndexEntrySize));
        const uint64_t ext = fmt::load64(idx.data() + 16);
        out->resume_offset = ext != 0 ? ext : index_offset_;
        if (ext != 0) {
            const uint64_t xsize = index_offset_ - ext;
            std::vector<unsigned char> x(xsize);
            if (xsize < fmt::kExtIndexHeaderSize ||
                pread_full(fd_, x.data(), xsize, ext) != static_cast<ssize_t>(xsize)) {
                *error = fmt::at(path_, ext, "cannot read the extension index again");
                return false;
            }
            const uint32_t nev = fmt::load32(x.data() + 8), ntab = fmt::load32(x.data() + 16);
            out->num_event_shards = fmt::load32(x.data() + 12);
            const unsigned char *q = x.data() + fmt::kExtIndexHeaderSize;
            for (uint32_t i = 0; i < nev; ++i, q += fmt::kIndexEntrySize)
                out->event_chunks.push_back(chunk_at(q));
            for (uint32_t i = 0; i < ntab; ++i, q += fmt::kExtTableEntrySize)
                out->tables.push_back(
                    AppendPoint::Table{fmt::load64(q), fmt::load32(q + 8), fmt::load32(q + 12)});
        }
        out->strings = tables_.strings;
        return true;
    }

private:
    // Reads footer and index: 1 when valid; 0 (with the reason in *why) when either is missing
    // or damaged, so that the chunks are recovered by scanning; -1 (with *error set) when the
    // index is intact (its checksum holds) but contradicts itself: its entries must be
    // distinct, non-overlapping chunks between the header and the index, each shard's in file
    // order (docs/trace-format.md, "Index").
    int load_index(std::string *why, std::string *error) {
        if (size_ < fmt::kHeaderSize + fmt::kFooterSize) {
            *why = "no footer (the writer did not finish)";
            return 0;
        }
        unsigned char f[fmt::kFooterSize];
        const uint64_t foff = size_ - fmt::kFooterSize;
        if (pread_full(fd_, f, sizeof f, foff) != static_cast<ssize_t>(sizeof f) ||
            std::memcmp(f, fmt::kFooterMagic, 8) != 0) {
            *why = "no footer (the writer did not finish)";
            return 0;
        }
        if (fmt::load64(f + 24) != fmt::checksum64(f, 24)) {
            *why = "offset " + std::to_string(foff + 24) + ": footer checksum mismatch";
            return 0;
        }
        const uint64_t ioff = fmt::load64(f + 8);
        const uint64_t isize = fmt::load64(f + 16);
        if (ioff < fmt::kHeaderSize || isize < fmt::kIndexHeaderSize + 8 || isize > foff ||
            ioff != foff - isize || (isize - fmt::kIndexHeaderSize - 8) % fmt::kIndexEntrySize != 0) {
            *why = "offset " + std::to_string(foff + 8) + ": footer points to an invalid index";
            return 0;
        }
        std::vector<unsigned char> idx(isize);
        if (pread_full(fd_, idx.data(), isize, ioff) != static_cast<ssize_t>(isize)) {
            *why = "offset " + std::to_string(ioff) + ": index unreadable";
            return 0;
        }
        if (std::memcmp(idx.data(), fmt::kIndexMagic, 8) != 0 ||
            fmt::load64(idx.data() + isize - 8) != fmt::checksum64(idx.data(), isize - 8)) {
            *why = "offset " + std::to_string(ioff) + ": index damaged (magic or checksum)";
            return 0;
        }
        index_offset_ = ioff;
        const uint32_t nchunks = fmt::load32(idx.data() + 8);
        const uint32_t nshards = fmt::load32(idx.data() + 12);
        if (static_cast<uint64_t>(nchunks) * fmt::kIndexEntrySize != isize - fmt::kIndexHeaderSize - 8) {
            *error = fmt::at(path_, ioff + 8,
                             "index declares " + std::to_string(nchunks) + " chunks but holds " +
                                 std::to_string((isize - fmt::kIndexHeaderSize - 8) / fmt::kIndexEntrySize));
            return -1;
        }
        if (nshards > fmt::kMaxShard + 1) {
            *error = fmt::at(path_, ioff + 12,
                             "index declares " + std::to_string(nshards) + " shards (at most 65536)");
            return -1;
        }
        // The smallest chunk: its header and one byte of payload.
        constexpr uint64_t kMinChunk = fmt::kChunkHeaderSize + 1;
        struct Entry {
            uint64_t offset;
            uint32_t shard, records, k;
        };
        std::vector<Entry> entries(nchunks);
        for (uint32_t k = 0; k < nchunks; ++k) {
            const unsigned char *e = idx.data() + fmt::kIndexHeaderSize + uint64_t(k) * fmt::kIndexEntrySize;
            Entry &en = entries[k];
            en = Entry{fmt::load64(e), fmt::load32(e + 8), fmt::load32(e + 12), k};
            if (en.offset < fmt::kHeaderSize || en.offset >= ioff || ioff - en.offset < kMinChunk) {
                *error =
                    entry_error(k, "chunk offset " + std::to_string(en.offset) +
                                       " is outside the chunks (offsets 64 to " + std::to_string(ioff) + ")");
                return -1;
            }
            if (en.shard >= nshards) {
                *error = entry_error(k, "shard " + std::to_string(en.shard) + " but the index declares " +
                                            std::to_string(nshards) + " shards");
                return -1;
            }
            if (en.records == 0 || en.records > fmt::kMaxChunkRecords) {
                *error = entry_error(k, "record count " + std::to_string(en.records) + " out of range");
                return -1;
            }
        }
        // Distinct chunks: in file order, each starts at least a minimal chunk after the
        // previous one. (Whether a chunk's payload ends before the next begins is checked when
        // it is read: the index does not hold payload sizes.)
        std::vector<uint32_t> order(nchunks);
        for (uint32_t k = 0; k < nchunks; ++k) order[k] = k;
        std::stable_sort(order.begin(), order.end(),
                         [&](uint32_t a, uint32_t b) { return entries[a].offset < entries[b].offset; });
        for (uint32_t i = 1; i < nchunks; ++i) {
            const Entry &prev = entries[order[i - 1]], &cur = entries[order[i]];
            const Entry &later = prev.k > cur.k ? prev : cur, &earlier = prev.k > cur.k ? cur : prev;
            if (cur.offset == prev.offset) {
                *error = entry_error(later.k, "same chunk as index entry " + std::to_string(earlier.k) +
                                                  " (offset " + std::to_string(cur.offset) + ")");
                return -1;
            }
            if (cur.offset - prev.offset < kMinChunk) {
                *error = entry_error(cur.k, "chunk at offset " + std::to_string(cur.offset) +
                                                " overlaps index entry " + std::to_string(prev.k) +
                                                " (chunk at offset " + std::to_string(prev.offset) +
                                                ", at least 49 bytes)");
                return -1;
            }
        }
        // Each shard's chunks in file order, as the index lists them.
        std::vector<uint64_t> last(nshards, 0);
        for (const Entry &en : entries) {
            if (en.offset <= last[en.shard]) {
                *error = entry_error(en.k, "shard " + std::to_string(en.shard) +
                                               "'s chunks are not in file order (offset " +
                                               std::to_string(en.offset) + " listed after offset " +
                                               std::to_string(last[en.shard]) + ")");
                return -1;
            }
            last[en.shard] = en.offset;
        }
        std::vector<uint64_t> end(nchunks);
        std::vector<uint32_t> next(nchunks);
        for (uint32_t i = 0; i < nchunks; ++i) {
            const bool last_one = i + 1 == nchunks;
            end[order[i]] = last_one ? ioff : entries[order[i + 1]].offset;
            next[order[i]] = last_one ? kNoEntry : order[i + 1];
        }
        shards_.assign(nshards, {});
        for (const Entry &en : entries)
            shards_[en.shard].push_back(ChunkRef{en.offset, end[en.k], en.records, en.k, next[en.k]});
        const uint64_t ext = fmt::load64(idx.data() + 16);
        if (ext != 0 && !load_ext_index(ext, ioff, why)) return 0;
        return check_event_entries(ext, entries.size(), error) ? 1 : -1;
    }

    // The extension index obeys the index's rules (docs/trace-format.md, "Index"): its event
    // chunks are distinct from each other and from the memref chunks, at least a minimal chunk
    // apart, and each event shard's chunks are listed in file order; so no event is counted
    // twice. False with *error naming the extension index entry.
    bool check_event_entries(uint64_t ext, size_t memref_entries, std::string *error) const {
        constexpr uint64_t kMinChunk = fmt::kChunkHeaderSize + 1;
        struct Block {
            uint64_t offset;
            int64_t event;  // its extension index entry, -1 for a memref chunk
        };
        std::vector<Block> blocks;
        blocks.reserve(memref_entries);
        for (const auto &shard : shards_)
            for (const ChunkRef &c : shard) blocks.push_back(Block{c.offset, -1});
        int64_t k = 0;
        for (const auto &shard : event_shards_) {
            uint64_t last = 0;
            for (const ChunkRef &c : shard) {
                if (c.offset <= last) {
                    *error = fmt::at(path_, ext,
                                     "extension index: event chunk at offset " + std::to_string(c.offset) +
                                         " listed after offset " + std::to_string(last) +
                                         " of the same shard (not in file order)");
                    return false;
                }
                last = c.offset;
                blocks.push_back(Block{c.offset, k++});
            }
        }
        std::sort(blocks.begin(), blocks.end(),
                  [](const Block &a, const Block &b) { return a.offset < b.offset; });
        for (size_t i = 1; i < blocks.size(); ++i) {
            const Block &prev = blocks[i - 1], &cur = blocks[i];
            if (cur.offset - prev.offset >= kMinChunk) continue;
            const Block &ev = cur.event >= 0 ? cur : prev, &other = cur.event >= 0 ? prev : cur;
            *error = fmt::at(path_, ext,
                             "extension index: event chunk at offset " + std::to_string(ev.offset) +
                                 (cur.offset == prev.offset ? " is listed twice or is also " : " overlaps ") +
                                 (other.event >= 0 ? "another event chunk" : "a memref chunk") + " (offset " +
                                 std::to_string(other.offset) + ")");
            return false;
        }
        return true;
    }

    // Recovery: walks the chunks from the header on, keeping every complete, intact chunk.
    void scan() {
        uint64_t off = fmt::kHeaderSize;
        uint64_t chunks = 0, records = 0, echunks = 0, events = 0;
        std::string stop;
        std::vector<unsigned char> payload;
        while (off < size_) {
            unsigned char hb[fmt::kChunkHeaderSize];
            const ssize_t got = pread_full(fd_, hb, sizeof hb, off);
            if (got >= 8 &&
                (std::memcmp(hb, fmt::kIndexMagic, 8) == 0 || std::memcmp(hb, fmt::kExtIndexMagic, 8) == 0)) {
                stop = "stopped at the incomplete index at offset " + std::to_string(off);
                break;
            }
            if (got != static_cast<ssize_t>(sizeof hb)) {
                stop = "truncated chunk header at offset " + std::to_string(off) + " (" +
                       std::to_string(size_ - off) + " trailing bytes ignored)";
                break;
            }
            fmt::ChunkHeader ch;
            const std::string bad = fmt::decode_block_header(hb, &ch);
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
            if (ch.magic == fmt::kChunkMagic) {
                if (ch.shard >= shards_.size()) shards_.resize(ch.shard + 1);
                shards_[ch.shard].push_back(ChunkRef{off, pend, ch.records, kNoEntry, kNoEntry});
                ++chunks;
                records += ch.records;
            } else if (ch.magic == fmt::kEventMagic) {
                add_event_chunk(ch.shard, off, pend, ch.records, ch.first_ts, ch.last_ts);
                ++echunks;
                events += ch.records;
            } else if (ch.magic == fmt::kTableMagic) {
                table_refs_.push_back(TableRef{off, ch.shard, ch.records});
            }
            off = pend;
        }
        warnings_.push_back(path_ + ": recovered " + std::to_string(chunks) + " complete chunks (" +
                            std::to_string(records) + " records)" +
                            (echunks == 0 ? std::string()
                                          : " and " + std::to_string(echunks) + " event chunks (" +
                                                std::to_string(events) + " events)") +
                            " by scanning" + (stop.empty() ? std::string() : "; " + stop));
    }
};

// Buffers of one chunk being loaded: its compressed bytes and its decoded columns. Reused from
// chunk to chunk; not zero-filled.
struct ChunkBuffers {
    std::unique_ptr<unsigned char[]> compressed, payload;
    size_t compressed_cap = 0, payload_cap = 0;
    void release() {
        compressed.reset();
        payload.reset();
        compressed_cap = payload_cap = 0;
    }
};

// What loading a chunk found: SUCCESS with its record count, or the error and its message.
struct ChunkLoad {
    sonde_status_t status = SONDE_STATUS_SUCCESS;
    std::string error;
    size_t records = 0;
};

// Loads chunk `c` of shard `shard` into b.payload (its decoded columns, checked): one pread of
// the header, one of the compressed bytes, a checksum over them and one zstd decompression.
// Thread-safe for different buffers (pread only). May throw std::bad_alloc.
ChunkLoad load_chunk(const SondeInput &in, const ChunkRef &c, uint32_t shard, ChunkBuffers &b) {
    ChunkLoad r;
    auto fail = [&](uint64_t offset, const std::string &what) {
        r.status = SONDE_STATUS_ERROR_FORMAT;
        r.error = fmt::at(in.path(), offset, what);
        return r;
    };
    auto io_fail = [&](uint64_t offset) {
        r.status = SONDE_STATUS_ERROR_IO;
        r.error = fmt::at(in.path(), offset, std::string("read failed: ") + std::strerror(errno));
        return r;
    };
    unsigned char hb[fmt::kChunkHeaderSize];
    const ssize_t got = pread_full(in.fd_, hb, sizeof hb, c.offset);
    if (got < 0) return io_fail(c.offset);
    if (got != static_cast<ssize_t>(sizeof hb))
        return fail(c.offset, "truncated chunk header (" + std::to_string(got) + " of 48 bytes)");
    fmt::ChunkHeader h;
    const std::string bad = fmt::decode_chunk_header(hb, &h);
    if (!bad.empty()) return fail(c.offset, bad);
    if (h.shard != shard || h.records != c.records)
        return fail(c.offset, "chunk header does not match the index (shard " + std::to_string(h.shard) +
                                  ", " + std::to_string(h.records) + " records)");
    const uint64_t poff = c.offset + fmt::kChunkHeaderSize;
    if (h.compressed_size > c.end - poff) {
        // The chunk runs into the next one (or the index): the index lists overlapping chunks.
        const std::string what = "chunk at offset " + std::to_string(c.offset) + " (" +
                                 std::to_string(fmt::kChunkHeaderSize + h.compressed_size) +
                                 " bytes) overlaps ";
        if (c.entry != kNoEntry) {
            r.status = SONDE_STATUS_ERROR_FORMAT;
            r.error = in.entry_error(
                c.entry, what + (c.next != kNoEntry ? "index entry " + std::to_string(c.next) +
                                                          " (chunk at offset " + std::to_string(c.end) + ")"
                                                    : "the index at offset " + std::to_string(c.end)));
            return r;
        }
        return fail(c.offset, what + "the end of the chunks at offset " + std::to_string(c.end));
    }
    if (b.compressed_cap < h.compressed_size) {
        b.compressed.reset();
        b.compressed.reset(new unsigned char[h.compressed_size]);
        b.compressed_cap = h.compressed_size;
    }
    const ssize_t pgot = pread_full(in.fd_, b.compressed.get(), h.compressed_size, poff);
    if (pgot < 0) return io_fail(poff);
    if (static_cast<size_t>(pgot) != h.compressed_size)
        return fail(poff, "truncated chunk (" + std::to_string(pgot) + " of " +
                              std::to_string(h.compressed_size) + " payload bytes)");
    if (fmt::checksum64(b.compressed.get(), h.compressed_size) != h.payload_checksum)
        return fail(poff, "chunk payload checksum mismatch");
    const size_t want = static_cast<size_t>(h.records) * fmt::kRecordSize;
    if (b.payload_cap < want) {
        b.payload.reset();
        b.payload.reset(new unsigned char[want]);
        b.payload_cap = want;
    }
    // One-shot decompression into the payload buffer: no window of the decoder's own.
    const size_t z = ZSTD_decompress(b.payload.get(), want, b.compressed.get(), h.compressed_size);
    fmt::throw_if_zstd_out_of_memory(z);
    if (ZSTD_isError(z)) return fail(poff, std::string("zstd: ") + ZSTD_getErrorName(z));
    if (z != want)
        return fail(
            poff, "chunk decompresses to " + std::to_string(z) + " bytes, expected " + std::to_string(want));
    const std::string invalid = fmt::check_columns(b.payload.get(), h.records, in.minor());
    if (!invalid.empty()) return fail(poff, invalid);
    in.count_consumed(c.end - c.offset);  // as shard_bytes() counts it
    r.records = h.records;
    return r;
}

// Reads one shard's chunks in file order on the calling thread. Cost per chunk: load_chunk();
// per record, one pass of column decoding straight into the caller's array (no intermediate
// copy). Buffers are sized by the shard's chunks and freed at its end, so a finished shard
// holds nothing.
class SondeShardReader final : public ShardReader {
public:
    SondeShardReader(const SondeInput *in, const ChunkRef *chunks, size_t nchunks, uint32_t shard,
                     uint32_t id)
        : in_(in), chunks_(chunks), nchunks_(nchunks), shard_(shard), id_(id) {}

    size_t read(sonde_memref_t *out, size_t max) override {
        if (status_ != SONDE_STATUS_SUCCESS) return 0;
        size_t n = 0;
        while (n < max) {
            if (pos_ == count_) {
                if (next_ == nchunks_) {
                    buffers_.release();  // the shard is done: hold nothing
                    break;
                }
                const ChunkLoad got = load_chunk(*in_, chunks_[next_++], shard_, buffers_);
                if (got.status != SONDE_STATUS_SUCCESS) {
                    status_ = got.status;
                    error_ = got.error;
                    buffers_.release();
                    break;
                }
                pos_ = 0;
                count_ = got.records;
                state_[0] = state_[1] = state_[2] = 0;
            }
            const size_t k = std::min(count_ - pos_, max - n);
            fmt::decode_columns(buffers_.payload.get(), count_, pos_, k, id_, state_, out + n);
            pos_ += k;
            n += k;
        }
        return status_ == SONDE_STATUS_SUCCESS ? n : 0;
    }

private:
    const SondeInput *in_;
    const ChunkRef *chunks_;  // the shard's chunks (or a piece's run of them)
    size_t nchunks_;
    uint32_t shard_;
    uint32_t id_;
    size_t next_ = 0;
    size_t pos_ = 0;
    size_t count_ = 0;
    ChunkBuffers buffers_;
    uint64_t state_[3] = {0, 0, 0};  // running address, pc, timestamp
};

// The chunks of one shard as blocks of a BlockDecoder (block_decode.h), loaded and decoded
// on the reader's decode threads: filling a block only names its chunk; decoding loads it
// (load_chunk, with the buffers of the block) and decodes all its columns into the block's
// records. The records and the first error are those of SondeShardReader.
class SondeChunkJobs final : public BlockJobs {
public:
    SondeChunkJobs(const SondeInput *in, const ChunkRef *chunks, size_t nchunks, uint32_t shard, uint32_t id)
        : in_(in), chunks_(chunks), nchunks_(nchunks), shard_(shard), id_(id) {}

    bool fill(DecodedBlock &b, bool *last, sonde_status_t *, std::string *) override {
        if (next_ == nchunks_) return false;
        b.index = next_++;
        *last = next_ == nchunks_;
        return true;
    }
    void decode(DecodedBlock &b) const override { decode_chunk(b, nullptr, nullptr); }
    bool decode_tapped(DecodedBlock &b, const BlockTap &tap, PieceBuffer &piece) const override {
        decode_chunk(b, &tap, &piece);
        return true;
    }
    std::string finish(DecodedBlock &b) override { return b.failed ? b.fail_what : std::string(); }

private:
    // A tapped chunk is decoded PieceBuffer::kRecords records at a time (128 KiB) into the
    // decoding thread's piece buffer, which stays in that core's nearest caches; the tap reads
    // each piece there, and the piece goes on to the block's records with non-temporal stores
    // (core::stream_copy), which do not read the records array in first. The reading thread
    // needs few of a tapped block's records (all of them only where the tap leaves the block:
    // a sampling marker, a span cut short by another shard). Decoded straight into the records
    // array (2 MiB for a chunk of 65,536 records), decoding took 13-15 % of a two-job run's
    // samples against 7 % of the one-job run's, which decodes into a buffer of its own; tapped
    // after the whole chunk, the tap took 10.6 % against the one-job run's 5 % for gathering.
    // sort.trace (20 M accesses) at two jobs, 2-vCPU Xeon guest, alternated, 9 runs each: 373 ms
    // (673 ms of CPU) decoded straight into the array, 346 ms (634 ms) this way, 343 ms (622 ms)
    // with the records not written at all, an upper bound; against the tree before, 11 runs
    // each, 365 ms (658 ms) and 341 ms (624 ms). A piece buffer lent with the chunk's buffers,
    // which another thread may have used last, gave half the gain.
    static constexpr size_t kTapPiece = PieceBuffer::kRecords;

    // Loads and decodes the chunk into b.records, and with a tap (and the thread's piece buffer)
    // taps it piece by piece.
    void decode_chunk(DecodedBlock &b, const BlockTap *tap, PieceBuffer *pieces) const {
        Lease lease(*this);
        ChunkBuffers &buf = *lease.buf;
        const ChunkLoad got = load_chunk(*in_, chunks_[b.index], shard_, buf);
        if (got.status != SONDE_STATUS_SUCCESS) {
            b.failed = true;
            b.fail_status = got.status;
            b.fail_what = got.error;
            return;
        }
        b.reserve_records(got.records);
        uint64_t state[3] = {0, 0, 0};
        sonde_memref_t *const out = b.records.get();
        sonde_memref_t *piece = nullptr;
        bool tapping = false;
        if (tap != nullptr) {
            try {
                piece = pieces->get();
                tap->begin(got.records, &b.tap);
                tapping = true;
            } catch (const std::bad_alloc &) {
                // Untapped: the reading thread uses the records.
            }
        }
        if (!tapping) {
            fmt::decode_columns(buf.payload.get(), got.records, 0, got.records, id_, state, out);
        } else {
            for (size_t from = 0; from < got.records; from += kTapPiece) {
                const size_t k = std::min<size_t>(kTapPiece, got.records - from);
                fmt::decode_columns(buf.payload.get(), got.records, from, k, id_, state, piece);
                tap->piece(piece, k, &b.tap);
                core::stream_copy(out + from, piece, k * sizeof(sonde_memref_t));
            }
        }
        b.count = got.records;
        if (tapping) {
            try {
                tap->end(&b.tap);
                b.tapped = true;
            } catch (const std::bad_alloc &) {
            }
        }
    }

    const SondeInput *in_;
    const ChunkRef *chunks_;  // the shard's chunks (or a piece's run of them)
    size_t nchunks_;
    uint32_t shard_;
    uint32_t id_;
    size_t next_ = 0;  // the filling job's
    // The compressed bytes and decompressed columns of a chunk are needed only while decode()
    // runs, so they belong to the decoding thread for that time, not to a block slot: decode()
    // borrows the buffers last given back (LIFO), which are still in that core's cache, instead
    // of those of a slot last used blocks ago. At most one set per decoding thread.
    struct Lease {
        explicit Lease(const SondeChunkJobs &j) : jobs(j) {
            std::lock_guard<std::mutex> g(jobs.mu_);
            if (jobs.free_.empty()) {
                jobs.owned_.push_back(std::make_unique<ChunkBuffers>());
                jobs.free_.reserve(jobs.owned_.size());
                buf = jobs.owned_.back().get();
            } else {
                buf = jobs.free_.back();
                jobs.free_.pop_back();
            }
        }
        ~Lease() {
            std::lock_guard<std::mutex> g(jobs.mu_);
            jobs.free_.push_back(buf);
        }
        const SondeChunkJobs &jobs;
        ChunkBuffers *buf = nullptr;
    };
    mutable std::mutex mu_;
    mutable std::vector<std::unique_ptr<ChunkBuffers>> owned_;  // guarded by mu_
    mutable std::vector<ChunkBuffers *> free_;                  // guarded by mu_; room for all
};

std::unique_ptr<ShardReader> SondeInput::open_shard(size_t shard, uint32_t shard_id) const {
    if (shard >= shards_.size()) return nullptr;
    return open_shard_piece(shard, shard_id, 0, 1);
}

// Piece `piece` of `pieces` of a shard: a run of whole chunks, the runs about equal in count.
std::unique_ptr<ShardReader> SondeInput::open_shard_piece(size_t shard, uint32_t shard_id, size_t piece,
                                                          size_t pieces) const {
    if (shard >= shards_.size() || pieces == 0 || piece >= pieces ||
        pieces > std::max<size_t>(1, shards_[shard].size()))
        return nullptr;
    const std::vector<ChunkRef> &all = shards_[shard];
    const size_t from = all.size() * piece / pieces, to = all.size() * (piece + 1) / pieces;
    const ChunkRef *chunks = all.data() + from;
    const unsigned threads = decode_threads();
    if (threads > 1 && to - from > 1)
        return std::make_unique<BlockShardReader>(
            std::make_unique<SondeChunkJobs>(this, chunks, to - from, static_cast<uint32_t>(shard), shard_id),
            threads);
    return std::make_unique<SondeShardReader>(this, chunks, to - from, static_cast<uint32_t>(shard),
                                              shard_id);
}

// Reads one event shard's chunks in file order; same checks and costs as SondeShardReader.
class SondeEventReader final : public EventReader {
public:
    SondeEventReader(const SondeInput *in, const std::vector<ChunkRef> *chunks, uint32_t shard)
        : in_(in), chunks_(chunks), shard_(shard) {}
    ~SondeEventReader() override {
        if (dctx_ != nullptr) ZSTD_freeDCtx(dctx_);
    }

    size_t read(sonde_trace_event_t *out, size_t max) override {
        if (status_ != SONDE_STATUS_SUCCESS) return 0;
        size_t n = 0;
        while (n < max) {
            if (pos_ == count_) {
                if (next_ == chunks_->size() || !load(chunks_->at(next_++))) break;
            }
            const size_t k = std::min(count_ - pos_, max - n);
            fmt::decode_event_columns(payload_.data(), count_, pos_, k, shard_, state_, out + n);
            pos_ += k;
            n += k;
        }
        return status_ == SONDE_STATUS_SUCCESS ? n : 0;
    }

private:
    bool fail(sonde_status_t st, uint64_t offset, const std::string &what) {
        status_ = st;
        error_ = fmt::at(in_->path(), offset, what);
        return false;
    }

    bool load(const ChunkRef &c) {
        unsigned char hb[fmt::kChunkHeaderSize];
        const ssize_t got = pread_full(in_->fd_, hb, sizeof hb, c.offset);
        if (got < 0)
            return fail(SONDE_STATUS_ERROR_IO, c.offset, std::string("read failed: ") + std::strerror(errno));
        if (got != static_cast<ssize_t>(sizeof hb))
            return fail(SONDE_STATUS_ERROR_FORMAT, c.offset,
                        "truncated event chunk header (" + std::to_string(got) + " of 48 bytes)");
        fmt::ChunkHeader h;
        const std::string bad = fmt::decode_block_header(hb, &h);
        if (!bad.empty()) return fail(SONDE_STATUS_ERROR_FORMAT, c.offset, bad);
        if (h.magic != fmt::kEventMagic || h.shard != shard_ || h.records != c.records)
            return fail(SONDE_STATUS_ERROR_FORMAT, c.offset, "event chunk header does not match the index");
        cbuf_.resize(h.compressed_size);
        const uint64_t poff = c.offset + fmt::kChunkHeaderSize;
        const ssize_t pgot = pread_full(in_->fd_, cbuf_.data(), cbuf_.size(), poff);
        if (pgot < 0)
            return fail(SONDE_STATUS_ERROR_IO, poff, std::string("read failed: ") + std::strerror(errno));
        if (static_cast<size_t>(pgot) != cbuf_.size())
            return fail(SONDE_STATUS_ERROR_FORMAT, poff,
                        "truncated event chunk (" + std::to_string(pgot) + " of " +
                            std::to_string(cbuf_.size()) + " payload bytes)");
        if (fmt::checksum64(cbuf_.data(), cbuf_.size()) != h.payload_checksum)
            return fail(SONDE_STATUS_ERROR_FORMAT, poff, "event chunk payload checksum mismatch");
        if (dctx_ == nullptr) {
            dctx_ = ZSTD_createDCtx();
            if (dctx_ == nullptr) throw std::bad_alloc();
        }
        const size_t want = static_cast<size_t>(h.records) * fmt::kEventSize;
        if (payload_.size() < want) payload_.resize(want);
        const size_t r = ZSTD_decompressDCtx(dctx_, payload_.data(), want, cbuf_.data(), cbuf_.size());
        fmt::throw_if_zstd_out_of_memory(r);
        if (ZSTD_isError(r))
            return fail(SONDE_STATUS_ERROR_FORMAT, poff, std::string("zstd: ") + ZSTD_getErrorName(r));
        if (r != want)
            return fail(SONDE_STATUS_ERROR_FORMAT, poff,
                        "event chunk decompresses to " + std::to_string(r) + " bytes, expected " +
                            std::to_string(want));
        pos_ = 0;
        count_ = h.records;
        state_[0] = state_[1] = state_[2] = 0;
        return true;
    }

    const SondeInput *in_;
    const std::vector<ChunkRef> *chunks_;
    uint32_t shard_;
    size_t next_ = 0, pos_ = 0, count_ = 0;
    std::vector<unsigned char> payload_, cbuf_;
    uint64_t state_[3] = {0, 0, 0};
    ZSTD_DCtx *dctx_ = nullptr;
};

std::unique_ptr<EventReader> SondeInput::open_event_shard(size_t shard) const {
    if (shard >= event_shards_.size()) return nullptr;
    return std::make_unique<SondeEventReader>(this, &event_shards_[shard], static_cast<uint32_t>(shard));
}

bool ends_with(const std::string &s, const std::string &suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The first decoded bytes of `source` (decompressing the peeked bytes of a zstd input), at most
// `cap`; none when a zstd input's first frame is damaged.
size_t decoded_head(const Source &source, unsigned char *out, size_t cap) {
    if (!source.zstd()) {
        const size_t n = std::min(cap, source.head_size());
        if (n != 0) std::memcpy(out, source.head(), n);
        return n;
    }
    ZSTD_DStream *d = ZSTD_createDStream();
    if (d == nullptr) throw std::bad_alloc();
    ZSTD_initDStream(d);
    ZSTD_outBuffer o{out, cap, 0};
    ZSTD_inBuffer i{source.head(), source.head_size(), 0};
    while (o.pos < o.size && i.pos < i.size) {
        const size_t r = ZSTD_decompressStream(d, &o, &i);
        if (ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation) {
            ZSTD_freeDStream(d);
            throw std::bad_alloc();
        }
        if (ZSTD_isError(r) || r == 0) break;
    }
    ZSTD_freeDStream(d);
    return o.pos;
}

// Bytes peeked to tell the format: enough for a zstd frame's first block to decode.
constexpr size_t kProbe = 64;
constexpr size_t kZstdProbe = (128u << 10) + 64;

// AUTO: magic first, then extension, then a look at the first decoded bytes.
sonde_status_t detect(Source &source, uint32_t *format, std::string *error) {
    const std::string &path = source.path();
    if (!source.zstd() && source.head_size() >= 8 && std::memcmp(source.head(), fmt::kFileMagic, 8) == 0) {
        *format = SONDE_TRACE_FORMAT_SONDE;
        return SONDE_STATUS_SUCCESS;
    }
    // A drmemtrace name (*.trace, *.trace.zip, a schedule file, ...) after the Sonde magic: a
    // Sonde trace may be named sonde.trace too.
    if (drmemtrace_claims_name(path)) {
        *format = SONDE_TRACE_FORMAT_DRMEMTRACE;
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
    if (source.zstd()) {
        const sonde_status_t s = source.peek(kZstdProbe, error);
        if (s != SONDE_STATUS_SUCCESS) return s;
    }
    unsigned char head[kProbe];
    const size_t n = decoded_head(source, head, sizeof head);
    if (n >= 3 &&
        ((head[0] == '=' && head[1] == '=') || (head[0] == 'I' && head[1] == ' ' && head[2] == ' ') ||
         (head[0] == ' ' && (head[1] == 'L' || head[1] == 'S' || head[1] == 'M') && head[2] == ' '))) {
        *format = SONDE_TRACE_FORMAT_LACKEY;
        return SONDE_STATUS_SUCCESS;
    }
    if (drmemtrace_claims_head(source.head(), source.zstd() ? 0 : source.head_size(), head, n)) {
        *format = SONDE_TRACE_FORMAT_DRMEMTRACE;
        return SONDE_STATUS_SUCCESS;
    }
    if (source.head_size() == 0) {
        *error = fmt::at(path, 0, "empty input (0 bytes, no records); its format cannot be told");
        return SONDE_STATUS_ERROR_FORMAT;
    }
    if (n == 0 && source.zstd()) {
        *error =
            fmt::at(path, 0,
                    "the zstd stream decodes to no bytes at its start (no records, or damaged); its format "
                    "cannot be told");
        return SONDE_STATUS_ERROR_FORMAT;
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
    struct stat st;
    if (format == SONDE_TRACE_FORMAT_DRMEMTRACE ||
        (format == SONDE_TRACE_FORMAT_AUTO && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)))
        return open_drmemtrace(path, out, error);
    auto source = std::make_unique<Source>();
    sonde_status_t s = source->open(path, error);
    if (s == SONDE_STATUS_SUCCESS && (format != SONDE_TRACE_FORMAT_SONDE || source->seekable()))
        s = source->peek(kProbe, error);
    if (s != SONDE_STATUS_SUCCESS) return s;
    if (format == SONDE_TRACE_FORMAT_AUTO) {
        s = detect(*source, &format, error);
        if (s != SONDE_STATUS_SUCCESS) return s;
    }
    if (format == SONDE_TRACE_FORMAT_DRMEMTRACE) {
        // Found by its bytes: the container libraries open the file by name again.
        if (!source->seekable()) {
            *error =
                path + ": a drmemtrace trace is read from a file or a directory, not from a pipe or device";
            return SONDE_STATUS_ERROR_IO;
        }
        source.reset();
        return open_drmemtrace(path, out, error);
    }
    if (format == SONDE_TRACE_FORMAT_LACKEY) return open_lackey(std::move(source), out, error);
    if (format == SONDE_TRACE_FORMAT_RAW64) return open_raw64(std::move(source), out, error);
    auto in = std::make_unique<SondeInput>(std::move(source));
    s = in->open(error);
    if (s != SONDE_STATUS_SUCCESS) return s;
    *out = std::move(in);
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t read_append_point(const std::string &path, AppendPoint *out, std::string *error) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
        *error = path + ": cannot open: " + std::strerror(errno);
        return SONDE_STATUS_ERROR_IO;
    }
    if (!S_ISREG(st.st_mode)) {
        *error = path + ": not a regular file (a trace is added to in place)";
        return SONDE_STATUS_ERROR_IO;
    }
    std::unique_ptr<Input> in;
    const sonde_status_t s = Input::open(path, SONDE_TRACE_FORMAT_SONDE, &in, error);
    if (s != SONDE_STATUS_SUCCESS) return s;
    if (!in->complete()) {
        *error = (in->warnings().empty() ? path + ": incomplete" : in->warnings().front()) +
                 "; only a complete trace (with its index and footer) can be added to";
        return SONDE_STATUS_ERROR_FORMAT;
    }
    return static_cast<const SondeInput &>(*in).append_point(out, error) ? SONDE_STATUS_SUCCESS
                                                                         : SONDE_STATUS_ERROR_IO;
}

MemoryNeed memory_need(const std::vector<const Input *> &inputs, size_t window) {
    MemoryNeed m;
    uint64_t stored = 0;
    for (const Input *in : inputs) {
        stored += in->stored_size();
        for (size_t s = 0; s < in->num_shards(); ++s) {
            const uint64_t records = in->shard_records(s);
            if (records == 0) continue;
            const uint64_t one =
                in->shard_memory(s) + std::min<uint64_t>(records, window) * sizeof(sonde_memref_t);
            m.need += one;
            m.largest = std::max(m.largest, one);
            ++m.shards;
        }
    }
    m.budget = (uint64_t(256) << 20) + std::min<uint64_t>(stored, uint64_t(1) << 58) * 16;
    return m;
}

std::string mebibytes(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

// ---- serial view ----

namespace {
constexpr size_t kSerialBatch = 4096;
}

struct SerialReader::Impl {
    struct Shard {
        const Input *input = nullptr;
        size_t index = 0;
        uint32_t id = 0;
        std::unique_ptr<ShardReader> reader;    // opened on the first read
        std::unique_ptr<sonde_memref_t[]> buf;  // up to kSerialBatch records, not zero-filled
        size_t cap = 0;
        size_t pos = 0;
        size_t len = 0;
        uint64_t last_ts = 0;
        bool done = false;
    };
    std::vector<const Input *> inputs;
    std::vector<Shard> shards;  // shards with records (or an unknown count) only
    std::vector<uint32_t> bases;
    uint32_t total = 0;
    bool markers = false;
    bool started = false;
    // Min-heap of (effective timestamp of next record, position in `shards`).
    using Key = std::pair<uint64_t, uint32_t>;
    std::priority_queue<Key, std::vector<Key>, std::greater<Key>> heap;
    int64_t current = -1;
    int64_t last_emitted = -1;
};

SerialReader::SerialReader(const std::vector<const Input *> &inputs, bool thread_switch_markers)
    : impl_(std::make_unique<Impl>()) {
    impl_->markers = thread_switch_markers;
    impl_->inputs = inputs;
    uint32_t base = 0;
    for (const Input *in : inputs) {
        impl_->bases.push_back(base);
        for (size_t s = 0; s < in->num_shards(); ++s) {
            const uint64_t records = in->shard_records(s);
            if (records == 0) continue;  // a declared shard without records costs nothing
            Impl::Shard sh;
            sh.input = in;
            sh.index = s;
            sh.id = base + static_cast<uint32_t>(s);
            sh.cap = static_cast<size_t>(std::min<uint64_t>(records, kSerialBatch));
            impl_->shards.push_back(std::move(sh));
        }
        base += static_cast<uint32_t>(in->num_shards());
    }
    impl_->total = base;
}

SerialReader::~SerialReader() = default;

size_t SerialReader::num_shards() const { return impl_->total; }

uint32_t SerialReader::shard_base(size_t input) const {
    return input < impl_->bases.size() ? impl_->bases[input] : impl_->total;
}

size_t SerialReader::read(sonde_memref_t *out, size_t max) {
    if (status_ != SONDE_STATUS_SUCCESS) return 0;
    Impl &im = *impl_;
    // Makes sure shard i has a buffered record; false when it is finished (or failed).
    auto ready = [&](uint32_t i) -> bool {
        Impl::Shard &sh = im.shards[i];
        if (sh.pos < sh.len) return true;
        if (sh.done) return false;
        if (!sh.reader) sh.reader = sh.input->open_shard(sh.index, sh.id);
        if (!sh.buf) sh.buf.reset(new sonde_memref_t[sh.cap]);
        sh.len = sh.reader->read(sh.buf.get(), sh.cap);
        sh.pos = 0;
        if (sh.len == 0) {
            sh.done = true;
            if (sh.reader->status() != SONDE_STATUS_SUCCESS) {
                status_ = sh.reader->status();
                error_ = sh.reader->error();
            }
            sh.reader.reset();  // a finished shard holds nothing
            sh.buf.reset();
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
        const MemoryNeed m = memory_need(im.inputs, kSerialBatch);
        if (m.need > m.budget) {
            status_ = SONDE_STATUS_ERROR_OUT_OF_MEMORY;
            error_ = (im.inputs.size() == 1 ? im.inputs[0]->path() + ": " : std::string()) +
                     "the serial view of " + std::to_string(m.shards) + " shards would need " +
                     mebibytes(m.need) + " at once (each shard's largest chunk decoded), more than the " +
                     mebibytes(m.budget) +
                     " allowed for inputs of this size; read it shard by shard, or rewrite it with smaller "
                     "chunks (sonde convert --chunk-records)";
            return 0;
        }
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
