// Source: an input opened once, peeked while its format is probed; ByteStream: plain or zstd
// bytes of a Source in large blocks; ByteWindow: the parsers' window over them (see
// trace_stream.h).
#include "trace/trace_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "trace/trace_format.h"

namespace sonde::trace {

namespace {

const unsigned char kZstdMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};
constexpr size_t kStreamBlock = 256u << 10;  // read() size for pipes: a few pipe buffers
constexpr size_t kFileBlock = 1u << 20;      // pread() size for files

// Window size declared by the zstd frame header at `p` (RFC 8878), or 8 MiB when the bytes
// are too short to tell; at most 2^27, the decoder's own limit.
uint64_t zstd_window(const unsigned char *p, size_t n) {
    constexpr uint64_t kUnknown = 8u << 20, kMax = uint64_t(1) << 27;
    if (n < 6) return kUnknown;
    const unsigned fhd = p[4];
    if ((fhd & 0x20) == 0) {
        const unsigned wd = p[5];
        const uint64_t base = uint64_t(1) << (10 + (wd >> 3));
        return std::min<uint64_t>(base + base / 8 * (wd & 7), kMax);
    }
    // Single segment: the window is the content size, stored after the dictionary id.
    static const size_t kDid[4] = {0, 1, 2, 4};
    static const size_t kFcs[4] = {1, 2, 4, 8};
    const size_t at = 5 + kDid[fhd & 3], len = kFcs[fhd >> 6];
    if (n < at + len) return kUnknown;
    uint64_t v = 0;
    for (size_t i = len; i-- > 0;) v = (v << 8) | p[at + i];
    if (len == 2) v += 256;
    return std::min(v, kMax);
}

}  // namespace

// ---- Source ----

Source::~Source() {
    if (fd_ >= 0) ::close(fd_);
}

