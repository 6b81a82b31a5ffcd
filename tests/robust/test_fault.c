/* Allocation failures, one at a time: a whole run (runtime set-up, two buffers, emitting from
 * two threads, flushing, a trace written by sonde_trace_buffer_consumer, the analyzer over that
 * trace, finalisation) is repeated with the Nth allocation failing, for N = 1, 2, ... until a
 * run completes without reaching N. Every call must answer SUCCESS, OUT_OF_MEMORY or another
 * status its documentation lists for the case; nothing may crash or hang; the accounting of
 * every buffer that was flushed must be exact (emitted == delivered + dropped, and the
 * callback saw exactly the delivered records); no descriptor may leak (the ASan build also
 * checks that no memory leaks). The allocator is interposed by fault_alloc.c/fault_new.cpp. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/sonde.h>

#include "fault_alloc.h"

#define MAIN_RECORDS 300
#define THREAD_RECORDS 100
#define MEMREFS 300
#define MAX_RUNS 200000

/* The first unexpected answer of a run (recorded while armed, asserted after). */
typedef struct verdict_t {
    const char *step;
    sonde_status_t status;
    char detail[160];
} verdict_t;

static verdict_t g_verdict;

static void bad(const char *step, sonde_status_t st, const char *detail) {
    if (g_verdict.step != NULL) return;
    g_verdict.step = step;
    g_verdict.status = st;
    const char *d = detail != NULL ? detail : "";
    size_t len = strlen(d);
    if (len >= sizeof g_verdict.detail) len = sizeof g_verdict.detail - 1;
    memcpy(g_verdict.detail, d, len);
    g_verdict.detail[len] = 0;
}

/* Whether st is SUCCESS; anything but SUCCESS and the listed statuses is recorded as bad. */
static int ok(const char *step, sonde_status_t st, int n, ...) {
    if (st == SONDE_STATUS_SUCCESS) return 1;
    va_list ap;
    va_start(ap, n);
    int allowed = 0;
    for (int i = 0; i < n; ++i)
        if ((sonde_status_t)va_arg(ap, int) == st) allowed = 1;
    va_end(ap);
    if (!allowed) bad(step, st, "status not documented for this case");
    return 0;
}

#define OOM SONDE_STATUS_ERROR_OUT_OF_MEMORY

/* Buffer A's consumer (and B's without a trace): counts the records it is handed; allocates
 * nothing. */
typedef struct counter_t {
    pthread_mutex_t mu;
    uint64_t records;
    uint64_t bad_spans;
} counter_t;

static void count_cb(const sonde_record_header_t *begin, const sonde_record_header_t *end,
                     sonde_session_id_t s, sonde_buffer_id_t b, void *user) {
    counter_t *c = (counter_t *)user;
    pthread_mutex_lock(&c->mu);
    for (const sonde_record_header_t *r = begin; r < end;) {
        const sonde_record_header_t *next = NULL;
        if (sonde_next_record(r, &next, s, b) != SONDE_STATUS_SUCCESS) {
            c->bad_spans++;
            break;
        }
        const uint32_t kind = sonde_record_kind(r);
        if (kind == SONDE_RECORD_KIND_USER || kind == SONDE_RECORD_KIND_MEMREF) c->records++;
        r = next;
    }
    pthread_mutex_unlock(&c->mu);
}

/* Buffer B's consumer: Sonde's trace writer. */
typedef struct tracer_t {
    sonde_trace_writer_t *writer;
} tracer_t;

typedef struct producer_t {
    sonde_buffer_id_t b;
    uint64_t accepted, full;
} producer_t;

static void emit_users(producer_t *p, uint64_t n, const char *step) {
    for (uint64_t i = 0; i < n; ++i) {
        const uint64_t payload[2] = {i, 7};
        const sonde_status_t st = sonde_emit(p->b, SONDE_RECORD_KIND_USER, payload, sizeof payload);
        if (st == SONDE_STATUS_SUCCESS)
            p->accepted++;
        else if (st == SONDE_STATUS_ERROR_BUFFER_FULL)
            p->full++;
        else
            ok(step, st, 1, OOM); /* only the thread's first record allocates */
    }
}

static void *helper_thread(void *arg) {
    emit_users((producer_t *)arg, THREAD_RECORDS, "emit (helper thread)");
    return NULL; /* its exit delivers its records */
}

