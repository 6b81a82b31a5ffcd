/* The order a live input gives the tools, against the same shards handed over in memory
 * (sonde_analyzer_add_memory_shard), where the analyzer merges them by timestamp with every
 * shard known up front. A child process plays the program's runtime from the format's
 * description (live_fake.h): shards announced while others send, each batch timestamped when
 * the previous batch of its shard was sent (as a thread starts its next batch), batches of
 * different shards sent out of timestamp order, some shards ending early, through a 64 KiB ring
 * that wraps and fills (the child waits for room by polling, and wakes the analyzer after each
 * message). basic_counts, cache_sim and reuse_distance must answer the same in a serial run,
 * basic_counts and cache_sim in a parallel one (a worker per shard). It needs no instrumented
 * program, so it also runs under ThreadSanitizer (suite 'stress'). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>
#include <sonde/analysis.h>

#include "live_fake.h"

enum { kShards = 7, kBatches = 40, kMaxBatch = 64, kRingBytes = 1 << 16 };

/* One message of the plan the child sends. */
typedef struct message {
    uint32_t kind; /* 2 SHARD, 3 BATCH, 4 END */
    uint32_t shard;
    uint32_t first; /* a BATCH's first record in its shard */
    uint32_t count;
    uint32_t last;
} message;

static sonde_memref_t records[kShards][kBatches * kMaxBatch];
static size_t counts[kShards];
static message plan[kShards * (kBatches + 1) + 1];
static size_t planned;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_random(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* The plan: at each step either a shard not started yet is announced (its first timestamp is
 * the clock then), or a started shard sends its batch (timestamped when it was started) and
 * starts its next at the clock's time; the clock moves on every step. */
static void make_plan(void) {
    uint64_t clock = 1000;
    uint64_t started_at[kShards] = {0};
    int batches[kShards] = {0}, announced = 0;
    const int wanted[kShards] = {kBatches, kBatches / 4, kBatches, kBatches / 2, kBatches, 3, kBatches};
    planned = 0;
    memset(counts, 0, sizeof counts);
    for (;;) {
        int open[kShards], nopen = 0;
        for (int s = 0; s < announced; ++s)
            if (batches[s] < wanted[s]) open[nopen++] = s;
        if (nopen == 0 && announced == kShards) break;
        clock += 1 + next_random() % 5;
        if (announced < kShards && (nopen == 0 || next_random() % 6 == 0)) {
            plan[planned++] = (message){.kind = 2, .shard = (uint32_t)announced};
            started_at[announced++] = clock;
            continue;
        }
        const int s = open[next_random() % (uint64_t)nopen];
        const uint32_t n = 1 + (uint32_t)(next_random() % kMaxBatch);
        for (uint32_t i = 0; i < n; ++i) {
            sonde_memref_t *m = &records[s][counts[s] + i];
            memset(m, 0, sizeof *m);
            m->address = 0x10000 + 64 * (next_random() % 512) + (uint64_t)s * 8;
            m->size = 8;
            m->type = (uint16_t)(next_random() % 3 == 0 ? SONDE_MEMREF_WRITE : SONDE_MEMREF_READ);
            m->pc = 0x400000 + (uint64_t)s;
            m->timestamp = started_at[s];
            m->shard = (uint32_t)s;
        }
        ++batches[s];
        plan[planned++] = (message){.kind = 3,
                                    .shard = (uint32_t)s,
                                    .first = (uint32_t)counts[s],
                                    .count = n,
                                    .last = batches[s] == wanted[s]};
        counts[s] += n;
        started_at[s] = clock;
    }
    plan[planned++] = (message){.kind = 4};
}

/* The child's side: copies `size` bytes into the ring, waiting for room by polling, and wakes
 * the analyzer after the message. */
static void ring_write(unsigned char *map, const void *src, size_t size) {
    uint64_t *head = (uint64_t *)(void *)map, *tail = (uint64_t *)(void *)(map + 64);
    const unsigned char *p = src;
    while (size > 0) {
        const uint64_t h = __atomic_load_n(head, __ATOMIC_RELAXED);
        const uint64_t room = kRingBytes - (h - __atomic_load_n(tail, __ATOMIC_ACQUIRE));
        if (room == 0) {
            nanosleep(&(struct timespec){.tv_nsec = 50000}, NULL);
            continue;
        }
        const uint64_t at = h % kRingBytes;
        size_t n = size < room ? size : (size_t)room;
        if (n > kRingBytes - at) n = (size_t)(kRingBytes - at);
        memcpy(map + kFakeControl + at, p, n);
        __atomic_store_n(head, h + n, __ATOMIC_SEQ_CST);
        p += n;
        size -= n;
    }
}

static void play_runtime(int sock) {
    int ring = -1;
    unsigned char *map = fake_ring(kFakeControl + kRingBytes, &ring);
    fake_hello(sock, ring);
    for (size_t i = 0; i < planned; ++i) {
        const message *m = &plan[i];
        const uint32_t header[4] = {m->kind, m->shard, m->kind == 4 ? 0 : m->count, m->last};
        ring_write(map, header, sizeof header);
        if (m->kind == 3) ring_write(map, &records[m->shard][m->first], m->count * sizeof(sonde_memref_t));
        const char wake = 1; /* a spurious one is harmless: the analyzer looks again */
        send(sock, &wake, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
}

/* The results JSON of a run, metadata-free (no file inputs: neither "inputs" nor "warnings"). */
static char *results_of(sonde_analyzer_t *a) {
    size_t need = 0;
    sonde_analyzer_results_json(a, NULL, 0, &need);
    char *text = malloc(need);
    assert_non_null(text);
    assert_int_equal(sonde_analyzer_results_json(a, text, need, &need), SONDE_STATUS_SUCCESS);
    return text;
}

/* Removes the top-level key `key` (indented by two spaces, as the analyzer writes it) and its
 * value from the JSON `text`. */
static void drop_key(char *text, const char *key) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\n  \"%s\": ", key);
    char *start = strstr(text, pattern);
    assert_non_null(start);
    char *next = strstr(start + 1, "\n  \""); /* the key after it, or none */
    if (next != NULL) {
        memmove(start, next, strlen(next) + 1);
    } else {
        start[-1] = '\0'; /* the comma before it */
        strcat(text, "\n}");
    }
}

static sonde_analyzer_t *with_tools(bool parallel) {
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "cache_sim", NULL), SONDE_STATUS_SUCCESS);
    if (!parallel) assert_int_equal(sonde_analyzer_add_tool(a, "reuse_distance", NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, parallel), SONDE_STATUS_SUCCESS);
    return a;
}

