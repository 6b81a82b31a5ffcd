/* Trace readers against files other programs wrote (sonde/trace.h): index entries that list a
 * chunk twice, overlap, point outside the chunks or out of a shard's file order; record
 * values the format does not allow; empty inputs; pipes and FIFOs (opened once, probed from
 * the same stream; a Sonde trace copied to a temporary file); the serial view of traces with 65,536 declared shards or 40 shards of
 * million-record chunks, under an address-space limit. Traces are crafted byte by byte with
 * valid checksums (craft.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/trace.h>

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

static sonde_memref_t ref(uint64_t address, uint16_t type, uint16_t size, uint64_t ts) {
    sonde_memref_t m;
    memset(&m, 0, sizeof m);
    m.address = address;
    m.pc = 0x400000;
    m.timestamp = ts;
    m.type = type;
    m.size = size;
    return m;
}

/* Offset in the file of index entry k of a file whose index starts at `ioff`. */
static uint64_t entry_offset(uint64_t ioff, unsigned k) { return ioff + 24 + 32ull * k; }

static void expect_open_error(const char *path, sonde_status_t status, const char *needle) {
    sonde_trace_reader_t *r = (sonde_trace_reader_t *)1;
    char err[512];
    const sonde_status_t s = sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_AUTO, err, sizeof err, &r);
    if (s != status)
        fail_msg("open %s: %s (\"%s\"), expected %s", path, sonde_status_name(s), err,
                 sonde_status_name(status));
    assert_null(r);
    if (strstr(err, path) == NULL || strstr(err, needle) == NULL)
        fail_msg("message \"%s\" lacks the path or \"%s\"", err, needle);
}

/* Reads shard `shard` to its end; returns the status that ended it, records in *total. */
static sonde_status_t drain_shard(sonde_trace_reader_t *r, uint32_t shard, uint64_t *total) {
    sonde_memref_t buf[256];
    size_t n = 0;
    sonde_status_t s;
    *total = 0;
    while ((s = sonde_trace_reader_read_shard(r, shard, buf, 256, &n)) == SONDE_STATUS_SUCCESS && n > 0)
        *total += n;
    return s;
}

/* ---- the index is a set of distinct chunks ---- */

static void test_index_lists_a_chunk_twice(void **state) {
    (void)state;
    const sonde_memref_t m[3] = {ref(0x1000, SONDE_MEMREF_READ, 8, 0), ref(0x1008, SONDE_MEMREF_WRITE, 8, 0),
                                 ref(0x1010, SONDE_MEMREF_READ, 4, 0)};
    craft_buf f = {NULL, 0, 0};
    craft_header(&f);
    const uint64_t off = craft_chunk_of(&f, 0, m, 3);
    const uint64_t ioff = f.size;
    craft_entry e[100];
    for (int i = 0; i < 100; ++i) e[i] = (craft_entry){off, 0, 3};
    craft_index(&f, e, 100, 1);
    const char *path = tmp_path("dup.sonde");
    assert_int_equal(craft_save(&f, path), 0);
    char needle[128];
    snprintf(needle, sizeof needle,
             "offset %llu: index entry 1: ", (unsigned long long)entry_offset(ioff, 1));
    expect_open_error(path, SONDE_STATUS_ERROR_FORMAT, needle);
    expect_open_error(path, SONDE_STATUS_ERROR_FORMAT, "same chunk as index entry 0");
    craft_free(&f);
}