/* Checks a flushed buffer's counters against what its producers were told. */
static void check_stats(const char *step, sonde_session_id_t s, sonde_buffer_id_t b, uint64_t accepted,
                        uint64_t full, uint64_t seen, int seen_known, uint64_t *delivered) {
    sonde_buffer_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    if (!ok(step, sonde_get_buffer_stats(s, b, &st), 0)) return;
    char d[160];
    snprintf(d, sizeof d, "emitted %llu delivered %llu dropped %llu; accepted %llu full %llu seen %llu",
             (unsigned long long)st.records_emitted, (unsigned long long)st.records_delivered,
             (unsigned long long)st.records_dropped, (unsigned long long)accepted, (unsigned long long)full,
             (unsigned long long)seen);
    if (st.records_emitted != accepted + full || st.records_dropped != full ||
        st.records_emitted != st.records_delivered + st.records_dropped ||
        (seen_known && seen != st.records_delivered))
        bad(step, SONDE_STATUS_SUCCESS, d);
    *delivered = st.records_delivered;
}

/* Reads "total": N of basic_counts from the analyzer's JSON. */
static int json_total(const char *json, uint64_t *total) {
    const char *p = strstr(json, "\"total\":");
    if (p == NULL) return 0;
    *total = strtoull(p + 8, NULL, 10);
    return 1;
}

static char g_trace[256];

/* The analyzer over the trace; *total is basic_counts' total when the run succeeded. */
static int analyze(uint64_t *total) {
    sonde_analyzer_t *an = NULL;
    if (!ok("analyzer_create", sonde_analyzer_create(&an), 1, OOM)) return 0;
    int done = 0;
    char json[4096];
    size_t need = 0;
    if (ok("analyzer_add_tool", sonde_analyzer_add_tool(an, "basic_counts", NULL), 1, OOM) &&
        ok("analyzer_set_workers", sonde_analyzer_set_workers(an, 2), 0) &&
        ok("analyzer_add_input", sonde_analyzer_add_input(an, g_trace, SONDE_TRACE_FORMAT_SONDE), 1, OOM) &&
        ok("analyzer_run", sonde_analyzer_run(an), 2, OOM, SONDE_STATUS_ERROR_TOOL) &&
        ok("analyzer_results_json", sonde_analyzer_results_json(an, json, sizeof json, &need), 1, OOM)) {
        if (!json_total(json, total)) bad("analyzer_results_json", SONDE_STATUS_SUCCESS, json);
        done = 1;
    }
    ok("analyzer_destroy", sonde_analyzer_destroy(an), 0);
    return done;
}

typedef struct run_t {
    uint64_t delivered_b; /* MEMREF records delivered to the trace consumer */
    int writer_closed_ok; /* sonde_trace_writer_close answered SUCCESS */
    int flushed_b;        /* buffer B's accounting was read after a successful flush */
    int analyzed;
    uint64_t trace_total;
} run_t;

/* One run; every answer is checked by ok(). Cleans up after itself whatever failed. With
 * `with_trace`, buffer B feeds a trace writer and the analyzer reads the trace. */
