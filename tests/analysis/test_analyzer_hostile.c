/* The analyzer against inputs other programs wrote (sonde/analysis.h): a truncated trace is
 * reported (sonde_analyzer_input_warnings(), "warnings" and "inputs" in the results JSON),
 * an input without records says so, an index that lists a chunk many times is refused, memory
 * stays bounded by the data for 65,536 declared shards (and by the size of basic_counts' JSON
 * when it has a line for each) and for million-record chunks, and
 * cache_sim and basic_counts terminate with the right counts on accesses that wrap past the
 * top of the address space, and reuse_distance refuses sampling markers out of place (after
 * a data access, a SAMPLE_SKIPPED before the sampling's own) serially and with jobs. Runs that
 * could hang or allocate gigabytes before the fixes run in a child under an alarm and an
 * address-space limit (limited.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/analysis.h>

#include "analyzer_test_util.h"
#include "craft.h"
#include "limited.h"

static char g_dir[256];

static const char *tmp_path(const char *name) {
    static char buf[8][512];
    static int slot;
    char *p = buf[slot++ & 7];
    snprintf(p, 512, "%s/%s", g_dir, name);
    return p;
}

static sonde_memref_t ref(uint16_t type, uint64_t address, uint16_t size, uint64_t ts) {
    sonde_memref_t m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.address = address;
    m.size = size;
    m.timestamp = ts;
    return m;
}

static void expect_in(const char *json, const char *needle) {
    if (json == NULL || strstr(json, needle) == NULL)
        fail_msg("\"%s\" not in %s", needle, json ? json : "(null)");
}

/* A trace of `shards` shards of `per_shard` records in chunks of 100, cut at `keep` bytes
 * (0: whole). */
static void write_trace(const char *path, uint32_t shards, uint32_t per_shard, size_t keep) {
    sonde_trace_writer_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    props.chunk_records = 100;
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(path, &props, &w), SONDE_STATUS_SUCCESS);
    for (uint32_t s = 0; s < shards; ++s)
        for (uint32_t i = 0; i < per_shard; ++i) {
            const sonde_memref_t m = ref(SONDE_MEMREF_READ, 0x1000 + 64ull * i, 8, 1 + i);
            assert_int_equal(sonde_trace_writer_write(w, s, &m, 1), SONDE_STATUS_SUCCESS);
        }
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);
    if (keep != 0) assert_int_equal(truncate(path, (off_t)keep), 0);
}

/* ---- 1. truncated traces are reported ---- */

static void test_truncated_input_is_reported(void **state) {
    (void)state;
    const char *whole = tmp_path("whole.sonde");
    const char *cut = tmp_path("cut.sonde");
    write_trace(whole, 2, 500, 0);
    write_trace(cut, 2, 500, 3000);
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_input(a, whole, SONDE_TRACE_FORMAT_AUTO), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_input(a, cut, SONDE_TRACE_FORMAT_SONDE), SONDE_STATUS_SUCCESS);

    bool complete = false;
    const char *warnings = "";
    assert_int_equal(sonde_analyzer_input_warnings(a, 0, &complete, &warnings), SONDE_STATUS_SUCCESS);
    assert_true(complete);
    assert_string_equal(warnings, "");
    assert_int_equal(sonde_analyzer_input_warnings(a, 1, &complete, &warnings), SONDE_STATUS_SUCCESS);
    assert_false(complete);
    expect_in(warnings, "cut.sonde: no footer (the writer did not finish)");
    expect_in(warnings, "by scanning");
    assert_non_null(strchr(warnings, '\n')); /* one warning per line */
    assert_int_equal(sonde_analyzer_input_warnings(a, 2, &complete, &warnings),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_analyzer_input_warnings(NULL, 0, &complete, &warnings),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_analyzer_input_warnings(a, 0, NULL, NULL), SONDE_STATUS_SUCCESS);

    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    char *json = results(a);
    char path[600];
    snprintf(path, sizeof path, "{\"complete\":true,\"format\":\"sonde\",\"path\":\"%s\",\"warnings\":[]}",
             whole);
    expect_in(json, path);
    snprintf(path, sizeof path,
             "{\"complete\":false,\"format\":\"sonde\",\"path\":\"%s\",\"warnings\":[\"%s:nofooter", cut,
             cut);
    expect_in(json, path);
    snprintf(path, sizeof path, "\"warnings\":[\"%s:nofooter(thewriterdidnotfinish)\",\"%s:recovered", cut,
             cut);
    expect_in(json, path);
    expect_in(json, "\"basic_counts\":{");
    free(json);
    sonde_analyzer_destroy(a);
}

