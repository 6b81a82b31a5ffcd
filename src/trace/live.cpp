// The live input (live.h): on-demand reading of the live stream, the shard queues, and the
// shard readers that block until their shard has records or ends.
#include "trace/live.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sonde::trace {

namespace {

// The stream's messages (docs/trace-format.md, "The live stream"; the runtime's side is in
// src/memtrace/memtrace.c): a 16-byte header {kind, shard, count, flags}, a BATCH's records
// after it. HELLO comes over the socket with the shared file of the ring; the rest in the ring.
constexpr uint32_t kHello = 1, kShard = 2, kBatch = 3, kEnd = 4;
// The shared file: the control page (byte offsets of the ring's positions and sleep flags),
// then the ring, a power of two of bytes.
constexpr size_t kRingHead = 0, kRingTail = 64, kRingWriterWaits = 128, kRingReaderWaits = 192,
                 kRingData = 4096;
constexpr uint32_t kMagic = 0x564c4453;  // "SDLV"
constexpr uint32_t kVersion = 1;
constexpr uint32_t kLastBatch = 1;  // flags of a shard's last BATCH
constexpr uint32_t kMaxBatch = 65536;
constexpr size_t kNone = SIZE_MAX;  // a reader that is not a shard's (wait_shards)

struct Header {
    uint32_t kind, shard, count, flags;
};

}  // namespace

class LiveInput::Reader final : public ShardReader {
public:
    Reader(const LiveInput *in, size_t shard, uint32_t id) : in_(in), shard_(shard), id_(id) {}

    // Cost: a lock per call; a queued batch is copied out, a batch read while this reader
    // holds the reading role goes straight into `out`.
    size_t read(sonde_memref_t *out, size_t max) override {
        if (max == 0) return 0;
        std::unique_lock<std::mutex> lock(in_->mu_);
        for (;;) {
            Shard &sh = in_->shards_[shard_];
            if (!sh.queue.empty()) {
                Batch &b = sh.queue.front();
                const size_t n = std::min(max, b.count - b.pos);
                std::memcpy(out, b.records.get() + b.pos, n * sizeof *out);
                b.pos += n;
                if (b.pos == b.count) {
                    in_->queued_ -= b.count * sizeof(sonde_memref_t);
                    sh.queue.pop_front();
                    // Room for a reader held back by the queue limit (a parallel run): a shard's
                    // reader, or wait_shards when no shard is open.
                    if (in_->parallel_ && in_->readers_waiting_ != 0) in_->cv_.notify_all();
                    if (in_->parallel_ && in_->open_ == 0) in_->shards_cv_.notify_all();
                }
                return renumber(out, n);
            }
            if (in_->cancelled_) {
                status_ = SONDE_STATUS_ERROR;
                error_ = in_->path() + ": the analysis stopped";
                return 0;
            }
            if (sh.ended || in_->ended_) {
                status_ = in_->status_;
                if (status_ != SONDE_STATUS_SUCCESS) error_ = in_->error_;
                return 0;
            }
            if (in_->take_role(lock)) {
                const size_t n = in_->read_one(lock, shard_, out, max);
                if (n != 0) return renumber(out, n);
                continue;
            }
            ++in_->readers_waiting_;
            in_->cv_.wait(lock);
            --in_->readers_waiting_;
        }
    }

private:
    // Records carry the shard number the analyzer gave this reader.
    size_t renumber(sonde_memref_t *out, size_t n) const {
        if (id_ != shard_)
            for (size_t i = 0; i < n; ++i) out[i].shard = id_;
        return n;
    }

    const LiveInput *in_;
    size_t shard_;
    uint32_t id_;
};

LiveInput::LiveInput(int fd, const std::string &name) : fd_(fd) {
    path_ = name;
    format_ = SONDE_TRACE_FORMAT_SONDE;
}

LiveInput::~LiveInput() {
    if (ring_ != nullptr) munmap(ring_, kRingData + ring_bytes_);
}

size_t LiveInput::num_shards() const {
    std::lock_guard<std::mutex> lock(mu_);
    return shards_.size();
}

std::unique_ptr<ShardReader> LiveInput::open_shard(size_t shard, uint32_t shard_id) const {
    if (shard >= num_shards()) return nullptr;
    return std::make_unique<Reader>(this, shard, shard_id);
}