static void run_once(run_t *out, int with_trace) {
    memset(out, 0, sizeof *out);
    if (!ok("initialize", sonde_initialize(), 2, OOM, SONDE_STATUS_ERROR)) {
        if (sonde_is_initialized()) bad("initialize", OOM, "failed but left the runtime initialised");
        return;
    }
    counter_t counter, memrefs;
    memset(&counter, 0, sizeof counter);
    memset(&memrefs, 0, sizeof memrefs);
    pthread_mutex_init(&counter.mu, NULL);
    pthread_mutex_init(&memrefs.mu, NULL);
    tracer_t tracer = {NULL};
    sonde_session_id_t s = {0};
    sonde_buffer_id_t a = {0}, b = {0};
    int have_a = 0, have_b = 0;
    producer_t pa = {a, 0, 0}, ph = {a, 0, 0}, pb = {b, 0, 0};
    const sonde_buffer_property_t props[1] = {{SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096}};
    if (!ok("create_session", sonde_create_session(NULL, &s), 1, OOM)) goto finalize;
    have_a = ok("create_buffer A", sonde_create_buffer(s, 1 << 16, count_cb, &counter, props, 1, &a), 1, OOM);
    if (!with_trace)
        have_b =
            ok("create_buffer B", sonde_create_buffer(s, 1 << 16, count_cb, &memrefs, props, 1, &b), 1, OOM);
    else if (ok("trace_writer_create", sonde_trace_writer_create(g_trace, NULL, &tracer.writer), 2, OOM,
                SONDE_STATUS_ERROR_IO))
        have_b = ok("create_buffer B",
                    sonde_create_buffer(s, 1 << 16, sonde_trace_buffer_consumer, tracer.writer, props, 1, &b),
                    1, OOM);
    if (!ok("start_session", sonde_start_session(s), 0)) goto destroy;
    pa.b = ph.b = a;
    pb.b = b;
    if (have_a) {
        pthread_t th;
        const int thread_ok = pthread_create(&th, NULL, helper_thread, &ph) == 0;
        emit_users(&pa, MAIN_RECORDS, "emit");
        if (thread_ok) pthread_join(th, NULL);
    }
    if (have_b) {
        for (uint64_t i = 0; i < MEMREFS; ++i) {
            const sonde_memref_record_t m = {0x1000 + 64 * (i % 50), 0x400000 + i, 8, (uint32_t)(i % 2)};
            const sonde_status_t st = sonde_emit_timestamped(b, SONDE_RECORD_KIND_MEMREF, &m, sizeof m);
            if (st == SONDE_STATUS_SUCCESS)
                pb.accepted++;
            else if (st == SONDE_STATUS_ERROR_BUFFER_FULL)
                pb.full++;
            else
                ok("emit_timestamped", st, 1, OOM);
        }
    }
    if (have_a && ok("flush A", sonde_flush_data(s, a), 0)) {
        uint64_t delivered = 0;
        pthread_mutex_lock(&counter.mu);
        const uint64_t seen = counter.records;
        pthread_mutex_unlock(&counter.mu);
        check_stats("stats A", s, a, pa.accepted + ph.accepted, pa.full + ph.full, seen, 1, &delivered);
        if (counter.bad_spans != 0) bad("flush A", SONDE_STATUS_SUCCESS, "a span failed validation");
    }
    if (have_b && ok("flush B", sonde_flush_data(s, b), 0)) {
        pthread_mutex_lock(&memrefs.mu);
        const uint64_t seen = memrefs.records;
        pthread_mutex_unlock(&memrefs.mu);
        check_stats("stats B", s, b, pb.accepted, pb.full, seen, !with_trace, &out->delivered_b);
        out->flushed_b = 1;
    }
    ok("stop_session", sonde_stop_session(s), 0);
destroy:
    ok("destroy_session", sonde_destroy_session(s), 0);
finalize:
    ok("finalize", sonde_finalize(), 1, OOM);
    if (sonde_is_initialized()) bad("finalize", SONDE_STATUS_SUCCESS, "the runtime is still initialised");
    if (tracer.writer != NULL) {
        out->writer_closed_ok =
            ok("trace_writer_close", sonde_trace_writer_close(tracer.writer), 2, OOM, SONDE_STATUS_ERROR_IO);
        if (out->writer_closed_ok && out->flushed_b) out->analyzed = analyze(&out->trace_total);
    }
    pthread_mutex_destroy(&counter.mu);
    pthread_mutex_destroy(&memrefs.mu);
}

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (d == NULL) return -1;
    while (readdir(d) != NULL) ++n;
    closedir(d);
    return n;
}

/* Lists the open descriptors and what they are, for a failure message. */
static void describe_fds(char *out, size_t size) {
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) return;
    size_t used = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && used + 1 < size) {
        if (e->d_name[0] == '.') continue;
        char link[300], target[128];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        const ssize_t n = readlink(link, target, sizeof target - 1);
        target[n > 0 ? n : 0] = 0;
        used += (size_t)snprintf(out + used, size - used, "%s=%s ", e->d_name, target);
    }
    closedir(d);
}

/* SONDE_FAULT_KEEP_GOING=1: report every failing N and go on to the end instead of stopping
 * at the first (to list every defect at once). SONDE_FAULT_FIRST=N starts at N. */
static int keep_going(void) {
    const char *v = getenv("SONDE_FAULT_KEEP_GOING");
    return v != NULL && strcmp(v, "1") == 0;
}

