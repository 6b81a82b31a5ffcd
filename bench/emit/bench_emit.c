/* bench_emit: what one record costs a producer, beside its anchors, in one run.
 *
 * Figures (medians over REPS repetitions, ns per 32-byte record = 8-byte header + payload):
 *   - sonde_emit_timestamped, 16-byte payload (Sonde adds the 8-byte timestamp), 1 thread
 *   - sonde_emit, 24-byte payload whose first word is a timestamp the caller already has, and
 *     the same record through its header-inline form, sonde_emit_inline; the latter also into a
 *     4 MiB buffer, whose chunks stay in the caches where the 64 MiB buffer's stream through
 *     memory, as the floor's array does (what the record costs, apart from the memory it fills)
 *   - sonde_emit into a stopped session, and the same behind the inline state-word guard
 *   - sonde_emit_timestamped from 2 threads at once, and the 2-thread/1-thread throughput
 * Anchors in the same process:
 *   - the floor: rdtsc + a 32-byte store into a thread-local array (as large as a chunk), and
 *     the same into an array as large as the buffer (64 MiB), whose stores go through memory;
 *     and those 32-byte stores alone (no clock) into the 64 MiB array, sonde_emit_inline's anchor:
 *     where the machine's store bandwidth is near 3 ns a record, no record of 32 bytes into
 *     a buffer that size is written faster
 *   - an empty call into the library (sonde_get_version), the least any non-inline call costs
 *   - LTTng-UST 2.13 emitting the same 16-byte payload into a live blocking (lossless)
 *     channel, with its own lttng-sessiond started under a private LTTNG_HOME and stopped by pid
 * Every Sonde run uses a LOSSLESS buffer whose callback only counts bytes; drops are printed.
 * It prints and never fails: targets are printed beside the figures. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <sonde/sonde.h>

#ifdef SONDE_BENCH_LTTNG
#include "tp.h"
#endif

#define REPS 5
#define CHUNK (1u << 20)

static uint64_t g_records = 20000000;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the floor ----------------------------------------------------------------------- */
static __thread uint64_t (*tl_array)[4];
static __thread uint64_t (*tl_big)[4]; /* as large as the 64 MiB buffer */

/* `bytes`: CHUNK (the floor) or the buffer's 64 MiB (the same stores, through memory).
 * Without `clock`, the first word is the record's index, as a caller-supplied timestamp would
 * be: the stores alone, which is what sonde_emit_inline's record costs the memory. */
static double floor_run(uint64_t n, size_t bytes, int clock) {
    uint64_t(**slot)[4] = bytes == CHUNK ? &tl_array : &tl_big;
    if (!*slot) *slot = aligned_alloc(64, bytes);
    uint64_t(*array)[4] = *slot;
    memset(array, 0, bytes);
    const uint64_t mask = bytes / 32 - 1;
    double t0 = now_s();
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t *q = array[i & mask];
        q[0] = clock ? __rdtsc() : i;
        q[1] = i;
        q[2] = i;
        q[3] = i;
        __asm__ volatile("" ::"r"(q) : "memory");
    }
    return (now_s() - t0) * 1e9 / n;
}

/* ---- Sonde --------------------------------------------------------------------------- */
static atomic_uint_fast64_t g_bytes;
static void count_cb(const sonde_record_header_t *b, const sonde_record_header_t *e, sonde_session_id_t s,
                     sonde_buffer_id_t bu, void *u) {
    (void)s;
    (void)bu;
    (void)u;
    atomic_fetch_add_explicit(&g_bytes, (uint64_t)((const char *)e - (const char *)b), memory_order_relaxed);
}

static sonde_session_id_t g_session;
static sonde_buffer_id_t g_buffer;

enum mode {
    TIMESTAMPED,
    CALLER_TS,
    CALLER_TS_INLINE,
    CALLER_TS_INLINE_SMALL,
    STOPPED,
    STOPPED_INLINE,
    EMPTY_CALL
};

static sonde_producer_t g_producer; /* the main thread's (struct_size set in main) */
static sonde_buffer_id_t g_small;   /* 4 MiB: four 1 MiB chunks */
static sonde_producer_t g_small_producer;

