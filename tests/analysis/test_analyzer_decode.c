/* Decoding one input on several threads (the analyzer's workers decode a lackey, raw64 or
 * Sonde input in blocks, src/trace/block_decode.h): for every worker count the run gives the
 * same results JSON, and a broken input the same status and the same message (file, offset,
 * line), as one thread. Inputs span many blocks: lackey text with valgrind's log lines, empty
 * lines, CRLF endings, data lines before the first instruction of a block, and a last line
 * without newline; raw64 with and without trailing bytes; multi-chunk Sonde traces with a
 * corrupted chunk; plain and zstd; a Sonde trace sampled at the source. The built-in
 * reuse_distance is fed through a tap on the decoding threads when there are several
 * (src/trace/source.h, BlockTap), so these runs compare that path with one thread's records.
 * And the calling thread's CPU affinity, which its waits for the decoding threads may narrow for
 * a moment (src/core/wake_spread.h), is its own again after every run.
 * Also run under ThreadSanitizer (suite stress). */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/analysis.h>
#include <sonde/trace.h>

#include "analyzer_test_util.h"
#include "sanitizer.h"
#include "tmpdir.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

/* A serial tool that folds every field of every record, in order, into one digest: what the
 * built-in tools leave out (a lackey data line's pc, timestamps) is compared too. */
typedef struct digest_t {
    uint64_t h, n;
    char json[96];
} digest_t;

static bool digest_memrefs(void *tool, const sonde_memref_t *m, size_t count) {
    digest_t *d = tool;
    for (size_t i = 0; i < count; ++i) {
        const uint64_t v[4] = {m[i].address, m[i].pc, m[i].timestamp,
                               (uint64_t)m[i].shard << 32 | (uint64_t)m[i].type << 16 | m[i].size};
        for (int k = 0; k < 4; ++k) d->h = (d->h ^ v[k]) * 0x100000001B3ull;
    }
    d->n += count;
    return true;
}

static const char *digest_json(void *tool) {
    digest_t *d = tool;
    /* Keys in the order the analyzer writes them (sorted). */
    snprintf(d->json, sizeof d->json, "{\"digest\":\"%016llx\",\"records\":%llu}", (unsigned long long)d->h,
             (unsigned long long)d->n);
    return d->json;
}

static void digest_destroy(void *tool) { free(tool); }

static void add_digest(sonde_analyzer_t *a) {
    static const sonde_tool_ops_t ops = {.struct_size = sizeof ops,
                                         .name = "digest",
                                         .process_memrefs = digest_memrefs,
                                         .results_json = digest_json,
                                         .destroy = digest_destroy};
    digest_t *d = calloc(1, sizeof *d);
    assert_non_null(d);
    d->h = 0xCBF29CE484222325ull;
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &ops, d), SONDE_STATUS_SUCCESS);
}

/* Lackey text of `lines` lines. `bad_at` (0: none) replaces that line (1-based) with `bad`.
 * `expect` (when not NULL) gets the digest tool's results for the records the text holds. */
