/* Sonde trace files through the public API (sonde/trace.h): round trips over several shards
 * and many chunks, reading one shard while another is damaged, the serial view, every reader
 * error with file and offset, and recovery of a truncated file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/trace.h>

static char g_dir[256];

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int slot;
    char *p = buf[slot++ & 3];
    snprintf(p, 512, "%s/%s", g_dir, name);
    return p;
}

static sonde_memref_t make_ref(uint32_t shard, uint64_t i) {
    sonde_memref_t m;
    memset(&m, 0, sizeof m);
    m.address = 0x10000 + shard * 0x1000000ull + i * 8;
    m.pc = 0x400000 + (i % 97);
    m.timestamp = 1000 + i * 3 + shard; /* shards interleave by timestamp */
    m.type = (uint16_t)(i % 4);
    m.size = (uint16_t)(1u << (i % 4));
    return m;
}

/* Writes `shards` shards of `per_shard` records with small chunks, interleaving writes. */
static void write_trace(const char *path, uint32_t shards, uint64_t per_shard, uint32_t chunk) {
    sonde_trace_writer_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    props.chunk_records = chunk;
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(path, &props, &w), SONDE_STATUS_SUCCESS);
    sonde_memref_t batch[50];
    for (uint64_t base = 0; base < per_shard; base += 50) {
        for (uint32_t s = 0; s < shards; ++s) {
            size_t n = 0;
            for (uint64_t i = base; i < per_shard && n < 50; ++i) batch[n++] = make_ref(s, i);
            assert_int_equal(sonde_trace_writer_write(w, s, batch, n), SONDE_STATUS_SUCCESS);
        }
    }
    assert_string_equal(sonde_trace_writer_error(w), "");
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);
}

static void check_shard(sonde_trace_reader_t *r, uint32_t shard, uint64_t expect) {
    sonde_memref_t buf[333];
    uint64_t i = 0;
    for (;;) {
        size_t n = 99;
        assert_int_equal(sonde_trace_reader_read_shard(r, shard, buf, 333, &n), SONDE_STATUS_SUCCESS);
        if (n == 0) break;
        for (size_t k = 0; k < n; ++k, ++i) {
            sonde_memref_t want = make_ref(shard, i);
            want.shard = shard;
            assert_memory_equal(&buf[k], &want, sizeof want);
        }
    }
    assert_int_equal(i, expect);
}

static void test_round_trip(void **state) {
    (void)state;
    const char *path = tmp_path("rt.sonde");
    write_trace(path, 3, 5000, 700);
    sonde_trace_reader_t *r = NULL;
    char err[512];
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_AUTO, err, sizeof err, &r),
                     SONDE_STATUS_SUCCESS);
    uint32_t shards = 0, format = 0;
    assert_int_equal(sonde_trace_reader_num_shards(r, &shards), SONDE_STATUS_SUCCESS);
    assert_int_equal(shards, 3);
    assert_int_equal(sonde_trace_reader_format(r, &format), SONDE_STATUS_SUCCESS);
    assert_int_equal(format, SONDE_TRACE_FORMAT_SONDE);
    assert_string_equal(sonde_trace_reader_warnings(r), "");
    check_shard(r, 2, 5000);
    check_shard(r, 0, 5000);
    check_shard(r, 1, 5000);

    /* Serial view: ordered by timestamp, every record once, each shard in order. */
    sonde_memref_t buf[257];
    uint64_t last_ts = 0, count = 0, next[3] = {0, 0, 0};
    for (;;) {
        size_t n = 0;
        assert_int_equal(sonde_trace_reader_read(r, buf, 257, &n), SONDE_STATUS_SUCCESS);
        if (n == 0) break;
        for (size_t k = 0; k < n; ++k) {
            assert_true(buf[k].timestamp >= last_ts);
            last_ts = buf[k].timestamp;
            assert_true(buf[k].shard < 3);
            sonde_memref_t want = make_ref(buf[k].shard, next[buf[k].shard]++);
            want.shard = buf[k].shard;
            assert_memory_equal(&buf[k], &want, sizeof want);
            ++count;
        }
    }
    assert_int_equal(count, 15000);
    assert_int_equal(sonde_trace_reader_close(r), SONDE_STATUS_SUCCESS);
}

