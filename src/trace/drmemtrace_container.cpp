// The drmemtrace containers (see drmemtrace_container.h): zip through libzip, gzip through
// zlib, lz4 frames through liblz4, zstd frames and plain files through ByteStream.
//
// libzip is loaded when the first .zip container is opened (dlopen, LibZip below), not linked:
// it links libcrypto, and the two took 3.3 ms of every process's start on a 2-vCPU VM (libsonde
// and all it links: 7.7 ms), in every `sonde` command and every program that links or dlopens
// libsonde, for a container most runs never read. Its header gives the types and prototypes.
#include "trace/drmemtrace_container.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <lz4frame.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>

#include "trace/trace_stream.h"

namespace sonde::trace {

namespace {

constexpr size_t kInputBlock = 1u << 18;
// zlib's gzip input buffer. gzread() inflates straight into the caller's buffer when it asks for
// at least twice this (and through zlib's own output buffer, then a copy, otherwise): half the
// reader's block, so that every read of the block is a direct one.
constexpr size_t kGzInput = kDrReadBlock / 2;

// libzip's functions, from the first of kLibZipNames that dlopen finds (soname 5 since libzip
// 1.10, 4 before; the same functions in both). The one found must have them all: a library of
// that name without them is reported, not passed over. Loaded once per process, never unloaded.
struct LibZip {
    decltype(&::zip_open) open = nullptr;
    decltype(&::zip_discard) discard = nullptr;
    decltype(&::zip_error_init_with_code) error_init_with_code = nullptr;
    decltype(&::zip_error_strerror) error_strerror = nullptr;
    decltype(&::zip_error_fini) error_fini = nullptr;
    decltype(&::zip_get_num_entries) get_num_entries = nullptr;
    decltype(&::zip_get_name) get_name = nullptr;
    decltype(&::zip_stat_init) stat_init = nullptr;
    decltype(&::zip_stat_index) stat_index = nullptr;
    decltype(&::zip_fopen_index) fopen_index = nullptr;
    decltype(&::zip_fread) fread = nullptr;
    decltype(&::zip_fclose) fclose = nullptr;
    decltype(&::zip_strerror) strerror = nullptr;
    decltype(&::zip_file_strerror) file_strerror = nullptr;
    std::string error;  // why it could not be loaded; empty when loaded
};

constexpr const char *kLibZipNames[] = {"libzip.so.5", "libzip.so.4", "libzip.so"};

template <typename F>
bool resolve(void *handle, const char *name, F *fn, std::string *missing) {
    *fn = reinterpret_cast<F>(dlsym(handle, name));
    if (*fn == nullptr && missing->empty()) *missing = name;
    return *fn != nullptr;
}

const LibZip &libzip() {
    static LibZip z;
    static std::once_flag once;
    std::call_once(once, [] {
        void *h = nullptr;
        const char *found = nullptr;
        std::string tried;
        for (const char *name : kLibZipNames) {
            h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
            if (h != nullptr) {
                found = name;
                break;
            }
            const char *e = dlerror();
            tried += std::string(tried.empty() ? "" : "; ") + (e != nullptr ? e : name);
        }
        if (h == nullptr) {
            z.error = "libzip could not be loaded (" + tried + "); install libzip (Debian: libzip4)";
            return;
        }
        std::string missing;
        bool ok = resolve(h, "zip_open", &z.open, &missing);
        ok = resolve(h, "zip_discard", &z.discard, &missing) && ok;
        ok = resolve(h, "zip_error_init_with_code", &z.error_init_with_code, &missing) && ok;
        ok = resolve(h, "zip_error_strerror", &z.error_strerror, &missing) && ok;
        ok = resolve(h, "zip_error_fini", &z.error_fini, &missing) && ok;
        ok = resolve(h, "zip_get_num_entries", &z.get_num_entries, &missing) && ok;
        ok = resolve(h, "zip_get_name", &z.get_name, &missing) && ok;
        ok = resolve(h, "zip_stat_init", &z.stat_init, &missing) && ok;
        ok = resolve(h, "zip_stat_index", &z.stat_index, &missing) && ok;
        ok = resolve(h, "zip_fopen_index", &z.fopen_index, &missing) && ok;
        ok = resolve(h, "zip_fread", &z.fread, &missing) && ok;
        ok = resolve(h, "zip_fclose", &z.fclose, &missing) && ok;
        ok = resolve(h, "zip_strerror", &z.strerror, &missing) && ok;
        ok = resolve(h, "zip_file_strerror", &z.file_strerror, &missing) && ok;
        if (!ok)
            z.error = std::string(found) + " has no " + missing + ": it is not libzip, or too old a libzip";
    });
    return z;
}

// A zip archive: members in archive order, each inflated by libzip straight into the caller's
// buffer (libzip checks each member's CRC at its end).
class ZipContainer final : public DrContainer {
public:
    ~ZipContainer() override {
        if (file_ != nullptr) z_->fclose(file_);
        if (zip_ != nullptr) z_->discard(zip_);
    }

