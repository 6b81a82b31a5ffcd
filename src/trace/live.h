// The live input of the trace concept: the memory references of a running program, sent by its
// Sonde runtime (src/memtrace/memtrace.c) through a Unix socket and the shared-memory ring the
// runtime hands over on it (docs/trace-format.md, "The live stream", has the bytes): one copy into
// the ring on the program's side, one out of it here, a one-byte wake-up on the socket only when
// a side sleeps, and the socket's end when a side is gone. Shards are the program's threads and
// appear while the input is read; each shard reader blocks until its shard has records or ends.
//
// Reading is on demand: nothing reads the descriptor in the background. A thread that needs
// something it does not have (a shard's next records, or more shards) takes the reading role,
// when no other thread holds it, and reads messages until what it needs has arrived, filing the
// batches of other shards in their queues (a batch of its own shard goes straight into its
// buffer). A thread waiting only for more shards reads when no shard is open, else an open
// shard's reader will read the announcement. The stream's back-pressure follows: while every
// consumer is busy with records it has, nothing is read, the socket fills, and the program's
// runtime waits to send (lossless; the program waits for the analyzer). A parallel run bounds
// the batches queued for other shards (kQueueLimit): their workers are running and will take
// them, so a reader waits for room instead of reading on. A serial run reads on regardless: its
// one thread waits only when the merge needs a shard's next record, which only reading brings.
//
// Ordering (why a serial run over this input gives the interleaving of a recorded trace of the
// same run, records by (timestamp, shard), the analyzer's merge): the merge hands out a record
// only once the next record of every known shard is known or that shard has ended, as over a
// file. What it cannot see is a shard not yet announced. The runtime announces a shard (a SHARD
// message, under its shard lock, so in shard order) before that thread reads the timestamp of
// its first batch, and sends every message whole under one lock. So when a BATCH with timestamp
// T was read before shard B's announcement, the batch was sent before the announcement, the
// batch's thread read T before sending it, and B read its first timestamp after announcing: B's
// timestamps are >= T (CLOCK_MONOTONIC does not go back), and B's number is above that of every
// shard announced before it. Every record the merge has in hand was read before B's
// announcement, else B would be known; so none of them would have to come after a record of B
// that is not there: (T, its shard) < (B's timestamp, B). The analyzer checks for new shards
// after each read (num_shards()) and takes them in, with their first records, before it hands
// out another record.
//
// Threads: the input is shared by the run's threads (the serial merge's one thread, or the
// workers and the thread that starts them). `mu_` guards the shard queues, the shard list, the
// reading role and the end state; the reading role's holder reads the descriptor without the
// lock and publishes each message under it (a shard's queue is filled only by the role's
// holder and emptied only by the shard's reader). Warnings and completeness are final once the
// stream has ended; they are read after the run's threads are done.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trace/source.h"

namespace sonde::trace {

class LiveInput final : public Input {
public:
    // Most shards (threads) of a live input, as many as a Sonde trace can hold.
    static constexpr size_t kMaxShards = 65536;
    // Bytes of batches a parallel run queues for other shards before a reader waits for room.
    static constexpr uint64_t kQueueLimit = uint64_t(64) << 20;

    // `fd` is borrowed (its owner closes it after the run); `name` names the input in messages.
    LiveInput(int fd, const std::string &name);
    ~LiveInput() override;

    // Shards announced so far (grows while the input is read). Thread-safe.
    size_t num_shards() const override;
    uint64_t shard_records(size_t) const override { return UINT64_MAX; }
    uint64_t shard_memory(size_t) const override { return 0; }
    uint64_t shard_bytes(size_t) const override { return 0; }
    // A reader of an announced shard (nullptr for one not announced). Thread-safe.
    std::unique_ptr<ShardReader> open_shard(size_t shard, uint32_t shard_id) const override;