static void each_allocation_fails(int with_trace) {
    char dir[] = "/tmp/sonde-fault-XXXXXX";
    assert_non_null(mkdtemp(dir));
    snprintf(g_trace, sizeof g_trace, "%s/run.sonde", dir);

    /* A run with nothing failing: the reference, and the first use of every lazy state. */
    run_t ref;
    memset(&g_verdict, 0, sizeof g_verdict);
    fault_arm(0);
    run_once(&ref, with_trace);
    const uint64_t allocations = fault_disarm();
    if (g_verdict.step != NULL)
        fail_msg("reference run: %s answered %s (%s)", g_verdict.step, sonde_status_name(g_verdict.status),
                 g_verdict.detail);
    assert_int_equal(ref.delivered_b, MEMREFS);
    if (with_trace) {
        assert_true(ref.analyzed);
        assert_int_equal(ref.trace_total, MEMREFS);
    }
    print_message("a run makes about %llu allocations\n", (unsigned long long)allocations);

    const int fds = count_fds();
    const char *first = getenv("SONDE_FAULT_FIRST"); /* start at this N (to debug one case) */
    uint64_t n = first != NULL ? strtoull(first, NULL, 10) : 1, oom_runs = 0, failures = 0;
    char problem[800];
    for (; n <= MAX_RUNS; ++n) {
        run_t r;
        memset(&g_verdict, 0, sizeof g_verdict);
        fault_arm(n);
        run_once(&r, with_trace);
        fault_disarm();
        const int fired = fault_fired();
        problem[0] = 0;
        if (g_verdict.step != NULL) {
            snprintf(problem, sizeof problem, "%s answered %s (%s)", g_verdict.step,
                     sonde_status_name(g_verdict.status), g_verdict.detail);
        } else if (count_fds() != fds) {
            char which[512] = "";
            describe_fds(which, sizeof which);
            snprintf(problem, sizeof problem, "a file descriptor leaked (open: %s)", which);
        } else if (r.analyzed && r.trace_total != r.delivered_b) {
            /* A trace that closed without error holds exactly the records delivered to it. */
            snprintf(problem, sizeof problem,
                     "the trace closed without error holds %llu records, %llu were delivered",
                     (unsigned long long)r.trace_total, (unsigned long long)r.delivered_b);
        }
        if (problem[0] != 0) {
            ++failures;
            if (!keep_going()) fail_msg("allocation %llu failing: %s", (unsigned long long)n, problem);
            print_message("allocation %llu failing: %s\n", (unsigned long long)n, problem);
            /* Start the next run from a clean descriptor table. */
            for (int fd = 3; fd < 1024; ++fd) {
                char link[64], target[256];
                snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
                const ssize_t len = readlink(link, target, sizeof target - 1);
                if (len <= 0) continue;
                target[len] = 0;
                if (strcmp(target, g_trace) == 0) close(fd);
            }
        }
        if (!fired) break;
        ++oom_runs;
    }
    assert_true(n <= MAX_RUNS);
    print_message("%llu runs with one allocation failing, then one without\n", (unsigned long long)oom_runs);
    assert_int_equal(failures, 0);
    unlink(g_trace);
    rmdir(dir);
}

/* Sessions, buffers, producers on two threads, flush, stop, destroy, finalize. */
static void test_runtime(void **state) {
    (void)state;
    each_allocation_fails(0);
}

/* The same with a trace written by sonde_trace_buffer_consumer and the analyzer over it. */
static void test_trace_and_analyzer(void **state) {
    (void)state;
    each_allocation_fails(1);
}

/* Usage: test_robust_fault [runtime|trace] (both when absent). */
int main(int argc, char **argv) {
    const int runtime = argc < 2 || strcmp(argv[1], "runtime") == 0;
    const int trace = argc < 2 || strcmp(argv[1], "trace") == 0;
    const struct CMUnitTest runtime_tests[] = {cmocka_unit_test(test_runtime)};
    const struct CMUnitTest trace_tests[] = {cmocka_unit_test(test_trace_and_analyzer)};
    int failed = 0;
    if (runtime) failed |= cmocka_run_group_tests_name("runtime", runtime_tests, NULL, NULL);
    if (trace) failed |= cmocka_run_group_tests_name("trace", trace_tests, NULL, NULL);
    return failed;
}