static void write_lackey(const char *path, unsigned lines, unsigned bad_at, const char *bad, int crlf,
                         int eol_at_end, digest_t *expect) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    digest_t want = {0xCBF29CE484222325ull, 0, ""};
    uint64_t pc = 0;
    for (unsigned i = 1; i <= lines; ++i) {
        const uint64_t r = rnd();
        const char *end = crlf && (r & 64) ? "\r\n" : "\n";
        if (i == lines && !eol_at_end) end = "";
        if (i == bad_at) {
            fprintf(f, "%s%s", bad, end);
            continue;
        }
        if (i == 1) {
            fprintf(f, "==7== Lackey, an example Valgrind tool%s", end);
            continue;
        }
        switch (r % 13) {
            case 0: fprintf(f, "%s", end); break;
            case 1: fprintf(f, "==7== log line %u%s", i, end); break;
            case 2:
            case 3:
            case 4: {
                sonde_memref_t m = {0};
                m.address = m.pc = pc = 0x400000 + (r >> 20) % 4096;
                m.type = SONDE_MEMREF_IFETCH;
                m.size = (uint16_t)(1 + (r >> 8) % 15);
                fprintf(f, "I  %08llx,%u%s", (unsigned long long)m.address, m.size, end);
                digest_memrefs(&want, &m, 1);
                break;
            }
            default: {
                sonde_memref_t m = {0};
                const unsigned kind = (unsigned)(r >> 4) % 4;
                m.address = 0x7ff000000ull + (r >> 24) % (1u << 22);
                m.pc = pc;
                m.type = kind < 2 ? SONDE_MEMREF_READ : kind == 2 ? SONDE_MEMREF_WRITE : SONDE_MEMREF_MODIFY;
                m.size = (uint16_t)(1u << ((r >> 12) % 4));
                fprintf(f, " %c %llx,%u%s", "LLSM"[kind], (unsigned long long)m.address, m.size, end);
                digest_memrefs(&want, &m, 1);
            }
        }
    }
    assert_int_equal(fclose(f), 0);
    if (expect != NULL) *expect = want;
}

static void zstd_copy(const char *from, const char *to) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "zstd -q -f '%s' -o '%s'", from, to);
    assert_int_equal(system(cmd), 0);
}

/* One run: status, error message and results JSON. */
typedef struct run_t {
    sonde_status_t status;
    char *error;
    char *json;
} run_t;

static run_t run_with(const char *path, uint32_t format, const char *tools, bool parallel, uint32_t workers) {
    run_t r = {0, NULL, NULL};
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    char list[128];
    snprintf(list, sizeof list, "%s", tools);
    /* reuse_distance gets jobs=N as `sonde analyze --jobs N` gives it: its parallel batches then
     * take the tapped blocks' arrays as they are, in pieces between records gathered from blocks
     * the tap left (markers). */
    char jobs[32] = "";
    if (workers > 1) snprintf(jobs, sizeof jobs, "jobs=%u", workers);
    for (char *t = strtok(list, ","); t != NULL; t = strtok(NULL, ","))
        if (strcmp(t, "digest") == 0)
            add_digest(a);
        else
            assert_int_equal(sonde_analyzer_add_tool(a, t, strcmp(t, "reuse_distance") == 0 ? jobs : ""),
                             SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_parallel(a, parallel), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_set_workers(a, workers), SONDE_STATUS_SUCCESS);
    r.status = sonde_analyzer_add_input(a, path, format);
    if (r.status == SONDE_STATUS_SUCCESS) r.status = sonde_analyzer_run(a);
    r.error = strdup(sonde_analyzer_error(a));
    if (r.status == SONDE_STATUS_SUCCESS) r.json = results(a);
    sonde_analyzer_destroy(a);
    return r;
}

/* Every worker count gives what one worker gives; returns the one-worker status. */
static sonde_status_t same_for_every_count(const char *path, uint32_t format, const char *tools,
                                           bool parallel) {
    const run_t one = run_with(path, format, tools, parallel, 1);
    /* Under TSan (sanitizer.h) two counts: the fewest threads, and more than the CPUs. */
    static const uint32_t counts[] = {2, 7, 3, 4};
    const size_t ncounts = SONDE_TEST_TSAN ? 2 : sizeof counts / sizeof counts[0];
    for (size_t i = 0; i < ncounts; ++i) {
        const run_t n = run_with(path, format, tools, parallel, counts[i]);
        if (n.status != one.status || strcmp(n.error, one.error) != 0 ||
            (one.json != NULL) != (n.json != NULL) || (one.json != NULL && strcmp(one.json, n.json) != 0))
            fail_msg("%s with %u workers: status %u \"%s\"; with 1: status %u \"%s\"%s", path, counts[i],
                     n.status, n.error, one.status, one.error,
                     one.json != NULL && n.json != NULL ? " (results differ)" : "");
        free(n.error);
        free(n.json);
    }
    free(one.error);
    free(one.json);
    return one.status;
}

