// The delivery pool: serves watermarks (a producer sealed past one or waits for space) and
// interval flushes, for every buffer of every session, on up to `limit` threads, so that the
// callbacks of different buffers run at once.
//
// Work is per buffer. A buffer that needs delivery is scheduled (schedule()): its Buffer::sched
// goes from kIdle to kQueued and its handle enters the run queue, once however many requests
// come. A worker pops it (kRunning), delivers it until no request came meanwhile (a request
// while it runs turns kRunning into kAgain, and the worker delivers once more), then puts it back
// to kIdle. So a buffer is in the queue or with one worker at most, its callbacks from the pool
// stay serialised (Buffer::deliver_mu also orders them with flushes, stops and thread exits on
// other threads), and a request is never lost between a worker's last look and its release.
//
// A buffer with concurrent callbacks (SONDE_BUFFER_PROPERTY_KIND_CONCURRENT_CALLBACKS) may be
// queued and run by up to `limit` workers at once: each delivers the writers no other thread
// is delivering (Writer::deliver_mu), so one producer's spans still come one at a time, in
// order, and a request while all its places are taken makes a running worker go once more.
//
// Interval flushes: an idle worker waits until the earliest Buffer::next_interval_flush (the
// "timer" worker, one at a time; the others wait untimed), then scans the buffers, claims each
// interval that is due with a compare-and-swap of next_interval_flush, and schedules those
// buffers with interval_due set, which makes their delivery include the committed part of
// every writer's current chunk.
//
// Threads: worker 0 starts with the runtime; scheduling a buffer while no worker is idle (on the
// scheduling thread: a producer's slow path that sealed a chunk, at most `limit` - 1 times in a
// run) or popping one while more are queued and none is idle starts another, up to `limit`
// (SONDE_DELIVERY_THREADS, else the CPUs this process may run on), so the pool never has more
// threads than buffers needing delivery at once. Delivery::mu guards the queue, the counts, the timer state and stop; no worker holds it
// while it delivers. A worker allocates nothing once started. Lock order: Delivery::mu, then
// Table::mu (purging a full queue); no Buffer lock is taken under Delivery::mu.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <system_error>

#include "buffer/buffer.h"
#include "buffer/table.h"
#include "core/clock.h"
#include "core/runtime.h"
#include "core/thread.h"