/* ---- progress: bytes consumed against bytes stored ---- */

static void test_progress(void **state) {
    (void)state;
    const char *trace = tmp_path("progress.sonde");
    const char *text = tmp_path("progress.lackey");
    write_trace(trace, 3, 1000, 0);
    FILE *f = fopen(text, "w");
    assert_non_null(f);
    for (int i = 0; i < 2000; ++i) fprintf(f, " L %08x,8\n", 0x1000 + 64 * i);
    assert_int_equal(fclose(f), 0);
    struct stat st;
    assert_int_equal(stat(text, &st), 0);

    for (int parallel = 0; parallel < 2; ++parallel) {
        sonde_analyzer_t *a = NULL;
        assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
        uint64_t done = 1, total = 1;
        assert_int_equal(sonde_analyzer_progress(a, &done, &total), SONDE_STATUS_SUCCESS);
        assert_int_equal(done, 0); /* no input yet */
        assert_int_equal(total, 0);
        assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", NULL), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_add_input(a, trace, SONDE_TRACE_FORMAT_AUTO), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_add_input(a, text, SONDE_TRACE_FORMAT_LACKEY), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_progress(a, &done, &total), SONDE_STATUS_SUCCESS);
        assert_int_equal(done, 0);
        /* The trace's chunks (headers and payloads, not the file header, tables, index and
         * footer) and the whole text file. */
        struct stat tst;
        assert_int_equal(stat(trace, &tst), 0);
        assert_true(total > (uint64_t)st.st_size && total < (uint64_t)(st.st_size + tst.st_size));
        assert_int_equal(sonde_analyzer_set_parallel(a, parallel != 0), SONDE_STATUS_SUCCESS);
        assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
        uint64_t after = 0;
        assert_int_equal(sonde_analyzer_progress(a, &done, &after), SONDE_STATUS_SUCCESS);
        assert_int_equal(after, total);
        assert_int_equal(done, total); /* every byte read once */
        assert_int_equal(sonde_analyzer_progress(NULL, &done, &total), SONDE_STATUS_ERROR_NULL_POINTER);
        assert_int_equal(sonde_analyzer_progress(a, NULL, &total), SONDE_STATUS_ERROR_NULL_POINTER);
        assert_int_equal(sonde_analyzer_progress(a, &done, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
        sonde_analyzer_destroy(a);
    }

    /* The reader: the same count as it reads, shard by shard. */
    char err[256];
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(trace, SONDE_TRACE_FORMAT_AUTO, err, sizeof err, &r),
                     SONDE_STATUS_SUCCESS);
    uint64_t done = 1, total = 0, last = 0;
    assert_int_equal(sonde_trace_reader_progress(r, &done, &total), SONDE_STATUS_SUCCESS);
    assert_int_equal(done, 0);
    assert_true(total > 0);
    sonde_memref_t buf[100];
    for (uint32_t shard = 0; shard < 3; ++shard) {
        size_t n = 0;
        while (sonde_trace_reader_read_shard(r, shard, buf, 100, &n) == SONDE_STATUS_SUCCESS && n > 0) {
            assert_int_equal(sonde_trace_reader_progress(r, &done, &total), SONDE_STATUS_SUCCESS);
            assert_true(done > last && done <= total); /* one chunk of 100 per read */
            last = done;
        }
    }
    assert_int_equal(done, total);
    assert_int_equal(sonde_trace_reader_progress(NULL, &done, &total), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_progress(r, NULL, &total), SONDE_STATUS_ERROR_NULL_POINTER);
    sonde_trace_reader_close(r);

    /* A pipe: the total cannot be known. */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], " L 00001000,8\n", 14), 14);
    assert_int_equal(close(fds[1]), 0);
    char path[64];
    snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_input(a, text, SONDE_TRACE_FORMAT_LACKEY), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_input(a, path, SONDE_TRACE_FORMAT_LACKEY), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_progress(a, &done, &total), SONDE_STATUS_SUCCESS);
    assert_int_equal(total, 0);
    assert_int_equal(done, (uint64_t)st.st_size + 14);
    sonde_analyzer_destroy(a);
    close(fds[0]);
}

