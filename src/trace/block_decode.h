// Parallel decoding of one shard in blocks (src/trace). A shard's records come from a sequence
// of blocks: pieces of one byte stream (lackey text, raw64; plain or zstd) cut at record
// boundaries, or the compressed chunks of a Sonde trace. Producing the next block is serial
// (the stream can be read by one thread only), but decoding a block is not. A BlockDecoder
// decodes the blocks on several threads and hands them to its reader strictly in order, so that
// the records, the first error and its message are exactly those of one thread reading alone.
//
// Work: two kinds of jobs, taken by `threads - 1` workers and by the reading thread itself
// while it waits for its next block:
//   - filling (BlockJobs::fill): the next free block is given its input (stream bytes,
//     decompressed where the input is, or a chunk's place in the file). One thread at a time
//     holds this job; it is preferred over decoding, so that the pipeline does not run dry;
//   - decoding (BlockJobs::decode): a filled block is turned into its own records array.
// A tap (BlockTap, source.h) set by the reader's user runs on the decoding thread, on each piece
// of a block as it is decoded (jobs with decode_tapped: Sonde chunks, lackey) or right after
// decoding (raw64), and its output travels with the block (DecodedBlock::tap).
// At most `2 * threads + 2` blocks (and never more than 12) are in flight, so memory is bounded
// by the block size, not by the input. Blocks are recycled: their buffers are reused.
//
// In-order fix-ups (BlockJobs::finish) run on the reading thread when a block's turn comes:
// lackey's carried pc and line numbers, a Sonde chunk's progress count.
//
// Threads: the BlockDecoder belongs to the thread that calls next(); the workers are its own
// and are joined by the destructor. Block states, sequence numbers and the end of the input are
// guarded by mu_; a block is touched without the lock only by the one thread that took its job
// (its state says which), and by the reading thread between next() calls for the block next()
// returned last. The BlockJobs' fill state belongs to the thread holding the filling job.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sonde/status.h>
#include <sonde/trace.h>

#include "core/huge_pages.h"
#include "core/wake_spread.h"
#include "trace/source.h"
#include "trace/trace_stream.h"

namespace sonde::trace {

// One block: its input, and after decoding its records and what decoding found.
struct DecodedBlock {
    uint64_t seq = 0;     // position among the shard's blocks, from 0
    uint64_t offset = 0;  // streams: offset of bytes[0] in the decoded stream
    uint64_t index = 0;   // chunks: the chunk's index in the shard
    std::unique_ptr<unsigned char[]> bytes;
    size_t bytes_cap = 0;
    size_t len = 0;  // bytes of the block
    // Huge pages when large (core/huge_pages.h): a slot's records are rewritten block after
    // block, and a fresh slot is faulted 2 MiB at a time rather than 4 KiB.
    core::HugeArray<sonde_memref_t> records;
    size_t records_cap = 0;
    size_t count = 0;  // records decoded (those before the error, when failed)
    // Text formats: lines decoded (before the bad one, when failed).
    uint64_t lines = 0;
    // Records [0, carry_until) take the value carried in from the previous block; the block
    // carries `carry_out` on when `sets_carry` (else the carried value passes through).
    size_t carry_until = 0;
    uint64_t carry_out = 0;
    bool sets_carry = false;
    // Decoding failed: the records before the fault are in `records`; `fail_status` and
    // `fail_what` say what (the jobs' finish() turns them into the message).
    bool failed = false;
    sonde_status_t fail_status = SONDE_STATUS_SUCCESS;
    size_t fail_pos = 0;
    std::string fail_what;
    // The decoder's tap (BlockDecoder::set_tap), when it has one: what it made of the records,
    // and whether it made it (false: it ran out of memory; the records stand alone).
    BlockTapOut tap;
    bool tapped = false;