/* The digest of a serial run with one worker equals `expect`'s. */
static void check_digest(const char *path, const digest_t *expect) {
    const run_t one = run_with(path, SONDE_TRACE_FORMAT_LACKEY, "digest", false, 1);
    assert_int_equal(one.status, SONDE_STATUS_SUCCESS);
    digest_t copy = *expect;
    char want[128];
    snprintf(want, sizeof want, "\"digest\":%s", digest_json(&copy));
    if (strstr(one.json, want) == NULL) fail_msg("%s: %s, expected %s", path, one.json, want);
    free(one.error);
    free(one.json);
}

static void check_both_modes(const char *path, uint32_t format, sonde_status_t want) {
    assert_int_equal(same_for_every_count(path, format, "digest,basic_counts,reuse_distance", false), want);
    assert_int_equal(same_for_every_count(path, format, "basic_counts", true), want);
}

static void test_lackey_good(void **state) {
    (void)state;
    digest_t expect;
    write_lackey(tmpdir_path("a.lackey"), 150000, 0, NULL, 0, 1, &expect);
    check_digest(tmpdir_path("a.lackey"), &expect);
    check_both_modes(tmpdir_path("a.lackey"), SONDE_TRACE_FORMAT_LACKEY, SONDE_STATUS_SUCCESS);
    zstd_copy(tmpdir_path("a.lackey"), tmpdir_path("a.lackey.zst"));
    check_digest(tmpdir_path("a.lackey.zst"), &expect);
    check_both_modes(tmpdir_path("a.lackey.zst"), SONDE_TRACE_FORMAT_LACKEY, SONDE_STATUS_SUCCESS);
    write_lackey(tmpdir_path("b.lackey"), 120001, 0, NULL, 1, 0, &expect);
    check_digest(tmpdir_path("b.lackey"), &expect);
    check_both_modes(tmpdir_path("b.lackey"), SONDE_TRACE_FORMAT_LACKEY, SONDE_STATUS_SUCCESS);
}

static void test_lackey_bad(void **state) {
    (void)state;
    static const unsigned where[] = {1, 2, 60000, 119999, 120000};
    for (size_t i = 0; i < sizeof where / sizeof where[0]; ++i) {
        write_lackey(tmpdir_path("bad.lackey"), 120000, where[i], " X 12,4", 1, i % 2 == 0, NULL);
        check_both_modes(tmpdir_path("bad.lackey"), SONDE_TRACE_FORMAT_LACKEY, SONDE_STATUS_ERROR_FORMAT);
        zstd_copy(tmpdir_path("bad.lackey"), tmpdir_path("bad.lackey.zst"));
        check_both_modes(tmpdir_path("bad.lackey.zst"), SONDE_TRACE_FORMAT_LACKEY, SONDE_STATUS_ERROR_FORMAT);
    }
    /* A line longer than any record, and a zstd stream cut short. */
    char *longline = malloc(300001);
    assert_non_null(longline);
    memset(longline, '1', 300000);
    memcpy(longline, "I  ", 3);
    longline[300000] = '\0';
    write_lackey(tmpdir_path("long.lackey"), 80000, 40000, longline, 0, 1, NULL);
    free(longline);
    check_both_modes(tmpdir_path("long.lackey"), SONDE_TRACE_FORMAT_LACKEY, SONDE_STATUS_ERROR_FORMAT);
    write_lackey(tmpdir_path("c.lackey"), 120000, 0, NULL, 0, 1, NULL);
    zstd_copy(tmpdir_path("c.lackey"), tmpdir_path("c.lackey.zst"));
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "head -c 80000 '%s' > '%s'", tmpdir_path("c.lackey.zst"),
             tmpdir_path("cut.lackey.zst"));
    assert_int_equal(system(cmd), 0);
    check_both_modes(tmpdir_path("cut.lackey.zst"), SONDE_TRACE_FORMAT_LACKEY, SONDE_STATUS_ERROR_FORMAT);
}

