/*
 * Memtrace concept: the runtime of clang's sanitizer coverage, linked into a program built with
 * `clang -fsanitize-coverage=trace-pc-guard,trace-loads,trace-stores` through
 * libsonde-instrument.so (docs/memory-traces.md). It defines __sanitizer_cov_load{1,2,4,8,16},
 * __sanitizer_cov_store{1,2,4,8,16}, __sanitizer_cov_trace_pc_guard{,_init} and
 * __sanitizer_cov_8bit_counters_init, and, when SONDE_MEMTRACE names a file at start-up (what
 * `sonde record --memory` sets), records every load and store as a sonde_memref_t into a Sonde
 * trace, one shard per thread (with SONDE_MEMTRACE_BLOCKS=1 also every guard hit, a basic block,
 * as an IFETCH; with SONDE_MEMTRACE_SAMPLE_RATE only the references to a sample of the lines).
 * With SONDE_MEMTRACE_LIVE naming a Unix socket (what `sonde analyze --live` sets), the same
 * batches go as a live stream (docs/trace-format.md, "The live stream") through a shared-memory
 * ring handed over on that socket, which the analyzer on its other end reads as the program
 * runs; with both variables set, to both (the trace of the run that was analysed live). With
 * SONDE_MEMTRACE_MODULES naming a file (what `sonde annotate --live` sets), the module table
 * (below) is also appended there as text, one module a line, before the stream's END.
 *
 * How references travel:
 *  - each thread stages memrefs {address, size, type, pc = the call site, shard, timestamp} in
 *    its own array of kStage records (no lock, no allocation after the thread's first access);
 *    the timestamp is the time the array was started (CLOCK_MONOTONIC ns), read once per batch;
 *  - a thread's first records are its THREAD_ID and PROCESS_ID markers, its last a THREAD_EXIT
 *    marker (at thread exit: a pthread key destructor, created before libsonde's own key so that
 *    it runs first);
 *  - a full array is emitted by its thread as one record of this runtime's buffer (a per-thread
 *    buffer of libsonde, LOSSLESS, flushed every 100 ms), whose consumer appends the batch to the
 *    trace writer (sonde_trace_writer_write: zstd-compressed chunks, one shard per thread);
 *  - at exit (or on a fatal signal) the staged tails are taken, the buffer flushed, and the
 *    writer closed, with the module table: the program and the libraries loaded when recording
 *    started, and at a normal exit those loaded since (dl_iterate_phdr; path, lowest mapped
 *    address, span), so that `sonde record --memory` can name the pcs afterwards. A trace cut by SIGKILL keeps every chunk written before (readers recover it
 *    by scanning).
 *  - live: each batch goes into the ring as a message of the stream instead (sink_write): from
 *    the consumer when a trace file is written too, otherwise straight from the thread whose
 *    array is full (no copy into the buffer, no hand-over to a delivery thread; a full ring
 *    then blocks that thread, as it would block the consumer and, behind it, the buffer), a
 *    thread's first access announces its shard before the thread reads its
 *    first timestamp (so that the analyzer knows every shard that may still deliver an earlier
 *    timestamp than the batches it has read: the ordering argument is in src/trace/live.h), and
 *    the stop sends an END message. A full ring blocks the sender: the program waits for the
 *    analyzer (the buffer's LOSSLESS timeout is a year then), nothing is dropped.
 * A write error (a full disk, an analyzer that went away) stops the recording with one message
 * on stderr; the program goes on.
 *
 * Threads: a Stage belongs to its thread (the hot path and its flush run there); the stage list
 * (g_mu) is read by the thread that stops the recording, which takes the tails of threads still
 * running at that moment as they are (best effort: such a thread may be writing its array). The
 * consumer runs on a worker of libsonde's delivery pool or a flushing thread, one call at a time
 * (one buffer, callbacks serialised); the writer has its own lock, the live stream g_tx_mu (a
 * message is written whole by one thread: the consumer, a thread announcing its shard under
 * g_mu, or the stopping thread; lock order g_mu, then g_tx_mu).
 * The hot path reads g_active (set at start, cleared once at stop) and nothing else shared; the
 * edge guards read g_blocks_active (the same, when basic blocks are asked for) alone.
 */
#include "memtrace/memtrace.h"

#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <sonde/sonde.h>

#define MT_API __attribute__((visibility("default"), no_instrument_function))
#define MT_HIDDEN __attribute__((no_instrument_function))

/* Records staged per thread before a batch is emitted (64 KiB of memrefs). */
enum { kStage = 2048 };
/* The buffer record of a batch: private to this runtime's buffer. */
enum { kBatchKind = SONDE_RECORD_KIND_USER + 0x4d54 };

typedef struct batch_header {
    uint32_t shard;
    uint32_t count;
} batch_header;

typedef struct stage {
    uint32_t shard;
    uint32_t n;                      /* records staged (owner thread) */
    uint64_t skipped;                /* references left out by sampling since the last one staged */
    uint64_t ts;                     /* timestamp of the batch being staged */
    int exited;                      /* the THREAD_EXIT marker was written */
    struct stage *next;              /* g_stages list (g_mu) */
    batch_header head;               /* immediately before refs: a batch is emitted in place */
    sonde_memref_t refs[kStage + 1]; /* + 1: a SAMPLE_SKIPPED marker may end a full batch */
} stage;