    // Room for n records / bytes (reused; not zero-filled): records_cap becomes what the new array
    // holds (its huge pages whole), so that a slot grows again only beyond that. May throw
    // std::bad_alloc.
    void reserve_records(size_t n);
    void reserve_bytes(size_t n);
    void reset_result();
};

// What a BlockDecoder runs. fill() runs on the thread holding the filling job (one at a time,
// in block order), decode() on any thread, several at once on different blocks (it may use
// only its block and immutable state), finish() on the reading thread in block order.
class BlockJobs {
public:
    virtual ~BlockJobs() = default;
    // Gives block `b` (b.seq set) its input. Returns false when there is no block to give
    // (the end); *end_status / *end_error say why the input ended, SUCCESS at a normal end.
    // May also return true and set *last: this block is the last one (with the reason).
    virtual bool fill(DecodedBlock &b, bool *last, sonde_status_t *end_status, std::string *end_error) = 0;
    virtual void decode(DecodedBlock &b) const = 0;
    // As decode(), and runs `tap` on the records as they are decoded, piece by piece, into
    // b.tap (b.tapped when it completed; a tap out of memory leaves the records alone); `piece`
    // is the calling thread's own. False: these jobs decode a block in one go (nothing done),
    // and the decoder runs decode() and then the tap over the whole block.
    virtual bool decode_tapped(DecodedBlock &b, const BlockTap &tap, PieceBuffer &piece) const {
        (void)b;
        (void)tap;
        (void)piece;
        return false;
    }
    // In order, before the block's records are handed out: fix-ups; when the block failed,
    // returns its error message.
    virtual std::string finish(DecodedBlock &b) = 0;
};

class BlockDecoder {
public:
    // `threads`: 1 (the calling thread does every job) or more (threads - 1 workers).
    BlockDecoder(BlockJobs &jobs, unsigned threads);
    ~BlockDecoder();
    BlockDecoder(const BlockDecoder &) = delete;
    BlockDecoder &operator=(const BlockDecoder &) = delete;

    // Blocks in flight for `threads` threads: two per thread, at most 12, so that the blocks
    // decoded ahead of the reader still sit in the shared cache when it comes to them.
    static size_t slots(unsigned threads) {
        const size_t n = 2 * size_t{threads < 1 ? 1 : threads} + 2;
        return n < 12 ? n : 12;
    }
    // A tap run on each block right after decode() (on the thread that decoded it), set before
    // the first next(); ignored with one thread, whose reading thread decodes every block itself
    // (the tap would only add a pass).
    void set_tap(const BlockTap *tap) {
        if (threads_ > 1) tap_ = tap;
    }
    // The next block in order with its records ready (finish() applied); the block returned
    // before is given back. nullptr at the end or on an error, then status() and error() say
    // which (the records of every block before the error have been returned, and a failed
    // block is returned with the records before its fault first).
    DecodedBlock *next();
    sonde_status_t status() const { return status_; }
    const std::string &error() const { return error_; }

private:
    enum class State { kFree, kFilled, kBusy, kDecoded };
    struct Slot {
        DecodedBlock block;
        State state = State::kFree;
    };

    void worker(unsigned id);
    // Takes and runs one job with the lock held on entry and on return (released while the job
    // runs); false when there was none. `want`: the block the caller waits for (decoded first).
    // `piece`: the calling thread's (a worker's own, or reader_piece_).
    bool work(std::unique_lock<std::mutex> &lk, uint64_t want, PieceBuffer &piece);
    Slot &slot_of(uint64_t seq) { return slots_[seq % slots_.size()]; }

    BlockJobs &jobs_;
    const unsigned threads_;
    const BlockTap *tap_ = nullptr;  // set before the workers start, then read only

    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<Slot> slots_;
    uint64_t filled_seq_ = 0;    // blocks filled so far (the next fill's seq)
    uint64_t consumed_seq_ = 0;  // the next block next() returns
    bool filling_ = false;       // a thread holds the filling job
    bool input_end_ = false;     // no block from end_seq_ on
    uint64_t end_seq_ = 0;
    sonde_status_t end_status_ = SONDE_STATUS_SUCCESS;  // why the input ended
    std::string end_error_;
    bool stop_ = false;
    bool returned_ = false;  // next() has a block out
    std::vector<std::thread> workers_;
    // Under mu_: slot 0 the reading thread, slot i worker i (core/wake_spread.h).
    core::WakeSpread spread_;

