/* sonde_analyzer_add_live_input() and the tool ABI of live runs (sonde/analysis.h), through the
 * public C API: argument and phase errors; streams that are not live streams, or end before
 * one starts; rings made by hand with every malformed message the reader refuses, a cut batch
 * and dropped batches; and, with a real program (live_workload, LIVE_WORKLOAD) started with
 * SONDE_MEMTRACE_LIVE as `sonde analyze --live` starts it, the calls a tool receives: initialize
 * with 0 shards then add_shards with each larger count before any record of a new shard
 * (serial), a worker per shard whose init and exit calls never overlap add_shards (parallel),
 * 65536 shards for a tool without add_shards, and every access the program describes. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sonde/analysis.h>

#include "live_fake.h"

/* A tool that checks the order of the calls it gets (atomics: parallel workers call it). */
typedef struct order_tool {
    uint32_t initialized_with;
    int initialize_calls;
    uint32_t shards; /* the count of the last add_shards (or initialize) */
    int add_calls;
    int bad;           /* a call out of order was seen */
    int in_init;       /* a worker is inside an init or exit call */
    uint64_t accesses; /* loads and stores seen */
    int shard_inits, worker_inits;
} order_tool;

static bool ot_initialize(void *t, uint32_t n) {
    order_tool *o = t;
    o->initialized_with = n;
    o->shards = n;
    ++o->initialize_calls;
    return true;
}

static void count(order_tool *o, const sonde_memref_t *m, size_t n) {
    uint64_t seen = 0;
    for (size_t i = 0; i < n; ++i) {
        if (m[i].shard >= __atomic_load_n(&o->shards, __ATOMIC_ACQUIRE))
            __atomic_store_n(&o->bad, 1, __ATOMIC_RELAXED);
        seen += m[i].type == SONDE_MEMREF_READ || m[i].type == SONDE_MEMREF_WRITE;
    }
    __atomic_fetch_add(&o->accesses, seen, __ATOMIC_RELAXED);
}

static bool ot_memrefs(void *t, const sonde_memref_t *m, size_t n) {
    count(t, m, n);
    return true;
}
static bool ot_memref(void *t, const sonde_memref_t *m) { return ot_memrefs(t, m, 1); }

static bool ot_add_shards(void *t, uint32_t n) {
    order_tool *o = t;
    if (n <= __atomic_load_n(&o->shards, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&o->in_init, __ATOMIC_ACQUIRE) != 0)
        __atomic_store_n(&o->bad, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&o->shards, n, __ATOMIC_RELEASE);
    ++o->add_calls;
    return true;
}

static bool ot_supported(void *t) {
    (void)t;
    return true;
}

/* Init and exit calls of a live run must not overlap each other or add_shards. */
static void enter_init(order_tool *o) {
    if (__atomic_exchange_n(&o->in_init, 1, __ATOMIC_ACQ_REL) != 0)
        __atomic_store_n(&o->bad, 1, __ATOMIC_RELAXED);
}
static void leave_init(order_tool *o) { __atomic_store_n(&o->in_init, 0, __ATOMIC_RELEASE); }

static bool ot_worker_init(void *t, uint32_t w, void **wd) {
    order_tool *o = t;
    enter_init(o);
    *wd = (void *)(uintptr_t)(w + 1);
    __atomic_fetch_add(&o->worker_inits, 1, __ATOMIC_RELAXED);
    leave_init(o);
    return true;
}
static bool ot_worker_exit(void *t, void *wd) {
    (void)wd;
    enter_init(t);
    leave_init(t);
    return true;
}
static bool ot_shard_init(void *t, uint32_t s, void *wd, void **sd) {
    order_tool *o = t;
    enter_init(o);
    /* A live parallel run: worker index = shard. */
    if ((uintptr_t)wd != s + 1u || s >= __atomic_load_n(&o->shards, __ATOMIC_ACQUIRE))
        __atomic_store_n(&o->bad, 1, __ATOMIC_RELAXED);
    *sd = o;
    __atomic_fetch_add(&o->shard_inits, 1, __ATOMIC_RELAXED);
    leave_init(o);
    return true;
}
static bool ot_shard_memrefs(void *t, void *sd, const sonde_memref_t *m, size_t n) {
    (void)sd;
    count(t, m, n);
    return true;
}
static bool ot_shard_memref(void *t, void *sd, const sonde_memref_t *m) {
    return ot_shard_memrefs(t, sd, m, 1);
}
static bool ot_shard_exit(void *t, void *sd) {
    (void)sd;
    enter_init(t);
    leave_init(t);
    return true;
}

