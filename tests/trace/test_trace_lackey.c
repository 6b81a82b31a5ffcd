/* Lackey and raw64 readers through the public API: parsing (plain and zstd), every format
 * error with file and offset, AUTO detection, and the real gzip trace's reference counts. */
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

#include "lackey_ref.h"
#include "tmpdir.h"

static void spit(const char *path, const void *d, size_t size) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, size, f), size);
    fclose(f);
}

/* The whole file at `path`, malloc'ed. */
static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *d = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 20;
            d = realloc(d, cap);
            assert_non_null(d);
        }
        got = fread(d + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return d;
}

static const char kLackey[] =
    "==1== Lackey, an example Valgrind tool\n"
    "I  0401ab70,3\n"
    " S 1fff0005e8,8\n"
    "I  0401b770,1\n"
    " L 04022f00,4\n"
    " M 7ff000398,16\n"
    "\n"
    "I  0401b771,7\n"
    "==1== Exit code: 0\n"
    " L FFFFFFFFFFFFFFF0,2"; /* last line without newline */

static size_t read_all(sonde_trace_reader_t *r, sonde_memref_t *out, size_t cap) {
    size_t total = 0, n;
    while (total < cap) {
        assert_int_equal(
            sonde_trace_reader_read_shard(r, 0, out + total, cap - total < 3 ? cap - total : 3, &n),
            SONDE_STATUS_SUCCESS);
        if (n == 0) break;
        total += n;
    }
    return total;
}

static void check_small(const char *path, uint32_t format) {
    sonde_trace_reader_t *r = NULL;
    char err[512];
    assert_int_equal(sonde_trace_reader_open(path, format, err, sizeof err, &r), SONDE_STATUS_SUCCESS);
    uint32_t f = 0, shards = 0;
    sonde_trace_reader_format(r, &f);
    assert_int_equal(f, SONDE_TRACE_FORMAT_LACKEY);
    sonde_trace_reader_num_shards(r, &shards);
    assert_int_equal(shards, 1);
    sonde_memref_t m[16];
    assert_int_equal(read_all(r, m, 16), 7);
    assert_int_equal(m[0].type, SONDE_MEMREF_IFETCH);
    assert_int_equal(m[0].address, 0x0401ab70);
    assert_int_equal(m[0].pc, 0x0401ab70);
    assert_int_equal(m[0].size, 3);
    assert_int_equal(m[1].type, SONDE_MEMREF_WRITE);
    assert_int_equal(m[1].address, 0x1fff0005e8ull);
    assert_int_equal(m[1].pc, 0x0401ab70);
    assert_int_equal(m[1].size, 8);
    assert_int_equal(m[3].type, SONDE_MEMREF_READ);
    assert_int_equal(m[3].pc, 0x0401b770);
    assert_int_equal(m[4].type, SONDE_MEMREF_MODIFY);
    assert_int_equal(m[4].address, 0x7ff000398ull);
    assert_int_equal(m[4].size, 16);
    assert_int_equal(m[6].address, 0xFFFFFFFFFFFFFFF0ull);
    assert_int_equal(m[6].size, 2);
    assert_int_equal(m[6].timestamp, 0);
    assert_int_equal(m[6].shard, 0);
    /* The serial view of one shard is the same stream. */
    sonde_memref_t s[16];
    size_t n = 0;
    assert_int_equal(sonde_trace_reader_read(r, s, 16, &n), SONDE_STATUS_SUCCESS);
    assert_int_equal(n, 7);
    assert_memory_equal(s, m, 7 * sizeof m[0]);
    sonde_trace_reader_close(r);
}