    // The reading thread's.
    PieceBuffer reader_piece_;
    bool done_ = false;
    sonde_status_t status_ = SONDE_STATUS_SUCCESS;
    std::string error_;
};

// A byte stream cut into blocks at record boundaries (text and fixed-size binary formats).
// cut() runs on the filling thread, decode() on any thread (several at once on different
// blocks): both may use only their arguments and the format's immutable state; finish() runs
// on the reading thread, in order.
class StreamFormat {
public:
    virtual ~StreamFormat() = default;
    // Length of the longest prefix of data[0, len) made of whole records. `eof`: nothing
    // follows, so a last record without its terminator counts.
    virtual size_t cut(const unsigned char *data, size_t len, bool eof) const = 0;
    // Records a block of `bytes` bytes may hold at most.
    virtual size_t max_records(size_t bytes) const = 0;
    // The most bytes a record may have: when a cut leaves more than this many bytes over (or
    // any at the end of the stream), the stream fails with tail_error().
    virtual size_t max_record_bytes() const = 0;
    // The message for left-over bytes that are not a record (`at`: their offset in the decoded
    // stream; `bytes`: how many).
    virtual std::string tail_error(uint64_t at, size_t bytes) const = 0;
    // Decodes b.bytes[0, b.len) into b.records (room for max_records(b.len)): count, lines,
    // carry_until, carry_out, sets_carry, and failed / fail_pos / fail_what on a bad record.
    virtual void decode(DecodedBlock &b) const = 0;
    // As BlockJobs::decode_tapped: decodes and taps as it goes, or returns false (nothing done).
    virtual bool decode_tapped(DecodedBlock &b, const BlockTap &tap, PieceBuffer &piece) const {
        (void)b;
        (void)tap;
        (void)piece;
        return false;
    }
    // In order: applies the carried value (`*carry`, updated for the next block) and, when the
    // block failed, returns the message (`lines_before`: lines of the stream before it).
    virtual std::string finish(DecodedBlock &b, uint64_t *carry, uint64_t lines_before) const = 0;
};

// The jobs of a byte stream: fill() takes the bytes left over from the last block's cut, then
// the stream's next bytes, up to `block_bytes`, and cuts after the last whole record.
class StreamBlocks final : public BlockJobs {
public:
    StreamBlocks(const StreamFormat &format, size_t block_bytes)
        : format_(format), block_bytes_(block_bytes) {}
    // Starts the stream over `source` (ByteStream::open). SUCCESS or SONDE_STATUS_ERROR_IO.
    sonde_status_t open(const Source *source, std::string *error);
    // Starts over bytes [begin, end) of a plain file (ByteStream::open_range), which the caller
    // has found to start and end at record boundaries, with `carry` the value in force at
    // `begin` (lackey: the pc of the last instruction line before it). Offsets in messages stay
    // those of the file; the lines before `begin` are counted only when a block fails, for its
    // message. SUCCESS, SONDE_STATUS_ERROR_IO or _INVALID_ARGUMENT (not a plain file).
    sonde_status_t open_range(const Source *source, uint64_t begin, uint64_t end, uint64_t carry,
                              std::string *error);
    bool fill(DecodedBlock &b, bool *last, sonde_status_t *end_status, std::string *end_error) override;
    void decode(DecodedBlock &b) const override;
    bool decode_tapped(DecodedBlock &b, const BlockTap &tap, PieceBuffer &piece) const override {
        return format_.decode_tapped(b, tap, piece);
    }
    std::string finish(DecodedBlock &b) override;
    // Bytes the blocks of `threads` threads hold at most (not the stream's own buffers).
    static uint64_t memory(const StreamFormat &format, unsigned threads, size_t block_bytes);

private:
    const StreamFormat &format_;
    const size_t block_bytes_;
    ByteStream stream_;                      // the filling job's
    std::unique_ptr<unsigned char[]> tail_;  // bytes left over from the last cut (filling job's)
    size_t tail_len_ = 0;
    uint64_t next_offset_ = 0;  // decoded offset of the next block's first byte (filling job's)
    bool ended_ = false;        // the filling job's
    uint64_t carry_ = 0;        // the reading thread's
    uint64_t lines_ = 0;
    // open_range(): the file and the range's first byte, whose preceding lines finish() counts
    // the first time a block fails (lines_before_known_ until then false).
    const Source *source_ = nullptr;
    uint64_t range_begin_ = 0;
    bool lines_before_known_ = true;
};

// A shard reader over a BlockDecoder: copies the blocks' records out in order.
class BlockShardReader final : public ShardReader {
public:
    // `jobs` is the reader's own (created and opened by the caller); `failed_status` /
    // `failed_error`: the jobs could not start, and read() returns 0 with that reason.
    BlockShardReader(std::unique_ptr<BlockJobs> jobs, unsigned threads,
                     sonde_status_t failed_status = SONDE_STATUS_SUCCESS,
                     const std::string &failed_error = std::string());
    size_t read(sonde_memref_t *out, size_t max) override;
    bool has_view() const override { return true; }
    size_t view(const sonde_memref_t **out) override;
    void set_tap(const BlockTap *tap) override {
        if (decoder_ != nullptr) decoder_->set_tap(tap);
    }
    BlockTapOut *view_tap() const override { return view_tap_; }

private:
    // Makes block_ a block with records left; false at the end or on an error (then status()).
    bool advance();