sonde_status_t Source::open(const std::string &path, std::string *error) {
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
    if (S_ISREG(st.st_mode)) {
        seekable_ = true;
        size_ = static_cast<uint64_t>(st.st_size);
    } else if (S_ISBLK(st.st_mode)) {
        const off_t end = ::lseek(fd_, 0, SEEK_END);
        seekable_ = end >= 0;
        size_ = end >= 0 ? static_cast<uint64_t>(end) : 0;
    }
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Source::peek(size_t n, std::string *error) {
    if (n <= head_size_ || (!seekable_ && stream_end_)) return SONDE_STATUS_SUCCESS;
    if (seekable_) n = static_cast<size_t>(std::min<uint64_t>(n, size_));
    if (n > head_cap_) {
        std::unique_ptr<unsigned char[]> grown(new unsigned char[n]);
        if (head_size_ != 0) std::memcpy(grown.get(), head_.get(), head_size_);
        head_ = std::move(grown);
        head_cap_ = n;
    }
    while (head_size_ < n) {
        const ssize_t got =
            seekable_ ? ::pread(fd_, head_.get() + head_size_, n - head_size_, static_cast<off_t>(head_size_))
                      : ::read(fd_, head_.get() + head_size_, n - head_size_);
        if (got < 0) {
            if (errno == EINTR) continue;
            *error = fmt::at(path_, head_size_, std::string("read failed: ") + std::strerror(errno));
            return SONDE_STATUS_ERROR_IO;
        }
        if (got == 0) {
            stream_end_ = !seekable_;
            break;
        }
        head_size_ += static_cast<size_t>(got);
    }
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Source::spool(std::string *error) {
    if (seekable_) return SONDE_STATUS_SUCCESS;
    const char *env = std::getenv("TMPDIR");
    const std::string dir = env != nullptr && *env != '\0' ? env : "/tmp";
    int tmp = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (tmp < 0) {  // a file system without O_TMPFILE: a named file, unlinked at once
        std::string name = dir + "/sonde-spool-XXXXXX";
        tmp = ::mkostemp(&name[0], O_CLOEXEC);
        if (tmp >= 0) ::unlink(name.c_str());
    }
    if (tmp < 0) {
        *error = path_ + ": cannot make a temporary file in " + dir +
                 " to copy the stream to: " + std::strerror(errno);
        return SONDE_STATUS_ERROR_IO;
    }
    auto write_all = [&](const unsigned char *p, size_t n) {
        while (n > 0) {
            const ssize_t w = ::write(tmp, p, n);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return false;
            p += w;
            n -= static_cast<size_t>(w);
        }
        return true;
    };
    const auto fail = [&](const std::string &what) {
        *error = path_ + ": " + what;
        ::close(tmp);
        return SONDE_STATUS_ERROR_IO;
    };
    uint64_t total = 0;
    if (head_size_ != 0 && !write_all(head_.get(), head_size_))
        return fail("cannot copy the stream to a temporary file in " + dir + ": " + std::strerror(errno));
    total += head_size_;
    if (!stream_end_) {
        std::unique_ptr<unsigned char[]> buf(new unsigned char[kStreamBlock]);
        for (;;) {
            const ssize_t got = ::read(fd_, buf.get(), kStreamBlock);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0)
                return fail(fmt::at(path_, total, std::string("read failed: ") + std::strerror(errno))
                                .substr(path_.size() + 2));
            if (got == 0) break;
            if (!write_all(buf.get(), static_cast<size_t>(got)))
                return fail("cannot copy the stream to a temporary file in " + dir + ": " +
                            std::strerror(errno));
            total += static_cast<uint64_t>(got);
        }
    }
    ::close(fd_);
    fd_ = tmp;
    seekable_ = true;
    size_ = total;
    stream_end_ = false;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t Source::read_at(uint64_t offset, unsigned char *dst, size_t n, size_t *got,
                               std::string *error) const {
    size_t done = 0;
    while (done < n && offset + done < size_) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(n - done, size_ - offset - done));
        const ssize_t r = ::pread(fd_, dst + done, want, static_cast<off_t>(offset + done));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            *error = fmt::at(path_, offset + done, std::string("read failed: ") + std::strerror(errno));
            return SONDE_STATUS_ERROR_IO;
        }
        if (r == 0) break;
        done += static_cast<size_t>(r);
    }
    *got = done;
    return SONDE_STATUS_SUCCESS;
}

bool Source::zstd() const { return head_size_ >= 4 && std::memcmp(head_.get(), kZstdMagic, 4) == 0; }

bool Source::take(std::string *error) const {
    if (seekable_ || !taken_.exchange(true)) return true;
    *error = path_ + ": a pipe or FIFO can be read only once, and this one is being read already";
    return false;
}

// ---- ByteStream ----

ByteStream::~ByteStream() {
    if (dctx_ != nullptr) ZSTD_freeDStream(static_cast<ZSTD_DStream *>(dctx_));
}