static void test_index_overlaps_and_order(void **state) {
    (void)state;
    sonde_memref_t m[8];
    for (int i = 0; i < 8; ++i) m[i] = ref(0x2000 + 8u * (unsigned)i, SONDE_MEMREF_READ, 8, 0);
    craft_buf f = {NULL, 0, 0};
    craft_header(&f);
    const uint64_t a = craft_chunk_of(&f, 0, m, 4);
    const uint64_t b = craft_chunk_of(&f, 0, m + 4, 4);
    const size_t body = f.size;
    char needle[160];

    /* An entry inside another chunk's header. */
    uint64_t ioff = f.size;
    craft_entry overlap[2] = {{a, 0, 4}, {a + 20, 0, 4}};
    craft_index(&f, overlap, 2, 1);
    assert_int_equal(craft_save(&f, tmp_path("overlap.sonde")), 0);
    snprintf(needle, sizeof needle,
             "offset %llu: index entry 1: ", (unsigned long long)entry_offset(ioff, 1));
    expect_open_error(tmp_path("overlap.sonde"), SONDE_STATUS_ERROR_FORMAT, needle);
    expect_open_error(tmp_path("overlap.sonde"), SONDE_STATUS_ERROR_FORMAT, "overlaps index entry 0");

    /* An entry past the chunks (at the index itself) and one inside the file header. */
    f.size = body;
    craft_entry outside[2] = {{a, 0, 4}, {ioff, 0, 4}};
    craft_index(&f, outside, 2, 1);
    assert_int_equal(craft_save(&f, tmp_path("outside.sonde")), 0);
    expect_open_error(tmp_path("outside.sonde"), SONDE_STATUS_ERROR_FORMAT, "index entry 1: ");
    expect_open_error(tmp_path("outside.sonde"), SONDE_STATUS_ERROR_FORMAT, "outside the chunks");
    f.size = body;
    craft_entry header[1] = {{8, 0, 4}};
    craft_index(&f, header, 1, 1);
    assert_int_equal(craft_save(&f, tmp_path("in_header.sonde")), 0);
    expect_open_error(tmp_path("in_header.sonde"), SONDE_STATUS_ERROR_FORMAT, "index entry 0: ");

    /* One shard's chunks listed against their file order. */
    f.size = body;
    craft_entry order[2] = {{b, 0, 4}, {a, 0, 4}};
    craft_index(&f, order, 2, 1);
    assert_int_equal(craft_save(&f, tmp_path("order.sonde")), 0);
    snprintf(needle, sizeof needle,
             "offset %llu: index entry 1: ", (unsigned long long)entry_offset(ioff, 1));
    expect_open_error(tmp_path("order.sonde"), SONDE_STATUS_ERROR_FORMAT, needle);
    expect_open_error(tmp_path("order.sonde"), SONDE_STATUS_ERROR_FORMAT, "not in file order");

    /* Listed in file order, the same two chunks read as 8 records. */
    f.size = body;
    craft_entry good[2] = {{a, 0, 4}, {b, 0, 4}};
    craft_index(&f, good, 2, 1);
    assert_int_equal(craft_save(&f, tmp_path("good.sonde")), 0);
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(tmp_path("good.sonde"), SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    uint64_t total = 0;
    assert_int_equal(drain_shard(r, 0, &total), SONDE_STATUS_SUCCESS);
    assert_int_equal(total, 8);
    sonde_trace_reader_close(r);
    craft_free(&f);
}

/* A chunk whose payload holds another complete chunk: the index lists both, at offsets far
 * enough apart for their headers, but the outer chunk's extent covers the inner one. */
static void test_index_nested_chunk(void **state) {
    (void)state;
    sonde_memref_t m[2] = {ref(0x3000, SONDE_MEMREF_READ, 8, 0), ref(0x3008, SONDE_MEMREF_READ, 8, 0)};
    craft_buf inner = {NULL, 0, 0};
    craft_chunk_of(&inner, 0, m, 2); /* the inner chunk's bytes, as the outer payload holds them */
    while (inner.size % 28 != 0) craft_u8(&inner, 0);
    const uint32_t outer_records = (uint32_t)(inner.size / 28);
    craft_run run = {inner.data, 0, inner.size};
    craft_buf z = {NULL, 0, 0};
    craft_zstd(&z, &run, 1);
    craft_buf f = {NULL, 0, 0};
    craft_header(&f);
    const uint64_t outer = craft_chunk(&f, 0, outer_records, &z);
    const uint64_t nested = outer + 48 + 10 + 3; /* chunk header, frame header, block header */
    assert_memory_equal(f.data + nested, "CHNK", 4);
    const uint64_t ioff = f.size;
    craft_entry e[2] = {{outer, 0, outer_records}, {nested, 1, 2}};
    craft_index(&f, e, 2, 2);
    const char *path = tmp_path("nested.sonde");
    assert_int_equal(craft_save(&f, path), 0);
    sonde_trace_reader_t *r = NULL;
    char err[512];
    const sonde_status_t s = sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_SONDE, err, sizeof err, &r);
    if (s == SONDE_STATUS_SUCCESS) {
        /* Found when the outer chunk is read: it runs into the next entry's chunk. */
        uint64_t total = 0;
        assert_int_equal(drain_shard(r, 0, &total), SONDE_STATUS_ERROR_FORMAT);
        snprintf(err, sizeof err, "%s", sonde_trace_reader_error(r));
        sonde_trace_reader_close(r);
    }
    char needle[128];
    snprintf(needle, sizeof needle,
             "offset %llu: index entry 0: ", (unsigned long long)entry_offset(ioff, 0));
    if (strstr(err, path) == NULL || strstr(err, needle) == NULL || strstr(err, "index entry 1") == NULL)
        fail_msg("message \"%s\" lacks \"%s\" or the other entry", err, needle);
    craft_free(&f);
    craft_free(&z);
    craft_free(&inner);
}