static void test_raw64(void **state) {
    (void)state;
    FILE *f = fopen(tmpdir_path("a.raw64"), "wb");
    assert_non_null(f);
    for (unsigned i = 0; i < 250000; ++i) {
        const uint64_t a = (rnd() % (1u << 21)) * 8;
        assert_int_equal(fwrite(&a, 8, 1, f), 1);
    }
    assert_int_equal(fclose(f), 0);
    check_both_modes(tmpdir_path("a.raw64"), SONDE_TRACE_FORMAT_RAW64, SONDE_STATUS_SUCCESS);
    zstd_copy(tmpdir_path("a.raw64"), tmpdir_path("a.raw64.zst"));
    check_both_modes(tmpdir_path("a.raw64.zst"), SONDE_TRACE_FORMAT_RAW64, SONDE_STATUS_SUCCESS);
    /* Trailing bytes, seen only at the end of the zstd stream. */
    f = fopen(tmpdir_path("a.raw64"), "ab");
    assert_non_null(f);
    assert_int_equal(fwrite("abc", 1, 3, f), 3);
    assert_int_equal(fclose(f), 0);
    zstd_copy(tmpdir_path("a.raw64"), tmpdir_path("odd.raw64.zst"));
    check_both_modes(tmpdir_path("odd.raw64.zst"), SONDE_TRACE_FORMAT_RAW64, SONDE_STATUS_ERROR_FORMAT);
}