/* Set once recording starts, cleared at stop: the one shared word of the hot path. */
static int g_active;
/* Basic blocks asked for (SONDE_MEMTRACE_BLOCKS=1), and that word while recording. */
static int g_blocks;
static int g_blocks_active;
/* Sampling at the source (SHARDS, docs/memory-traces.md), set before recording starts: a
 * reference is recorded when the hash of its line is below g_sample_threshold. */
static int g_sampling;
static uint64_t g_sample_threshold, g_sample_seed, g_sample_key, g_sample_line = 64;
static unsigned g_sample_shift = 6;
static __thread stage *t_stage __attribute__((tls_model("initial-exec")));

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static stage *g_stages;       /* every thread's stage (g_mu) */
static uint32_t g_next_shard; /* (g_mu) */
static pthread_key_t g_key_exit;
static int g_key_made;
static pid_t g_pid;
static sonde_session_id_t g_session;
static sonde_buffer_id_t g_buffer;
static sonde_trace_writer_t *g_writer;
static int g_recording;         /* started: the writer or the live stream is open */
static int g_write_failed;      /* writing stopped after an error (atomic: any writing thread) */
static uint64_t g_lost_batches; /* batches the buffer dropped (the consumer) */
static char g_path[4096];

MT_HIDDEN static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- sampling at the source ---- */

/* The hash of reuse_distance's sample_rate (src/stackdist/reuse.cpp, shards_key and
 * shards_hash), so that the lines kept here are the lines it keeps: splitmix64's finalizer. */
MT_HIDDEN static inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

MT_HIDDEN static inline int sample_keeps(uint64_t address) {
    return (mix64((address >> g_sample_shift) ^ g_sample_key) >> 32) < g_sample_threshold;
}

/* Reads SONDE_MEMTRACE_SAMPLE_RATE, _SEED and _LINE_SIZE (set by `sonde record --memory
 * --sample-rate`); 0 when they are absent or valid, -1 (said on stderr) when not. */
MT_HIDDEN static int read_sampling(void) {
    const char *rate = secure_getenv("SONDE_MEMTRACE_SAMPLE_RATE");
    const char *seed = secure_getenv("SONDE_MEMTRACE_SAMPLE_SEED");
    const char *line = secure_getenv("SONDE_MEMTRACE_LINE_SIZE");
    if (rate == NULL || *rate == '\0') return 0;
    char *end = NULL;
    const double r = strtod(rate, &end);
    if (end == rate || *end != '\0' || !(r > 0 && r <= 1)) {
        fprintf(stderr, "sonde: cannot record memory references: sample rate '%s' is not in (0, 1]\n", rate);
        return -1;
    }
    if (seed != NULL && *seed != '\0') {
        g_sample_seed = strtoull(seed, &end, 10);
        if (*end != '\0') {
            fprintf(stderr, "sonde: cannot record memory references: sample seed '%s' is not a number\n",
                    seed);
            return -1;
        }
    }
    if (line != NULL && *line != '\0') {
        g_sample_line = strtoull(line, &end, 10);
        if (*end != '\0' || g_sample_line == 0 || (g_sample_line & (g_sample_line - 1)) != 0) {
            fprintf(stderr, "sonde: cannot record memory references: line size '%s' is not a power of two\n",
                    line);
            return -1;
        }
    }
    g_sample_shift = 0;
    while ((1ull << g_sample_shift) < g_sample_line) ++g_sample_shift;
    /* As reuse_distance rounds sample_rate * 2^32 (llround; r > 0 here). */
    g_sample_threshold = (uint64_t)(r * 4294967296.0 + 0.5);
    if (g_sample_threshold == 0) g_sample_threshold = 1;
    g_sample_key = mix64(g_sample_seed + 0x9E3779B97F4A7C15ull);
    g_sampling = g_sample_threshold < 4294967296ull;
    return 0;
}

/* ---- where batches go: the trace writer, or the live stream ---- */

/* The live stream (docs/trace-format.md, "The live stream"; read by src/trace/live.cpp): a
 * Unix socket (SONDE_MEMTRACE_LIVE) carries a HELLO message with a shared memory file; every
 * later message goes into the ring in that file, a 16-byte header and a BATCH's records. The
 * socket then carries one-byte wake-ups both ways (bytes for a sleeping reader, room for a
 * sleeping writer), and its end tells each side that the other is gone. */
enum { kLiveHello = 1, kLiveShard = 2, kLiveBatch = 3, kLiveEnd = 4 };
enum { kLiveVersion = 1, kLiveMagic = 0x564c4453 /* "SDLV" */, kLiveLastBatch = 1 };
/* The shared file: a 4096-byte control page (the ring's positions and sleep flags at these byte
 * offsets, each on its own cache line), then the ring's kRingBytes. */
enum { kRingHead = 0, kRingTail = 64, kRingWriterWaits = 128, kRingReaderWaits = 192, kRingData = 4096 };
enum { kRingBytes = 4 << 20 };

typedef struct live_header {
    uint32_t kind;
    uint32_t shard;
    uint32_t count;
    uint32_t flags;
} live_header;

