// Internal reading interface of the trace concept (src/trace): an Input is one
// opened trace (Sonde, lackey text, raw64 or drmemtrace) made of shards; each shard is read on its own in
// batches through a ShardReader; SerialReader interleaves the shards of several inputs by
// timestamp. The analyzer builds on this; the public C reader in sonde/trace.h wraps it.
//
// An input is opened once (trace_stream.h): a pipe, a FIFO or /dev/stdin is probed from the
// same stream that its reader then reads, and its one shard can be read once.
//
// Memory is bounded by the data, not by declared counts: a shard reader holds buffers only
// while it has records to give and sized by its shard's chunks (shard_memory()), and the
// serial view checks up front that holding every shard's buffers at once stays within
// serial_memory()'s budget.
//
// Threads: an Input is immutable after open(), so open_shard() may be called from several
// threads at once; each ShardReader and SerialReader belongs to one thread at a time.
// Errors never throw out of read(): read() returns 0 and status() / error() say why; the
// message names the file and the byte offset. std::bad_alloc may propagate from any call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <sonde/status.h>
#include <sonde/trace.h>
#include <sonde/trace_events.h>

#include "trace/trace_tables.h"

#include "trace/trace_stream.h"

namespace sonde::trace {

// What a tap made of one block's records (BlockTap): `count` entries of words and bytes laid out
// as the tap says, and `whole`: the tap could stand in for the block's records (a tap sets it
// false for a block it leaves to the records, say one holding a marker it must see in order).
// `storage` owns the memory words and bytes point into: a cut of a TapArena, or none when they
// point into the scratch. The scratch is room the tap may fill first (9 bytes per record): it
// belongs to the block's slot and is kept from block to block, not zero-filled; take() moves
// the result out and leaves it. Not counted by memory_need(): reuse_distance's tap adds 9 bytes
// per record beside each record's 32 (and its arena's cuts, 9 bytes per data access, until its
// batches are calculated), and runs only on shards decoded on several threads (fewer shards than
// threads).
struct BlockTapOut {
    uint64_t *words = nullptr;
    uint8_t *bytes = nullptr;
    size_t count = 0;
    bool whole = false;
    std::shared_ptr<void> storage;

    BlockTapOut() = default;
    BlockTapOut(BlockTapOut &&) noexcept = default;
    BlockTapOut &operator=(BlockTapOut &&) noexcept = default;
    BlockTapOut(const BlockTapOut &) = delete;
    BlockTapOut &operator=(const BlockTapOut &) = delete;

    // The scratch, with room for n entries of each array: words first, then bytes. May throw
    // std::bad_alloc.
    uint64_t *scratch_words(size_t n);
    uint8_t *scratch_bytes() const { return scratch_.get() + scratch_cap_ * 8; }
    // The result (words, bytes, count, whole, storage) moved out; this keeps its scratch and
    // holds no result.
    BlockTapOut take() noexcept;

private:
    std::unique_ptr<unsigned char[]> scratch_;
    size_t scratch_cap_ = 0;
};

// Memory for taps that outlive their blocks (reuse_distance's parallel batches keep them until
// calculated): exact-size cuts of 2 MiB-aligned slabs of huge pages (core/huge_pages.h), so
// that filling them faults 2 MiB at a time rather than 4 KiB, and only the entries a block has
// take room (a lackey block's data accesses are a third of its records). A slab goes back to
// the arena, not to the system, once every cut of it is gone, and is cut again: a long run
// reuses the memory of its first batches instead of faulting fresh pages. Thread-safe (a mutex
// per cut: one per block). When two threads find the current slab full at once, each maps a
// slab; the second to take the mutex cuts the first one's slab, which still has room, and keeps
// its own in the free list, so a slab is left only when the next cut does not fit in it.
// Slabs of one huge page rather than two: at two jobs on gzip's 2 M accesses nearly all the tap
// output is alive at once and freshly faulted, and a smaller last slab faults less of what it
// does not use (5c on a 2-vCPU Zen 5 guest, alternated runs: 106.7 against 113.5 ms at two jobs;
// on a 2-vCPU Xeon guest, where fresh pages are cheaper, the same: 110.4 against 110.1 ms).
class TapArena : public std::enable_shared_from_this<TapArena> {
public:
    static constexpr size_t kSlabBytes = size_t{2} << 20;
    // Made with std::make_shared only: a slab's last cut finds its arena through a weak_ptr.
    TapArena() = default;
    ~TapArena();
    TapArena(const TapArena &) = delete;
    TapArena &operator=(const TapArena &) = delete;

