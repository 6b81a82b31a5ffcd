/* bench_discard: what a record costs a DISCARD producer whose consumer cannot keep up, beside
 * what it costs when the consumer keeps up, in CPU time.
 *
 * Figures (medians over REPS repetitions; CPU ns per 32-byte record = getrusage user + system
 * time of the whole process, delivery thread included, divided by the records emitted):
 *   - uncontended (anchor): P producers call sonde_emit_timestamped with a 16-byte payload
 *     into a 64 MiB LOSSLESS buffer whose callback only counts bytes; nothing is dropped
 *   - DISCARD overloaded: P producers emit the same records into a 1 MiB DISCARD buffer whose
 *     callback blocks until the producers are done: after the first chunks fill, every record
 *     is dropped
 * for P = 1 and P = the number of online CPUs, with the ratio overloaded / uncontended (the
 * median of the repetitions' ratios; target <= 1.2x: dropping costs no more than recording),
 * the system share of the CPU time, the share of records dropped, and the process's voluntary
 * context switches (a lock convoy among dropping producers shows up as system time and context
 * switches).
 * It prints and never fails. SONDE_BENCH_RECORDS sets the records per repetition. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <sonde/sonde.h>

#define REPS 5

static uint64_t g_records = 20000000;
static sonde_session_id_t g_session;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct {
    double user_s, sys_s, nvcsw;
} usage_t;

static usage_t usage_now(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    usage_t u = {ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6,
                 ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6, (double)ru.ru_nvcsw};
    return u;
}

/* ---- consumers ----------------------------------------------------------------------- */
static uint64_t g_bytes; /* only the delivering thread of a buffer writes it */

static void count_cb(const sonde_record_header_t *b, const sonde_record_header_t *e, sonde_session_id_t s,
                     sonde_buffer_id_t bu, void *u) {
    (void)s;
    (void)bu;
    (void)u;
    __atomic_fetch_add(&g_bytes, (uint64_t)((const char *)e - (const char *)b), __ATOMIC_RELAXED);
}

/* A consumer that is stuck: every callback waits until the gate opens. */
static pthread_mutex_t g_gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_gate_cv = PTHREAD_COND_INITIALIZER;
static int g_gate_open;

static void blocked_cb(const sonde_record_header_t *b, const sonde_record_header_t *e, sonde_session_id_t s,
                       sonde_buffer_id_t bu, void *u) {
    pthread_mutex_lock(&g_gate_mu);
    while (!g_gate_open) pthread_cond_wait(&g_gate_cv, &g_gate_mu);
    pthread_mutex_unlock(&g_gate_mu);
    count_cb(b, e, s, bu, u);
}

static void gate(int open) {
    pthread_mutex_lock(&g_gate_mu);
    g_gate_open = open;
    pthread_cond_broadcast(&g_gate_cv);
    pthread_mutex_unlock(&g_gate_mu);
}

/* ---- producers ----------------------------------------------------------------------- */
typedef struct {
    sonde_buffer_id_t b;
    uint64_t n, full;
    pthread_barrier_t *start, *done;
} prod_t;

static void *producer(void *arg) {
    prod_t *a = (prod_t *)arg;
    uint64_t p[2] = {0, 0};
    /* Counted in a local: the producers' prod_t sit side by side, and a shared cache line
     * written on every dropped record would cost more than dropping it. */
    uint64_t full = 0;
    pthread_barrier_wait(a->start);
    for (uint64_t i = 0; i < a->n; ++i) {
        p[0] = i;
        p[1] = i;
        if (sonde_emit_timestamped(a->b, SONDE_RECORD_KIND_USER, p, 16) != SONDE_STATUS_SUCCESS) ++full;
    }
    a->full = full;
    /* Measured up to here: the thread's exit delivers its records, which waits for a stuck
     * consumer, so the process's usage is read before it. */
    pthread_barrier_wait(a->done);
    return NULL;
}

typedef struct {
    double cpu_ns, sys_ns, nvcsw, dropped;
} figures_t;

/* One repetition: `threads` producers share g_records records; usage of the whole process
 * from their start to the end of their loops. */