size_t LiveInput::wait_shards(size_t known) const {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        if (shards_.size() > known || ended_ || cancelled_) return shards_.size();
        // While a shard is open its reader reads (and files what it does not need): this thread
        // reads only when no shard is, so that batches go straight to their readers.
        if (open_ == 0 && take_role(lock)) {
            read_one(lock, kNone, nullptr, 0);
            continue;
        }
        shards_cv_.wait(lock);
    }
}

void LiveInput::cancel() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    // The socket shut down both ways: a read blocked in it returns, and the program's runtime,
    // which sees the end when it next waits or wakes this side, stops sending and lets the
    // program go on.
    ::shutdown(fd_, SHUT_RDWR);
    cv_.notify_all();
    shards_cv_.notify_all();
}

sonde_status_t LiveInput::stream_status(std::string *error) const {
    std::lock_guard<std::mutex> lock(mu_);
    *error = error_;
    return status_;
}

void LiveInput::finish() {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string &w : notes_) warnings_.push_back(w);
    notes_.clear();
    complete_ = warnings_.empty() && status_ == SONDE_STATUS_SUCCESS && !cancelled_;
}

bool LiveInput::take_role(std::unique_lock<std::mutex> &) const {
    if (reading_ || ended_ || cancelled_) return false;
    // A parallel run's other workers take their queued batches: wait for room rather than
    // read on. (A serial run's one thread waits only for what reading brings.)
    if (parallel_ && queued_ >= kQueueLimit) return false;
    reading_ = true;
    return true;
}

size_t LiveInput::read_one(std::unique_lock<std::mutex> &lock, size_t mine, sonde_memref_t *out,
                           size_t max) const {
    lock.unlock();
    Message m;
    try {
        read_message(&m, mine, out, max);
    } catch (...) {
        lock.lock();
        reading_ = false;
        cv_.notify_all();
        shards_cv_.notify_all();
        throw;
    }
    lock.lock();
    publish(m);
    reading_ = false;
    // The role is free, and another shard may have a batch: only a waiting reader cares.
    if (readers_waiting_ != 0) cv_.notify_all();
    return m.direct;
}

void LiveInput::fail(Message *m, sonde_status_t status, uint64_t offset, const std::string &what) const {
    m->end = true;
    m->status = status;
    m->text = path_ + ": stream offset " + std::to_string(offset) + ": " + what;
}

void LiveInput::cut(Message *m, const std::string &what) const {
    m->end = true;
    m->text = path_ + ": " + what;
}

// The ring's control words, shared with the program's runtime (atomic builtins on the mapping).
uint64_t *LiveInput::ring_word(size_t offset) const {
    return reinterpret_cast<uint64_t *>(static_cast<unsigned char *>(ring_) + offset);
}

bool LiveInput::wait_bytes() const {
    char b[64];
    for (;;) {
        const ssize_t n = ::read(fd_, b, sizeof b);
        if (n > 0) return true;
        if (n == 0 || errno != EINTR) return false;
    }
}