static sonde_tool_ops_t order_ops(bool with_add_shards) {
    const sonde_tool_ops_t o = {.struct_size = sizeof(sonde_tool_ops_t),
                                .name = "order",
                                .initialize = ot_initialize,
                                .process_memref = ot_memref,
                                .process_memrefs = ot_memrefs,
                                .parallel_shard_supported = ot_supported,
                                .parallel_worker_init = ot_worker_init,
                                .parallel_worker_exit = ot_worker_exit,
                                .parallel_shard_init = ot_shard_init,
                                .parallel_shard_memref = ot_shard_memref,
                                .parallel_shard_memrefs = ot_shard_memrefs,
                                .parallel_shard_exit = ot_shard_exit,
                                .add_shards = with_add_shards ? ot_add_shards : NULL};
    return o;
}

/* Starts the workload with the socket's other end as SONDE_MEMTRACE_LIVE; its standard output
 * into *out_fd. Returns its pid. */
static pid_t start_workload(int sock, const char *workload, const char *threads, const char *refs,
                            int *out_fd) {
    int out[2];
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char fd[16];
        snprintf(fd, sizeof fd, "%d", sock);
        setenv("SONDE_MEMTRACE_LIVE", fd, 1);
        unsetenv("SONDE_MEMTRACE");
        fcntl(sock, F_SETFD, 0);
        dup2(out[1], STDOUT_FILENO);
        execl(workload, workload, threads, refs, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    *out_fd = out[0];
    return pid;
}

/* The accesses the workload says it described, and its exit status. */
static long finish_workload(pid_t pid, int out_fd) {
    char text[64] = {0};
    ssize_t n = read(out_fd, text, sizeof text - 1);
    close(out_fd);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(n > 0);
    return strtol(text, NULL, 10);
}

/* Runs the workload live (serial or parallel) under the order tool; checks what it saw. */
static void run_live(bool parallel, bool with_add_shards) {
    const char *workload = getenv("LIVE_WORKLOAD");
    if (workload == NULL) skip(); /* a ThreadSanitizer build (meson.build says why) */
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    order_tool *o = calloc(1, sizeof *o);
    assert_non_null(o);
    const sonde_tool_ops_t ops = order_ops(with_add_shards);
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &ops, o), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_live_input(a, sv[0], "workload"), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, parallel), SONDE_STATUS_SUCCESS);
    int out_fd = -1;
    const pid_t pid = start_workload(sv[1], workload, "3", "20000", &out_fd);
    close(sv[1]);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    const long made = finish_workload(pid, out_fd);
    close(sv[0]);
    bool ran_parallel = false;
    uint32_t workers = 0;
    assert_int_equal(sonde_analyzer_run_info(a, &ran_parallel, &workers), SONDE_STATUS_SUCCESS);
    assert_int_equal(ran_parallel, parallel);
    assert_int_equal(o->initialize_calls, 1);
    assert_int_equal(o->bad, 0);
    assert_int_equal(o->accesses, (uint64_t)made);
    if (with_add_shards) {
        /* main, three workers and the late one */
        assert_int_equal(o->initialized_with, 0);
        assert_int_equal(o->shards, 5);
        assert_true(o->add_calls >= 1);
    } else {
        assert_int_equal(o->initialized_with, 65536);
        assert_int_equal(o->add_calls, 0);
    }
    if (parallel) {
        assert_int_equal(workers, 5);
        assert_int_equal(o->shard_inits, 5);
        assert_int_equal(o->worker_inits, 5);
    }
    bool complete = false;
    const char *warnings = NULL;
    assert_int_equal(sonde_analyzer_input_warnings(a, 0, &complete, &warnings), SONDE_STATUS_SUCCESS);
    assert_true(complete);
    assert_string_equal(warnings, "");
    sonde_analyzer_destroy(a);
    free(o);
}

static void test_serial_calls(void **state) {
    (void)state;
    run_live(false, true);
}
static void test_parallel_calls(void **state) {
    (void)state;
    run_live(true, true);
}
static void test_without_add_shards(void **state) {
    (void)state;
    run_live(false, false);
    run_live(true, false);
}

static sonde_analyzer_t *with_tool(void) {
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", NULL), SONDE_STATUS_SUCCESS);
    return a;
}