    // Blocks until more than `known` shards are announced or the stream has ended (or failed,
    // or was cancelled), reading it when no other thread does; returns the shards announced.
    size_t wait_shards(size_t known) const;
    // Bounds the batches queued for other shards (a parallel run: each shard has a worker).
    void set_parallel(bool parallel) {
        std::lock_guard<std::mutex> lock(mu_);
        parallel_ = parallel;
    }
    // Stops the input (a run that failed): waiting threads return, readers give nothing more.
    void cancel() const;
    // The stream's error once it has ended with one (FORMAT: malformed; IO: a read failed),
    // with its message in *error; SUCCESS otherwise.
    sonde_status_t stream_status(std::string *error) const;
    // After the run (its threads done): the stream's warnings become the input's warnings(),
    // and complete() says whether the stream ended with its END message and nothing dropped.
    void finish();

private:
    class Reader;
    struct Batch {
        std::unique_ptr<sonde_memref_t[]> records;
        size_t count = 0;
        size_t pos = 0;
    };
    struct Shard {
        std::deque<Batch> queue;
        bool ended = false;
    };
    // What one read of the stream brought.
    struct Message {
        uint32_t kind = 0, shard = 0, count = 0, flags = 0;
        Batch batch;        // a BATCH filed for its shard's queue
        size_t direct = 0;  // records of a BATCH read straight into the caller's buffer
        bool end = false;   // the stream ended: END, its end (a warning in `text`), or an error
        sonde_status_t status = SONDE_STATUS_SUCCESS;  // the error (FORMAT, IO), with `text`
        std::string text;
    };

    // Takes the reading role when the caller may (see above); the caller holds `lock`.
    bool take_role(std::unique_lock<std::mutex> &lock) const;
    // The role's holder: reads one message without the lock (a BATCH of `mine` that fits `max`
    // records goes straight into `out`), then publishes it under the lock and gives the role
    // back. Returns the records read into `out`.
    size_t read_one(std::unique_lock<std::mutex> &lock, size_t mine, sonde_memref_t *out, size_t max) const;
    bool read_message(Message *m, size_t mine, sonde_memref_t *out, size_t max) const;
    // HELLO over the socket, with the ring's shared file, which it maps; false (set in *m)
    // when the stream ends first or is not a live stream.
    bool read_hello(Message *m) const;
    // Copies `size` bytes out of the ring, sleeping on the socket while it is empty; returns
    // fewer only when the socket has reached its end (the runtime is gone) and the ring is empty.
    size_t ring_take(void *dst, size_t size) const;
    // Sleeps until the runtime's wake-up on the socket; false at its end (or a read error).
    bool wait_bytes() const;
    uint64_t *ring_word(size_t offset) const;
    // Reads exactly `size` bytes of the ring (`what`, the `first` of a message); false at the
    // stream's end, set in *m.
    bool read_exact(void *dst, size_t size, Message *m, const char *what, bool first) const;
    // Ends the stream with an error (FORMAT or IO) at `offset`.
    void fail(Message *m, sonde_status_t status, uint64_t offset, const std::string &what) const;
    // Ends the stream early: a warning, and the input is incomplete.
    void cut(Message *m, const std::string &what) const;
    // Applies a message read (the lock held): a shard, a batch, or the end.
    void publish(Message &m) const;

    int fd_;
    mutable std::mutex mu_;
    mutable std::condition_variable cv_;         // shard readers: records, the role, room
    mutable std::condition_variable shards_cv_;  // wait_shards: a shard, an end, no shard open
    mutable int readers_waiting_ = 0;            // shard readers asleep on cv_
    mutable std::deque<Shard> shards_;
    mutable bool reading_ = false;
    mutable bool ended_ = false;
    mutable bool cancelled_ = false;
    mutable bool hello_ = false;    // the first message was read (the role's holder)
    mutable void *ring_ = nullptr;  // the ring's shared file, mapped at HELLO
    mutable uint64_t ring_bytes_ = 0;
    mutable bool ring_broken_ = false;  // its head went further than it holds (the role's holder)
    mutable uint64_t offset_ = 0;       // bytes of the stream read (the role's holder)
    mutable uint64_t queued_ = 0;       // bytes of batches in the queues
    mutable size_t open_ = 0;           // shards announced that have not ended
    mutable sonde_status_t status_ = SONDE_STATUS_SUCCESS;
    mutable std::string error_;
    mutable std::vector<std::string> notes_;  // warnings, once the stream has ended
    bool parallel_ = false;
};

}  // namespace sonde::trace