static void test_input_without_records(void **state) {
    (void)state;
    const char *empty = tmp_path("empty.lackey");
    FILE *f = fopen(empty, "w");
    assert_non_null(f);
    fputs("==1== Lackey, an example Valgrind tool\n==1== exiting\n", f);
    fclose(f);
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_input(a, empty, SONDE_TRACE_FORMAT_AUTO), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_run(a), SONDE_STATUS_SUCCESS);
    bool complete = false;
    const char *warnings = "";
    assert_int_equal(sonde_analyzer_input_warnings(a, 0, &complete, &warnings), SONDE_STATUS_SUCCESS);
    assert_true(complete);
    expect_in(warnings, "empty.lackey: no records");
    char *json = results(a);
    expect_in(json, "\"format\":\"lackey\"");
    expect_in(json, "empty.lackey:norecords\"]");
    free(json);
    sonde_analyzer_destroy(a);
}

static bool noop_batch(void *t, const sonde_memref_t *m, size_t n) {
    (void)t;
    (void)m;
    (void)n;
    return true;
}

static void test_reserved_tool_names(void **state) {
    (void)state;
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    sonde_tool_ops_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.process_memrefs = noop_batch;
    o.name = "inputs";
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &o, NULL), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    expect_in(sonde_analyzer_error(a), "reserved");
    o.name = "warnings";
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &o, NULL), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    o.name = "metadata"; /* sonde analyze --json writes its metadata block under this key */
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &o, NULL), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    o.name = "inputs2";
    assert_int_equal(sonde_analyzer_add_tool_ops(a, &o, NULL), SONDE_STATUS_SUCCESS);
    sonde_analyzer_destroy(a);
}

/* ---- 2. each chunk counts once ---- */

static void test_duplicate_index_entries(void **state) {
    (void)state;
    const sonde_memref_t m[3] = {ref(SONDE_MEMREF_READ, 0x10, 8, 0), ref(SONDE_MEMREF_WRITE, 0x20, 8, 0),
                                 ref(SONDE_MEMREF_READ, 0x30, 8, 0)};
    craft_buf f = {NULL, 0, 0};
    craft_header(&f);
    const uint64_t off = craft_chunk_of(&f, 0, m, 3);
    craft_entry e[100];
    for (int i = 0; i < 100; ++i) e[i] = (craft_entry){off, 0, 3};
    craft_index(&f, e, 100, 1);
    const char *path = tmp_path("dup.sonde");
    assert_int_equal(craft_save(&f, path), 0);
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "basic_counts", NULL), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_input(a, path, SONDE_TRACE_FORMAT_AUTO), SONDE_STATUS_ERROR_FORMAT);
    expect_in(sonde_analyzer_error(a), "index entry 1: ");
    sonde_analyzer_destroy(a);
    craft_free(&f);
}

/* ---- 3. memory bounded by the data ---- */

typedef struct run_case {
    const char *path;
    const char *tool;
    const char *options;
    bool parallel;
    uint64_t expect_total; /* basic_counts total, or cache_sim first-level accesses */
    int refusal_ok;        /* a serial run may be refused up front with what it would need */
    unsigned limit_mb;     /* address space the run may add, MiB (0: 768) */
} run_case;