/* ---- record values outside what the format allows ---- */

static void expect_bad_record_minor(const sonde_memref_t *m, size_t n, const char *name, const char *needle,
                                    uint32_t minor) {
    craft_buf f = {NULL, 0, 0};
    craft_header_minor(&f, minor);
    const uint64_t off = craft_chunk_of(&f, 0, m, n);
    craft_entry e = {off, 0, (uint32_t)n};
    craft_index(&f, &e, 1, 1);
    const char *path = tmp_path(name);
    assert_int_equal(craft_save(&f, path), 0);
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    uint64_t total = 0;
    assert_int_equal(drain_shard(r, 0, &total), SONDE_STATUS_ERROR_FORMAT);
    assert_int_equal(total, 0);
    const char *err = sonde_trace_reader_error(r);
    char where[64];
    snprintf(where, sizeof where, "offset %llu: ", (unsigned long long)(off + 48));
    if (strstr(err, path) == NULL || strstr(err, where) == NULL || strstr(err, needle) == NULL)
        fail_msg("message \"%s\" lacks the path, \"%s\" or \"%s\"", err, where, needle);
    /* The serial view refuses them too. */
    sonde_memref_t buf[16];
    size_t got = 0;
    assert_int_equal(sonde_trace_reader_read(r, buf, 16, &got), SONDE_STATUS_ERROR_FORMAT);
    sonde_trace_reader_close(r);
    craft_free(&f);
}

static void expect_bad_record(const sonde_memref_t *m, size_t n, const char *name, const char *needle) {
    expect_bad_record_minor(m, n, name, needle, 0);
}