    // Points out->words and out->bytes at a cut with room for n entries and makes out->storage
    // own it (a cut larger than a slab has a region of its own). n == 0 leaves them null. May
    // throw std::bad_alloc.
    void cut(size_t n, BlockTapOut *out);
    // Slabs allocated so far (the memory the arena holds, in use or free, is slabs() *
    // kSlabBytes plus the regions of cuts larger than a slab).
    size_t slabs();

private:
    void give_back(unsigned char *slab) noexcept;

    std::mutex mu_;
    std::vector<unsigned char *> free_;       // slabs with no cut alive; guarded by mu_
    std::shared_ptr<unsigned char> current_;  // the slab being cut; guarded by mu_
    size_t used_ = 0;                         // bytes of current_ cut so far; guarded by mu_
    size_t slabs_ = 0;                        // slabs allocated (free_ has room for all); guarded by mu_
};

// A conversion of decoded records that runs on the threads that decode them (block_decode.h),
// as a block is decoded, so that a tool needing little of each record (reuse_distance: the line
// and write flag of each data access) has it made where the records are still in that core's
// cache, and the reading thread copies or takes the result in order instead of reading every
// record. A block's records come in consecutive pieces: begin() with the block's record count,
// piece() for each run of records in order (a decoder that fills the block piece by piece
// converts each piece while it is in the first-level cache: BlockJobs::decode_tapped), then
// end(). These run on several threads at once on different blocks: they may use only their
// arguments and the tap's immutable state. They see a block before the in-order fix-ups
// (lackey's carried pc), so they may read every field but pc.
class BlockTap {
public:
    virtual ~BlockTap() = default;
    // Readies `out` for a block of n records. May throw std::bad_alloc (then the block is not
    // tapped: the reading thread uses its records).
    virtual void begin(size_t n, BlockTapOut *out) const = 0;
    // The block's next n records, after those of the pieces before; they may be a copy, valid
    // only during the call. Does not throw.
    virtual void piece(const sonde_memref_t *records, size_t n, BlockTapOut *out) const = 0;
    // The block's records are all in: completes `out`. May throw std::bad_alloc, as begin().
    virtual void end(BlockTapOut *out) const = 0;
    // A whole block in one piece.
    void convert(const sonde_memref_t *records, size_t n, BlockTapOut *out) const {
        begin(n, out);
        piece(records, n, out);
        end(out);
    }
};

// Room for one piece of a block's records, 128 KiB, that belongs to one decoding thread
// (BlockDecoder keeps one per thread), so that it stays in that core's nearest caches from block
// to block: jobs that tap as they decode (BlockJobs::decode_tapped) decode a piece into it, tap
// it there, then copy it to the block. Also the number of records a tap is given at a time.
class PieceBuffer {
public:
    static constexpr size_t kRecords = 4096;
    // Allocated on first use; may throw std::bad_alloc.
    sonde_memref_t *get() {
        if (storage_ == nullptr) storage_.reset(new Storage);
        return storage_->records;
    }

private:
    // Cache-line aligned: two records a line, none across two.
    struct alignas(64) Storage {
        sonde_memref_t records[kRecords];
    };
    std::unique_ptr<Storage> storage_;
};

// Reads one shard in order. Not thread-safe: one thread at a time.
class ShardReader {
public:
    virtual ~ShardReader() = default;
    // Copies up to `max` records into `out`; returns how many, 0 at the end of the shard or on
    // an error (then status() != SUCCESS). Each record's `shard` field is the shard id given
    // to Input::open_shard. Cost: a copy per record plus decompression of the next chunk when
    // the current one is used up; no allocation after the first call.
    virtual size_t read(sonde_memref_t *out, size_t max) = 0;
    // Zero-copy reading, for readers that hold decoded records (has_view()): points *out at
    // the next records in place and returns how many (at least 1), valid until the next call
    // of view() or read(); 0 at the end of the shard or on an error, as read(). A reader is
    // read either through view() or through read(), not both.
    virtual bool has_view() const { return false; }
    virtual size_t view(const sonde_memref_t **out) {
        (void)out;
        return 0;
    }
    // A tap (BlockTap) for the blocks this reader decodes on other threads, set before the first
    // view(); the tap must outlive the reader. Readers that decode on their reading thread
    // ignore it. view_tap(): what the tap made of exactly the records the last view() returned,
    // or nullptr (no tap, or the tap failed for lack of memory). Until the next view(), the
    // reading thread may take its arrays (swap them with others, or with none): the block's
    // decoding thread reserves room before it writes there again.
    virtual void set_tap(const BlockTap *tap) { (void)tap; }
    virtual BlockTapOut *view_tap() const { return nullptr; }
    // SUCCESS, or the error that ended the shard: SONDE_STATUS_ERROR_IO (read failed),
    // SONDE_STATUS_ERROR_FORMAT (corrupted / truncated data).
    sonde_status_t status() const { return status_; }
    // "FILE: offset N: what is wrong" when status() is an error, else empty.
    const std::string &error() const { return error_; }

protected:
    sonde_status_t status_ = SONDE_STATUS_SUCCESS;
    std::string error_;
};

// Reads one event shard in order (Sonde traces with program events). One thread at a time.
class EventReader {
public:
    virtual ~EventReader() = default;
    // Copies up to `max` events into `out`; returns how many, 0 at the end or on an error
    // (then status() != SUCCESS). Cost as ShardReader::read.
    virtual size_t read(sonde_trace_event_t *out, size_t max) = 0;
    sonde_status_t status() const { return status_; }
    const std::string &error() const { return error_; }

protected:
    sonde_status_t status_ = SONDE_STATUS_SUCCESS;
    std::string error_;
};

// One opened input. Immutable after open(); open_shard() is thread-safe.
class Input {
public:
    virtual ~Input() = default;
    // Opens `path` as `format` (a sonde_trace_format_value; SONDE_TRACE_FORMAT_AUTO takes a
    // directory as drmemtrace, then picks by magic (a Sonde trace), then a drmemtrace file
    // name (drmemtrace_claims_name), then extension: .sonde, .lackey/.lackey.zst/.txt/.zst text,
    // .raw64/.bin/.l64, then by the first decoded bytes, where a zip, gzip or lz4 container or
    // a drmemtrace header record is drmemtrace). The file is opened once (a drmemtrace file found by its
    // bytes is opened again by name, so it must be a file); a stream is probed from the
    // bytes its reader then reads. Returns SUCCESS and sets *out, or SONDE_STATUS_ERROR_IO
    // (missing / unreadable file; a drmemtrace trace from a pipe; a Sonde trace from a pipe
    // without room for its temporary copy),
    // SONDE_STATUS_ERROR_FORMAT (bad magic, version, header, index; unknown AUTO format; an
    // empty input AUTO cannot tell),
    // SONDE_STATUS_ERROR_INVALID_ARGUMENT (unknown format value) with *error set to
    // "FILE: offset N: what is wrong" (or "FILE: ..." without offset when it did not open).
    static sonde_status_t open(const std::string &path, uint32_t format, std::unique_ptr<Input> *out,
                               std::string *error);