static int run_limited_case(void *arg) {
    const run_case *c = arg;
    sonde_analyzer_t *a = NULL;
    if (sonde_analyzer_create(&a) != SONDE_STATUS_SUCCESS) return 1;
    if (sonde_analyzer_add_tool(a, c->tool, c->options) != SONDE_STATUS_SUCCESS) return 2;
    if (sonde_analyzer_add_input(a, c->path, SONDE_TRACE_FORMAT_SONDE) != SONDE_STATUS_SUCCESS) return 3;
    sonde_analyzer_set_parallel(a, c->parallel);
    sonde_analyzer_set_workers(a, 2);
    const sonde_status_t st = sonde_analyzer_run(a);
    if (st != SONDE_STATUS_SUCCESS) {
        const char *e = sonde_analyzer_error(a);
        printf("%s %s: %s: %s\n", c->tool, c->parallel ? "parallel" : "serial", sonde_status_name(st), e);
        const int refused = c->refusal_ok && st == SONDE_STATUS_ERROR_OUT_OF_MEMORY &&
                            strstr(e, " MiB") != NULL && strstr(e, "parallel") != NULL;
        sonde_analyzer_destroy(a);
        return refused ? 5 : 4;
    }
    size_t need = 0;
    sonde_analyzer_results_json(a, NULL, 0, &need);
    char *json = malloc(need);
    if (json == NULL || sonde_analyzer_results_json(a, json, need, &need) != SONDE_STATUS_SUCCESS) return 6;
    squeeze(json);
    char want[96];
    if (strcmp(c->tool, "basic_counts") == 0)
        snprintf(want, sizeof want, "\"total\":%llu,", (unsigned long long)c->expect_total);
    else if (strcmp(c->tool, "cache_sim") == 0)
        snprintf(want, sizeof want, "\"accesses\":%llu,", (unsigned long long)c->expect_total);
    else
        snprintf(want, sizeof want, "\"accesses\":%llu,", (unsigned long long)c->expect_total);
    const int ok = strstr(json, want) != NULL;
    if (!ok) printf("%s lacks %s\n", json, want);
    free(json);
    sonde_analyzer_destroy(a);
    return ok ? 0 : 7;
}

static void expect_bounded(run_case c, int allowed) {
    const int r = limited_run(run_limited_case, &c, 120, c.limit_mb != 0 ? c.limit_mb : 768);
    if (r != 0 && r != allowed)
        fail_msg("%s (%s, %s): %d", c.tool, c.options ? c.options : "", c.parallel ? "parallel" : "serial",
                 r);
}

static void test_declared_shards_are_not_allocated(void **state) {
    (void)state;
    /* 65,536 shards declared, three records in the last one. */
    const sonde_memref_t m[3] = {ref(SONDE_MEMREF_READ, 0x9000, 8, 1), ref(SONDE_MEMREF_WRITE, 0x9040, 8, 2),
                                 ref(SONDE_MEMREF_READ, 0x9080, 8, 3)};
    craft_buf f = {NULL, 0, 0};
    craft_header(&f);
    const craft_entry e = {craft_chunk_of(&f, 65535, m, 3), 65535, 3};
    craft_index(&f, &e, 1, 65536);
    const char *path = tmp_path("shards65536.sonde");
    assert_int_equal(craft_save(&f, path), 0);
    for (int parallel = 0; parallel < 2; ++parallel) {
        expect_bounded((run_case){path, "basic_counts", NULL, parallel != 0, 3, 0, 0}, 0);
        expect_bounded((run_case){path, "cache_sim", "L1:32K:8:64", parallel != 0, 3, 0, 0}, 0);
        expect_bounded((run_case){path, "reuse_distance", "per_shard=1", parallel != 0, 3, 0, 0}, 0);
    }
    craft_free(&f);
    /* The same with a marker of drcachesim's categories: every shard's counts in the JSON have
     * 23 members, 56 MB for the 65,536 shards, written as text in about that much memory (a
     * JSON document of them took 280 MB and seconds). */
    const sonde_memref_t x[4] = {m[0], m[1], m[2], ref(SONDE_MEMREF_MARKER, 7, SONDE_MARKER_FUNC_ID, 4)};
    craft_buf g = {NULL, 0, 0};
    craft_header_minor(&g, 2); /* the markers of version 1.2 */
    const craft_entry ge = {craft_chunk_of(&g, 65535, x, 4), 65535, 4};
    craft_index(&g, &ge, 1, 65536);
    const char *xpath = tmp_path("shards65536x.sonde");
    assert_int_equal(craft_save(&g, xpath), 0);
    for (int parallel = 0; parallel < 2; ++parallel)
        expect_bounded((run_case){xpath, "basic_counts", NULL, parallel != 0, 3, 0, 192}, 0);
    craft_free(&g);
}

static void test_large_chunks_serial(void **state) {
    (void)state;
    /* 40 shards of one chunk of 2^20 records each: about 40 KB on disk. */
    craft_buf f = {NULL, 0, 0};
    craft_header(&f);
    craft_entry e[40];
    for (uint32_t s = 0; s < 40; ++s)
        e[s] = (craft_entry){craft_chunk_fill(&f, s, 1u << 20, 0, 0, 0), s, 1u << 20};
    craft_index(&f, e, 40, 40);
    const char *path = tmp_path("large_chunks.sonde");
    assert_int_equal(craft_save(&f, path), 0);
    expect_bounded((run_case){path, "basic_counts", NULL, true, 40ull << 20, 0, 0}, 0);
    /* Serially: bounded, or refused up front naming what it would need (result 5). */
    expect_bounded((run_case){path, "basic_counts", NULL, false, 40ull << 20, 1, 0}, 5);
    craft_free(&f);
}

