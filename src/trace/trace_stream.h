// A byte stream over a plain or zstd-compressed file (detected by the zstd frame magic), read
// in large blocks; used by the lackey and raw64 readers. One thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <sonde/status.h>

namespace sonde::analysis {

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
    uint64_t file_offset_ = 0;  // bytes of the file consumed into in_
    std::unique_ptr<unsigned char[]> in_;  // not zero-filled: only the bytes read are touched
    size_t in_cap_ = 0;
    size_t in_pos_ = 0;
    size_t in_len_ = 0;
    void *dctx_ = nullptr;
    size_t last_ret_ = 0;  // last ZSTD_decompressStream result: 0 = frame complete
    sonde_status_t status_ = SONDE_STATUS_SUCCESS;
    std::string error_;
};

}  // namespace sonde::analysis