static double sonde_run(enum mode m, uint64_t n) {
    uint64_t p[3] = {0, 0, 0};
    const volatile uint64_t *word = sonde_buffer_state_word(g_buffer);
    double t0 = now_s();
    switch (m) {
        case TIMESTAMPED:
            for (uint64_t i = 0; i < n; ++i) {
                p[0] = i;
                p[1] = i;
                sonde_emit_timestamped(g_buffer, SONDE_RECORD_KIND_USER, p, 16);
            }
            break;
        case CALLER_TS: /* p[0] stands for a timestamp the caller already took */
            for (uint64_t i = 0; i < n; ++i) {
                p[0] = i;
                p[1] = i;
                p[2] = i;
                sonde_emit(g_buffer, SONDE_RECORD_KIND_USER, p, 24);
            }
            break;
        case CALLER_TS_INLINE: /* the same record, written by code inlined here */
        case CALLER_TS_INLINE_SMALL: {
            const sonde_producer_t *producer = m == CALLER_TS_INLINE ? &g_producer : &g_small_producer;
            for (uint64_t i = 0; i < n; ++i) {
                p[0] = i;
                p[1] = i;
                p[2] = i;
                sonde_emit_inline(producer, SONDE_RECORD_KIND_USER, p, 24);
            }
            break;
        }
        case STOPPED:
            for (uint64_t i = 0; i < n; ++i) {
                p[0] = i;
                sonde_emit(g_buffer, SONDE_RECORD_KIND_USER, p, 24);
            }
            break;
        case EMPTY_CALL: /* anchor: the cost of any call into the library */
            for (uint64_t i = 0; i < n; ++i) {
                p[0] += sonde_get_version(NULL, NULL, NULL);
                __asm__ volatile("" ::"r"(p) : "memory");
            }
            break;
        case STOPPED_INLINE:
            for (uint64_t i = 0; i < n; ++i) {
                p[0] = i;
                if (sonde_buffer_is_recording(word, g_buffer))
                    sonde_emit(g_buffer, SONDE_RECORD_KIND_USER, p, 24);
                __asm__ volatile("" ::"r"(p) : "memory");
            }
            break;
    }
    return (now_s() - t0) * 1e9 / n;
}

typedef struct {
    pthread_barrier_t *start;
    uint64_t n;
    double ns;
} thr_arg_t;

static void *thr_main(void *a) {
    thr_arg_t *t = (thr_arg_t *)a;
    pthread_barrier_wait(t->start);
    t->ns = sonde_run(TIMESTAMPED, t->n);
    return NULL;
}

/* Two producers at once: wall-clock ns per record of the pair and throughput vs 1 thread. */
static double two_threads(uint64_t n) {
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 3);
    thr_arg_t a[2] = {{&start, n, 0}, {&start, n, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, thr_main, &a[i]);
    pthread_barrier_wait(&start);
    double t0 = now_s();
    for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
    double wall = now_s() - t0;
    pthread_barrier_destroy(&start);
    return wall * 1e9 / (2.0 * n);
}

static void sonde_totals(uint64_t *emitted, uint64_t *delivered, uint64_t *dropped) {
    sonde_flush_data(g_session, g_buffer);
    sonde_buffer_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    sonde_get_buffer_stats(g_session, g_buffer, &st);
    *emitted = st.records_emitted;
    *delivered = st.records_delivered;
    *dropped = st.records_dropped;
}

/* ---- LTTng-UST ----------------------------------------------------------------------- */
#ifdef SONDE_BENCH_LTTNG
static int lttng_child(uint64_t n) {
    /* Registration with the session daemon happens in liblttng-ust's constructor; the event
     * is enabled by the session the parent configured. Give it a moment if needed. */
    for (int i = 0; i < 500 && !lttng_ust_tracepoint_enabled(sonde_bench, record); ++i) usleep(10000);
    if (!lttng_ust_tracepoint_enabled(sonde_bench, record)) {
        printf("error tracepoint not enabled\n");
        return 1;
    }
    double v[REPS];
    for (int r = 0; r < REPS; ++r) {
        double t0 = now_s();
        for (uint64_t i = 0; i < n; ++i) lttng_ust_tracepoint(sonde_bench, record, i, i);
        v[r] = (now_s() - t0) * 1e9 / n;
    }
    printf("ns %.3f\n", median(v, REPS));
    return 0;
}

static int run_cmd(const char *home, const char *cmd) {
    char buf[1024];
    snprintf(buf, sizeof buf, "LTTNG_HOME='%s' %s >/dev/null 2>&1", home, cmd);
    return system(buf);
}