/* A file of minor version `minor` holding m[0..n) reads them all back. */
static void expect_good_records(const sonde_memref_t *m, size_t n, uint32_t minor) {
    craft_buf f = {NULL, 0, 0};
    craft_header_minor(&f, minor);
    const uint64_t off = craft_chunk_of(&f, 0, m, n);
    craft_entry e = {off, 0, (uint32_t)n};
    craft_index(&f, &e, 1, 1);
    assert_int_equal(craft_save(&f, tmp_path("good.sonde")), 0);
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(tmp_path("good.sonde"), SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    uint64_t total = 0;
    assert_int_equal(drain_shard(r, 0, &total), SONDE_STATUS_SUCCESS);
    assert_int_equal(total, n);
    sonde_trace_reader_close(r);
    craft_free(&f);
}

static void test_record_values(void **state) {
    (void)state;
    sonde_memref_t m[3] = {ref(0x10, SONDE_MEMREF_READ, 8, 0), ref(0x20, 5, 8, 0),
                           ref(0x30, SONDE_MEMREF_READ, 8, 0)};
    expect_bad_record(m, 3, "type5.sonde", "record 1: memref type 5");
    m[1].type = 0xFFFF;
    expect_bad_record(m, 3, "type65535.sonde", "record 1: memref type 65535");
    m[1].type = SONDE_MEMREF_MARKER;
    m[1].size = 0;
    expect_bad_record(m, 3, "marker0.sonde", "record 1: marker type 0");
    m[1].size = 9;
    expect_bad_record(m, 3, "marker9.sonde", "record 1: marker type 9");
    /* Every known marker type reads. */
    for (uint16_t t = SONDE_MARKER_TIMESTAMP; t <= SONDE_MARKER_CPU_ID; ++t) {
        m[1].size = t;
        craft_buf f = {NULL, 0, 0};
        craft_header(&f);
        const uint64_t off = craft_chunk_of(&f, 0, m, 3);
        craft_entry e = {off, 0, 3};
        craft_index(&f, &e, 1, 1);
        assert_int_equal(craft_save(&f, tmp_path("marker.sonde")), 0);
        sonde_trace_reader_t *r = NULL;
        assert_int_equal(
            sonde_trace_reader_open(tmp_path("marker.sonde"), SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
            SONDE_STATUS_SUCCESS);
        uint64_t total = 0;
        assert_int_equal(drain_shard(r, 0, &total), SONDE_STATUS_SUCCESS);
        assert_int_equal(total, 3);
        sonde_trace_reader_close(r);
        craft_free(&f);
    }
    /* The writer refuses what the readers would refuse. */
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(tmp_path("w.sonde"), NULL, &w), SONDE_STATUS_SUCCESS);
    m[1].type = 18;
    assert_int_equal(sonde_trace_writer_write(w, 0, m, 3), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    m[1].type = SONDE_MEMREF_MARKER;
    m[1].size = SONDE_MARKER_SAMPLE_SKIPPED + 1;
    assert_int_equal(sonde_trace_writer_write(w, 0, m, 3), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    m[1].type = SONDE_MEMREF_INSTR_INDIRECT_JUMP; /* a 1.2 kind: the 1.2 writer takes it */
    assert_int_equal(sonde_trace_writer_write(w, 0, m, 3), SONDE_STATUS_SUCCESS);
    m[1].type = SONDE_MEMREF_MARKER;
    m[1].size = 0;
    assert_int_equal(sonde_trace_writer_write(w, 0, m, 3), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    m[1].size = SONDE_MARKER_CPU_ID;
    assert_int_equal(sonde_trace_writer_write(w, 0, m, 3), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);

    /* Minor version 2 (1.2) files may hold the 1.2 kinds and markers, and nothing beyond. */
    const uint16_t kinds[] = {SONDE_MEMREF_INSTR_NO_FETCH, SONDE_MEMREF_INSTR_TAKEN_JUMP,
                              SONDE_MEMREF_DATA_FLUSH, SONDE_MEMREF_PREFETCH, SONDE_MEMREF_PREFETCH_LAST};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; ++i) {
        m[1].type = kinds[i];
        m[1].size = 4;
        expect_good_records(m, 3, 2);
        expect_bad_record_minor(m, 3, "old.sonde", "memref type", 1); /* not in a 1.1 file */
    }
    const uint16_t markers[] = {SONDE_MARKER_THREAD_ID,        SONDE_MARKER_THREAD_EXIT,
                                SONDE_MARKER_SAMPLE_THRESHOLD, SONDE_MARKER_SAMPLE_SKIPPED,
                                SONDE_MARKER_DRMEMTRACE,       0xFFFF};
    for (size_t i = 0; i < sizeof markers / sizeof markers[0]; ++i) {
        m[1].type = SONDE_MEMREF_MARKER;
        m[1].size = markers[i];
        expect_good_records(m, 3, 2);
        expect_bad_record_minor(m, 3, "old.sonde", "marker type", 1);
    }
    m[1].type = 18;
    expect_bad_record_minor(m, 3, "type18.sonde",
                            "record 1: memref type 18 is not a known type (0 to 17, 32 to 55)", 2);
    m[1].type = 31;
    expect_bad_record_minor(m, 3, "type31.sonde", "record 1: memref type 31", 2);
    m[1].type = 56;
    expect_bad_record_minor(m, 3, "type56.sonde", "record 1: memref type 56", 2);
    m[1].type = SONDE_MEMREF_MARKER;
    m[1].size = SONDE_MARKER_SAMPLE_SKIPPED + 1;
    expect_bad_record_minor(m, 3, "marker11.sonde",
                            "record 1: marker type 11 is not a known marker type (1 to 10, 256 and above)",
                            2);
}

/* ---- empty inputs name the real cause ---- */

static void test_empty_inputs(void **state) {
    (void)state;
    const char *empty = tmp_path("empty");
    craft_buf none = {NULL, 0, 0};
    assert_int_equal(craft_save(&none, empty), 0);
    sonde_trace_reader_t *r = NULL;
    char err[512];
    assert_int_equal(sonde_trace_reader_open(empty, SONDE_TRACE_FORMAT_AUTO, err, sizeof err, &r),
                     SONDE_STATUS_ERROR_FORMAT);
    if (strstr(err, empty) == NULL || strstr(err, "empty") == NULL || strstr(err, "no records") == NULL)
        fail_msg("message \"%s\" does not say the input is empty", err);
    assert_int_equal(sonde_trace_reader_open(empty, SONDE_TRACE_FORMAT_SONDE, err, sizeof err, &r),
                     SONDE_STATUS_ERROR_FORMAT);
    if (strstr(err, "empty") == NULL || strstr(err, "no records") == NULL)
        fail_msg("message \"%s\" does not say the input is empty", err);
    /* Lackey and raw64 allow an empty input: no records. */
    const uint32_t formats[2] = {SONDE_TRACE_FORMAT_LACKEY, SONDE_TRACE_FORMAT_RAW64};
    for (int i = 0; i < 2; ++i) {
        assert_int_equal(sonde_trace_reader_open(empty, formats[i], err, sizeof err, &r),
                         SONDE_STATUS_SUCCESS);
        uint64_t total = 1;
        assert_int_equal(drain_shard(r, 0, &total), SONDE_STATUS_SUCCESS);
        assert_int_equal(total, 0);
        sonde_trace_reader_close(r);
    }
}

/* ---- pipes and FIFOs ---- */

typedef struct pipe_case {
    const char *path;          /* what to open */
    uint32_t format;           /* format to ask for */
    const unsigned char *data; /* bytes the writer sends */
    size_t size;
    uint64_t expect;          /* records expected */
    uint64_t first_address;   /* of the first record */
    const char *error_needle; /* when the open must fail: part of its message */
} pipe_case;

/* In a child: opens the input, reads the serial view to the end, checks the count. */
static int read_pipe_case(void *arg) {
    const pipe_case *c = arg;
    sonde_trace_reader_t *r = NULL;
    char err[512];
    const sonde_status_t s = sonde_trace_reader_open(c->path, c->format, err, sizeof err, &r);
    if (c->error_needle != NULL) {
        if (s == SONDE_STATUS_SUCCESS) return 10;
        if (strstr(err, c->error_needle) == NULL) {
            fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err, c->error_needle);
            return 11;
        }
        return 0;
    }
    if (s != SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "open %s: %s\n", c->path, err);
        return 12;
    }
    sonde_memref_t buf[100];
    size_t n = 0;
    uint64_t total = 0, first = 0;
    while (sonde_trace_reader_read(r, buf, 100, &n) == SONDE_STATUS_SUCCESS && n > 0) {
        if (total == 0) first = buf[0].address;
        total += n;
    }
    const char *e = sonde_trace_reader_error(r);
    if (*e != '\0') fprintf(stderr, "%s\n", e);
    sonde_trace_reader_close(r);
    if (total != c->expect || first != c->first_address) {
        fprintf(stderr, "%s: %llu records from 0x%llx, expected %llu from 0x%llx\n", c->path,
                (unsigned long long)total, (unsigned long long)first, (unsigned long long)c->expect,
                (unsigned long long)c->first_address);
        return 13;
    }
    return 0;
}

/* Forks a writer that sends the bytes into `fifo` (opened for writing, which waits for the
 * reader), reads in a limited child, and returns that child's result. */
static int through_fifo(pipe_case *c, const char *fifo) {
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const pid_t writer = fork();
    assert_true(writer >= 0);
    if (writer == 0) {
        alarm(30);
        FILE *f = fopen(fifo, "wb");
        if (f == NULL) _exit(1);
        fwrite(c->data, 1, c->size, f); /* EPIPE when the reader refused the input */
        fclose(f);
        _exit(0);
    }
    c->path = fifo;
    const int r = limited_run(read_pipe_case, c, 30, 0);
    kill(writer, SIGKILL);
    waitpid(writer, NULL, 0);
    unlink(fifo);
    return r;
}

/* The same through an anonymous pipe opened as /proc/self/fd/N, like bash's <(...). */
static int through_pipe(pipe_case *c) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    const pid_t writer = fork();
    assert_true(writer >= 0);
    if (writer == 0) {
        close(fds[0]);
        alarm(30);
        size_t done = 0;
        while (done < c->size) {
            const ssize_t n = write(fds[1], c->data + done, c->size - done);
            if (n <= 0) _exit(1);
            done += (size_t)n;
        }
        _exit(0);
    }
    close(fds[1]);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fds[0]);
    c->path = path;
    const int r = limited_run(read_pipe_case, c, 30, 0);
    close(fds[0]);
    kill(writer, SIGKILL);
    waitpid(writer, NULL, 0);
    return r;
}

