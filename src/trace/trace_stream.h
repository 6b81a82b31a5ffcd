// An input opened once (Source), a byte stream over it, plain or zstd-compressed (detected by
// the zstd frame magic) and read in large blocks (ByteStream), and the window over that stream
// that the lackey and raw64 readers parse from (ByteWindow).
//
// A Source is a regular file (or block device), which readers read with pread() at their own
// offsets, so that several readers of one input are independent; or a stream (a pipe, a FIFO,
// a terminal), whose first bytes can be peeked while the format is probed: they are kept and
// replayed to the one reader that takes the stream. Nothing is ever opened twice, so bash's
// <(zstdcat t.zst), a named pipe or /dev/stdin work like files.
//
// Threads: a Source is immutable after open() and peek() (take() is atomic), so readers on
// several threads may share it; a ByteStream and a ByteWindow belong to one thread at a time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <sonde/status.h>

namespace sonde::trace {

class Source {
public:
    Source() = default;
    ~Source();
    Source(const Source &) = delete;
    Source &operator=(const Source &) = delete;

    // Opens `path` for reading; SUCCESS, or SONDE_STATUS_ERROR_IO with *error set ("PATH: cannot
    // open: reason"; a directory is refused).
    sonde_status_t open(const std::string &path, std::string *error);
    // Makes the first `n` bytes of the input (fewer when it is shorter) available through
    // head() without consuming them. For a stream this reads them and keeps them for the
    // reader. SUCCESS or SONDE_STATUS_ERROR_IO. Called while opening, before any reader exists.
    sonde_status_t peek(size_t n, std::string *error);
    const unsigned char *head() const { return head_.get(); }
    size_t head_size() const { return head_size_; }

    const std::string &path() const { return path_; }
    int fd() const { return fd_; }
    // True for regular files and block devices: read them with pread().
    bool seekable() const { return seekable_; }
    // Size of a seekable input; 0 for a stream.
    uint64_t size() const { return size_; }
    // True when the input starts with a zstd frame (needs peek(4) first).
    bool zstd() const;
    // For a stream: copies it, from its first byte to its end, into an unnamed temporary file
    // (in $TMPDIR, else /tmp; gone when the Source closes it), which the Source then reads as
    // a regular file: for formats whose readers need to seek (a Sonde trace's index is at its
    // end). The stream is read once. SUCCESS (also for a seekable input, which stays as it
    // is) or SONDE_STATUS_ERROR_IO with *error naming the stream and the temporary directory
    // (a read failed, no temporary file, a full disk). Called while opening, before any reader.
    sonde_status_t spool(std::string *error);
    // For a stream: hands it to the caller, once; false (with *error set) when another reader
    // has it already. Always true for a seekable input.
    bool take(std::string *error) const;
    // Bytes of the input its readers have consumed so far, for progress: every reader adds
    // what it reads (readers of one input on several threads add to the same count). Any
    // thread may read it while they run.
    void count_consumed(uint64_t n) const { consumed_.fetch_add(n, std::memory_order_relaxed); }
    uint64_t consumed() const { return consumed_.load(std::memory_order_relaxed); }
    // Reads up to `n` bytes at `offset` of a seekable input into dst (fewer at its end): for
    // readers that look around a byte range before they read it (its first record's start, the
    // state in force there). SUCCESS with *got set, or SONDE_STATUS_ERROR_IO with *error set.
    // Not counted as consumed.
    sonde_status_t read_at(uint64_t offset, unsigned char *dst, size_t n, size_t *got,
                           std::string *error) const;

private:
    std::string path_;
    int fd_ = -1;
    bool seekable_ = false;
    uint64_t size_ = 0;
    std::unique_ptr<unsigned char[]> head_;
    size_t head_size_ = 0;
    size_t head_cap_ = 0;
    bool stream_end_ = false;  // a stream ended within the peeked bytes
    mutable std::atomic<bool> taken_{false};
    mutable std::atomic<uint64_t> consumed_{0};
};

class ByteStream {
public:
    ByteStream() = default;
    ~ByteStream();
    ByteStream(const ByteStream &) = delete;
    ByteStream &operator=(const ByteStream &) = delete;