static void test_lackey_small(void **state) {
    (void)state;
    const char *plain = tmpdir_path("small.lackey");
    spit(plain, kLackey, strlen(kLackey));
    check_small(plain, SONDE_TRACE_FORMAT_LACKEY);
    check_small(plain, SONDE_TRACE_FORMAT_AUTO);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "zstd -q -f '%s' -o '%s/small.zst'", plain, g_tmpdir);
    assert_int_equal(system(cmd), 0);
    check_small(tmpdir_path("small.zst"), SONDE_TRACE_FORMAT_AUTO); /* by content */
    /* CRLF line ends, the last line ending in a lone '\r' at the end of the file. */
    static const char crlf[] = "I  10,4\r\n\r\n L 20,8\r\n==1== x\r\n S 30,2\r";
    const char *path = tmpdir_path("crlf.lackey");
    spit(path, crlf, strlen(crlf));
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_LACKEY, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    sonde_memref_t m[8];
    assert_int_equal(read_all(r, m, 8), 3);
    assert_int_equal(m[1].address, 0x20);
    assert_int_equal(m[1].pc, 0x10);
    assert_int_equal(m[2].type, SONDE_MEMREF_WRITE);
    assert_int_equal(m[2].address, 0x30);
    assert_int_equal(m[2].size, 2);
    sonde_trace_reader_close(r);
}