    std::unique_ptr<BlockJobs> jobs_;
    std::unique_ptr<BlockDecoder> decoder_;
    DecodedBlock *block_ = nullptr;
    size_t pos_ = 0;
    BlockTapOut *view_tap_ = nullptr;  // the last view()'s, when it was a whole tapped block
};

// A shard of a stream format read through blocks: the format object and the StreamBlocks
// live with the reader. `threads` as BlockDecoder's.
template <class Format>
class StreamShardJobs final : public BlockJobs {
public:
    template <class... A>
    StreamShardJobs(size_t block_bytes, A &&...args)
        : format_(std::forward<A>(args)...), blocks_(format_, block_bytes) {}
    sonde_status_t open(const Source *source, std::string *error) { return blocks_.open(source, error); }
    sonde_status_t open_range(const Source *source, uint64_t begin, uint64_t end, uint64_t carry,
                              std::string *error) {
        return blocks_.open_range(source, begin, end, carry, error);
    }
    bool fill(DecodedBlock &b, bool *last, sonde_status_t *s, std::string *e) override {
        return blocks_.fill(b, last, s, e);
    }
    void decode(DecodedBlock &b) const override { blocks_.decode(b); }
    bool decode_tapped(DecodedBlock &b, const BlockTap &tap, PieceBuffer &piece) const override {
        return blocks_.decode_tapped(b, tap, piece);
    }
    std::string finish(DecodedBlock &b) override { return blocks_.finish(b); }

private:
    Format format_;
    StreamBlocks blocks_;
};

// Opens a reader of `source` in the stream format `Format` (constructed from `args`).
template <class Format, class... A>
std::unique_ptr<ShardReader> open_stream_shard(const Source *source, unsigned threads, size_t block_bytes,
                                               A &&...args) {
    auto jobs = std::make_unique<StreamShardJobs<Format>>(block_bytes, std::forward<A>(args)...);
    std::string err;
    const sonde_status_t s = jobs->open(source, &err);
    return std::make_unique<BlockShardReader>(std::move(jobs), threads, s, err);
}

// Opens a reader of bytes [begin, end) of `source` (a plain file) in the stream format
// `Format`, `carry` in force at `begin` (StreamBlocks::open_range).
template <class Format, class... A>
std::unique_ptr<ShardReader> open_stream_range(const Source *source, unsigned threads, size_t block_bytes,
                                               uint64_t begin, uint64_t end, uint64_t carry, A &&...args) {
    auto jobs = std::make_unique<StreamShardJobs<Format>>(block_bytes, std::forward<A>(args)...);
    std::string err;
    const sonde_status_t s = jobs->open_range(source, begin, end, carry, &err);
    return std::make_unique<BlockShardReader>(std::move(jobs), threads, s, err);
}

}  // namespace sonde::trace
