// ByteStream: plain or zstd file bytes in large blocks; ByteWindow: the parsers' window over
// them (see trace_stream.h).
#include "trace/trace_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "trace/trace_format.h"

namespace sonde::trace {

ByteStream::~ByteStream() {
    if (fd_ >= 0) ::close(fd_);
    if (dctx_ != nullptr) ZSTD_freeDStream(static_cast<ZSTD_DStream *>(dctx_));
}

sonde_status_t ByteStream::open(const std::string &path, std::string *error) {
    path_ = path;
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd_ < 0 || ::fstat(fd_, &st) != 0) {
        *error = path + ": cannot open: " + std::strerror(errno);
        return SONDE_STATUS_ERROR_IO;
    }
    if (S_ISDIR(st.st_mode)) {
        *error = path + ": cannot open: is a directory";
        return SONDE_STATUS_ERROR_IO;
    }
    file_size_ = static_cast<uint64_t>(st.st_size);
    // Blocks of 1 MiB, smaller for small files (allocation and page faults dominate there).
    in_cap_ = file_size_ < (1u << 20) ? static_cast<size_t>(file_size_) + 16 : (1u << 20);
    in_.reset(new unsigned char[in_cap_]);
    if (!refill_input() && status_ != SONDE_STATUS_SUCCESS) {
        *error = error_;
        return status_;
    }
    static const unsigned char kZstdMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};
    if (in_len_ >= 4 && std::memcmp(in_.get(), kZstdMagic, 4) == 0) {
        zstd_ = true;
        dctx_ = ZSTD_createDStream();
        if (dctx_ == nullptr) throw std::bad_alloc();
        ZSTD_initDStream(static_cast<ZSTD_DStream *>(dctx_));
    }
    return SONDE_STATUS_SUCCESS;
}

bool ByteStream::refill_input() {
    if (eof_) return false;
    for (;;) {
        const ssize_t n = ::read(fd_, in_.get(), in_cap_);
        if (n < 0) {
            if (errno == EINTR) continue;
            status_ = SONDE_STATUS_ERROR_IO;
            error_ = fmt::at(path_, file_offset_, std::string("read failed: ") + std::strerror(errno));
            return false;
        }
        in_pos_ = 0;
        in_len_ = static_cast<size_t>(n);
        file_offset_ += static_cast<uint64_t>(n);
        if (n == 0) eof_ = true;
        return n > 0;
    }
}

size_t ByteStream::fill(unsigned char *dst, size_t cap) {
    if (status_ != SONDE_STATUS_SUCCESS || cap == 0) return 0;
    if (!zstd_) {
        if (in_pos_ == in_len_ && !refill_input()) return 0;
        const size_t n = in_len_ - in_pos_ < cap ? in_len_ - in_pos_ : cap;
        std::memcpy(dst, in_.get() + in_pos_, n);
        in_pos_ += n;
        return n;
    }
    ZSTD_outBuffer out{dst, cap, 0};
    while (out.pos == 0) {
        if (in_pos_ == in_len_) {
            if (!refill_input()) {
                if (status_ != SONDE_STATUS_SUCCESS) return 0;
                if (last_ret_ != 0) {
                    status_ = SONDE_STATUS_ERROR_FORMAT;
                    error_ = fmt::at(path_, file_size_, "truncated zstd frame (the file ends inside it)");
                }
                return 0;
            }
        }
        ZSTD_inBuffer in{in_.get(), in_len_, in_pos_};
        const size_t ret = ZSTD_decompressStream(static_cast<ZSTD_DStream *>(dctx_), &out, &in);
        if (ZSTD_isError(ret)) {
            status_ = SONDE_STATUS_ERROR_FORMAT;
            error_ = fmt::at(path_, file_offset_ - in_len_ + in_pos_,
                             std::string("zstd: ") + ZSTD_getErrorName(ret));
            return 0;
        }
        in_pos_ = in.pos;
        last_ret_ = ret;
    }
    return out.pos;
}

sonde_status_t ByteWindow::open(const std::string &path, size_t max_size, size_t slack, std::string *error) {
    const sonde_status_t s = stream_.open(path, error);
    if (s != SONDE_STATUS_SUCCESS) return s;
    const uint64_t guess = stream_.file_size() * (stream_.compressed() ? 32 : 1) + slack;
    cap_ = guess < max_size ? static_cast<size_t>(guess) : max_size;
    buf_.reset(new unsigned char[cap_]);
    return SONDE_STATUS_SUCCESS;
}

bool ByteWindow::refill() {
    const size_t tail = len_ - pos_;
    std::memmove(buf_.get(), buf_.get() + pos_, tail);
    offset_ += pos_;
    pos_ = 0;
    len_ = tail;
    const size_t got = stream_.fill(buf_.get() + len_, cap_ - len_);
    if (got == 0) {
        if (stream_.status() == SONDE_STATUS_SUCCESS) eof_ = true;
        return false;
    }
    len_ += got;
    return true;
}

}  // namespace sonde::trace