namespace sonde::buffer {

namespace {

constexpr uint32_t kMaxWorkers = 256;
constexpr uint32_t kQueueCapacity = 2 * kMaxBuffers;

struct Delivery {
    std::mutex mu;
    std::condition_variable cv;
    pthread_t threads[kMaxWorkers]{};  // created past any pthread_create interposer (core/thread.h)
    uint32_t nthreads = 0;
    uint32_t limit = 1;
    uint32_t idle = 0;
    bool stop = false;
    bool timer_waiting = false;  // an idle worker waits for `deadline`
    bool rescan = false;         // an interval may be due (a new buffer, a changed deadline)
    uint64_t deadline = UINT64_MAX;
    // The run queue: handles of scheduled buffers, each live buffer at most once
    // (Buffer::sched); a destroyed buffer's entry stays until a worker pops it (find() fails).
    uint64_t queue[kQueueCapacity]{};
    uint32_t head = 0, count = 0;
};

Delivery &delivery() {
    static Delivery *d = new Delivery();  // never destroyed: see table()
    return *d;
}

// SONDE_DELIVERY_THREADS (1..256), else the CPUs this process may run on.
uint32_t worker_limit() {
    if (const char *env = std::getenv("SONDE_DELIVERY_THREADS")) {
        char *end = nullptr;
        const long v = std::strtol(env, &end, 10);
        if (end != env && *end == '\0' && v >= 1)
            return static_cast<uint32_t>(std::min<long>(v, kMaxWorkers));
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    return static_cast<uint32_t>(std::clamp(n, 1, static_cast<int>(kMaxWorkers)));
}

void *worker_entry(void *arg);

// Starts one more worker if the pool may grow (d.mu held). False when it cannot.
bool grow_locked(Delivery &d) {
    if (d.nthreads >= d.limit) return false;
    const uint32_t index = d.nthreads;
    if (core::create_internal_thread(&d.threads[index], worker_entry,
                                     reinterpret_cast<void *>(static_cast<uintptr_t>(index))) != 0)
        return false;
    d.nthreads = index + 1;
    return true;
}

// Claims the intervals that are due and schedules their buffers; returns the next deadline.
uint64_t scan_intervals(uint64_t epoch) {
    const uint64_t now = clock::monotonic_ns();
    uint64_t next = UINT64_MAX;
    uint32_t slot = 0;
    while (std::shared_ptr<Buffer> b = next_buffer(0, &slot)) {
        if (core::fork_epoch() != epoch) return UINT64_MAX;
        if (b->interval_ns == 0) continue;  // (a poll buffer's interval wakes its pollers)
        uint64_t due = b->next_interval_flush.load(std::memory_order_acquire);
        if (due == 0) {
            // First look: the first flush one interval from now (unless another scan set it).
            b->next_interval_flush.compare_exchange_strong(due, now + b->interval_ns,
                                                           std::memory_order_acq_rel);
            due = b->next_interval_flush.load(std::memory_order_acquire);
        }
        if (now >= due && b->next_interval_flush.compare_exchange_strong(due, now + b->interval_ns,
                                                                         std::memory_order_acq_rel)) {
            b->interval_due.store(true, std::memory_order_release);
            schedule(*b);
            due = now + b->interval_ns;
        }
        next = std::min(next, b->next_interval_flush.load(std::memory_order_acquire));
    }
    return next;
}

// A concurrent buffer popped from the queue: delivers what no other worker delivers now (a
// writer being delivered elsewhere is skipped), again while requests come, then gives its
// place back (Buffer::sched counts its queue entries and running workers, under d.mu).
void run_concurrent(Buffer &b, uint64_t epoch);

// Delivers buffer `b`, popped from the queue (kQueued), until no request came meanwhile.
void run_buffer(Buffer &b, uint64_t epoch) {
    if (b.concurrent) {
        run_concurrent(b, epoch);
        return;
    }
    b.sched.store(kRunning, std::memory_order_seq_cst);
    for (;;) {
        b.drain_requested.store(false, std::memory_order_seq_cst);
        const bool full = b.interval_due.exchange(false, std::memory_order_acq_rel);
        deliver(b, full);
        if (core::fork_epoch() != epoch) return;  // a callback forked: this is the child
        uint32_t s = kRunning;
        if (b.sched.compare_exchange_strong(s, kIdle, std::memory_order_seq_cst)) return;
        b.sched.store(kRunning, std::memory_order_seq_cst);  // kAgain: a request came meanwhile
    }
}

// A worker: waits for scheduled buffers or the next interval deadline, and delivers with no
// lock of its own held. In a child forked by one of its callbacks it returns, ending the
// thread: the child has no pool to go back to, and the buffers are the parent's.
void worker_main() {
    core::mark_internal_thread();
    const uint64_t epoch = core::fork_epoch();
    Delivery &d = delivery();
    std::unique_lock<std::mutex> lk(d.mu);
    for (;;) {
        if (d.stop || core::fork_epoch() != epoch) return;
        const uint64_t now = clock::monotonic_ns();
        if (d.rescan || (d.deadline != UINT64_MAX && now >= d.deadline && !d.timer_waiting)) {
            d.rescan = false;
            d.deadline = UINT64_MAX;
            lk.unlock();
            const uint64_t next = scan_intervals(epoch);
            if (core::fork_epoch() != epoch) return;
            lk.lock();
            d.deadline = std::min(d.deadline, next);
            if (d.timer_waiting) d.cv.notify_all();  // the timer may wait for a later deadline
            continue;
        }
        if (d.count != 0) {
            const uint64_t handle = d.queue[d.head];
            d.head = (d.head + 1) % kQueueCapacity;
            --d.count;
            if (d.count != 0 && d.idle == 0) grow_locked(d);
            lk.unlock();
            if (std::shared_ptr<Buffer> b = find(handle)) run_buffer(*b, epoch);
            if (core::fork_epoch() != epoch) return;
            lk.lock();
            continue;
        }
        ++d.idle;
        if (!d.timer_waiting && d.deadline != UINT64_MAX) {
            d.timer_waiting = true;
            d.cv.wait_for(lk, std::chrono::nanoseconds(d.deadline > now ? d.deadline - now : 0));
            d.timer_waiting = false;
            // Woken for other work: another idle worker takes over the timer.
            if (d.idle > 1) d.cv.notify_one();
        } else {
            d.cv.wait(lk);
        }
        --d.idle;
    }
}

void *worker_entry(void *) {
    worker_main();
    return nullptr;
}

// Queues one more entry of concurrent buffer `b` if fewer than `limit` are queued or running,
// else asks a running one to go again (d.mu held). True when an entry was queued.
bool push_concurrent_locked(Delivery &d, Buffer &b);

// Writers of `b` with sealed chunks waiting (Buffer::mu taken): more than one is work for
// more than one worker.
uint32_t waiting_writers(Buffer &b) {
    std::lock_guard<std::mutex> g(b.mu);
    uint32_t n = 0;
    for (Writer *w = b.writers; w != nullptr && n < 2; w = w->next_in_buffer)
        if (w->sealed_head != nullptr) ++n;
    return n;
}

void run_concurrent(Buffer &b, uint64_t epoch) {
    Delivery &d = delivery();
    // Several producers waiting: one more worker joins (it does the same), up to `limit`.
    if (waiting_writers(b) > 1) {
        bool queued;
        {
            std::lock_guard<std::mutex> g(d.mu);
            queued = b.sched.load(std::memory_order_relaxed) < d.limit && push_concurrent_locked(d, b);
        }
        if (queued) d.cv.notify_one();
    }
    for (;;) {
        b.again.store(false, std::memory_order_seq_cst);
        b.drain_requested.store(false, std::memory_order_seq_cst);
        const bool full = b.interval_due.exchange(false, std::memory_order_acq_rel);
        deliver(b, full, false);
        if (core::fork_epoch() != epoch) return;
        if (!b.again.exchange(false, std::memory_order_seq_cst)) break;
    }
    bool queued = false;
    {
        std::lock_guard<std::mutex> g(d.mu);
        b.sched.fetch_sub(1, std::memory_order_relaxed);
        // A request between the last look and here set `again`: honour it.
        if (b.again.exchange(false, std::memory_order_seq_cst)) queued = push_concurrent_locked(d, b);
    }
    if (queued) d.cv.notify_one();
}

// A full queue holds entries of destroyed buffers (live ones are in it once each, and there are
// at most kMaxBuffers of them): drops those (d.mu held, then Table::mu inside find()).
void purge_locked(Delivery &d) {
    uint32_t kept = 0;
    for (uint32_t i = 0; i < d.count; ++i) {
        const uint64_t h = d.queue[(d.head + i) % kQueueCapacity];
        if (find(h)) d.queue[(d.head + kept++) % kQueueCapacity] = h;
    }
    d.count = kept;
}

}  // namespace

namespace {

bool push_concurrent_locked(Delivery &d, Buffer &b) {
    if (b.sched.load(std::memory_order_relaxed) >= d.limit) {
        b.again.store(true, std::memory_order_seq_cst);
        return false;
    }
    b.sched.fetch_add(1, std::memory_order_relaxed);
    if (d.count == kQueueCapacity) purge_locked(d);
    d.queue[(d.head + d.count) % kQueueCapacity] = b.handle;
    ++d.count;
    if (d.idle == 0 && !d.stop) grow_locked(d);
    return true;
}

}  // namespace

void schedule(Buffer &b) {
    if (b.concurrent) {
        Delivery &d = delivery();
        bool queued;
        {
            std::lock_guard<std::mutex> g(d.mu);
            queued = push_concurrent_locked(d, b);
        }
        if (queued) d.cv.notify_one();
        return;
    }
    uint32_t s = b.sched.load(std::memory_order_seq_cst);
    for (;;) {
        if (s == kQueued || s == kAgain) return;
        const uint32_t to = s == kIdle ? kQueued : kAgain;
        if (b.sched.compare_exchange_weak(s, to, std::memory_order_seq_cst)) break;
    }
    if (s == kRunning) return;  // its worker delivers once more
    Delivery &d = delivery();
    {
        std::lock_guard<std::mutex> g(d.mu);
        if (d.count == kQueueCapacity) purge_locked(d);
        d.queue[(d.head + d.count) % kQueueCapacity] = b.handle;
        ++d.count;
        // Every worker is delivering (or none started yet): one more takes this buffer, so a
        // slow callback of one buffer never holds up another's.
        if (d.idle == 0 && !d.stop) grow_locked(d);
    }
    d.cv.notify_one();
}

sonde_status_t delivery_start() {
    Delivery &d = delivery();
    std::lock_guard<std::mutex> g(d.mu);
    d.stop = false;
    d.timer_waiting = false;
    d.rescan = false;
    d.deadline = UINT64_MAX;
    d.idle = 0;
    d.limit = worker_limit();
    if (d.nthreads != 0) return SONDE_STATUS_SUCCESS;
    if (!grow_locked(d)) return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    return SONDE_STATUS_SUCCESS;
}

void delivery_stop() {
    Delivery &d = delivery();
    uint32_t n = 0;
    {
        std::lock_guard<std::mutex> g(d.mu);
        d.stop = true;
        n = d.nthreads;
    }
    d.cv.notify_all();
    // Workers start others only under d.mu and before seeing stop: n covers all of them.
    for (uint32_t i = 0; i < n; ++i) pthread_join(d.threads[i], nullptr);
    // Entries left in the queue stay for the next start (those of destroyed buffers are
    // skipped then), so that no live buffer is left marked as queued.
    std::lock_guard<std::mutex> g(d.mu);
    d.nthreads = 0;
}

void delivery_make() { delivery(); }

void delivery_forked_child() {
    Delivery &d = delivery();
    new (&d.mu) std::mutex();
    new (&d.cv) std::condition_variable();
    d.nthreads = 0;
    d.idle = 0;
    d.stop = false;
    d.timer_waiting = false;
    d.rescan = false;
    d.deadline = UINT64_MAX;
    d.count = 0;
    d.head = 0;
}

void delivery_reschedule() {
    Delivery &d = delivery();
    {
        std::lock_guard<std::mutex> g(d.mu);
        d.rescan = true;
    }
    d.cv.notify_all();
}

uint32_t delivery_threads() {
    Delivery &d = delivery();
    std::lock_guard<std::mutex> g(d.mu);
    return d.nthreads;
}

}  // namespace sonde::buffer