static void test_argument_errors(void **state) {
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    sonde_analyzer_t *a = with_tool();
    assert_int_equal(sonde_analyzer_add_live_input(NULL, sv[0], "x"), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_add_live_input(a, sv[0], NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_add_live_input(a, -1, "x"), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(sonde_analyzer_error(a), "not open"));
    /* A live input is alone: after it, nothing else; after anything else, no live input. */
    assert_int_equal(sonde_analyzer_add_live_input(a, sv[0], "x"), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_live_input(a, sv[0], "y"), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_analyzer_add_input(a, "/dev/null", SONDE_TRACE_FORMAT_RAW64),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    sonde_memref_t m;
    memset(&m, 0, sizeof m);
    uint32_t shard = 0;
    assert_int_equal(sonde_analyzer_add_memory_shard(a, &m, 1, &shard), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(sonde_analyzer_error(a), "only input"));
    /* It cannot be partitioned. */
    assert_int_equal(sonde_analyzer_set_partition(a, 0, 2), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(sonde_analyzer_error(a), "partitioned"));
    assert_int_equal(sonde_analyzer_add_live_input(a, sv[0], "x"), SONDE_STATUS_ERROR_PHASE_FAILURE);
    sonde_analyzer_destroy(a);

    a = with_tool();
    assert_int_equal(sonde_analyzer_add_memory_shard(a, &m, 1, &shard), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_live_input(a, sv[0], "x"), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    sonde_analyzer_destroy(a);
    close(sv[0]);
    close(sv[1]);
}

/* A run over a socket whose other end sends `bytes` (may be NULL) and closes. */
static sonde_status_t run_stream(const void *bytes, size_t size, sonde_analyzer_t **out) {
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    if (size != 0) assert_int_equal(write(sv[1], bytes, size), (ssize_t)size);
    close(sv[1]);
    sonde_analyzer_t *a = with_tool();
    assert_int_equal(sonde_analyzer_add_live_input(a, sv[0], "stream"), SONDE_STATUS_SUCCESS);
    const sonde_status_t st = sonde_analyzer_run(a);
    close(sv[0]);
    *out = a;
    return st;
}

static void test_streams_that_are_not_live(void **state) {
    (void)state;
    sonde_analyzer_t *a = NULL;
    /* Nothing: the program ended before its runtime started a stream. */
    assert_int_equal(run_stream(NULL, 0, &a), SONDE_STATUS_SUCCESS);
    bool complete = true;
    const char *warnings = NULL;
    assert_int_equal(sonde_analyzer_input_warnings(a, 0, &complete, &warnings), SONDE_STATUS_SUCCESS);
    assert_false(complete);
    assert_non_null(strstr(warnings, "no live stream"));
    sonde_analyzer_destroy(a);
    /* Bytes that are not a HELLO message. */
    const char junk[16] = "not a stream....";
    assert_int_equal(run_stream(junk, sizeof junk, &a), SONDE_STATUS_ERROR_FORMAT);
    assert_non_null(strstr(sonde_analyzer_error(a), "not a Sonde live stream"));
    sonde_analyzer_destroy(a);
    /* A HELLO of another version, then one without its ring. */
    uint32_t hello[4] = {1, 0x564c4453, 9, 32};
    assert_int_equal(run_stream(hello, sizeof hello, &a), SONDE_STATUS_ERROR_FORMAT);
    assert_non_null(strstr(sonde_analyzer_error(a), "version 9"));
    sonde_analyzer_destroy(a);
    hello[2] = 1;
    assert_int_equal(run_stream(hello, sizeof hello, &a), SONDE_STATUS_ERROR_FORMAT);
    assert_non_null(strstr(sonde_analyzer_error(a), "without the ring"));
    sonde_analyzer_destroy(a);
    /* A pipe is not a socket. */
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    close(p[1]);
    a = with_tool();
    assert_int_equal(sonde_analyzer_add_live_input(a, p[0], "pipe"), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_ERROR_IO);
    assert_non_null(strstr(sonde_analyzer_error(a), "Unix socket"));
    sonde_analyzer_destroy(a);
    close(p[0]);
}

/* A stream made by hand (docs/trace-format.md, "The live stream"): HELLO with a ring file of
 * `file_size` bytes whose ring holds `bytes` and whose head says `head`, then the socket's end. */
static sonde_status_t run_ring(const void *bytes, size_t size, uint64_t head, size_t file_size,
                               sonde_analyzer_t **out) {
    int ring = -1;
    unsigned char *map = fake_ring(file_size, &ring);
    if (size != 0) memcpy(map + kFakeControl, bytes, size);
    memcpy(map, &head, sizeof head);
    munmap(map, file_size);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    fake_hello(sv[1], ring);
    close(ring);
    close(sv[1]);
    sonde_analyzer_t *a = with_tool();
    assert_int_equal(sonde_analyzer_add_live_input(a, sv[0], "ring"), SONDE_STATUS_SUCCESS);
    const sonde_status_t st = sonde_analyzer_run(a);
    close(sv[0]);
    *out = a;
    return st;
}

enum { kRing = 4096 + 65536 };

/* Messages for the ring, each a header of four words (and a BATCH's records). */
typedef struct stream {
    unsigned char bytes[8192];
    size_t size;
} stream;

static void put(stream *s, uint32_t kind, uint32_t shard, uint32_t count, uint32_t flags) {
    const uint32_t h[4] = {kind, shard, count, flags};
    memcpy(s->bytes + s->size, h, sizeof h);
    s->size += sizeof h;
}

static void put_records(stream *s, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
        sonde_memref_t m;
        memset(&m, 0, sizeof m);
        m.address = 0x1000 + 64 * i;
        m.size = 8;
        m.timestamp = 1;
        m.type = SONDE_MEMREF_READ;
        memcpy(s->bytes + s->size, &m, sizeof m);
        s->size += sizeof m;
    }
}

/* Runs a hand-made stream expecting `status`, and `text` in the error (or, on success, in the
 * warnings of an incomplete input). */
static void expect_ring(const stream *s, uint64_t head, size_t file_size, sonde_status_t status,
                        const char *text) {
    sonde_analyzer_t *a = NULL;
    assert_int_equal(run_ring(s->bytes, s->size, head, file_size, &a), status);
    if (status != SONDE_STATUS_SUCCESS) {
        if (strstr(sonde_analyzer_error(a), text) == NULL) fail_msg("%s: %s", text, sonde_analyzer_error(a));
    } else {
        bool complete = true;
        const char *warnings = NULL;
        assert_int_equal(sonde_analyzer_input_warnings(a, 0, &complete, &warnings), SONDE_STATUS_SUCCESS);
        assert_false(complete);
        if (strstr(warnings, text) == NULL) fail_msg("%s: %s", text, warnings);
    }
    sonde_analyzer_destroy(a);
}

static void test_malformed_rings(void **state) {
    (void)state;
    stream s = {.size = 0};
    put(&s, 2, 1, 0, 0); /* shard 1 first */
    expect_ring(&s, s.size, kRing, SONDE_STATUS_ERROR_FORMAT, "announced where shard 0 comes next");
    s.size = 0;
    put(&s, 3, 0, 1, 0); /* a batch before its shard */
    put_records(&s, 1);
    expect_ring(&s, s.size, kRing, SONDE_STATUS_ERROR_FORMAT, "which was not announced");
    s.size = 0;
    put(&s, 2, 0, 0, 0);
    put(&s, 3, 0, 1, 1); /* the shard's last batch, then another */
    put_records(&s, 1);
    put(&s, 3, 0, 1, 0);
    put_records(&s, 1);
    expect_ring(&s, s.size, kRing, SONDE_STATUS_ERROR_FORMAT, "which has ended");
    s.size = 0;
    put(&s, 2, 0, 0, 0);
    put(&s, 3, 0, 70000, 0);
    expect_ring(&s, s.size, kRing, SONDE_STATUS_ERROR_FORMAT, "at most 65536");
    s.size = 0;
    put(&s, 9, 0, 0, 0);
    expect_ring(&s, s.size, kRing, SONDE_STATUS_ERROR_FORMAT, "unknown message kind 9");
    s.size = 0;
    put(&s, 2, 0, 0, 0);
    expect_ring(&s, 65536 + 16, kRing, SONDE_STATUS_ERROR_FORMAT, "further ahead");
    expect_ring(&s, s.size, 4096 + 1000, SONDE_STATUS_ERROR_FORMAT, "a power of two");
    /* Complete messages and an END that says batches were dropped: the input is incomplete. */
    put(&s, 3, 0, 2, 1);
    put_records(&s, 2);
    put(&s, 4, 0, 3, 0);
    expect_ring(&s, s.size, kRing, SONDE_STATUS_SUCCESS, "dropped 3 batches");
    /* A batch cut in its middle. */
    s.size = 0;
    put(&s, 2, 0, 0, 0);
    put(&s, 3, 0, 4, 0);
    put_records(&s, 2);
    expect_ring(&s, s.size, kRing, SONDE_STATUS_SUCCESS, "inside a message");
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argument_errors), cmocka_unit_test(test_streams_that_are_not_live),
        cmocka_unit_test(test_malformed_rings), cmocka_unit_test(test_serial_calls),
        cmocka_unit_test(test_parallel_calls),  cmocka_unit_test(test_without_add_shards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
