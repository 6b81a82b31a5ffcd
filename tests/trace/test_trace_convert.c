/* `sonde convert` (sonde_cli_convert from src/cli/convert.h): lackey and raw64 inputs to
 * Sonde traces that read back identically, and its failures (missing input, bad line, bad
 * options) as exit statuses. */
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

#include "cli/convert.h"

static char g_dir[256];

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int slot;
    char *p = buf[slot++ & 3];
    snprintf(p, 512, "%s/%s", g_dir, name);
    return p;
}

static void spit(const char *path, const void *d, size_t size) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, size, f), size);
    fclose(f);
}

static int convert(const char *a1, const char *a2, const char *a3, const char *a4, const char *a5,
                   const char *a6) {
    char *argv[8] = {(char *)"convert", (char *)a1, (char *)a2, (char *)a3,
                     (char *)a4,        (char *)a5, (char *)a6, NULL};
    int argc = 1;
    while (argc < 7 && argv[argc] != NULL) ++argc;
    return sonde_cli_convert(argc, argv);
}

static size_t read_all(const char *path, uint32_t format, sonde_memref_t *out, size_t cap) {
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, format, NULL, 0, &r), SONDE_STATUS_SUCCESS);
    size_t total = 0, n;
    while (total < cap &&
           sonde_trace_reader_read_shard(r, 0, out + total, cap - total, &n) == SONDE_STATUS_SUCCESS && n > 0)
        total += n;
    assert_string_equal(sonde_trace_reader_error(r), "");
    sonde_trace_reader_close(r);
    return total;
}

static void test_convert_lackey_and_raw64(void **state) {
    (void)state;
    static const char text[] =
        "==1== log\nI  0401ab70,3\n S 1fff0005e8,8\nI  0401b770,1\n L 04022f00,4\n M 7ff000398,16\n";
    const char *in = tmp_path("in.lackey");
    spit(in, text, strlen(text));
    const char *out = tmp_path("out.sonde");
    assert_int_equal(convert(in, "--format", "lackey", "-o", out, NULL), 0);
    sonde_memref_t a[16], b[16];
    assert_int_equal(read_all(in, SONDE_TRACE_FORMAT_LACKEY, a, 16), 5);
    assert_int_equal(read_all(out, SONDE_TRACE_FORMAT_AUTO, b, 16), 5);
    assert_memory_equal(a, b, 5 * sizeof a[0]);

    uint64_t addrs[300];
    for (int i = 0; i < 300; ++i) addrs[i] = 0x1000 + (uint64_t)i * 64;
    const char *raw = tmp_path("in.raw64");
    spit(raw, addrs, sizeof addrs);
    assert_int_equal(convert(raw, "-o", out, "--chunk-records", "7", NULL), 0);
    sonde_memref_t c[301];
    assert_int_equal(read_all(out, SONDE_TRACE_FORMAT_SONDE, c, 301), 300);
    for (int i = 0; i < 300; ++i) {
        assert_int_equal(c[i].address, addrs[i]);
        assert_int_equal(c[i].type, SONDE_MEMREF_READ);
        assert_int_equal(c[i].size, 8);
    }
}

static void test_convert_failures(void **state) {
    (void)state;
    const char *out = tmp_path("fail.sonde");
    assert_int_equal(convert(tmp_path("missing.lackey"), "-o", out, NULL, NULL, NULL), 1);
    static const char bad[] = "I  10,4\n Q 20,8\n";
    const char *in = tmp_path("bad.lackey");
    spit(in, bad, strlen(bad));
    assert_int_equal(convert(in, "-o", out, NULL, NULL, NULL), 1);
    assert_int_equal(convert(in, "-o", "/nonexistent-dir/x.sonde", NULL, NULL, NULL), 1);
    assert_int_not_equal(convert(in, "--format", "gzip", "-o", out, NULL), 0);
    assert_int_not_equal(convert(in, NULL, NULL, NULL, NULL, NULL), 0); /* -o is required */
    assert_int_not_equal(convert(in, "-o", out, "--level", "40", NULL), 0);
    assert_int_equal(convert("--help", NULL, NULL, NULL, NULL, NULL), 0);
}

static int setup(void **state) {
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/sonde-convert-XXXXXX", tmp ? tmp : "/tmp");
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
        cmocka_unit_test(test_convert_lackey_and_raw64),
        cmocka_unit_test(test_convert_failures),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