static int g_live_fd = -1;    /* the socket (SONDE_MEMTRACE_LIVE), -1 when none */
static int g_modules_fd = -1; /* SONDE_MEMTRACE_MODULES, opened to append; -1 when none */
static unsigned char *g_ring; /* the shared file's mapping */
static pthread_mutex_t g_tx_mu = PTHREAD_MUTEX_INITIALIZER; /* one whole message at a time */
static int g_live_direct; /* live only (no trace file): threads send their own batches */
static __thread int t_sending __attribute__((tls_model("initial-exec"))); /* in live_send */

#define RING_U64(off) ((uint64_t *)(void *)(g_ring + (off)))
#define RING_U32(off) ((uint32_t *)(void *)(g_ring + (off)))

/* Waits for the analyzer to take bytes (its wake-up on the socket); 0, or the errno that says it
 * is gone. */
MT_HIDDEN static int ring_wait_room(void) {
    char b[64];
    for (;;) {
        const ssize_t n = read(g_live_fd, b, sizeof b);
        if (n > 0) return 0;
        if (n == 0) return EPIPE;
        if (errno != EINTR) return errno;
    }
}

/* Copies `bytes` into the ring (the caller holds g_tx_mu), waiting for room while the analyzer
 * is behind; 0, or the errno that stopped it. Cost: a copy and a sequentially consistent store per
 * piece; a wake-up (one send) only when the analyzer sleeps. */