static void expect_read_error(const char *text, size_t len, const char *needle) {
    const char *path = tmpdir_path("bad.lackey");
    spit(path, text, len);
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_LACKEY, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    sonde_memref_t m[8];
    size_t n;
    sonde_status_t s;
    while ((s = sonde_trace_reader_read_shard(r, 0, m, 8, &n)) == SONDE_STATUS_SUCCESS && n > 0) {
    }
    assert_int_equal(s, SONDE_STATUS_ERROR_FORMAT);
    const char *err = sonde_trace_reader_error(r);
    if (strstr(err, path) == NULL || strstr(err, needle) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", err, needle);
    sonde_trace_reader_close(r);
}

static void test_lackey_errors(void **state) {
    (void)state;
    /* Each text, its length (t8 holds a NUL) and what the message must say. The last six: the
     * line must end right after the size; one '\r' before the newline is allowed, a second
     * one, a space or a character glued to the size is not, nor a line cut short. */
#define BAD(text, needle) \
    { text, sizeof text - 1, needle }
    static const struct {
        const char *text;
        size_t len;
        const char *needle;
    } bad[] = {
        BAD("I  0401ab70,3\n X 1234,8\n", "offset 14: bad lackey line 2: \" X 1234,8\""),
        BAD("I  0401ab70,3\n S 12g4,8\n", "offset 14: bad lackey line 2"),
        BAD("I  0401ab70\n", "offset 0: bad lackey line 1"),
        BAD(" L 12,99999999\n", "offset 0: bad lackey line 1"),
        BAD(" L 12345678901234567,8\n", "offset 0: bad lackey line 1"),
        BAD(" L ,8\n", "offset 0: bad lackey line 1"),
        BAD("I  10,4\n L 20,\n", "offset 8: bad lackey line 2"),
        BAD("I  10,4\nI  10,4\0\n", "offset 8: bad lackey line 2"),
        BAD("I  10,4\r\n L 20,8\r\r\n", "offset 9: bad lackey line 2"),
        BAD("I  10,4\n L 20,8 \n", "offset 8: bad lackey line 2"),
        BAD("I  10,4\n L 20,8x", "offset 8: bad lackey line 2"),
        BAD("I  10,4\nI  \n", "offset 8: bad lackey line 2"),
        BAD("I  10,4\n L", "offset 8: bad lackey line 2"),
        BAD("I  10,4\n L 20,1234567\n", "offset 8: bad lackey line 2"),
    };
#undef BAD
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
        expect_read_error(bad[i].text, bad[i].len, bad[i].needle);
    /* A line longer than the parser's limit. */
    char *longline = malloc(10000);
    assert_non_null(longline);
    memset(longline, 'a', 10000);
    expect_read_error(longline, 10000, "line longer than");
    free(longline);
    /* A zstd file cut short. */
    const char *plain = tmpdir_path("trunc.txt");
    char *big = malloc(200000);
    assert_non_null(big);
    size_t len = 0;
    for (int i = 0; len + 32 < 200000; ++i) len += (size_t)snprintf(big + len, 32, " L %x,8\n", i * 7919);
    spit(plain, big, len);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "zstd -q -f '%s' -o '%s/t.zst' && head -c 300 '%s/t.zst' > '%s/cut.zst'", plain,
             g_tmpdir, g_tmpdir, g_tmpdir);
    assert_int_equal(system(cmd), 0);
    sonde_trace_reader_t *r = NULL;
    const char *cut = tmpdir_path("cut.zst");
    assert_int_equal(sonde_trace_reader_open(cut, SONDE_TRACE_FORMAT_LACKEY, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    sonde_memref_t m[64];
    size_t n;
    sonde_status_t s;
    while ((s = sonde_trace_reader_read_shard(r, 0, m, 64, &n)) == SONDE_STATUS_SUCCESS && n > 0) {
    }
    assert_int_equal(s, SONDE_STATUS_ERROR_FORMAT);
    assert_non_null(strstr(sonde_trace_reader_error(r), cut));
    assert_non_null(strstr(sonde_trace_reader_error(r), "offset "));
    sonde_trace_reader_close(r);
    free(big);
}

static void test_raw64(void **state) {
    (void)state;
    uint64_t addrs[1000];
    for (int i = 0; i < 1000; ++i) addrs[i] = 0x7f0000000000ull + (uint64_t)i * 24;
    const char *path = tmpdir_path("a.raw64");
    spit(path, addrs, sizeof addrs);
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_AUTO, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    uint32_t f = 0;
    sonde_trace_reader_format(r, &f);
    assert_int_equal(f, SONDE_TRACE_FORMAT_RAW64);
    sonde_memref_t m[1001];
    size_t total = 0, n;
    while (sonde_trace_reader_read(r, m + total, 77, &n) == SONDE_STATUS_SUCCESS && n > 0) total += n;
    assert_int_equal(total, 1000);
    for (int i = 0; i < 1000; ++i) {
        assert_int_equal(m[i].address, addrs[i]);
        assert_int_equal(m[i].type, SONDE_MEMREF_READ);
        assert_int_equal(m[i].size, 8);
        assert_int_equal(m[i].pc, 0);
    }
    sonde_trace_reader_close(r);

    /* Odd size: an error at open naming the offset of the trailing bytes. */
    const char *odd = tmpdir_path("odd.raw64");
    spit(odd, addrs, 8 * 10 + 3);
    char err[512];
    r = (sonde_trace_reader_t *)1;
    assert_int_equal(sonde_trace_reader_open(odd, SONDE_TRACE_FORMAT_RAW64, err, sizeof err, &r),
                     SONDE_STATUS_ERROR_FORMAT);
    assert_null(r);
    assert_non_null(strstr(err, odd));
    assert_non_null(strstr(err, "offset 80: raw64 size 83 is not a multiple of 8"));
    /* Odd size inside zstd: found at the end of the stream. */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "zstd -q -f '%s' -o '%s/odd.raw64.zst'", odd, g_tmpdir);
    assert_int_equal(system(cmd), 0);
    const char *oddz = tmpdir_path("odd.raw64.zst");
    assert_int_equal(sonde_trace_reader_open(oddz, SONDE_TRACE_FORMAT_AUTO, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    sonde_status_t s;
    total = 0;
    while ((s = sonde_trace_reader_read_shard(r, 0, m, 1000, &n)) == SONDE_STATUS_SUCCESS && n > 0)
        total += n;
    assert_int_equal(s, SONDE_STATUS_ERROR_FORMAT);
    assert_non_null(strstr(sonde_trace_reader_error(r), "offset 80: raw64 size is not a multiple of 8"));
    sonde_trace_reader_close(r);

    /* Missing file, unknown AUTO format. */
    assert_int_equal(
        sonde_trace_reader_open(tmpdir_path("none.raw64"), SONDE_TRACE_FORMAT_RAW64, err, sizeof err, &r),
        SONDE_STATUS_ERROR_IO);
    assert_non_null(strstr(err, "none.raw64: cannot open"));
    assert_int_equal(
        sonde_trace_reader_open(tmpdir_path("none.lackey"), SONDE_TRACE_FORMAT_LACKEY, err, sizeof err, &r),
        SONDE_STATUS_ERROR_IO);
    const char *unk = tmpdir_path("data.xyz");
    spit(unk, "\x01\x02\x03\x04\x05\x06\x07\x08\x09", 9);
    assert_int_equal(sonde_trace_reader_open(unk, SONDE_TRACE_FORMAT_AUTO, err, sizeof err, &r),
                     SONDE_STATUS_ERROR_FORMAT);
    assert_non_null(strstr(err, "offset 0: cannot tell the format"));
    /* A lackey file opened as a Sonde trace. */
    const char *lk = tmpdir_path("x.lackey");
    spit(lk, kLackey, strlen(kLackey));
    assert_int_equal(sonde_trace_reader_open(lk, SONDE_TRACE_FORMAT_SONDE, err, sizeof err, &r),
                     SONDE_STATUS_ERROR_FORMAT);
    assert_non_null(strstr(err, "offset 0: bad magic"));
}

/* ---- the parser against the reference reading (lackey_ref.h) ---- */

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { /* xorshift64* */
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 0x2545F4914F6CDD1Dull;
}
static unsigned below(unsigned n) { return (unsigned)(rnd() % n); }

typedef struct {
    char *p;
    size_t len, cap;
} text_t;

static void put(text_t *t, const char *s, size_t n) {
    if (t->len + n > t->cap) {
        t->cap = (t->len + n) * 2;
        t->p = realloc(t->p, t->cap);
        assert_non_null(t->p);
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
}
static void puts_(text_t *t, const char *s) { put(t, s, strlen(s)); }

/* A hex number of `digits` digits (the first not 0 unless asked), letters of mixed case. */
static void put_hex(text_t *t, unsigned digits, int upper) {
    static const char lo[] = "0123456789abcdef", up[] = "0123456789ABCDEF";
    for (unsigned i = 0; i < digits; ++i) {
        const unsigned v = below(16);
        const char c = (upper == 2 ? (below(2) ? up : lo) : upper ? up : lo)[v];
        put(t, &c, 1);
    }
}

/* A record line as valgrind writes it, or one of its variants the format allows: 1 to 16 hex
 * digits, upper case, leading zeros in the size, "\r\n". */
static void put_record(text_t *t) {
    static const char *heads[] = {"I  ", " L ", " S ", " M "};
    puts_(t, heads[below(2) ? 0 : 1 + below(3)]);
    const unsigned r = below(100);
    const unsigned digits = r < 40 ? 8 : r < 70 ? 10 : r < 80 ? 16 : 1 + below(16);
    put_hex(t, digits, r % 7 == 0 ? 2 : r % 11 == 0);
    char size[16];
    const unsigned s = below(100);
    const unsigned value = s < 60 ? 1 + below(16) : s < 90 ? 1u << below(7) : below(65536);
    const int zeros = below(10) == 0 ? (int)below(3) : 0;
    snprintf(size, sizeof size, ",%0*u", zeros + 1, value);
    puts_(t, size);
}

/* One bad line, of kind 0 to 16: each is a small step outside the format. */
static void put_bad(text_t *t, unsigned kind) {
    switch (kind) {
        case 0:
            puts_(t, " L ");
            put_hex(t, 17, 0);
            puts_(t, ",8");
            break;                                      /* 17 digits */
        case 1: puts_(t, "I  ,3"); break;               /* no digits */
        case 2: puts_(t, " S 1234,1234567"); break;     /* 7 size digits */
        case 3: puts_(t, " L 1234,65536"); break;       /* too large */
        case 4: puts_(t, " M 12345678 8"); break;       /* no comma */
        case 5: puts_(t, "I  0401ab70,3 "); break;      /* trailing space */
        case 6: puts_(t, " L 1fff0005e8,8\r\r"); break; /* two '\r' */
        case 7: puts_(t, " X 1fff0005e8,8"); break;     /* type */
        case 8: puts_(t, " L 1fff0g05e8,8"); break;     /* not hex */
        case 9:
            put(t,
                " L 1fff\0"
                "005e8,8",
                15);
            break;                                        /* NUL */
        case 10: puts_(t, " L 1fff0005e8,"); break;       /* no size */
        case 11: puts_(t, "I "); break;                   /* short */
        case 12: puts_(t, "I  0401ab70,3x"); break;       /* glued */
        case 13: puts_(t, "=x= not a log line"); break;   /* one '=' */
        case 14: puts_(t, " L 0401ab70,,3"); break;       /* two commas */
        case 15: puts_(t, " S 7ff000398,0000008"); break; /* 7 size digits */
        default: puts_(t, "  L 0401ab70,3"); break;       /* shifted */
    }
}

static void test_lackey_reference(void **state) {
    (void)state;
    const char *path = tmpdir_path("ref.lackey");
    for (int round = 0; round < 68; ++round) {
        text_t t = {0};
        /* Some texts span several of the parser's 256 KiB blocks. */
        const unsigned lines = round % 4 == 3 ? 40000 + below(20000) : 1 + below(3000);
        const int with_bad = round % 2;
        const unsigned bad_at = below(lines);
        for (unsigned i = 0; i < lines; ++i) {
            if (with_bad && i == bad_at) {
                put_bad(&t, (unsigned)(round / 2) % 17); /* every kind, at 2 text sizes */
            } else {
                const unsigned k = below(100);
                if (k < 90)
                    put_record(&t);
                else if (k < 94)
                    puts_(&t, "==11156== Lackey, an example Valgrind tool");
                else if (k < 96)
                    puts_(&t, "==1==");
                /* else an empty line */
            }
            const int last = i + 1 == lines;
            if (!(last && below(3) == 0)) puts_(&t, below(10) == 0 ? "\r\n" : "\n");
        }
        spit(path, t.p, t.len);
        lackey_ref_t ref;
        assert_int_equal(lackey_ref_read((const unsigned char *)t.p, t.len, &ref), 0);
        assert_true(ref.longest < 4000);
        if (with_bad) assert_true(ref.bad_line != 0);
        const char *why = lackey_ref_compare(path, &ref, 1 + below(5000));
        if (why != NULL) fail_msg("round %d (%zu bytes): %s", round, t.len, why);
        free(ref.recs);
        free(t.p);
    }
}

static void test_lackey_real(void **state) {
    (void)state;
    const char *data = getenv("SONDE_SHARED_DATA");
    char path[600];
    snprintf(path, sizeof path, "%s/gzip-gpl3.lackey.zst", data ? data : "tests/data");
    if (access(path, R_OK) != 0) skip();
    sonde_trace_reader_t *r = NULL;
    char err[512];
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_AUTO, err, sizeof err, &r),
                     SONDE_STATUS_SUCCESS);
    static sonde_memref_t m[65536];
    uint64_t counts[5] = {0, 0, 0, 0, 0};
    size_t n;
    while (sonde_trace_reader_read_shard(r, 0, m, 65536, &n) == SONDE_STATUS_SUCCESS && n > 0)
        for (size_t i = 0; i < n; ++i) counts[m[i].type]++;
    assert_string_equal(sonde_trace_reader_error(r), "");
    assert_int_equal(counts[SONDE_MEMREF_READ], 1443112);
    assert_int_equal(counts[SONDE_MEMREF_WRITE], 509816);
    assert_int_equal(counts[SONDE_MEMREF_MODIFY], 17687);
    assert_int_equal(counts[SONDE_MEMREF_READ] + counts[SONDE_MEMREF_WRITE] + counts[SONDE_MEMREF_MODIFY],
                     1970615);
    assert_int_equal(counts[SONDE_MEMREF_IFETCH], 6779579);
    assert_int_equal(counts[SONDE_MEMREF_MARKER], 0);
    sonde_trace_reader_close(r);
    /* Every record, against the reference reading of the decompressed text. */
    char cmd[1400];
    const char *plain = tmpdir_path("gzip.lackey");
    snprintf(cmd, sizeof cmd, "zstd -q -d -c '%s' > '%s'", path, plain);
    assert_int_equal(system(cmd), 0);
    size_t len = 0;
    unsigned char *text = slurp(plain, &len);
    lackey_ref_t ref;
    assert_int_equal(lackey_ref_read(text, len, &ref), 0);
    free(text);
    assert_int_equal(ref.bad_line, 0);
    assert_int_equal(ref.n, 1970615 + 6779579);
    const char *why = lackey_ref_compare(path, &ref, 65536);
    if (why != NULL) fail_msg("%s", why);
    free(ref.recs);
}

static int setup(void **state) {
    (void)state;
    return tmpdir_make("lackey");
}

static int teardown(void **state) {
    (void)state;
    return tmpdir_remove();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lackey_small),     cmocka_unit_test(test_lackey_errors),
        cmocka_unit_test(test_lackey_reference), cmocka_unit_test(test_raw64),
        cmocka_unit_test(test_lackey_real),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