    // The path as given to open().
    const std::string &path() const { return path_; }
    // The resolved format (never AUTO).
    uint32_t format() const { return format_; }
    // Number of shards: threads of a Sonde trace, thread files of a drmemtrace directory;
    // lackey and raw64 inputs have one.
    virtual size_t num_shards() const = 0;
    // Total records of a shard when known without reading it (Sonde traces with an index or a
    // recovered scan, plain raw64 files), else UINT64_MAX (text and compressed streams).
    virtual uint64_t shard_records(size_t shard) const = 0;
    // Bytes a reader of the shard holds at most while reading it (its decode buffers), 0 for
    // a shard without records. Known at open, for memory budgets.
    virtual uint64_t shard_memory(size_t shard) const = 0;
    // Bytes the shard occupies as stored (compressed where it is), known at open: the
    // analyzer's parallel mode starts the largest shards first. 0 for a shard out of range or
    // an input of unknown size (a pipe).
    virtual uint64_t shard_bytes(size_t shard) const = 0;
    // Opens shard `shard` (< num_shards()) for reading; the records it returns carry
    // `shard_id` in sonde_memref_t::shard (the caller's global numbering across inputs).
    // Reads only that shard's chunks (Sonde) or the one stream (lackey, raw64). Returns
    // nullptr only for shard >= num_shards(). Thread-safe.
    virtual std::unique_ptr<ShardReader> open_shard(size_t shard, uint32_t shard_id) const = 0;
    // Pieces: how many contiguous, independently readable parts shard `shard` can be cut into
    // (a Sonde trace: its chunks; 1 for a stream), and a reader of part `piece` of `pieces`
    // (<= shard_pieces(shard)) when it is cut into that many, about equal. Thread-safe.
    virtual size_t shard_pieces(size_t shard) const {
        (void)shard;
        return 1;
    }
    virtual std::unique_ptr<ShardReader> open_shard_piece(size_t shard, uint32_t shard_id, size_t piece,
                                                          size_t pieces) const {
        return piece == 0 && pieces == 1 ? open_shard(shard, shard_id) : nullptr;
    }
    // Byte ranges, for partitioned runs whose ranks each read a part of one stream: whether the
    // input can be read from any byte offset (a plain lackey or raw64 file, not compressed and
    // not a pipe; one shard), and a reader of the records of that shard that start in bytes
    // [begin, end) of the file (raw64: the addresses at multiples of 8 there; lackey: the lines
    // whose first byte is there, each data line with the pc of the last instruction line before
    // it in the file). Consecutive ranges therefore split the records exactly, and a range's
    // records, their order, its first error and the error's message (file offset, line number)
    // are those of a reader of the whole file. nullptr when !byte_ranges(). Thread-safe.
    virtual bool byte_ranges() const { return false; }
    virtual std::unique_ptr<ShardReader> open_range(uint32_t shard_id, uint64_t begin, uint64_t end) const {
        (void)shard_id;
        (void)begin;
        (void)end;
        return nullptr;
    }
    // Program events (Sonde traces of version 1.1): event shards, their counts from the index,
    // a reader per shard (nullptr for shard >= num_event_shards()), the time range of every
    // event and the tables. Inputs without events have none.
    virtual size_t num_event_shards() const { return 0; }
    virtual uint64_t event_shard_events(size_t shard) const {
        (void)shard;
        return 0;
    }
    virtual std::unique_ptr<EventReader> open_event_shard(size_t shard) const {
        (void)shard;
        return nullptr;
    }
    virtual void event_time_range(uint64_t *first, uint64_t *last) const { *first = *last = 0; }
    const Tables &tables() const { return tables_; }
    // Warnings found while opening, e.g. "FILE: no footer (the writer did not finish)" and
    // "FILE: recovered N complete chunks (R records) by scanning; truncated chunk at ...".
    const std::vector<std::string> &warnings() const { return warnings_; }
    // False when the input was not read as written: a Sonde trace without a valid footer and
    // index, recovered by scanning (warnings() says what was lost).
    bool complete() const { return complete_; }
    // Size of the input on disk, 0 for a pipe.
    uint64_t stored_size() const { return source_ != nullptr ? source_->size() : 0; }
    // Progress of the readers of this input, in bytes as stored (compressed where they are):
    // consumed_bytes() of the memref shards read so far (every reader adds its reads; any
    // thread may ask while they run), against stored_bytes(), the sum of shard_bytes(), or 0
    // when the input's size cannot be known (a pipe).
    uint64_t consumed_bytes() const {
        return consumed_.load(std::memory_order_relaxed) + (source_ != nullptr ? source_->consumed() : 0);
    }
    bool size_known() const { return source_ == nullptr || source_->seekable(); }
    uint64_t stored_bytes() const {
        if (!size_known()) return 0;
        uint64_t n = 0;
        for (size_t s = 0; s < num_shards(); ++s) n += shard_bytes(s);
        return n;
    }
    // For readers that read the input's files themselves (not through a ByteStream).
    void count_consumed(uint64_t n) const { consumed_.fetch_add(n, std::memory_order_relaxed); }
    // Threads a reader of one shard may decode with (lackey text: blocks of the stream parsed
    // in parallel, block_decode.h), 1 by default. Set by the input's owner before it opens
    // shards or asks for shard_memory(), which counts them; readers give the same records
    // whatever the count.
    void set_decode_threads(unsigned n) { decode_threads_ = n < 1 ? 1 : n; }
    unsigned decode_threads() const { return decode_threads_; }

protected:
    std::string path_;
    uint32_t format_ = 0;
    std::vector<std::string> warnings_;
    bool complete_ = true;
    std::unique_ptr<Source> source_;  // the one open file of the input
    mutable std::atomic<uint64_t> consumed_{0};
    unsigned decode_threads_ = 1;
    Tables tables_;
};

// Where a writer resumes a complete Sonde trace to add to it (TraceWriter::reopen): the entries
// of its index and extension index as they stand, its string table, and the offset where its
// extension index (or, without one, its index) begins, from which the new blocks, indexes and
// footer are written.
struct AppendPoint {
    struct Chunk {
        uint64_t offset;
        uint32_t shard, records;
        uint64_t first_ts, last_ts;
    };
    struct Table {
        uint64_t offset;
        uint32_t type, count;
    };
    uint64_t resume_offset = 0;
    uint32_t minor = 0;
    uint32_t chunk_records = 0;  // the header's
    uint32_t num_shards = 0, num_event_shards = 0;
    std::vector<Chunk> chunks, event_chunks;
    std::vector<Table> tables;
    std::vector<std::string> strings;  // by id
};
// Opens `path` as a Sonde trace and fills *out. SUCCESS, or SONDE_STATUS_ERROR_IO (cannot be
// read, or not a regular file), SONDE_STATUS_ERROR_FORMAT (not a Sonde trace, or incomplete:
// a trace recovered by scanning has no index to extend) with *error saying why.
sonde_status_t read_append_point(const std::string &path, AppendPoint *out, std::string *error);

// Memory that reading the given shards of `inputs` all at once needs (each shard's
// shard_memory() plus a window of up to `window` records of 32 bytes), and the budget it must
// stay within: 256 MiB plus 16 times the inputs' size on disk, so that no small file makes a
// reader take gigabytes, while every trace whose chunks compress less than 16 times reads.
struct MemoryNeed {
    uint64_t need = 0;
    uint64_t budget = 0;
    uint64_t largest = 0;  // the most one shard needs
    size_t shards = 0;     // shards with records
};
MemoryNeed memory_need(const std::vector<const Input *> &inputs, size_t window);
// "N MiB" (rounded up), for messages.
std::string mebibytes(uint64_t bytes);

// The serial view: all shards of all inputs in one stream ordered by timestamp. Records of a
// shard stay in order; a record with timestamp 0 takes its shard's last timestamp. Shards are
// numbered densely across inputs: input 0's shards first (0..n0-1), then input 1's, and so on
// (the same numbering as shard_base()). Inputs without timestamps (lackey, raw64) are one shard
// each and, when there are several such inputs, follow each other in input order.
// When `thread_switch_markers` is true a SONDE_MARKER_THREAD_SWITCH marker (address = the new
// shard) precedes each run of a different shard, as drmemtrace's serial stream has them.
// Owned by one thread. Cost: one heap operation per run of a shard (not per record). Only
// shards with records hold a reader; when their buffers would exceed memory_need()'s budget,
// the first read() fails with SONDE_STATUS_ERROR_OUT_OF_MEMORY and a message that says what
// it would need and to read the shards one at a time.
class SerialReader {
public:
    SerialReader(const std::vector<const Input *> &inputs, bool thread_switch_markers = false);
    ~SerialReader();
    SerialReader(const SerialReader &) = delete;
    SerialReader &operator=(const SerialReader &) = delete;

    // Total shards over all inputs.
    size_t num_shards() const;
    // First global shard number of input i.
    uint32_t shard_base(size_t input) const;
    // Copies up to `max` records; 0 at the end or on an error (see status()).
    size_t read(sonde_memref_t *out, size_t max);
    sonde_status_t status() const { return status_; }
    const std::string &error() const { return error_; }

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    sonde_status_t status_ = SONDE_STATUS_SUCCESS;
    std::string error_;
};

}  // namespace sonde::trace