/* Returns ns per event, or a negative value with `why` set. */
static double lttng_run(const char *self, uint64_t n, char *why, size_t whylen) {
    if (system("command -v lttng-sessiond >/dev/null 2>&1 && command -v lttng >/dev/null 2>&1") != 0) {
        snprintf(why, whylen, "lttng-sessiond or lttng not installed (apt-get install lttng-tools)");
        return -1;
    }
    char home[] = "/tmp/sonde-bench-lttng-XXXXXX";
    if (!mkdtemp(home)) {
        snprintf(why, whylen, "mkdtemp: %s", strerror(errno));
        return -1;
    }
    double result = -1;
    pid_t sessiond = fork();
    if (sessiond == 0) {
        setenv("LTTNG_HOME", home, 1);
        int devnull = open("/dev/null", 1);
        if (devnull >= 0) {
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        execlp("lttng-sessiond", "lttng-sessiond", "--no-kernel", (char *)NULL);
        _exit(127);
    }
    int ready = 0;
    for (int i = 0; i < 100 && !ready; ++i) {
        usleep(100000);
        ready = run_cmd(home, "lttng list") == 0;
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "lttng create sondebench --output='%s/trace'", home);
    if (!ready) {
        snprintf(why, whylen, "lttng-sessiond did not come up");
    } else if (run_cmd(home, cmd) != 0 ||
               run_cmd(home,
                       "lttng enable-channel --userspace --blocking-timeout=inf --subbuf-size=4M "
                       "--num-subbuf=8 ch") != 0 ||
               run_cmd(home, "lttng enable-event --userspace --channel=ch sonde_bench:record") != 0 ||
               run_cmd(home, "lttng start") != 0) {
        snprintf(why, whylen, "configuring the LTTng session failed");
    } else {
        int fds[2];
        if (pipe(fds) == 0) {
            pid_t child = fork();
            if (child == 0) {
                setenv("LTTNG_HOME", home, 1);
                setenv("LTTNG_UST_ALLOW_BLOCKING", "1", 1);
                dup2(fds[1], 1);
                close(fds[0]);
                char nbuf[32];
                snprintf(nbuf, sizeof nbuf, "%llu", (unsigned long long)n);
                execl(self, self, "--lttng-child", nbuf, (char *)NULL);
                _exit(127);
            }
            close(fds[1]);
            char line[256] = {0};
            FILE *f = fdopen(fds[0], "r");
            if (f && fgets(line, sizeof line, f) && sscanf(line, "ns %lf", &result) == 1) {
            } else {
                snprintf(why, whylen, "LTTng child: %s", line[0] ? line : "no output");
                result = -1;
            }
            if (f) fclose(f);
            waitpid(child, NULL, 0);
        }
        run_cmd(home, "lttng stop");
        run_cmd(home, "lttng destroy sondebench");
    }
    kill(sessiond, SIGTERM);
    waitpid(sessiond, NULL, 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", home);
    return result;
}
#endif

int main(int argc, char **argv) {
    const char *env = getenv("SONDE_BENCH_RECORDS");
    if (env) g_records = strtoull(env, NULL, 10);
#ifdef SONDE_BENCH_LTTNG
    if (argc == 3 && strcmp(argv[1], "--lttng-child") == 0) return lttng_child(strtoull(argv[2], NULL, 10));
#endif
    (void)argc;
    (void)argv;
    if (sonde_initialize() != SONDE_STATUS_SUCCESS) return 0;
    sonde_create_session(NULL, &g_session);
    const sonde_buffer_property_t props[2] = {
        {SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, CHUNK},
        {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, SONDE_BUFFER_POLICY_LOSSLESS}};
    sonde_create_buffer(g_session, 64u << 20, count_cb, NULL, props, 2, &g_buffer);
    sonde_create_buffer(g_session, 4u << 20, count_cb, NULL, props, 2, &g_small);
    sonde_start_session(g_session);
    g_producer.struct_size = SONDE_PRODUCER_SIZE_1_2;
    if (sonde_buffer_producer(g_buffer, &g_producer) != SONDE_STATUS_SUCCESS) printf("no producer\n");
    g_small_producer.struct_size = SONDE_PRODUCER_SIZE_1_2;
    if (sonde_buffer_producer(g_small, &g_small_producer) != SONDE_STATUS_SUCCESS) printf("no producer\n");
    sonde_run(TIMESTAMPED, g_records / 4); /* warm up: first chunks, page faults */

    double fl[REPS], flbig[REPS], stores[REPS], ts[REPS], caller[REPS], cinl[REPS], csmall[REPS],
        stopped[REPS], inl[REPS], two[REPS], call[REPS];
    for (int r = 0; r < REPS; ++r) {
        fl[r] = floor_run(g_records, CHUNK, 1);
        flbig[r] = floor_run(g_records, 64u << 20, 1);
        stores[r] = floor_run(g_records, 64u << 20, 0);
        ts[r] = sonde_run(TIMESTAMPED, g_records);
        caller[r] = sonde_run(CALLER_TS, g_records);
        cinl[r] = sonde_run(CALLER_TS_INLINE, g_records);
        csmall[r] = sonde_run(CALLER_TS_INLINE_SMALL, g_records);
        two[r] = two_threads(g_records);
        sonde_stop_session(g_session);
        stopped[r] = sonde_run(STOPPED, g_records);
        inl[r] = sonde_run(STOPPED_INLINE, g_records);
        call[r] = sonde_run(EMPTY_CALL, g_records);
        sonde_start_session(g_session);
    }
    uint64_t emitted, delivered, dropped;
    sonde_totals(&emitted, &delivered, &dropped);
    const double m_fl = median(fl, REPS), m_flbig = median(flbig, REPS), m_ts = median(ts, REPS),
                 m_caller = median(caller, REPS);
    const double m_stop = median(stopped, REPS), m_inl = median(inl, REPS), m_two = median(two, REPS);
    const double m_call = median(call, REPS), m_cinl = median(cinl, REPS), m_small = median(csmall, REPS);
    const double m_stores = median(stores, REPS);

    char why[256] = "LTTng-UST support not built (liblttng-ust-dev missing)";
    double m_lttng = -1;
#ifdef SONDE_BENCH_LTTNG
    m_lttng = lttng_run(argv[0], g_records / 4, why, sizeof why);
#endif

    printf("bench_emit: %llu records per repetition, median of %d (ns per 32-byte record)\n",
           (unsigned long long)g_records, REPS);
    printf("  %-44s %8s %10s %s\n", "figure", "ns", "ratio", "target");
    printf("  %-44s %8.2f %10s %s\n", "floor: rdtsc + 32-byte thread-local store", m_fl, "1.00x", "anchor");
    printf("  %-44s %8.2f %9.2fx %s\n", "sonde_emit_timestamped, 1 thread", m_ts, m_ts / m_fl,
           "<= 1.15x floor");
    printf("  %-44s %8.2f %9.2fx %s\n", "floor into a 64 MiB array (the buffer's size)", m_flbig,
           m_flbig / m_fl, "(anchor: the same stores through memory)");
    printf("  %-44s %8s %9.2fx %s\n", "sonde_emit_timestamped / that floor", "", m_ts / m_flbig, "");
    printf("  %-44s %8.2f %10s %s\n", "sonde_emit_inline, caller-supplied timestamp", m_cinl, "", "<= 3 ns");
    printf("  %-44s %8.2f %10s %s\n", "  the same into a 4 MiB buffer", m_small, "",
           "(its chunks stay in the caches, as the floor's array does)");
    printf("  %-44s %8.2f %9.2fx %s\n", "anchor: the 32-byte stores alone, 64 MiB", m_stores,
           m_cinl / m_stores, "(no clock: what the record costs the memory)");
    printf("  %-44s %8.2f %10s %s\n", "sonde_emit, caller-supplied timestamp", m_caller, "",
           "(out of line: the empty call and the record)");
    printf("  %-44s %8.2f %10s %s\n", "anchor: empty call into libsonde", m_call, "",
           "(any call costs this)");
    printf("  %-44s %8.2f %9.2fx %s\n", "sonde_emit, session stopped", m_stop, m_stop / m_call,
           "<= 1 ns (ratio: to the empty call)");
    printf("  %-44s %8.2f %10s %s\n", "stopped, inline sonde_buffer_is_recording", m_inl, "", "<= 1 ns");
    printf("  %-44s %8.2f %9.2fx %s\n", "sonde_emit_timestamped, 2 threads (wall/rec)", m_two, m_ts / m_two,
           ">= 1.9x one thread's throughput");
    if (m_lttng > 0)
        printf("  %-44s %8.2f %9.2fx %s\n", "LTTng-UST 2.13, blocking channel (anchor)", m_lttng,
               m_lttng / m_ts, ">= 7x slower than Sonde timestamped");
    else
        printf("  %-44s %8s %10s (%s)\n", "LTTng-UST 2.13, blocking channel (anchor)", "n/a", "", why);
    printf(
        "  LOSSLESS buffer, counting consumer: emitted %llu, delivered %llu, dropped %llu (target 0 "
        "dropped)\n",
        (unsigned long long)emitted, (unsigned long long)delivered, (unsigned long long)dropped);
    printf("  bytes seen by the consumer: %llu\n", (unsigned long long)atomic_load(&g_bytes));
    sonde_destroy_session(g_session);
    sonde_finalize();
    return 0;
}
