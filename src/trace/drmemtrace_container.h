// The containers of a drmemtrace thread file, as DynamoRIO writes them: a zip archive whose
// members `chunk.NNNN` each hold a stretch of the record stream (read in archive order), or one
// stream, gzip, lz4 frame, zstd frame or plain. Each is read through its library (libzip, zlib,
// liblz4, libzstd); nothing here parses a container by hand. The container knows nothing of
// records: drmemtrace.cpp decodes the bytes.
//
// Threads: one container belongs to one thread at a time; every shard reader opens its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <sonde/status.h>

namespace sonde::trace {

// The decompressed bytes the shard reader asks for per read (its block): reads of at least this
// size let zlib inflate a gzip stream straight into the caller's buffer (see GzipContainer).
constexpr size_t kDrReadBlock = 1u << 16;

class DrContainer {
public:
    virtual ~DrContainer() = default;

    // Opens `path` by its magic bytes: zip, gzip, lz4 frame, zstd frame, else plain. A zip must
    // hold at least one member and only members named chunk.*; snappy (.sz) files are refused.
    // SUCCESS, or SONDE_STATUS_ERROR_IO (cannot open) / SONDE_STATUS_ERROR_FORMAT with *error
    // set ("PATH: offset N: what").
    static sonde_status_t open(const std::string &path, std::unique_ptr<DrContainer> *out,
                               std::string *error);

    // Moves to the next member (the first on the first call); false when there is none.
    virtual bool next_member() = 0;
    // Copies up to `cap` decompressed bytes of the current member; 0 at its end or on an error
    // (then status() != SUCCESS). Cost: the library's decompression straight into dst (zip, and
    // gzip when cap >= kDrReadBlock) or through one input block (lz4, zstd, plain); no
    // allocation.
    virtual size_t read(unsigned char *dst, size_t cap) = 0;
    // Members in the file (1 for a stream).
    virtual size_t num_members() const = 0;
    // Bytes of the file consumed so far, for progress (Input::consumed_bytes): what was read
    // from it (lz4, zstd, plain), zlib's offset in it (gzip), or the compressed size of the
    // members read and the read share of the current one's (zip). Never decreases.
    virtual uint64_t consumed() const = 0;
    // Whether the file is a zip archive (chunked) rather than one stream.
    virtual bool chunked() const = 0;
    // Bytes the container holds at most while it is read (its libraries' buffers and
    // windows), known once it is open: for the readers' memory budget (Input::shard_memory).
    virtual uint64_t memory() const = 0;
    // "chunk.0003" for zip members, "" for a stream.
    const std::string &member_name() const { return member_name_; }
    // Index of the current member (0-based).
    size_t member_index() const { return member_index_; }
    // Where messages about the current member point: "PATH" or "PATH: member chunk.0003".
    std::string where() const { return member_name_.empty() ? path_ : path_ + ": member " + member_name_; }
    // "PATH[: member M]: offset N: what", N counted in the member's decompressed bytes.
    std::string at(uint64_t offset, const std::string &what) const {
        return where() + ": offset " + std::to_string(offset) + ": " + what;
    }
    sonde_status_t status() const { return status_; }
    const std::string &error() const { return error_; }

protected:
    std::string path_;
    std::string member_name_;
    size_t member_index_ = 0;
    uint64_t member_offset_ = 0;  // decompressed bytes of the current member handed out
    sonde_status_t status_ = SONDE_STATUS_SUCCESS;
    std::string error_;
    void fail(sonde_status_t s, const std::string &what) {
        if (status_ == SONDE_STATUS_SUCCESS) {
            status_ = s;
            error_ = at(member_offset_, what);
        }
    }
};

}  // namespace sonde::trace