static void test_empty_and_defaults(void **state) {
    (void)state;
    const char *path = tmp_path("empty.sonde");
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(path, NULL, &w), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_trace_writer_write(w, 0, NULL, 0), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    uint32_t shards = 9;
    assert_int_equal(sonde_trace_reader_num_shards(r, &shards), SONDE_STATUS_SUCCESS);
    assert_int_equal(shards, 1);
    sonde_memref_t m;
    size_t n = 5;
    assert_int_equal(sonde_trace_reader_read(r, &m, 1, &n), SONDE_STATUS_SUCCESS);
    assert_int_equal(n, 0);
    assert_int_equal(sonde_trace_reader_read_shard(r, 0, &m, 1, &n), SONDE_STATUS_SUCCESS);
    assert_int_equal(n, 0);
    sonde_trace_reader_close(r);
}

static void test_bad_arguments(void **state) {
    (void)state;
    sonde_trace_writer_t *w = NULL;
    sonde_trace_writer_properties_t props;
    memset(&props, 0, sizeof props);
    assert_int_equal(sonde_trace_writer_create(NULL, NULL, &w), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_writer_create(tmp_path("x.sonde"), NULL, NULL),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    props.struct_size = 4;
    assert_int_equal(sonde_trace_writer_create(tmp_path("x.sonde"), &props, &w),
                     SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    props.struct_size = sizeof props;
    props.compression_level = 40;
    assert_int_equal(sonde_trace_writer_create(tmp_path("x.sonde"), &props, &w),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    props.compression_level = 0;
    props.chunk_records = (1u << 20) + 1;
    assert_int_equal(sonde_trace_writer_create(tmp_path("x.sonde"), &props, &w),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    props.chunk_records = 0;
    props.reserved = 1;
    assert_int_equal(sonde_trace_writer_create(tmp_path("x.sonde"), &props, &w),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_writer_create("/nonexistent-dir/x.sonde", NULL, &w), SONDE_STATUS_ERROR_IO);
    assert_null(w);

    assert_int_equal(sonde_trace_writer_create(tmp_path("x.sonde"), NULL, &w), SONDE_STATUS_SUCCESS);
    sonde_memref_t m = make_ref(0, 0);
    assert_int_equal(sonde_trace_writer_write(NULL, 0, &m, 1), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_writer_write(w, 0, NULL, 1), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_writer_write(w, 65536, &m, 1), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_writer_write(w, 4, &m, 1), SONDE_STATUS_SUCCESS);
    assert_string_equal(sonde_trace_writer_error(NULL), "");
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_trace_writer_close(NULL), SONDE_STATUS_SUCCESS);

    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(NULL, 0, NULL, 0, &r), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_open(tmp_path("x.sonde"), 0, NULL, 0, NULL),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_open(tmp_path("x.sonde"), 9, NULL, 0, &r),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_reader_open(tmp_path("x.sonde"), 0, NULL, 0, &r), SONDE_STATUS_SUCCESS);
    uint32_t shards = 0;
    assert_int_equal(sonde_trace_reader_num_shards(r, &shards), SONDE_STATUS_SUCCESS);
    assert_int_equal(shards, 5); /* shards 0..3 empty, 4 holds one record */
    size_t n = 0;
    sonde_memref_t out[4];
    assert_int_equal(sonde_trace_reader_num_shards(NULL, &shards), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_num_shards(r, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_format(r, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_read_shard(r, 5, out, 4, &n), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_reader_read_shard(r, 0, out, 0, &n), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_reader_read_shard(r, 0, NULL, 4, &n), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_read_shard(r, 0, out, 4, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_read(r, out, 0, &n), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_reader_read(NULL, out, 4, &n), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_read_shard(r, 4, out, 4, &n), SONDE_STATUS_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].address, m.address);
    assert_int_equal(out[0].shard, 4);
    assert_string_equal(sonde_trace_reader_error(NULL), "");
    assert_string_equal(sonde_trace_reader_warnings(NULL), "");
    sonde_trace_reader_close(r);
}

/* ---- damaged files ---- */

static unsigned char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *d = malloc(*size + 1);
    assert_non_null(d);
    assert_int_equal(fread(d, 1, *size, f), *size);
    fclose(f);
    return d;
}

static void spit(const char *path, const unsigned char *d, size_t size) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, size, f), size);
    fclose(f);
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Offset of the first chunk of `shard`, walking the chunk headers (docs/trace-format.md). */
static size_t chunk_of(const unsigned char *d, size_t size, uint32_t shard, size_t *payload) {
    size_t off = 64;
    while (off + 48 <= size && le32(d + off) == 0x4B4E4843u) {
        if (le32(d + off + 4) == shard) {
            *payload = le32(d + off + 12);
            return off;
        }
        off += 48 + le32(d + off + 12);
    }
    fail_msg("no chunk of shard %u", shard);
    return 0;
}

static void expect_open_error(const char *path, uint32_t format, sonde_status_t status, const char *needle) {
    sonde_trace_reader_t *r = (sonde_trace_reader_t *)1;
    char err[512];
    assert_int_equal(sonde_trace_reader_open(path, format, err, sizeof err, &r), status);
    assert_null(r);
    if (strstr(err, path) == NULL || strstr(err, needle) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", err, needle);
}

static void expect_read_error(const char *path, uint32_t shard, const char *needle) {
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    sonde_memref_t buf[512];
    size_t n = 0;
    sonde_status_t s;
    while ((s = sonde_trace_reader_read_shard(r, shard, buf, 512, &n)) == SONDE_STATUS_SUCCESS && n > 0) {
    }
    assert_int_equal(s, SONDE_STATUS_ERROR_FORMAT);
    const char *err = sonde_trace_reader_error(r);
    if (strstr(err, path) == NULL || strstr(err, needle) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", err, needle);
    /* The serial view reports the same damage. */
    while ((s = sonde_trace_reader_read(r, buf, 512, &n)) == SONDE_STATUS_SUCCESS && n > 0) {
    }
    assert_int_equal(s, SONDE_STATUS_ERROR_FORMAT);
    sonde_trace_reader_close(r);
}

static void test_open_errors(void **state) {
    (void)state;
    const char *good = tmp_path("good.sonde");
    write_trace(good, 2, 3000, 500);
    size_t size;
    unsigned char *d = slurp(good, &size);
    const char *bad = tmp_path("bad.sonde");

    expect_open_error(tmp_path("missing.sonde"), SONDE_TRACE_FORMAT_SONDE, SONDE_STATUS_ERROR_IO,
                      "cannot open");
    expect_open_error(tmp_path("missing.sonde"), SONDE_TRACE_FORMAT_AUTO, SONDE_STATUS_ERROR_IO,
                      "cannot open");

    d[0] ^= 0xFF;
    spit(bad, d, size);
    expect_open_error(bad, SONDE_TRACE_FORMAT_SONDE, SONDE_STATUS_ERROR_FORMAT, "offset 0: bad magic");
    d[0] ^= 0xFF;

    d[8] = 7;
    spit(bad, d, size);
    expect_open_error(bad, SONDE_TRACE_FORMAT_SONDE, SONDE_STATUS_ERROR_FORMAT,
                      "offset 8: unsupported version 7");
    d[8] = 1;

    d[30] ^= 1;
    spit(bad, d, size);
    expect_open_error(bad, SONDE_TRACE_FORMAT_AUTO, SONDE_STATUS_ERROR_FORMAT,
                      "offset 56: header checksum mismatch");
    d[30] ^= 1;

    spit(bad, d, 40);
    expect_open_error(bad, SONDE_TRACE_FORMAT_SONDE, SONDE_STATUS_ERROR_FORMAT,
                      "offset 40: truncated header");
    free(d);
}

static void test_damaged_chunks(void **state) {
    (void)state;
    const char *good = tmp_path("good2.sonde");
    write_trace(good, 2, 3000, 500);
    size_t size, payload;
    unsigned char *d = slurp(good, &size);
    const char *bad = tmp_path("bad2.sonde");
    char needle[128];

    /* Corrupt a payload byte of shard 1's first chunk: shard 0 still reads completely. */
    size_t off = chunk_of(d, size, 1, &payload);
    d[off + 48 + payload / 2] ^= 0x5A;
    spit(bad, d, size);
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(bad, SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    check_shard(r, 0, 3000);
    sonde_trace_reader_close(r);
    snprintf(needle, sizeof needle, "offset %zu: chunk payload checksum mismatch", off + 48);
    expect_read_error(bad, 1, needle);
    d[off + 48 + payload / 2] ^= 0x5A;

    /* Corrupt a chunk header field. */
    d[off + 9] ^= 0x01;
    spit(bad, d, size);
    snprintf(needle, sizeof needle, "offset %zu: chunk header checksum mismatch", off);
    expect_read_error(bad, 1, needle);
    d[off + 9] ^= 0x01;

    /* Truncated chunk behind an intact index: cut shard 1's chunk and keep footer + index. */
    free(d);
    write_trace(good, 1, 2000, 500);
    d = slurp(good, &size);
    off = chunk_of(d, size, 0, &payload);
    /* Last chunk: the one before the index. */
    size_t last = off;
    while (last + 48 + le32(d + last + 12) < size && le32(d + last + 48 + le32(d + last + 12)) == 0x4B4E4843u)
        last += 48 + le32(d + last + 12);
    assert_true(last > off);
    spit(bad, d, last + 48 + 10);
    /* Without the footer the scan recovers the complete chunks and warns. */
    r = NULL;
    assert_int_equal(sonde_trace_reader_open(bad, SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    const char *warn = sonde_trace_reader_warnings(r);
    assert_non_null(strstr(warn, "no footer"));
    assert_non_null(strstr(warn, "recovered 3 complete chunks (1500 records)"));
    snprintf(needle, sizeof needle, "truncated chunk at offset %zu", last);
    if (strstr(warn, needle) == NULL) fail_msg("warning \"%s\" lacks \"%s\"", warn, needle);
    check_shard(r, 0, 1500);
    sonde_trace_reader_close(r);
    free(d);
}

static void test_truncated_recovery(void **state) {
    (void)state;
    const char *good = tmp_path("good3.sonde");
    write_trace(good, 3, 4000, 600);
    size_t size;
    unsigned char *d = slurp(good, &size);
    const char *bad = tmp_path("trunc.sonde");
    /* Every cut point near the end and in the middle: never a crash, complete chunks only. */
    const size_t cuts[] = {64, 65, 100, size / 2, size - 33, size - 32, size - 1};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; ++c) {
        spit(bad, d, cuts[c]);
        sonde_trace_reader_t *r = NULL;
        assert_int_equal(sonde_trace_reader_open(bad, SONDE_TRACE_FORMAT_AUTO, NULL, 0, &r),
                         SONDE_STATUS_SUCCESS);
        assert_non_null(strstr(sonde_trace_reader_warnings(r), "recovered"));
        sonde_memref_t buf[1000];
        size_t n;
        uint64_t total = 0;
        while (sonde_trace_reader_read(r, buf, 1000, &n) == SONDE_STATUS_SUCCESS && n > 0) total += n;
        assert_int_equal(total % 600, 0);
        assert_true(total <= 12000);
        if (cuts[c] >= size - 33) assert_int_equal(total, 12000);
        sonde_trace_reader_close(r);
    }
    /* Damaged footer: index ignored, scan recovers everything. */
    d[size - 1] ^= 0xFF;
    spit(bad, d, size);
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(bad, SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    assert_non_null(strstr(sonde_trace_reader_warnings(r), "footer checksum mismatch"));
    check_shard(r, 1, 4000);
    sonde_trace_reader_close(r);
    free(d);
}

/* Serial view: a record without timestamp stays with its shard's previous one; ties keep the
 * current shard running; markers pass through. */
static void test_serial_untimed_runs(void **state) {
    (void)state;
    const char *path = tmp_path("serial.sonde");
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(path, NULL, &w), SONDE_STATUS_SUCCESS);
    const sonde_memref_t s0[4] = {{0xA0, 0, 10, 0, SONDE_MEMREF_READ, 4},
                                  {0xA1, 0, 0, 0, SONDE_MEMREF_WRITE, 4},
                                  {7, 0, 0, 0, SONDE_MEMREF_MARKER, SONDE_MARKER_CPU_ID},
                                  {0xA3, 0, 30, 0, SONDE_MEMREF_READ, 4}};
    const sonde_memref_t s1[2] = {{0xB0, 0, 20, 0, SONDE_MEMREF_IFETCH, 2},
                                  {0xB1, 0, 25, 0, SONDE_MEMREF_READ, 8}};
    assert_int_equal(sonde_trace_writer_write(w, 1, s1, 2), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_trace_writer_write(w, 0, s0, 4), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    sonde_memref_t out[8];
    size_t total = 0, n;
    while (sonde_trace_reader_read(r, out + total, 1, &n) == SONDE_STATUS_SUCCESS && n > 0) total += n;
    assert_int_equal(total, 6);
    const uint64_t order[6] = {0xA0, 0xA1, 7, 0xB0, 0xB1, 0xA3};
    const uint32_t shard[6] = {0, 0, 0, 1, 1, 0};
    for (int i = 0; i < 6; ++i) {
        assert_int_equal(out[i].address, order[i]);
        assert_int_equal(out[i].shard, shard[i]);
    }
    assert_int_equal(out[1].timestamp, 0); /* stored as written */
    assert_int_equal(out[2].type, SONDE_MEMREF_MARKER);
    assert_int_equal(out[2].size, SONDE_MARKER_CPU_ID);
    sonde_trace_reader_close(r);
}

static int setup(void **state) {
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/sonde-trace-XXXXXX", tmp ? tmp : "/tmp");
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
        cmocka_unit_test(test_round_trip),          cmocka_unit_test(test_empty_and_defaults),
        cmocka_unit_test(test_bad_arguments),       cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_damaged_chunks),      cmocka_unit_test(test_truncated_recovery),
        cmocka_unit_test(test_serial_untimed_runs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
