// A byte stream over a plain or zstd-compressed file (detected by the zstd frame magic), read
// in large blocks, and the window over it that the lackey and raw64 readers parse from. One
// thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <sonde/status.h>

namespace sonde::trace {

class ByteStream {
public:
    ByteStream() = default;
    ~ByteStream();
    ByteStream(const ByteStream &) = delete;
    ByteStream &operator=(const ByteStream &) = delete;

    // Opens the file; SUCCESS or SONDE_STATUS_ERROR_IO with *error set.
    sonde_status_t open(const std::string &path, std::string *error);
    // Copies up to `cap` decoded bytes into dst; 0 at the end or on error (see status()).
    // Cost: one read() per 1 MiB of file and zstd streaming decompression; no allocation.
    size_t fill(unsigned char *dst, size_t cap);
    bool compressed() const { return zstd_; }
    // Size of the file on disk.
    uint64_t file_size() const { return file_size_; }
    sonde_status_t status() const { return status_; }
    const std::string &error() const { return error_; }

private:
    bool refill_input();
    std::string path_;
    int fd_ = -1;
    bool zstd_ = false;
    bool eof_ = false;
    uint64_t file_size_ = 0;
    uint64_t file_offset_ = 0;             // bytes of the file consumed into in_
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
    // Opens `path` (see ByteStream::open) and allocates the window: the decoded size guessed
    // from the file (32 times the file for zstd, text expands about 30x) plus `slack`, at most
    // `max_size` bytes. SUCCESS or SONDE_STATUS_ERROR_IO with *error set.
    sonde_status_t open(const std::string &path, size_t max_size, size_t slack, std::string *error);
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