static void test_sonde_chunks(void **state) {
    (void)state;
    sonde_trace_writer_properties_t p = {sizeof p, 0, 4096, 0};
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(tmpdir_path("a.sonde"), &p, &w), SONDE_STATUS_SUCCESS);
    sonde_memref_t batch[1000];
    for (unsigned b = 0; b < 120; ++b) {
        for (unsigned i = 0; i < 1000; ++i) {
            const uint64_t r = rnd();
            batch[i] = (sonde_memref_t){0};
            batch[i].address = 0x10000 + (r % (1u << 20)) * 8;
            batch[i].pc = 0x400000 + (r >> 40) % 512;
            batch[i].timestamp = 1000 + b * 1000 + i;
            batch[i].type = (r >> 8) % 3 == 0 ? SONDE_MEMREF_WRITE : SONDE_MEMREF_READ;
            batch[i].size = 8;
        }
        /* Shard 1 is small: the run has fewer shards than workers either way. */
        assert_int_equal(sonde_trace_writer_write(w, b % 10 == 0 ? 1 : 0, batch, 1000), SONDE_STATUS_SUCCESS);
    }
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);
    check_both_modes(tmpdir_path("a.sonde"), SONDE_TRACE_FORMAT_SONDE, SONDE_STATUS_SUCCESS);

    /* A flipped byte in a chunk in the middle of the file: its checksum fails. */
    FILE *f = fopen(tmpdir_path("a.sonde"), "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    const long size = ftell(f);
    unsigned char *d = malloc((size_t)size);
    assert_non_null(d);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    assert_int_equal(fread(d, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    d[size / 2] ^= 0xFF;
    f = fopen(tmpdir_path("bad.sonde"), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, (size_t)size, f), (size_t)size);
    assert_int_equal(fclose(f), 0);
    free(d);
    check_both_modes(tmpdir_path("bad.sonde"), SONDE_TRACE_FORMAT_SONDE, SONDE_STATUS_ERROR_FORMAT);
}

/* A trace sampled at the source (its sampling markers at the start, SAMPLE_SKIPPED markers in
 * later chunks) read by reuse_distance with several decoding threads: the threads convert each
 * block's data accesses for the tool (src/trace/source.h, BlockTap), except in blocks holding a
 * sampling marker, which the tool reads record by record. A chunk of 16384 records is tapped in
 * four pieces as it is decoded; the markers fall in the first, second and third piece of their
 * chunks, and two chunks have none. Every worker count gives one worker's results, and the
 * skipped references are counted among the accesses. */
static void test_sampled_at_source(void **state) {
    (void)state;
    sonde_trace_writer_properties_t p = {sizeof p, 0, 16384, 0};
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(tmpdir_path("sampled.sonde"), &p, &w), SONDE_STATUS_SUCCESS);
    sonde_memref_t batch[1000];
    uint64_t data = 0, skipped = 0;
    for (unsigned b = 0; b < 100; ++b) {
        for (unsigned i = 0; i < 1000; ++i) {
            const uint64_t r = rnd();
            batch[i] = (sonde_memref_t){0};
            batch[i].type = (r >> 8) % 3 == 0 ? SONDE_MEMREF_WRITE : SONDE_MEMREF_READ;
            batch[i].address = 0x10000 + (r % (1u << 16)) * 8;
            batch[i].size = 8;
            if (b == 0 && i < 3) {
                /* Rate 1/4, seed 5, 64-byte lines: before the first access. */
                static const uint64_t values[3] = {1ull << 30, 5, 64};
                batch[i].type = SONDE_MEMREF_MARKER;
                batch[i].size = (uint16_t)(SONDE_MARKER_SAMPLE_THRESHOLD + i);
                batch[i].address = values[i];
            } else if (b % 20 == 13 && i == 500) {
                batch[i].type = SONDE_MEMREF_MARKER;
                batch[i].size = SONDE_MARKER_SAMPLE_SKIPPED;
                batch[i].address = 1000 + b;
                skipped += batch[i].address;
            } else {
                ++data;
            }
        }
        assert_int_equal(sonde_trace_writer_write(w, 0, batch, 1000), SONDE_STATUS_SUCCESS);
    }
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);
    assert_int_equal(
        same_for_every_count(tmpdir_path("sampled.sonde"), SONDE_TRACE_FORMAT_SONDE, "reuse_distance", false),
        SONDE_STATUS_SUCCESS);
    const run_t two =
        run_with(tmpdir_path("sampled.sonde"), SONDE_TRACE_FORMAT_SONDE, "reuse_distance", false, 2);
    assert_int_equal(two.status, SONDE_STATUS_SUCCESS);
    char want[64];
    snprintf(want, sizeof want, "\"accesses\":%llu,", (unsigned long long)(data + skipped));
    if (strstr(two.json, want) == NULL || strstr(two.json, "\"sample_rate\":0.25") == NULL)
        fail_msg("expected %s and rate 0.25 in %s", want, two.json);
    free(two.error);
    free(two.json);
}

/* A raw64 input of many parallel batches (4 M accesses over 2^19 lines): reuse_distance's
 * batches keep the taps' entries, cut from slabs of its arena, until they are calculated; later
 * batches reuse those slabs, and batches are handed over early while the calculator is idle.
 * Whatever the worker count, the histogram is one worker's; a cut freed or reused while a batch
 * still reads it would change it (or, under AddressSanitizer, fault). */