/* ---- 4. accesses at the top of the address space ---- */

typedef struct wrap_case {
    const char *tool;
    const char *options;
    bool parallel;
    const char *expect; /* in the squeezed JSON */
} wrap_case;

static const sonde_memref_t kTop[] = {
    {0xfffffffffffffff8ull, 0, 0, 0, SONDE_MEMREF_READ, 16},  /* lackey " L fffffffffffffff8,16" */
    {0xffffffffffffffffull, 0, 0, 0, SONDE_MEMREF_IFETCH, 2}, /* "I  ffffffffffffffff,2" */
    {0xffffffffffffff9cull, 0, 0, 0, SONDE_MEMREF_WRITE, 65535},
    {0xffffffffffffffffull, 0, 0, 0, SONDE_MEMREF_MODIFY, 0},
    {0, 0, 0, 0, SONDE_MEMREF_READ, 65535},
};

static int run_wrap_case(void *arg) {
    const wrap_case *c = arg;
    sonde_analyzer_t *a = NULL;
    if (sonde_analyzer_create(&a) != SONDE_STATUS_SUCCESS) return 1;
    const sonde_status_t added = strchr(c->tool, '/') != NULL
                                     ? sonde_analyzer_load_tool(a, c->tool, c->options)
                                     : sonde_analyzer_add_tool(a, c->tool, c->options);
    if (added != SONDE_STATUS_SUCCESS) return 2;
    sonde_analyzer_add_memory_shard(a, kTop, sizeof kTop / sizeof kTop[0], NULL);
    sonde_analyzer_set_parallel(a, c->parallel);
    if (sonde_analyzer_run(a) != SONDE_STATUS_SUCCESS) return 3;
    size_t need = 0;
    sonde_analyzer_results_json(a, NULL, 0, &need);
    char *json = malloc(need);
    if (json == NULL || sonde_analyzer_results_json(a, json, need, &need) != SONDE_STATUS_SUCCESS) return 4;
    squeeze(json);
    const int ok = strstr(json, c->expect) != NULL;
    if (!ok) printf("%s lacks %s\n", json, c->expect);
    free(json);
    sonde_analyzer_destroy(a);
    return ok ? 0 : 5;
}