static void test_pipes_and_fifos(void **state) {
    (void)state;
    /* Lackey text of 3000 references, large enough that a probe of the first block matters. */
    craft_buf text = {NULL, 0, 0};
    for (int i = 0; i < 1000; ++i) {
        char line[96];
        const int n = snprintf(line, sizeof line, "I  %08x,4\n L %08x,8\n S %08x,4\n", 0x400000 + 4 * i,
                               0x10000 + 8 * i, 0x20000 + 4 * i);
        craft_put(&text, line, (size_t)n);
    }
    craft_run trun = {text.data, 0, text.size};
    craft_buf ztext = {NULL, 0, 0};
    craft_zstd(&ztext, &trun, 1);
    /* Raw64: 5000 addresses. */
    craft_buf raw = {NULL, 0, 0};
    for (uint64_t i = 0; i < 5000; ++i) craft_u64(&raw, 0x7000 + 16 * i);
    craft_run rrun = {raw.data, 0, raw.size};
    craft_buf zraw = {NULL, 0, 0};
    craft_zstd(&zraw, &rrun, 1);
    /* A Sonde trace. */
    const sonde_memref_t m[2] = {ref(0x5000, SONDE_MEMREF_READ, 8, 1), ref(0x5008, SONDE_MEMREF_READ, 8, 2)};
    craft_buf trace = {NULL, 0, 0};
    craft_header(&trace);
    const craft_entry e = {craft_chunk_of(&trace, 0, m, 2), 0, 2};
    craft_index(&trace, &e, 1, 1);

    pipe_case cases[] = {
        {NULL, SONDE_TRACE_FORMAT_LACKEY, text.data, text.size, 3000, 0x400000, NULL},
        {NULL, SONDE_TRACE_FORMAT_AUTO, text.data, text.size, 3000, 0x400000, NULL},
        {NULL, SONDE_TRACE_FORMAT_LACKEY, ztext.data, ztext.size, 3000, 0x400000, NULL},
        {NULL, SONDE_TRACE_FORMAT_AUTO, ztext.data, ztext.size, 3000, 0x400000, NULL},
        {NULL, SONDE_TRACE_FORMAT_RAW64, raw.data, raw.size, 5000, 0x7000, NULL},
        {NULL, SONDE_TRACE_FORMAT_RAW64, zraw.data, zraw.size, 5000, 0x7000, NULL},
        /* A Sonde trace is copied to a temporary file as it arrives, then read from there. */
        {NULL, SONDE_TRACE_FORMAT_SONDE, trace.data, trace.size, 2, 0x5000, NULL},
        {NULL, SONDE_TRACE_FORMAT_AUTO, trace.data, trace.size, 2, 0x5000, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const int a = through_fifo(&cases[i], tmp_path("fifo"));
        if (a != 0) fail_msg("case %zu through a FIFO: %d", i, a);
        const int b = through_pipe(&cases[i]);
        if (b != 0) fail_msg("case %zu through a pipe: %d", i, b);
    }
    craft_free(&text);
    craft_free(&ztext);
    craft_free(&raw);
    craft_free(&zraw);
    craft_free(&trace);
}

/* ---- memory bounded by the data, not by declared counts ---- */

static const char *g_limited_path;

/* Reads the serial view of g_limited_path; 0 when every record came (count in the path's
 * companion check), 20 + status otherwise, after printing the message. */
static int read_serial(void *arg) {
    const uint64_t expect = *(const uint64_t *)arg;
    sonde_trace_reader_t *r = NULL;
    if (sonde_trace_reader_open(g_limited_path, SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r) !=
        SONDE_STATUS_SUCCESS)
        return 1;
    static sonde_memref_t buf[4096];
    size_t n = 0;
    uint64_t total = 0;
    sonde_status_t s;
    while ((s = sonde_trace_reader_read(r, buf, 4096, &n)) == SONDE_STATUS_SUCCESS && n > 0) total += n;
    if (s != SONDE_STATUS_SUCCESS) {
        printf("serial: %s: %s\n", sonde_status_name(s), sonde_trace_reader_error(r));
        const int bounded = s == SONDE_STATUS_ERROR_OUT_OF_MEMORY &&
                            strstr(sonde_trace_reader_error(r), "shard by shard") != NULL &&
                            strstr(sonde_trace_reader_error(r), " MiB") != NULL;
        sonde_trace_reader_close(r);
        return bounded ? 3 : 2;
    }
    sonde_trace_reader_close(r);
    return total == expect ? 0 : 4;
}

/* Reads every shard of g_limited_path one after the other. */
static int read_shards(void *arg) {
    const uint64_t expect = *(const uint64_t *)arg;
    sonde_trace_reader_t *r = NULL;
    if (sonde_trace_reader_open(g_limited_path, SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r) !=
        SONDE_STATUS_SUCCESS)
        return 1;
    uint32_t shards = 0;
    sonde_trace_reader_num_shards(r, &shards);
    uint64_t total = 0;
    for (uint32_t s = 0; s < shards; ++s) {
        uint64_t n = 0;
        if (drain_shard(r, s, &n) != SONDE_STATUS_SUCCESS) return 2;
        total += n;
    }
    sonde_trace_reader_close(r);
    return total == expect ? 0 : 4;
}

static void test_declared_shards(void **state) {
    (void)state;
    /* 65,536 shards declared, one record in the last: 128 bytes of index and footer. */
    const sonde_memref_t m = ref(0x9000, SONDE_MEMREF_READ, 8, 5);
    craft_buf f = {NULL, 0, 0};
    craft_header(&f);
    const craft_entry e = {craft_chunk_of(&f, 65535, &m, 1), 65535, 1};
    craft_index(&f, &e, 1, 65536);
    g_limited_path = tmp_path("shards65536.sonde");
    assert_int_equal(craft_save(&f, g_limited_path), 0);
    uint64_t expect = 1;
    assert_int_equal(limited_run(read_serial, &expect, 60, 512), 0);
    assert_int_equal(limited_run(read_shards, &expect, 60, 512), 0);
    craft_free(&f);
}

static void test_serial_view_of_large_chunks(void **state) {
    (void)state;
    /* 40 shards of one chunk of 2^20 records each: about 16 KB on disk, 1.1 GiB of decoded
     * columns if every shard held its whole chunk at once. */
    craft_buf f = {NULL, 0, 0};
    craft_header(&f);
    craft_entry e[40];
    for (uint32_t s = 0; s < 40; ++s)
        e[s] = (craft_entry){craft_chunk_fill(&f, s, 1u << 20, 0, 0, 0), s, 1u << 20};
    craft_index(&f, e, 40, 40);
    assert_true(f.size < 64 * 1024);
    g_limited_path = tmp_path("large_chunks.sonde");
    assert_int_equal(craft_save(&f, g_limited_path), 0);
    uint64_t expect = 40ull << 20;
    /* Shard by shard it reads in bounded memory; the serial view either reads in bounded
     * memory too or is refused up front with what it would need. */
    assert_int_equal(limited_run(read_shards, &expect, 120, 512), 0);
    const int serial = limited_run(read_serial, &expect, 120, 512);
    if (serial != 0 && serial != 3) fail_msg("serial view: %d", serial);
    craft_free(&f);
}

static int setup(void **state) {
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/sonde-hostile-XXXXXX", tmp ? tmp : "/tmp");
    signal(SIGPIPE, SIG_IGN);
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
        cmocka_unit_test(test_index_lists_a_chunk_twice),
        cmocka_unit_test(test_index_overlaps_and_order),
        cmocka_unit_test(test_index_nested_chunk),
        cmocka_unit_test(test_record_values),
        cmocka_unit_test(test_empty_inputs),
        cmocka_unit_test(test_pipes_and_fifos),
        cmocka_unit_test(test_declared_shards),
        cmocka_unit_test(test_serial_view_of_large_chunks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