static void test_many_batches(void **state) {
    (void)state;
    FILE *f = fopen(tmpdir_path("long.raw64"), "wb");
    assert_non_null(f);
    static uint64_t a[1u << 16];
    for (unsigned b = 0; b < 64; ++b) {
        for (unsigned i = 0; i < (1u << 16); ++i) {
            const uint64_t r = rnd();
            /* Mostly a hot set, sometimes any line: merges of many new lines, and reuse. */
            a[i] = 0x100000 + (r % 4 == 0 ? (r >> 20) % (1u << 19) : (r >> 20) % (1u << 12)) * 64;
        }
        assert_int_equal(fwrite(a, 8, 1u << 16, f), 1u << 16);
    }
    assert_int_equal(fclose(f), 0);
    const run_t one =
        run_with(tmpdir_path("long.raw64"), SONDE_TRACE_FORMAT_RAW64, "reuse_distance", false, 1);
    assert_int_equal(one.status, SONDE_STATUS_SUCCESS);
    /* Under TSan (sanitizer.h) only 3 workers. */
    static const uint32_t counts[] = {3, 2};
    for (size_t i = 0; i < (SONDE_TEST_TSAN ? 1 : sizeof counts / sizeof counts[0]); ++i) {
        const run_t n =
            run_with(tmpdir_path("long.raw64"), SONDE_TRACE_FORMAT_RAW64, "reuse_distance", false, counts[i]);
        assert_int_equal(n.status, SONDE_STATUS_SUCCESS);
        if (strcmp(n.json, one.json) != 0)
            fail_msg("%u workers: results differ from one worker's", counts[i]);
        free(n.error);
        free(n.json);
    }
    if (strstr(one.json, "\"accesses\":4194304,") == NULL)
        fail_msg("expected 4194304 accesses in %.200s", one.json);
    free(one.error);
    free(one.json);
}

/* The decoding threads and the calculator's keep off one another's CPU as they wake
 * (src/core/wake_spread.h), the calling thread among them while it waits for a block: after a
 * run its CPU affinity is what it was, whether that was every CPU or a part of them. */
static cpu_set_t g_start_cpus; /* the main thread's CPUs as the program started */

static void test_caller_affinity(void **state) {
    (void)state;
    const cpu_set_t all = g_start_cpus;
    digest_t expect;
    write_lackey(tmpdir_path("aff.lackey"), 150000, 0, NULL, 0, 1, &expect);
    /* Every CPU, then (with three or more) the first two only. */
    cpu_set_t masks[2];
    masks[0] = all;
    CPU_ZERO(&masks[1]);
    unsigned taken = 0;
    for (int c = 0; c < CPU_SETSIZE && taken < 2; ++c)
        if (CPU_ISSET(c, &all)) {
            CPU_SET(c, &masks[1]);
            ++taken;
        }
    const int nmasks = CPU_COUNT(&all) >= 3 ? 2 : 1;
    for (int m = 0; m < nmasks; ++m)
        for (uint32_t workers = 2; workers <= 3; ++workers) {
            assert_int_equal(sched_setaffinity(0, sizeof masks[m], &masks[m]), 0);
            cpu_set_t before;
            assert_int_equal(sched_getaffinity(0, sizeof before, &before), 0);
            const run_t r = run_with(tmpdir_path("aff.lackey"), SONDE_TRACE_FORMAT_LACKEY,
                                     "digest,reuse_distance", false, workers);
            assert_int_equal(r.status, SONDE_STATUS_SUCCESS);
            cpu_set_t after;
            assert_int_equal(sched_getaffinity(0, sizeof after, &after), 0);
            if (!CPU_EQUAL(&after, &before))
                fail_msg("%u workers: the calling thread's CPUs changed (%d CPUs before, %d after)", workers,
                         CPU_COUNT(&before), CPU_COUNT(&after));
            free(r.error);
            free(r.json);
        }
    assert_int_equal(sched_setaffinity(0, sizeof all, &all), 0);
}

static int setup(void **state) {
    (void)state;
    return tmpdir_make("decode");
}

static int teardown(void **state) {
    (void)state;
    return tmpdir_remove();
}

int main(void) {
    if (sched_getaffinity(0, sizeof g_start_cpus, &g_start_cpus) != 0) return 1;
    /* Every test's runs leave the calling thread's CPUs as they were: test_caller_affinity checks
     * run by run, and last, from the CPUs the program started with. */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lackey_good),
        cmocka_unit_test(test_lackey_bad),
        cmocka_unit_test(test_raw64),
        cmocka_unit_test(test_sonde_chunks),
        cmocka_unit_test(test_sampled_at_source),
        cmocka_unit_test(test_many_batches),
        cmocka_unit_test(test_caller_affinity),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