    sonde_status_t open(const std::string &path, std::string *error) {
        path_ = path;
        if (!z_->error.empty()) {
            *error = path + ": offset 0: cannot read a .zip container: " + z_->error;
            return SONDE_STATUS_ERROR_NOT_SUPPORTED;
        }
        int code = 0;
        zip_ = z_->open(path.c_str(), ZIP_RDONLY, &code);
        if (zip_ == nullptr) {
            zip_error_t e;
            z_->error_init_with_code(&e, code);
            *error = path + ": offset 0: not a readable zip archive: " + z_->error_strerror(&e);
            z_->error_fini(&e);
            return code == ZIP_ER_OPEN || code == ZIP_ER_READ ? SONDE_STATUS_ERROR_IO
                                                              : SONDE_STATUS_ERROR_FORMAT;
        }
        const zip_int64_t n = z_->get_num_entries(zip_, 0);
        if (n <= 0) {
            *error =
                path + ": offset 0: zip archive has no chunk members (a drmemtrace .zip holds chunk.NNNN)";
            return SONDE_STATUS_ERROR_FORMAT;
        }
        for (zip_int64_t i = 0; i < n; ++i) {
            const char *name = z_->get_name(zip_, static_cast<zip_uint64_t>(i), 0);
            if (name == nullptr || std::strncmp(name, "chunk.", 6) != 0) {
                zip_stat_t st;
                z_->stat_init(&st);
                const bool have = z_->stat_index(zip_, static_cast<zip_uint64_t>(i), 0, &st) == 0;
                *error = path + ": member " +
                         (name != nullptr ? std::string(name) : "#" + std::to_string(i)) +
                         ": offset 0: not a chunk member (a drmemtrace .zip holds only chunk.NNNN; " +
                         (have && (st.valid & ZIP_STAT_SIZE) ? std::to_string(st.size) + " bytes"
                                                             : "size unknown") +
                         ")";
                return SONDE_STATUS_ERROR_FORMAT;
            }
        }
        count_ = static_cast<size_t>(n);
        return SONDE_STATUS_SUCCESS;
    }

    bool next_member() override {
        if (status_ != SONDE_STATUS_SUCCESS) return false;
        if (file_ != nullptr) {
            z_->fclose(file_);
            file_ = nullptr;
        }
        const size_t i = started_ ? member_index_ + 1 : 0;
        if (i >= count_) return false;
        started_ = true;
        member_index_ = i;
        member_offset_ = 0;
        member_name_ = z_->get_name(zip_, i, 0);
        done_comp_ += member_comp_;
        zip_stat_t st;
        z_->stat_init(&st);
        const bool have = z_->stat_index(zip_, i, 0, &st) == 0;
        member_comp_ = have && (st.valid & ZIP_STAT_COMP_SIZE) ? st.comp_size : 0;
        member_size_ = have && (st.valid & ZIP_STAT_SIZE) ? st.size : 0;
        file_ = z_->fopen_index(zip_, i, 0);
        if (file_ == nullptr) {
            fail(SONDE_STATUS_ERROR_FORMAT, std::string("cannot open member: ") + z_->strerror(zip_));
            return false;
        }
        return true;
    }

    size_t read(unsigned char *dst, size_t cap) override {
        if (status_ != SONDE_STATUS_SUCCESS || file_ == nullptr) return 0;
        const zip_int64_t got = z_->fread(file_, dst, cap);
        if (got < 0) {
            fail(SONDE_STATUS_ERROR_FORMAT, std::string("zip: ") + z_->file_strerror(file_));
            return 0;
        }
        member_offset_ += static_cast<uint64_t>(got);
        return static_cast<size_t>(got);
    }

    size_t num_members() const override { return count_; }
    uint64_t consumed() const override {
        if (member_size_ == 0) return done_comp_;
        const uint64_t read = member_offset_ < member_size_ ? member_offset_ : member_size_;
        return done_comp_ + static_cast<uint64_t>(static_cast<double>(member_comp_) * read / member_size_);
    }
    bool chunked() const override { return true; }
    // libzip's read buffer and zlib's inflate state with its 32 KiB window, rounded up.
    uint64_t memory() const override { return 256u << 10; }

private:
    const LibZip *z_ = &libzip();
    zip_t *zip_ = nullptr;
    zip_file_t *file_ = nullptr;
    size_t count_ = 0;
    bool started_ = false;
    uint64_t done_comp_ = 0;    // compressed bytes of the members before the current one
    uint64_t member_comp_ = 0;  // the current member's compressed and decompressed sizes
    uint64_t member_size_ = 0;
};

// A container that is one member: a gzip, lz4, zstd or plain file.
class SingleMember : public DrContainer {
public:
    bool next_member() override {
        if (started_) return false;
        started_ = true;
        return true;
    }
    size_t num_members() const override { return 1; }
    bool chunked() const override { return false; }

private:
    bool started_ = false;
};

// One gzip stream (or several concatenated), inflated by zlib straight into the caller's buffer
// (reads of kDrReadBlock bytes or more; smaller ones go through zlib's output buffer).
class GzipContainer final : public SingleMember {
public:
    ~GzipContainer() override {
        if (gz_ != nullptr) gzclose(gz_);
    }