    // Starts reading `source` from its first byte (a stream: its peeked bytes, then the rest).
    // SUCCESS or SONDE_STATUS_ERROR_IO with *error set (a stream another reader has taken).
    sonde_status_t open(const Source *source, std::string *error);
    // Reads bytes [begin, end) of a seekable input that is not compressed (a byte range of a
    // partitioned run): fill() then gives those bytes and ends at `end`. SUCCESS, or
    // SONDE_STATUS_ERROR_INVALID_ARGUMENT for a stream or a zstd input (they cannot be split).
    sonde_status_t open_range(const Source *source, uint64_t begin, uint64_t end, std::string *error);
    // Copies up to `cap` decoded bytes into dst; 0 at the end or on error (see status()).
    // Cost: one read per block of the input and zstd streaming decompression; no allocation.
    size_t fill(unsigned char *dst, size_t cap);
    // Bytes a stream over `source` holds: its input block and, for zstd, the decoder's window
    // and buffers.
    static uint64_t memory(const Source &source);
    bool compressed() const { return zstd_; }
    // Size of a seekable input on disk, 0 for a stream.
    uint64_t file_size() const { return source_ != nullptr ? source_->size() : 0; }
    sonde_status_t status() const { return status_; }
    const std::string &error() const { return error_; }

private:
    bool refill_input();
    const Source *source_ = nullptr;
    bool zstd_ = false;
    bool eof_ = false;
    uint64_t file_offset_ = 0;             // bytes of the input consumed into in_
    uint64_t file_end_ = UINT64_MAX;       // open_range(): where the range ends
    std::unique_ptr<unsigned char[]> in_;  // not zero-filled: only the bytes read are touched
    size_t in_cap_ = 0;
    size_t in_pos_ = 0;
    size_t in_len_ = 0;
    void *dctx_ = nullptr;
    size_t last_ret_ = 0;  // last ZSTD_decompressStream result: 0 = frame complete
    sonde_status_t status_ = SONDE_STATUS_SUCCESS;
    std::string error_;
};

// A window over a ByteStream's decoded bytes for a parser that consumes them front to back:
// data()[pos(), len()) is not consumed yet. refill() keeps those bytes (moved to the front) and
// appends what the stream decodes next. The accessors are inline for the parsers' hot loops.
class ByteWindow {
public:
    // Starts the stream over `source` (see ByteStream::open) and allocates the window: the
    // decoded size guessed from the file (32 times the file for zstd, text expands about 30x)
    // plus `slack`, at most `max_size` bytes (`max_size` for a stream). SUCCESS or
    // SONDE_STATUS_ERROR_IO with *error set.
    sonde_status_t open(const Source *source, size_t max_size, size_t slack, std::string *error);
    // Bytes open() allocates for `source` with these arguments, and the stream's own buffers:
    // what a reader of this window holds at most.
    static uint64_t memory(const Source &source, size_t max_size, size_t slack);
    // Moves the unconsumed bytes to the front and appends decoded bytes; true when some were
    // added. False at the end of the stream (then eof() is true) or on a stream error (then
    // status() says which). Cost: a memmove of the unconsumed bytes and ByteStream::fill.
    bool refill();

    // The window; nullptr before a successful open().
    const unsigned char *data() const { return buf_.get(); }
    // Consumed bytes at the front of the window.
    size_t pos() const { return pos_; }
    // Bytes in the window, consumed or not.
    size_t len() const { return len_; }
    // Marks data()[0, pos) consumed (pos <= len()).
    void set_pos(size_t pos) { pos_ = pos; }
    // Offset of data()[0] in the decoded stream.
    uint64_t offset() const { return offset_; }
    // True once refill() found the end of the stream.
    bool eof() const { return eof_; }
    bool compressed() const { return stream_.compressed(); }
    sonde_status_t status() const { return stream_.status(); }
    const std::string &error() const { return stream_.error(); }

private:
    ByteStream stream_;
    std::unique_ptr<unsigned char[]> buf_;  // not zero-filled
    size_t cap_ = 0;
    size_t pos_ = 0;
    size_t len_ = 0;
    uint64_t offset_ = 0;
    bool eof_ = false;
};

}  // namespace sonde::trace