size_t LiveInput::ring_take(void *dst, size_t size) const {
    uint64_t *head = ring_word(kRingHead), *tail = ring_word(kRingTail);
    auto *reader_waits = reinterpret_cast<uint32_t *>(ring_word(kRingReaderWaits));
    auto *writer_waits = reinterpret_cast<uint32_t *>(ring_word(kRingWriterWaits));
    size_t done = 0;
    bool gone = false;  // the socket reached its end: the runtime wrote all it will
    while (done < size) {
        const uint64_t t = __atomic_load_n(tail, __ATOMIC_RELAXED);  // this side alone writes it
        uint64_t avail = __atomic_load_n(head, __ATOMIC_ACQUIRE) - t;
        if (avail == 0) {
            if (gone) break;
            // Sleep unless bytes came after the flag went up (the runtime reads the flag after
            // moving the head: one of the two sees the other).
            __atomic_store_n(reader_waits, 1u, __ATOMIC_SEQ_CST);
            avail = __atomic_load_n(head, __ATOMIC_SEQ_CST) - t;
            if (avail == 0 && !wait_bytes()) gone = true;
            __atomic_store_n(reader_waits, 0u, __ATOMIC_RELAXED);
            continue;
        }
        if (avail > ring_bytes_) {  // a head further ahead than the ring holds: not the runtime's
            ring_broken_ = true;
            return done;
        }
        const uint64_t at = t & (ring_bytes_ - 1);
        const size_t n = static_cast<size_t>(std::min<uint64_t>({size - done, avail, ring_bytes_ - at}));
        std::memcpy(static_cast<unsigned char *>(dst) + done,
                    static_cast<unsigned char *>(ring_) + kRingData + at, n);
        // Sequentially consistent, the store and the load that follows: the runtime's side is
        // the mirror image (its word, then the tail), so one of the two sees the other.
        __atomic_store_n(tail, t + n, __ATOMIC_SEQ_CST);
        // The runtime sleeps until this much room is free (a quarter of the ring: one wake-up
        // per many batches, not one per batch).
        const uint32_t wants = __atomic_load_n(writer_waits, __ATOMIC_SEQ_CST);
        if (wants != 0 && ring_bytes_ - (__atomic_load_n(head, __ATOMIC_RELAXED) - (t + n)) >= wants) {
            const char wake = 1;
            ::send(fd_, &wake, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        done += n;
    }
    return done;
}

bool LiveInput::read_exact(void *dst, size_t size, Message *m, const char *what, bool first) const {
    const uint64_t start = offset_;
    const size_t done = ring_take(dst, size);
    offset_ += done;
    count_consumed(done);
    if (done == size) return true;
    if (ring_broken_) {
        fail(m, SONDE_STATUS_ERROR_FORMAT, offset_, "the ring's head is further ahead than the ring holds");
        return false;
    }
    if (done == 0 && first) {
        cut(m,
            "the stream ended without its end message: the program ended before its runtime finished "
            "it (killed, or it left by a path that skips the runtime's exit)");
    } else {
        cut(m, "the stream ends inside a message (" + std::string(what) + " at offset " +
                   std::to_string(start) + ", " + std::to_string(done) + " of " + std::to_string(size) +
                   " bytes): the program was cut off mid-message");
    }
    return false;
}

bool LiveInput::read_hello(Message *m) const {
    Header h{};
    struct iovec iov = {&h, sizeof h};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    std::memset(&control, 0, sizeof control);
    struct msghdr mh {};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control.buf;
    mh.msg_controllen = sizeof control.buf;
    ssize_t n;
    do {
        n = ::recvmsg(fd_, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    } while (n < 0 && errno == EINTR);
    int ring_fd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != nullptr; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
            std::memcpy(&ring_fd, CMSG_DATA(c), sizeof ring_fd);
    struct Closer {
        int fd;
        ~Closer() {
            if (fd >= 0) ::close(fd);
        }
    } closer{ring_fd};
    if (n < 0) {
        fail(m, SONDE_STATUS_ERROR_IO, 0,
             std::string("read failed: ") + std::strerror(errno) +
                 (errno == ENOTSOCK ? " (a live input is a Unix socket)" : ""));
        return false;
    }
    if (n == 0) {
        cut(m,
            "no live stream: the program ended before its Sonde runtime started one (is it linked with "
            "libsonde-instrument, and did it start?)");
        return false;
    }
    offset_ = static_cast<uint64_t>(n);
    if (n != static_cast<ssize_t>(sizeof h) || h.kind != kHello || h.shard != kMagic) {
        fail(m, SONDE_STATUS_ERROR_FORMAT, 0, "not a Sonde live stream (no HELLO message first)");
        return false;
    }
    if (h.count != kVersion || h.flags != sizeof(sonde_memref_t)) {
        fail(m, SONDE_STATUS_ERROR_FORMAT, 0,
             "live stream version " + std::to_string(h.count) + " with " + std::to_string(h.flags) +
                 "-byte records (this reader knows version 1, 32-byte records)");
        return false;
    }
    struct stat st {};
    const uint64_t size = ring_fd >= 0 && ::fstat(ring_fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    const uint64_t bytes = size > kRingData ? size - kRingData : 0;
    if (bytes == 0 || (bytes & (bytes - 1)) != 0 || bytes > (uint64_t(1) << 32)) {
        fail(m, SONDE_STATUS_ERROR_FORMAT, 0,
             ring_fd < 0 ? "HELLO came without the ring's shared file"
                         : "the ring's shared file is " + std::to_string(size) +
                               " bytes (a 4096-byte control page and a power of two)");
        return false;
    }
    void *map = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd, 0);
    if (map == MAP_FAILED) {
        fail(m, SONDE_STATUS_ERROR_IO, 0, std::string("cannot map the ring: ") + std::strerror(errno));
        return false;
    }
    ring_ = map;
    ring_bytes_ = bytes;
    hello_ = true;
    return true;
}

bool LiveInput::read_message(Message *m, size_t mine, sonde_memref_t *out, size_t max) const {
    if (!hello_) {
        m->kind = kHello;
        return read_hello(m);
    }
    Header h;
    const uint64_t at = offset_;
    if (!read_exact(&h, sizeof h, m, "header", true)) return false;
    m->kind = h.kind;
    m->shard = h.shard;
    m->count = h.count;
    m->flags = h.flags;
    // shards_ grows only in publish(), by the reading role's holder, which this thread is.
    const size_t known = shards_.size();
    switch (h.kind) {
        case kShard:
            if (h.shard != known || known >= kMaxShards) {
                fail(m, SONDE_STATUS_ERROR_FORMAT, at,
                     known >= kMaxShards ? "more than 65536 shards (threads)"
                                         : "shard " + std::to_string(h.shard) + " announced where shard " +
                                               std::to_string(known) + " comes next");
                return false;
            }
            return true;
        case kBatch: {
            if (h.shard >= known || shards_[h.shard].ended) {
                fail(m, SONDE_STATUS_ERROR_FORMAT, at,
                     "batch of shard " + std::to_string(h.shard) +
                         (h.shard >= known ? ", which was not announced" : ", which has ended"));
                return false;
            }
            if (h.count > kMaxBatch) {
                fail(m, SONDE_STATUS_ERROR_FORMAT, at,
                     "batch of " + std::to_string(h.count) + " records (at most 65536)");
                return false;
            }
            sonde_memref_t *dst = out;
            if (h.shard == mine && h.count <= max) {
                m->direct = h.count;
            } else {
                m->batch.records.reset(new sonde_memref_t[h.count != 0 ? h.count : 1]);
                m->batch.count = h.count;
                dst = m->batch.records.get();
            }
            if (!read_exact(dst, h.count * sizeof(sonde_memref_t), m, "batch", false)) {
                m->direct = 0;
                m->batch = Batch();
                return false;
            }
            for (uint32_t i = 0; i < h.count; ++i) dst[i].shard = h.shard;
            return true;
        }
        case kEnd: m->end = true; return true;
        default:
            fail(m, SONDE_STATUS_ERROR_FORMAT, at, "unknown message kind " + std::to_string(h.kind));
            return false;
    }
}

void LiveInput::publish(Message &m) const {
    if (!m.end && m.kind == kShard) {
        shards_.emplace_back();
        ++open_;
        shards_cv_.notify_all();
    }
    if (!m.end && m.kind == kBatch) {
        Shard &sh = shards_[m.shard];
        if (m.batch.count != 0) {
            queued_ += m.batch.count * sizeof(sonde_memref_t);
            sh.queue.push_back(std::move(m.batch));
        }
        if ((m.flags & kLastBatch) != 0) {
            sh.ended = true;
            if (--open_ == 0) shards_cv_.notify_all();  // wait_shards may read now
        }
    }
    if (!m.end) return;
    if (m.status != SONDE_STATUS_SUCCESS) {
        status_ = m.status;
        error_ = m.text;
    } else if (!m.text.empty()) {
        notes_.push_back(m.text);
    } else if (m.count != 0) {
        notes_.push_back(path_ + ": the program's runtime dropped " + std::to_string(m.count) +
                         " batches of memory references (the analyzer fell behind for longer than it "
                         "waits)");
    }
    ended_ = true;
    for (Shard &sh : shards_) sh.ended = true;
    open_ = 0;
    cv_.notify_all();
    shards_cv_.notify_all();
}

}  // namespace sonde::trace