    sonde_status_t open(const std::string &path, std::string *error) {
        path_ = path;
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            *error = path + ": cannot open: " + std::strerror(errno);
            return SONDE_STATUS_ERROR_IO;
        }
        gz_ = gzdopen(fd, "rb");
        if (gz_ == nullptr) {
            ::close(fd);
            throw std::bad_alloc();
        }
        gzbuffer(gz_, kGzInput);
        return SONDE_STATUS_SUCCESS;
    }

    size_t read(unsigned char *dst, size_t cap) override {
        if (status_ != SONDE_STATUS_SUCCESS || done_) return 0;
        const unsigned limit = cap > (1u << 30) ? (1u << 30) : static_cast<unsigned>(cap);
        const int got = gzread(gz_, dst, limit);
        int code = Z_OK;
        const char *msg = gzerror(gz_, &code);
        if (got < 0 || (code != Z_OK && code != Z_STREAM_END)) {
            // zlib reports a stream cut short as Z_BUF_ERROR ("unexpected end of file").
            fail(SONDE_STATUS_ERROR_FORMAT,
                 std::string(code == Z_BUF_ERROR ? "truncated gzip stream: " : "gzip: ") + msg);
            return 0;
        }
        if (got == 0) done_ = true;
        member_offset_ += static_cast<uint64_t>(got);
        return static_cast<size_t>(got);
    }

    // gzoffset() costs a system call (lseek), so it is asked again only after another MiB of
    // output: the count is for progress, and the end of the shard reports the whole file.
    uint64_t consumed() const override {
        if (gz_ == nullptr || (consumed_at_ != 0 && member_offset_ - consumed_at_ < kConsumedStep))
            return consumed_;
        consumed_at_ = member_offset_ != 0 ? member_offset_ : 1;
        const z_off_t off = gzoffset(gz_);
        if (off > 0 && static_cast<uint64_t>(off) > consumed_) consumed_ = static_cast<uint64_t>(off);
        return consumed_;
    }

    // zlib's input buffer (kGzInput), its output buffer (twice that) and the inflate window.
    uint64_t memory() const override { return 3 * kGzInput + (64u << 10); }

private:
    gzFile gz_ = nullptr;
    bool done_ = false;
    static constexpr uint64_t kConsumedStep = 1u << 20;
    mutable uint64_t consumed_ = 0;     // the largest offset gzoffset() gave
    mutable uint64_t consumed_at_ = 0;  // member_offset_ when it was asked (0: never)
};

// One lz4 frame (or several concatenated), decoded by liblz4's frame API.
class Lz4Container final : public SingleMember {
public:
    ~Lz4Container() override {
        if (fd_ >= 0) ::close(fd_);
        if (ctx_ != nullptr) LZ4F_freeDecompressionContext(ctx_);
    }

    sonde_status_t open(const std::string &path, std::string *error) {
        path_ = path;
        fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd_ < 0) {
            *error = path + ": cannot open: " + std::strerror(errno);
            return SONDE_STATUS_ERROR_IO;
        }
        if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx_, LZ4F_VERSION))) throw std::bad_alloc();
        in_.reset(new unsigned char[kInputBlock]);
        return SONDE_STATUS_SUCCESS;
    }

    size_t read(unsigned char *dst, size_t cap) override {
        if (status_ != SONDE_STATUS_SUCCESS) return 0;
        size_t produced = 0;
        while (produced == 0) {
            if (in_pos_ == in_len_) {
                if (eof_) {
                    if (hint_ != 0)
                        fail(SONDE_STATUS_ERROR_FORMAT, "truncated lz4 frame (the file ends inside it)");
                    return 0;
                }
                ssize_t n;
                do {
                    n = ::read(fd_, in_.get(), kInputBlock);
                } while (n < 0 && errno == EINTR);
                if (n < 0) {
                    fail(SONDE_STATUS_ERROR_IO, std::string("read failed: ") + std::strerror(errno));
                    return 0;
                }
                in_pos_ = 0;
                in_len_ = static_cast<size_t>(n);
                raw_ += static_cast<uint64_t>(n);
                if (n == 0) {
                    eof_ = true;
                    continue;
                }
            }
            size_t out_size = cap - produced;
            size_t in_size = in_len_ - in_pos_;
            hint_ = LZ4F_decompress(ctx_, dst + produced, &out_size, in_.get() + in_pos_, &in_size, nullptr);
            if (LZ4F_isError(hint_)) {
                fail(SONDE_STATUS_ERROR_FORMAT, std::string("lz4: ") + LZ4F_getErrorName(hint_));
                return 0;
            }
            in_pos_ += in_size;
            produced += out_size;
        }
        member_offset_ += produced;
        return produced;
    }

    // The input block and liblz4's block buffers: two of the largest lz4 block size (4 MiB).
    uint64_t memory() const override { return kInputBlock + (8u << 20) + (64u << 10); }
    uint64_t consumed() const override { return raw_; }