/* The tools' JSON over the live stream, without its "inputs" and "warnings" keys. */
static char *live_results(bool parallel) {
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(sv[0]);
        play_runtime(sv[1]);
        _exit(0);
    }
    close(sv[1]);
    sonde_analyzer_t *a = with_tools(parallel);
    assert_int_equal(sonde_analyzer_add_live_input(a, sv[0], "fake"), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(sv[0]);
    bool complete = false;
    assert_int_equal(sonde_analyzer_input_warnings(a, 0, &complete, NULL), SONDE_STATUS_SUCCESS);
    assert_true(complete);
    bool ran_parallel = false;
    uint32_t workers = 0;
    assert_int_equal(sonde_analyzer_run_info(a, &ran_parallel, &workers), SONDE_STATUS_SUCCESS);
    assert_int_equal(ran_parallel, parallel);
    if (parallel) assert_int_equal(workers, kShards);
    char *text = results_of(a);
    sonde_analyzer_destroy(a);
    drop_key(text, "inputs");
    drop_key(text, "warnings");
    return text;
}

static char *memory_results(bool parallel) {
    sonde_analyzer_t *a = with_tools(parallel);
    for (int s = 0; s < kShards; ++s) {
        uint32_t id = 0;
        assert_int_equal(sonde_analyzer_add_memory_shard(a, records[s], counts[s], &id),
                         SONDE_STATUS_SUCCESS);
        assert_int_equal(id, (uint32_t)s);
    }
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    char *text = results_of(a);
    sonde_analyzer_destroy(a);
    return text;
}

static void compare(bool parallel) {
    for (int round = 0; round < 4; ++round) {
        make_plan();
        char *live = live_results(parallel);
        char *memory = memory_results(parallel);
        assert_string_equal(live, memory);
        free(live);
        free(memory);
    }
}

static void test_serial_order(void **state) {
    (void)state;
    compare(false);
}

static void test_parallel_shards(void **state) {
    (void)state;
    compare(true);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serial_order),
        cmocka_unit_test(test_parallel_shards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