static void test_accesses_at_the_top_terminate(void **state) {
    (void)state;
    /* An access is clamped at the last byte of the address space. With 64-byte lines: the
     * write of 65535 bytes at 2^64 - 100 touches the two top lines, which hold every other
     * access at the top, and the read of 65535 bytes at 0 lines 0..1023. With 1-byte lines:
     * the 100 top bytes and 65535 bytes from 0. cache_sim's D1 and LL: 4 data accesses, 3
     * misses, all compulsory, and one hit (the modify in D1, the fetch in LL). */
    const char *const levels = "{\"accesses\":4,\"compulsory_misses\":3,\"data_misses\":3,\"hits\":1,";
    const wrap_case cases[] = {
        {"basic_counts", NULL, false, "\"distinct_lines\":1026,"},
        {"basic_counts", "line_size=1", true, "\"distinct_lines\":65635,"},
        {"basic_counts", "line_size=1048576", false, "\"distinct_lines\":2,"},
        {"cache_sim", NULL, false, levels},
        {"cache_sim", NULL, true, levels},
        {"cache_sim", "L1:1K:1:1", false, "\"accesses\":5,"},
        {"cache_sim", "L1:64K:1:65536,L2:1M:16:64:fifo", true, "\"accesses\":5,"},
        {"cache_sim", "L1:64:1:1:random,L2:64:64:1", false, "\"accesses\":5,"},
        {"reuse_distance", NULL, false, "\"accesses\":4,"},
        /* The example tool counts an access for the page of its first byte: with 1-byte pages
         * the top byte is a page like any other (two accesses), and 0 another. */
        {PAGE_COUNTS, "page_size=1", false, "\"page_size\":1,\"pages\":4}"},
        {PAGE_COUNTS, "page_size=1", true, "{\"accesses\":2,\"page\":18446744073709551615}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        wrap_case c = cases[i];
        const int r = limited_run(run_wrap_case, &c, 60, 768);
        if (r != 0)
            fail_msg("%s %s (%s): %d", c.tool, c.options ? c.options : "", c.parallel ? "parallel" : "serial",
                     r);
    }
}

/* One shard: `before` data reads, the source-sampling markers (threshold for rate 1/2, seed 5,
 * 64-byte lines) unless `skipped_first`, in which case a SAMPLE_SKIPPED marker comes first,
 * then 1000 reads of 10 lines. Runs reuse_distance with `options`; returns the status and
 * copies the error or the squeezed results into out. */
static sonde_status_t run_markers(size_t before, bool skipped_first, const char *options, char *out,
                                  size_t out_size) {
    sonde_memref_t m[1100];
    size_t n = 0;
    memset(m, 0, sizeof m);
    for (size_t i = 0; i < before; ++i)
        m[n++] = (sonde_memref_t){0x1000 + 64 * i, 0, 0, 0, SONDE_MEMREF_READ, 8};
    if (skipped_first)
        m[n++] = (sonde_memref_t){3, 0, 0, 0, SONDE_MEMREF_MARKER, SONDE_MARKER_SAMPLE_SKIPPED};
    m[n++] = (sonde_memref_t){1ull << 31, 0, 0, 0, SONDE_MEMREF_MARKER, SONDE_MARKER_SAMPLE_THRESHOLD};
    m[n++] = (sonde_memref_t){5, 0, 0, 0, SONDE_MEMREF_MARKER, SONDE_MARKER_SAMPLE_SEED};
    m[n++] = (sonde_memref_t){64, 0, 0, 0, SONDE_MEMREF_MARKER, SONDE_MARKER_SAMPLE_LINE_SIZE};
    for (size_t i = 0; i < 1000; ++i)
        m[n++] = (sonde_memref_t){0x8000 + 64 * (i % 10), 0, 0, 0, SONDE_MEMREF_READ, 8};
    sonde_analyzer_t *a = NULL;
    assert_int_equal(sonde_analyzer_create(&a), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_tool(a, "reuse_distance", options), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_analyzer_add_memory_shard(a, m, n, NULL), SONDE_STATUS_SUCCESS);
    const sonde_status_t st = sonde_analyzer_run(a);
    if (st == SONDE_STATUS_SUCCESS) {
        char *j = results(a);
        snprintf(out, out_size, "%s", j);
        free(j);
    } else {
        snprintf(out, out_size, "%s", sonde_analyzer_error(a));
    }
    sonde_analyzer_destroy(a);
    return st;
}

static void test_reuse_sampling_markers_in_place(void **state) {
    (void)state;
    char out[4096];
    const char *const options[] = {"line_size=64", "line_size=64,jobs=2"};
    for (size_t o = 0; o < 2; ++o) {
        /* At the shard's start: the trace is read as sampled at rate 1/2, every access counted. */
        assert_int_equal(run_markers(0, false, options[o], out, sizeof out), SONDE_STATUS_SUCCESS);
        expect_in(out, "\"sample_rate\":0.5");
        expect_in(out, "\"accesses\":1000,");
        /* After one data access: refused, naming the cause. */
        assert_int_not_equal(run_markers(1, false, options[o], out, sizeof out), SONDE_STATUS_SUCCESS);
        expect_in(out, "its sampling markers come after its first access");
        /* A count of skipped references before the sampling is announced: refused. */
        assert_int_not_equal(run_markers(0, true, options[o], out, sizeof out), SONDE_STATUS_SUCCESS);
        expect_in(out, "a SAMPLE_SKIPPED marker comes before the trace's sampling markers");
    }
}

static int setup(void **state) {
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/sonde-analyzer-hostile-XXXXXX", tmp ? tmp : "/tmp");
    return mkdtemp(g_dir) == NULL ? -1 : 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncated_input_is_reported),
        cmocka_unit_test(test_input_without_records),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_reserved_tool_names),
        cmocka_unit_test(test_duplicate_index_entries),
        cmocka_unit_test(test_declared_shards_are_not_allocated),
        cmocka_unit_test(test_large_chunks_serial),
        cmocka_unit_test(test_accesses_at_the_top_terminate),
        cmocka_unit_test(test_reuse_sampling_markers_in_place),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