static figures_t run_producers(sonde_buffer_id_t b, int threads, int stuck) {
    pthread_barrier_t start, done;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&done, NULL, (unsigned)threads + 1);
    prod_t *a = calloc((size_t)threads, sizeof *a);
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    const uint64_t per = g_records / (uint64_t)threads;
    for (int i = 0; i < threads; ++i) {
        a[i] = (prod_t){b, per, 0, &start, &done};
        pthread_create(&t[i], NULL, producer, &a[i]);
    }
    const usage_t u0 = usage_now();
    pthread_barrier_wait(&start);
    pthread_barrier_wait(&done);
    const usage_t u1 = usage_now();
    if (stuck) gate(1);
    uint64_t full = 0;
    for (int i = 0; i < threads; ++i) {
        pthread_join(t[i], NULL);
        full += a[i].full;
    }
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&done);
    free(a);
    free(t);
    const double recs = (double)(per * (uint64_t)threads);
    figures_t f = {((u1.user_s - u0.user_s) + (u1.sys_s - u0.sys_s)) * 1e9 / recs,
                   (u1.sys_s - u0.sys_s) * 1e9 / recs, u1.nvcsw - u0.nvcsw, full / recs};
    return f;
}

static sonde_buffer_id_t make_buffer(uint64_t size, uint64_t chunk, uint32_t policy,
                                     sonde_buffer_callback_t cb) {
    const sonde_buffer_property_t props[2] = {{SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, chunk},
                                              {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, policy}};
    sonde_buffer_id_t b = {0};
    if (sonde_create_buffer(g_session, size, cb, NULL, props, 2, &b) != SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "bench_discard: cannot create a buffer\n");
        exit(0);
    }
    return b;
}

static figures_t medians(figures_t *v) {
    double c[REPS], s[REPS], n[REPS], d[REPS];
    for (int r = 0; r < REPS; ++r) {
        c[r] = v[r].cpu_ns;
        s[r] = v[r].sys_ns;
        n[r] = v[r].nvcsw;
        d[r] = v[r].dropped;
    }
    figures_t m = {median(c, REPS), median(s, REPS), median(n, REPS), median(d, REPS)};
    return m;
}

static void run_case(int threads) {
    figures_t anchor[REPS], over[REPS];
    sonde_buffer_id_t fast = make_buffer(64u << 20, 1u << 20, SONDE_BUFFER_POLICY_LOSSLESS, count_cb);
    sonde_start_session(g_session);
    run_producers(fast, threads, 0); /* warm up: first chunks, thread states */
    for (int r = 0; r < REPS; ++r) {
        anchor[r] = run_producers(fast, threads, 0);
        /* A fresh stuck buffer each time: 16 chunks of 64 KiB, about 32,000 records kept. */
        gate(0);
        sonde_buffer_id_t slow = make_buffer(1u << 20, 1u << 16, SONDE_BUFFER_POLICY_DISCARD, blocked_cb);
        sonde_start_session(g_session);
        over[r] = run_producers(slow, threads, 1);
        sonde_destroy_buffer(g_session, slow);
    }
    sonde_stop_session(g_session);
    sonde_destroy_buffer(g_session, fast);
    /* The ratio is the median of each repetition's ratio: the two runs of a repetition are
     * next to each other in time, so a machine that gets busier or quieter cancels out. */
    double ratio[REPS];
    for (int r = 0; r < REPS; ++r) ratio[r] = over[r].cpu_ns / anchor[r].cpu_ns;
    const figures_t a = medians(anchor), o = medians(over);
    const double m_ratio = median(ratio, REPS);
    char label[64];
    snprintf(label, sizeof label, "uncontended, %d producer%s", threads, threads > 1 ? "s" : "");
    printf("  %-38s %8.2f %8.2f %10.0f %8.2f%% %8s %s\n", label, a.cpu_ns, a.sys_ns, a.nvcsw, 100 * a.dropped,
           "1.00x", "anchor");
    snprintf(label, sizeof label, "DISCARD overloaded, %d producer%s", threads, threads > 1 ? "s" : "");
    printf("  %-38s %8.2f %8.2f %10.0f %8.2f%% %7.2fx %s\n", label, o.cpu_ns, o.sys_ns, o.nvcsw,
           100 * o.dropped, m_ratio, "<= 1.2x uncontended");
}

int main(void) {
    const char *env = getenv("SONDE_BENCH_RECORDS");
    if (env) g_records = strtoull(env, NULL, 10);
    if (g_records == 0) g_records = 1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1) cpus = 1;
    if (sonde_initialize() != SONDE_STATUS_SUCCESS) return 0;
    if (sonde_create_session(NULL, &g_session) != SONDE_STATUS_SUCCESS) return 0;
    printf("bench_discard: %llu records per repetition, median of %d, %ld online CPUs\n",
           (unsigned long long)g_records, REPS, cpus);
    printf("  (CPU ns per 32-byte sonde_emit_timestamped record: user + system of the process)\n");
    printf("  %-38s %8s %8s %10s %9s %8s %s\n", "figure", "cpu ns", "sys ns", "vol. csw", "dropped", "ratio",
           "target");
    run_case(1);
    if (cpus > 1) run_case((int)cpus);
    sonde_destroy_session(g_session);
    sonde_finalize();
    return 0;
}