sonde_status_t ByteStream::open(const Source *source, std::string *error) {
    if (!source->take(error)) return SONDE_STATUS_ERROR_IO;
    source_ = source;
    // Blocks of 1 MiB, smaller for small files (allocation and page faults dominate there).
    in_cap_ = !source->seekable()                ? kStreamBlock
              : source->size() < kFileBlock - 16 ? static_cast<size_t>(source->size()) + 16
                                                 : kFileBlock;
    in_.reset(new unsigned char[in_cap_]);
    if (source->zstd()) {
        zstd_ = true;
        dctx_ = ZSTD_createDStream();
        if (dctx_ == nullptr) throw std::bad_alloc();
        ZSTD_initDStream(static_cast<ZSTD_DStream *>(dctx_));
    }
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t ByteStream::open_range(const Source *source, uint64_t begin, uint64_t end,
                                      std::string *error) {
    if (!source->seekable() || source->zstd()) {
        *error = source->path() + ": a byte range of a stream or of a compressed input cannot be read";
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    const sonde_status_t s = open(source, error);
    if (s != SONDE_STATUS_SUCCESS) return s;
    file_offset_ = std::min(begin, source->size());
    file_end_ = std::max(file_offset_, std::min(end, source->size()));
    return SONDE_STATUS_SUCCESS;
}

bool ByteStream::refill_input() {
    if (eof_) return false;
    in_pos_ = 0;
    in_len_ = 0;
    if (!source_->seekable() && file_offset_ < source_->head_size()) {
        // A stream's peeked bytes come first.
        const size_t n = std::min<size_t>(in_cap_, source_->head_size() - static_cast<size_t>(file_offset_));
        std::memcpy(in_.get(), source_->head() + file_offset_, n);
        in_len_ = n;
        file_offset_ += n;
        source_->count_consumed(n);
        return true;
    }
    // A byte range ends at file_end_ (UINT64_MAX otherwise, for a whole input).
    const size_t want = static_cast<size_t>(std::min<uint64_t>(in_cap_, file_end_ - file_offset_));
    for (;;) {
        const ssize_t n = source_->seekable()
                              ? ::pread(source_->fd(), in_.get(), want, static_cast<off_t>(file_offset_))
                              : ::read(source_->fd(), in_.get(), want);
        if (n < 0) {
            if (errno == EINTR) continue;
            status_ = SONDE_STATUS_ERROR_IO;
            error_ =
                fmt::at(source_->path(), file_offset_, std::string("read failed: ") + std::strerror(errno));
            return false;
        }
        in_len_ = static_cast<size_t>(n);
        file_offset_ += static_cast<uint64_t>(n);
        source_->count_consumed(static_cast<uint64_t>(n));
        if (n == 0) eof_ = true;
        return n > 0;
    }
}

uint64_t ByteStream::memory(const Source &source) {
    uint64_t m = kFileBlock;
    // A zstd stream keeps its window and a block in and out.
    if (source.zstd()) m += zstd_window(source.head(), source.head_size()) + (3u << 17);
    return m;
}

size_t ByteStream::fill(unsigned char *dst, size_t cap) {
    if (status_ != SONDE_STATUS_SUCCESS || cap == 0 || source_ == nullptr) return 0;
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
                    error_ = fmt::at(source_->path(), file_offset_,
                                     "truncated zstd frame (the file ends inside it)");
                }
                return 0;
            }
        }
        ZSTD_inBuffer in{in_.get(), in_len_, in_pos_};
        const size_t ret = ZSTD_decompressStream(static_cast<ZSTD_DStream *>(dctx_), &out, &in);
        fmt::throw_if_zstd_out_of_memory(ret);
        if (ZSTD_isError(ret)) {
            status_ = SONDE_STATUS_ERROR_FORMAT;
            error_ = fmt::at(source_->path(), file_offset_ - in_len_ + in_pos_,
                             std::string("zstd: ") + ZSTD_getErrorName(ret));
            return 0;
        }
        in_pos_ = in.pos;
        last_ret_ = ret;
    }
    return out.pos;
}

// ---- ByteWindow ----

namespace {
size_t window_size(const Source &source, size_t max_size, size_t slack) {
    if (!source.seekable()) return max_size;
    const uint64_t guess = source.size() * (source.zstd() ? 32 : 1) + slack;
    return guess < max_size ? static_cast<size_t>(guess) : max_size;
}
}  // namespace

sonde_status_t ByteWindow::open(const Source *source, size_t max_size, size_t slack, std::string *error) {
    const sonde_status_t s = stream_.open(source, error);
    if (s != SONDE_STATUS_SUCCESS) return s;
    cap_ = window_size(*source, max_size, slack);
    buf_.reset(new unsigned char[cap_]);
    return SONDE_STATUS_SUCCESS;
}

uint64_t ByteWindow::memory(const Source &source, size_t max_size, size_t slack) {
    return window_size(source, max_size, slack) + ByteStream::memory(source);
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