MT_HIDDEN static int ring_put(const void *src, size_t bytes) {
    const unsigned char *p = src;
    uint64_t *head = RING_U64(kRingHead), *tail = RING_U64(kRingTail);
    while (bytes > 0) {
        const uint64_t h = __atomic_load_n(head, __ATOMIC_RELAXED); /* this side alone writes it */
        uint64_t room = kRingBytes - (h - __atomic_load_n(tail, __ATOMIC_ACQUIRE));
        if (room == 0) {
            /* Sleep until a quarter of the ring is free (one wake-up for many batches) unless
             * the analyzer took that much after the word went up (it reads the word after
             * moving the tail: one of the two sees the other). */
            __atomic_store_n(RING_U32(kRingWriterWaits), kRingBytes / 4, __ATOMIC_SEQ_CST);
            room = kRingBytes - (h - __atomic_load_n(tail, __ATOMIC_SEQ_CST));
            const int err = room < kRingBytes / 4 ? ring_wait_room() : 0;
            __atomic_store_n(RING_U32(kRingWriterWaits), 0, __ATOMIC_RELAXED);
            if (err != 0) return err;
            continue;
        }
        const uint64_t at = h & (kRingBytes - 1);
        size_t n = bytes < room ? bytes : (size_t)room;
        if (n > kRingBytes - at) n = (size_t)(kRingBytes - at);
        memcpy(g_ring + kRingData + at, p, n);
        /* Sequentially consistent, the store and the load after it (the analyzer's side is the
         * mirror image: its word, then the head). */
        __atomic_store_n(head, h + n, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(RING_U32(kRingReaderWaits), __ATOMIC_SEQ_CST) != 0) {
            const char wake = 1;
            if (send(g_live_fd, &wake, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EPIPE) return EPIPE;
        }
        p += n;
        bytes -= n;
    }
    return 0;
}

/* Sends one message, whole, under g_tx_mu; blocks while the ring is full (the analyzer is
 * behind). 0, or the errno that stopped it (EPIPE: the analyzer went away). */
MT_HIDDEN static int live_send(uint32_t kind, uint32_t shard, uint32_t count, uint32_t flags,
                               const void *payload, size_t bytes) {
    const live_header h = {kind, shard, count, flags};
    pthread_mutex_lock(&g_tx_mu);
    t_sending = 1;
    int err = ring_put(&h, sizeof h);
    if (err == 0 && bytes != 0) err = ring_put(payload, bytes);
    t_sending = 0;
    pthread_mutex_unlock(&g_tx_mu);
    return err;
}

/* Makes the ring and sends HELLO with it over the socket; 0, or the errno that stopped it. */
MT_HIDDEN static int live_open(void) {
    const int fd = memfd_create("sonde-live", MFD_CLOEXEC);
    if (fd < 0) return errno;
    int err = 0;
    if (ftruncate(fd, kRingData + kRingBytes) != 0) err = errno;
    void *map =
        err != 0 ? MAP_FAILED : mmap(NULL, kRingData + kRingBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (err == 0 && map == MAP_FAILED) err = errno;
    if (err == 0) {
        g_ring = map;
        const live_header h = {kLiveHello, kLiveMagic, kLiveVersion, (uint32_t)sizeof(sonde_memref_t)};
        struct iovec iov = {(void *)(uintptr_t)&h, sizeof h};
        union {
            char buf[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } control;
        memset(&control, 0, sizeof control);
        struct msghdr mh;
        memset(&mh, 0, sizeof mh);
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = control.buf;
        mh.msg_controllen = sizeof control.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
        ssize_t n;
        do {
            n = sendmsg(g_live_fd, &mh, MSG_NOSIGNAL);
        } while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof h) err = n < 0 ? errno : EPIPE;
    }
    close(fd);
    return err;
}

/* Stops recording after a write error (`live`: of the stream), once, with one message; the
 * program goes on. */
MT_HIDDEN static void stop_writing(int live, const char *why) {
    if (__atomic_exchange_n(&g_write_failed, 1, __ATOMIC_ACQ_REL)) return;
    __atomic_store_n(&g_active, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_blocks_active, 0, __ATOMIC_RELEASE);
    if (live)
        fprintf(stderr, "sonde: live analysis stopped: %s; the program goes on unanalysed\n", why);
    else
        fprintf(stderr, "sonde: memory trace stopped: %s; the program goes on unrecorded\n", why);
}

/* Writes records of one shard to the trace and as a BATCH of the stream (flagged as the
 * shard's last when it ends with the thread's exit marker); 0, or -1 when writing has stopped. */
MT_HIDDEN static int sink_write(uint32_t shard, const sonde_memref_t *refs, uint32_t n) {
    if (__atomic_load_n(&g_write_failed, __ATOMIC_ACQUIRE)) return -1;
    if (g_writer != NULL && sonde_trace_writer_write(g_writer, shard, refs, n) != SONDE_STATUS_SUCCESS) {
        stop_writing(0, sonde_trace_writer_error(g_writer));
        return -1;
    }
    if (g_live_fd < 0) return 0;
    const int last =
        n != 0 && refs[n - 1].type == SONDE_MEMREF_MARKER && refs[n - 1].size == SONDE_MARKER_THREAD_EXIT;
    const int err = live_send(kLiveBatch, shard, n, last ? kLiveLastBatch : 0, refs, n * sizeof *refs);
    if (err == 0) return 0;
    stop_writing(1, strerror(err));
    return -1;
}

/* Announces a new shard on the live stream (under g_mu, so in shard order), before its thread
 * reads its first timestamp. */
MT_HIDDEN static void announce_shard(uint32_t shard) {
    if (g_live_fd < 0 || __atomic_load_n(&g_write_failed, __ATOMIC_ACQUIRE)) return;
    const int err = live_send(kLiveShard, shard, 0, 0, NULL, 0);
    if (err != 0) stop_writing(1, strerror(err));
}

/* ---- per-thread staging ---- */

MT_HIDDEN static void put_marker(stage *s, uint16_t marker, uint64_t value) {
    sonde_memref_t *m = &s->refs[s->n++];
    m->address = value;
    m->pc = 0;
    m->timestamp = s->ts;
    m->shard = s->shard;
    m->type = SONDE_MEMREF_MARKER;
    m->size = marker;
}

/* The references sampling left out since the last record staged, if any (owner thread). */
MT_HIDDEN static void put_skipped(stage *s) {
    if (s->skipped == 0) return;
    put_marker(s, SONDE_MARKER_SAMPLE_SKIPPED, s->skipped);
    s->skipped = 0;
}

/* Emits the staged records as one batch of the calling thread and starts a new one (owner
 * thread). */
MT_HIDDEN static void emit_stage(stage *s) {
    if (s->n != 0 && g_live_direct) {
        sink_write(s->shard, s->refs, s->n);
    } else if (s->n != 0) {
        s->head.shard = s->shard;
        s->head.count = s->n;
        sonde_emit(g_buffer, kBatchKind, &s->head,
                   (uint32_t)(sizeof s->head + s->n * sizeof(sonde_memref_t)));
    }
    s->n = 0;
    s->ts = now_ns();
}

MT_HIDDEN static stage *stage_start(void) {
    stage *s = malloc(sizeof *s);
    if (s == NULL) return NULL;
    memset(s, 0, offsetof(stage, refs));
    pthread_mutex_lock(&g_mu);
    s->shard = g_next_shard++;
    s->next = g_stages;
    g_stages = s;
    announce_shard(s->shard);
    pthread_mutex_unlock(&g_mu);
    s->ts = now_ns();
    put_marker(s, SONDE_MARKER_THREAD_ID, (uint64_t)syscall(SYS_gettid));
    put_marker(s, SONDE_MARKER_PROCESS_ID, (uint64_t)getpid());
    if (g_sampling) {
        put_marker(s, SONDE_MARKER_SAMPLE_THRESHOLD, g_sample_threshold);
        put_marker(s, SONDE_MARKER_SAMPLE_SEED, g_sample_seed);
        put_marker(s, SONDE_MARKER_SAMPLE_LINE_SIZE, g_sample_line);
    }
    t_stage = s;
    if (g_key_made) pthread_setspecific(g_key_exit, s);
    return s;
}

MT_HIDDEN static void stage_exit(stage *s) {
    if (s == NULL || s->exited) return;
    s->exited = 1;
    if (!__atomic_load_n(&g_active, __ATOMIC_ACQUIRE)) return;
    if (s->n >= kStage) {
        put_skipped(s);
        emit_stage(s);
    }
    put_skipped(s);
    put_marker(s, SONDE_MARKER_THREAD_EXIT, (uint64_t)syscall(SYS_gettid));
    emit_stage(s);
}

/* What a thread's stage pointer becomes once its stage is freed at thread exit: accesses made
 * later on that thread (other destructors) are not recorded. Full, so that the hot path's one
 * test sends them to the slow path, which drops them. */
static stage g_exited_stage = {.n = kStage, .exited = 1};

MT_HIDDEN static void free_stage(stage *s) {
    pthread_mutex_lock(&g_mu);
    for (stage **pp = &g_stages; *pp != NULL; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    pthread_mutex_unlock(&g_mu);
    t_stage = &g_exited_stage;
    free(s);
}

MT_HIDDEN static void on_thread_key(void *p) {
    stage_exit(p);
    free_stage(p);
}

MT_HIDDEN void sonde_memtrace_thread_exit(void) {
    stage *s = t_stage;
    if (s == NULL || s == &g_exited_stage || getpid() != g_pid) return;
    if (g_key_made) pthread_setspecific(g_key_exit, NULL);
    stage_exit(s);
    free_stage(s);
}

/* The slow path of an access: the thread's first, a full array, or a thread past its exit
 * (NULL: not recorded). Out of line. */
MT_HIDDEN __attribute__((noinline)) static stage *slow_stage(void) {
    stage *s = t_stage;
    if (s == NULL) return stage_start();
    if (s->exited) return NULL;
    put_skipped(s); /* the array keeps room for it */
    emit_stage(s);
    return s;
}

/* Hot path. Not recording: one load and one branch. Recording: a thread-local load and the
 * stores of the staged memref; a full array takes the slow path. Sampling adds the line's hash
 * and, for a reference left out, one count, which a SAMPLE_SKIPPED marker at the end of the
 * batch (and before the thread's exit marker) reports. */
#define MT_ACCESS(addr_, size_, type_)                                                  \
    do {                                                                                \
        if (__builtin_expect(!__atomic_load_n(&g_active, __ATOMIC_RELAXED), 1)) return; \
        const uint64_t a_ = (uint64_t)(uintptr_t)(addr_);                               \
        stage *s_ = t_stage;                                                            \
        if (__builtin_expect(s_ == NULL || s_->n >= kStage, 0)) {                       \
            s_ = slow_stage();                                                          \
            if (s_ == NULL) return;                                                     \
        }                                                                               \
        if (g_sampling && !sample_keeps(a_)) {                                          \
            s_->skipped++;                                                              \
            return;                                                                     \
        }                                                                               \
        sonde_memref_t *m_ = &s_->refs[s_->n++];                                        \
        m_->address = a_;                                                               \
        m_->pc = (uint64_t)(uintptr_t)__builtin_return_address(0);                      \
        m_->timestamp = s_->ts;                                                         \
        m_->shard = s_->shard;                                                          \
        m_->type = (type_);                                                             \
        m_->size = (size_);                                                             \
    } while (0)

/* A guard hit (a basic block entered): an IFETCH of 1 byte at the address the guard's call
 * returns to, in the block, standing for the block. Not sampled. */
#define MT_BLOCK()                                                                             \
    do {                                                                                       \
        if (__builtin_expect(!__atomic_load_n(&g_blocks_active, __ATOMIC_RELAXED), 1)) return; \
        stage *s_ = t_stage;                                                                   \
        if (__builtin_expect(s_ == NULL || s_->n >= kStage, 0)) {                              \
            s_ = slow_stage();                                                                 \
            if (s_ == NULL) return;                                                            \
        }                                                                                      \
        const uint64_t pc_ = (uint64_t)(uintptr_t)__builtin_return_address(0);                 \
        sonde_memref_t *m_ = &s_->refs[s_->n++];                                               \
        m_->address = pc_;                                                                     \
        m_->pc = pc_;                                                                          \
        m_->timestamp = s_->ts;                                                                \
        m_->shard = s_->shard;                                                                 \
        m_->type = SONDE_MEMREF_IFETCH;                                                        \
        m_->size = 1;                                                                          \
    } while (0)

/* The 16-byte callbacks take an __int128 pointer in clang; a pointer is a pointer (ISO C has no
 * __int128). */
MT_API void __sanitizer_cov_load1(uint8_t *addr) { MT_ACCESS(addr, 1, SONDE_MEMREF_READ); }
MT_API void __sanitizer_cov_load2(uint16_t *addr) { MT_ACCESS(addr, 2, SONDE_MEMREF_READ); }
MT_API void __sanitizer_cov_load4(uint32_t *addr) { MT_ACCESS(addr, 4, SONDE_MEMREF_READ); }
MT_API void __sanitizer_cov_load8(uint64_t *addr) { MT_ACCESS(addr, 8, SONDE_MEMREF_READ); }
MT_API void __sanitizer_cov_load16(void *addr) { MT_ACCESS(addr, 16, SONDE_MEMREF_READ); }
MT_API void __sanitizer_cov_store1(uint8_t *addr) { MT_ACCESS(addr, 1, SONDE_MEMREF_WRITE); }
MT_API void __sanitizer_cov_store2(uint16_t *addr) { MT_ACCESS(addr, 2, SONDE_MEMREF_WRITE); }
MT_API void __sanitizer_cov_store4(uint32_t *addr) { MT_ACCESS(addr, 4, SONDE_MEMREF_WRITE); }
MT_API void __sanitizer_cov_store8(uint64_t *addr) { MT_ACCESS(addr, 8, SONDE_MEMREF_WRITE); }
MT_API void __sanitizer_cov_store16(void *addr) { MT_ACCESS(addr, 16, SONDE_MEMREF_WRITE); }

/* Edge guards: numbered from 1 at initialisation (as the sanitizer-coverage runtime does, so
 * that a guard's value names its edge); a hit costs a load and a branch, and, when basic blocks
 * are recorded, the stores of one IFETCH memref (MT_BLOCK). */
MT_API void __sanitizer_cov_trace_pc_guard_init(uint32_t *start, uint32_t *stop) {
    static uint32_t next = 1;
    if (start == stop || *start != 0) return;
    for (uint32_t *g = start; g < stop; ++g) *g = next++;
}

MT_API void __sanitizer_cov_trace_pc_guard(uint32_t *guard) {
    (void)guard;
    MT_BLOCK();
}

/* -fsanitize-coverage=inline-8bit-counters: the counters live in the program and are updated
 * inline; the runtime only has to accept their registration. */
MT_API void __sanitizer_cov_8bit_counters_init(char *start, char *stop) {
    (void)start;
    (void)stop;
}

/* ---- the buffer's consumer ---- */

MT_HIDDEN static void consume(const sonde_record_header_t *begin, const sonde_record_header_t *end,
                              sonde_session_id_t session, sonde_buffer_id_t buffer, void *user_data) {
    (void)user_data;
    if (getpid() != g_pid) return; /* a fork child never writes the parent's file */
    const sonde_record_header_t *rec = begin;
    while (rec != NULL && rec < end) {
        uint32_t size = 0;
        const void *payload = sonde_record_payload(rec, &size);
        if (sonde_record_kind(rec) == SONDE_RECORD_KIND_LOSS && size >= sizeof(sonde_loss_record_t)) {
            /* LOSSLESS drops only after waiting 10 s for the consumer: said at the end. */
            sonde_loss_record_t l;
            memcpy(&l, payload, sizeof l);
            g_lost_batches += l.count;
        } else if (sonde_record_kind(rec) == kBatchKind && size >= sizeof(batch_header)) {
            batch_header h;
            memcpy(&h, payload, sizeof h);
            if (sizeof h + (uint64_t)h.count * sizeof(sonde_memref_t) <= size)
                sink_write(h.shard,
                           (const sonde_memref_t *)(const void *)((const unsigned char *)payload + sizeof h),
                           h.count);
        }
        const sonde_record_header_t *next = NULL;
        if (sonde_next_record(rec, &next, session, buffer) != SONDE_STATUS_SUCCESS) break;
        rec = next;
    }
}

/* ---- the module map ---- */

/* Lowest mapped addresses of the modules given to the trace's module table, by index: those
 * loaded at start, then those found at a normal exit (main thread, or the thread that stops). */
enum { kMaxModules = 4096 };
static uint64_t g_module_base[kMaxModules];
static uint32_t g_modules;

/* dl_iterate_phdr's callback: one module table entry per module not given yet. `data` counts
 * the calls: the first is the program itself, whose name the loader leaves empty. */
MT_HIDDEN static int add_module(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    const int first = (*(int *)data)++ == 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        const uint64_t start = (uint64_t)info->dlpi_addr + ph->p_vaddr;
        if (start < lo) lo = start;
        if (start + ph->p_memsz > hi) hi = start + ph->p_memsz;
    }
    if (hi == 0 || g_modules >= kMaxModules) return 0;
    /* The module file's lines are "ADDRESS SIZE PATH" (hexadecimal; PATH empty when the loader
     * gives none); a path with a newline is left out. */
    for (uint32_t i = 0; i < g_modules; ++i)
        if (g_module_base[i] == lo) return 0;
    char exe[4096];
    const char *path = info->dlpi_name != NULL ? info->dlpi_name : "";
    if (first && *path == '\0') {
        const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        path = exe;
    }
    const char *slash = strrchr(path, '/');
    sonde_trace_module_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.index = g_modules;
    m.path = *path == '/' ? path : "";
    m.name = slash != NULL ? slash + 1 : path;
    m.address = lo;
    m.size = hi - lo;
    int given = g_writer != NULL && sonde_trace_writer_add_module(g_writer, &m) == SONDE_STATUS_SUCCESS;
    if (g_modules_fd >= 0 && strchr(m.path, '\n') == NULL &&
        dprintf(g_modules_fd, "%llx %llx %s\n", (unsigned long long)lo, (unsigned long long)(hi - lo),
                m.path) > 0)
        given = 1;
    if (given) g_module_base[g_modules++] = lo;
    return 0;
}

MT_HIDDEN static void add_modules(void) {
    if (g_writer == NULL && g_modules_fd < 0) return; /* no trace and no module file to name them in */
    int calls = 0;
    dl_iterate_phdr(add_module, &calls);
}

/* ---- start and stop ---- */

static const int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
static struct sigaction g_old_actions[NSIG];
static int g_crashed;
static int g_started;
static int g_stopped;

MT_HIDDEN static void stop_recording(int crashing);

MT_HIDDEN static void on_fatal_signal(int sig, siginfo_t *info, void *uc) {
    const int saved_errno = errno;
    /* A thread that crashed while sending holds g_tx_mu: the stream cannot be finished. */
    if (__atomic_exchange_n(&g_crashed, 1, __ATOMIC_ACQ_REL) == 0 && g_recording && !t_sending)
        stop_recording(1);
    const struct sigaction *old = &g_old_actions[sig];
    sigaction(sig, old, NULL);
    errno = saved_errno;
    if ((old->sa_flags & SA_SIGINFO) != 0 && old->sa_sigaction != NULL)
        old->sa_sigaction(sig, info, uc);
    else if ((old->sa_flags & SA_SIGINFO) == 0 && old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN)
        old->sa_handler(sig);
    else
        raise(sig);
}

MT_HIDDEN static void install_crash_handlers(void) {
    enum { kAltStack = 256 * 1024 };
    /* Kept for good (it must outlive every signal), in a variable whose store stays. */
    static void *volatile altstack;
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    altstack = malloc(kAltStack);
    ss.ss_sp = altstack;
    ss.ss_size = kAltStack;
    if (ss.ss_sp != NULL) sigaltstack(&ss, NULL);
    for (size_t i = 0; i < sizeof kFatalSignals / sizeof kFatalSignals[0]; ++i) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal_signal;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(kFatalSignals[i], &sa, &g_old_actions[kFatalSignals[i]]);
    }
}

/* A fork child of a live program analyses nothing: the stream is its parent's. */
MT_HIDDEN static void live_fork_child(void) {
    __atomic_store_n(&g_active, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_blocks_active, 0, __ATOMIC_RELEASE);
    if (g_live_fd >= 0) close(g_live_fd);
    g_live_fd = -1;
    if (g_modules_fd >= 0) close(g_modules_fd);
    g_modules_fd = -1;
    g_recording = 0;
}

/* SONDE_MEMTRACE_LIVE: the descriptor of the live stream (1 when it is one, 0 when the variable
 * is absent, -1 when it is unusable: said on stderr). */
MT_HIDDEN static int read_live(void) {
    const char *env = secure_getenv("SONDE_MEMTRACE_LIVE");
    if (env == NULL || *env == '\0') return 0;
    char *end = NULL;
    const long fd = strtol(env, &end, 10);
    if (end == env || *end != '\0' || fd < 0 || fd > INT32_MAX || fcntl((int)fd, F_GETFD) < 0) {
        fprintf(stderr,
                "sonde: cannot analyse memory references live: SONDE_MEMTRACE_LIVE='%s' is not an open "
                "descriptor\n",
                env);
        return -1;
    }
    g_live_fd = (int)fd;
    /* The program's own children (exec'd or forked) must not write into the stream. */
    fcntl(g_live_fd, F_SETFD, FD_CLOEXEC);
    const char *modules = secure_getenv("SONDE_MEMTRACE_MODULES");
    if (modules != NULL && *modules != '\0') {
        g_modules_fd = open(modules, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (g_modules_fd < 0)
            fprintf(stderr, "sonde: cannot write the module table to %s: %s; pcs stay unnamed\n", modules,
                    strerror(errno));
    }
    unsetenv("SONDE_MEMTRACE_MODULES");
    pthread_atfork(NULL, NULL, live_fork_child);
    return 1;
}

MT_HIDDEN void sonde_memtrace_prepare(void) {
    const char *env = secure_getenv("SONDE_MEMTRACE");
    const int file = env != NULL && *env != '\0';
    const int live = read_live();
    unsetenv("SONDE_MEMTRACE_LIVE");
    if (live < 0 || (live == 0 && !file)) return;
    if (file && strlen(env) >= sizeof g_path) {
        fprintf(stderr, "sonde: cannot record memory references: SONDE_MEMTRACE is too long\n");
        g_live_fd = -1;
        return;
    }
    if (read_sampling() != 0) {
        g_live_fd = -1;
        return;
    }
    const char *blocks = secure_getenv("SONDE_MEMTRACE_BLOCKS");
    g_blocks = blocks != NULL && strcmp(blocks, "1") == 0;
    if (file) strcpy(g_path, env);
    /* The program's own children must not record over this file. */
    unsetenv("SONDE_MEMTRACE");
    /* Before any record is emitted, so that this key's destructor runs before libsonde's. */
    if (pthread_key_create(&g_key_exit, on_thread_key) == 0) g_key_made = 1;
}

MT_HIDDEN void sonde_memtrace_start(void) {
    if ((g_path[0] == '\0' && g_live_fd < 0) || g_started) return;
    g_started = 1;
    sonde_status_t st = SONDE_STATUS_SUCCESS;
    if (g_path[0] != '\0') {
        sonde_trace_writer_properties_t wp;
        memset(&wp, 0, sizeof wp);
        wp.struct_size = sizeof wp;
        st = sonde_trace_writer_create(g_path, &wp, &g_writer);
        if (st != SONDE_STATUS_SUCCESS) {
            fprintf(stderr, "sonde: cannot record memory references to %s: %s\n", g_path,
                    sonde_status_string(st));
            g_writer = NULL;
            return;
        }
    }
    /* 64 chunks of 1 MiB: a thread fills its own chunk with 64 KiB batches; LOSSLESS waits up
     * to 10 s for the consumer (a year when live: the program waits for the analyzer); an
     * interval flush every 100 ms bounds what a SIGKILL loses. */
    const sonde_buffer_property_t props[] = {
        {SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 1u << 20},
        {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, SONDE_BUFFER_POLICY_LOSSLESS},
        {SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT, 0,
         g_live_fd >= 0 ? 365ull * 86400 * 1000000000 : 10000000000ull},
        {SONDE_BUFFER_PROPERTY_KIND_INTERVAL_FLUSH, 0, 100000000ull},
    };
    st = sonde_create_session(NULL, &g_session);
    if (st == SONDE_STATUS_SUCCESS) {
        st = sonde_create_buffer(g_session, 64u << 20, consume, NULL, props, 4, &g_buffer);
        if (st == SONDE_STATUS_SUCCESS) st = sonde_start_session(g_session);
        if (st != SONDE_STATUS_SUCCESS) sonde_destroy_session(g_session);
    }
    if (st == SONDE_STATUS_SUCCESS && g_live_fd >= 0) {
        const int err = live_open();
        if (err != 0) {
            fprintf(stderr, "sonde: cannot analyse memory references live: %s\n", strerror(err));
            sonde_stop_session(g_session);
            sonde_destroy_session(g_session);
            if (g_writer != NULL) sonde_trace_writer_close(g_writer);
            g_writer = NULL;
            return;
        }
    }
    if (st != SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "sonde: cannot record memory references: %s\n", sonde_status_string(st));
        if (g_writer != NULL) sonde_trace_writer_close(g_writer);
        g_writer = NULL;
        return;
    }
    g_pid = getpid();
    g_live_direct = g_writer == NULL && g_live_fd >= 0;
    add_modules();
    g_recording = 1;
    install_crash_handlers();
    __atomic_store_n(&g_active, 1, __ATOMIC_RELEASE);
    if (g_blocks) __atomic_store_n(&g_blocks_active, 1, __ATOMIC_RELEASE);
}

/* Finishes the trace (its index and footer) and the stream (an END message with the batches the
 * buffer dropped; the descriptor is closed unless crashing, when a delivery may still run). */
MT_HIDDEN static void finish_sink(int crashing) {
    if (g_writer != NULL) {
        const sonde_status_t st = sonde_trace_writer_close(g_writer);
        g_writer = NULL;
        if (st != SONDE_STATUS_SUCCESS && !__atomic_load_n(&g_write_failed, __ATOMIC_ACQUIRE))
            fprintf(stderr, "sonde: memory trace failed: %s\n", sonde_status_string(st));
    }
    if (g_live_fd < 0) return;
    if (!__atomic_load_n(&g_write_failed, __ATOMIC_ACQUIRE))
        live_send(kLiveEnd, 0, (uint32_t)(g_lost_batches > UINT32_MAX ? UINT32_MAX : g_lost_batches), 0, NULL,
                  0);
    if (!crashing) {
        close(g_live_fd);
        g_live_fd = -1;
    }
}

MT_HIDDEN static void stop_recording(int crashing) {
    if (getpid() != g_pid || __atomic_exchange_n(&g_stopped, 1, __ATOMIC_ACQ_REL)) return;
    const int live = g_live_fd >= 0;
    __atomic_store_n(&g_active, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_blocks_active, 0, __ATOMIC_RELEASE);
    /* Every batch emitted so far reaches the writer first; then the staged tails are written
     * directly, after them: the calling thread's with its exit marker (it is the last to run),
     * those of threads still running as they are. */
    sonde_flush_data(g_session, g_buffer);
    if (!crashing) pthread_mutex_lock(&g_mu); /* the crashed thread may hold it */
    for (stage *s = g_stages; s != NULL; s = s->next) {
        if (s->exited) continue;
        if (s == t_stage && !crashing) {
            if (s->n >= kStage) {
                put_skipped(s);
                sink_write(s->shard, s->refs, s->n);
                s->n = 0;
            }
            put_skipped(s);
            put_marker(s, SONDE_MARKER_THREAD_EXIT, (uint64_t)syscall(SYS_gettid));
            s->exited = 1;
        }
        const uint32_t n = __atomic_load_n(&s->n, __ATOMIC_ACQUIRE);
        if (n != 0 && sink_write(s->shard, s->refs, n) != 0) break;
    }
    if (!crashing) pthread_mutex_unlock(&g_mu);
    /* Libraries loaded since the start; not from a crash handler, which may have interrupted
     * the loader with its lock held. */
    if (!crashing) add_modules();
    if (!crashing) {
        sonde_stop_session(g_session);
        sonde_destroy_session(g_session);
    }
    finish_sink(crashing);
    if (g_lost_batches != 0)
        fprintf(stderr,
                "sonde: warning: %llu batches of up to %d memory references were dropped (the %s fell "
                "behind for more than %s)\n",
                (unsigned long long)g_lost_batches, kStage, live ? "analyzer" : "trace writer",
                live ? "a year" : "10 s");
}

MT_HIDDEN void sonde_memtrace_stop(void) {
    if (g_recording) stop_recording(0);
}