private:
    int fd_ = -1;
    uint64_t raw_ = 0;  // bytes read from the file
    LZ4F_dctx *ctx_ = nullptr;
    std::unique_ptr<unsigned char[]> in_;
    size_t in_pos_ = 0;
    size_t in_len_ = 0;
    size_t hint_ = 0;  // 0 once a frame is complete
    bool eof_ = false;
};

// A plain file or one zstd frame (ByteStream tells them apart by the zstd magic).
class StreamContainer final : public SingleMember {
public:
    sonde_status_t open(const std::string &path, std::string *error) {
        path_ = path;
        sonde_status_t s = source_.open(path, error);
        if (s == SONDE_STATUS_SUCCESS) s = source_.peek(kZstdHead, error);
        if (s == SONDE_STATUS_SUCCESS) s = stream_.open(&source_, error);
        return s;
    }

    size_t read(unsigned char *dst, size_t cap) override {
        if (status_ != SONDE_STATUS_SUCCESS) return 0;
        const size_t got = stream_.fill(dst, cap);
        if (got == 0 && stream_.status() != SONDE_STATUS_SUCCESS) {
            status_ = stream_.status();
            error_ = stream_.error();
        }
        member_offset_ += got;
        return got;
    }

    uint64_t memory() const override { return ByteWindow::memory(source_, 0, 0); }
    uint64_t consumed() const override { return source_.consumed(); }

private:
    static constexpr size_t kZstdHead = 18;  // a zstd frame header, for its window size
    Source source_;
    ByteStream stream_;
};

}  // namespace

sonde_status_t DrContainer::open(const std::string &path, std::unique_ptr<DrContainer> *out,
                                 std::string *error) {
    unsigned char magic[10] = {0};
    ssize_t got = 0;
    {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || ::fstat(fd, &st) != 0) {
            *error = path + ": cannot open: " + std::strerror(errno);
            if (fd >= 0) ::close(fd);
            return SONDE_STATUS_ERROR_IO;
        }
        if (S_ISDIR(st.st_mode)) {
            ::close(fd);
            *error = path + ": cannot open: is a directory";
            return SONDE_STATUS_ERROR_IO;
        }
        do {
            got = ::read(fd, magic, sizeof magic);
        } while (got < 0 && errno == EINTR);
        ::close(fd);
        if (got < 0) {
            *error = path + ": offset 0: read failed: " + std::strerror(errno);
            return SONDE_STATUS_ERROR_IO;
        }
    }
    static const unsigned char kZip[4] = {'P', 'K', 3, 4};
    static const unsigned char kZipEmpty[4] = {'P', 'K', 5, 6};
    static const unsigned char kLz4[4] = {0x04, 0x22, 0x4D, 0x18};
    static const unsigned char kSnappy[10] = {0xFF, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'};
    sonde_status_t s;
    if (got >= 4 && (std::memcmp(magic, kZip, 4) == 0 || std::memcmp(magic, kZipEmpty, 4) == 0)) {
        auto c = std::make_unique<ZipContainer>();
        s = c->open(path, error);
        *out = std::move(c);
    } else if (got >= 2 && magic[0] == 0x1F && magic[1] == 0x8B) {
        auto c = std::make_unique<GzipContainer>();
        s = c->open(path, error);
        *out = std::move(c);
    } else if (got >= 4 && std::memcmp(magic, kLz4, 4) == 0) {
        auto c = std::make_unique<Lz4Container>();
        s = c->open(path, error);
        *out = std::move(c);
    } else if (got >= 10 && std::memcmp(magic, kSnappy, 10) == 0) {
        *error = path +
                 ": offset 0: snappy-compressed drmemtrace files (.sz) are not supported; "
                 "decompress them to a plain, .gz or .zip trace first";
        return SONDE_STATUS_ERROR_FORMAT;
    } else {
        auto c = std::make_unique<StreamContainer>();
        s = c->open(path, error);
        *out = std::move(c);
    }
    if (s != SONDE_STATUS_SUCCESS) out->reset();
    return s;
}

}  // namespace sonde::trace
