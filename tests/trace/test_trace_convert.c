/* `sonde convert` (sonde_cli_convert from src/cli/convert.h): lackey, raw64 and DynamoRIO
 * drmemtrace inputs (a directory of thread files, a zip, a plain file) to Sonde traces that read
 * back identically, record for record and shard for shard, every 1.2 kind and marker kept; its failures (missing input, bad line, bad options)
 * as exit statuses; and that it never destroys data: an output that is the input (also through
 * a symbolic or a hard link) is refused, an existing output is replaced only with --force and
 * only by a complete trace, a failed conversion leaves no output and no temporary file, and
 * --strict refuses an incomplete input. */
#include <dirent.h>
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

/* Like tmp_path, into the caller's buffer of 512 bytes (tmp_path reuses 4 buffers). */
static void make_path(char *buf, const char *name) { snprintf(buf, 512, "%s/%s", g_dir, name); }

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
    assert_int_equal(convert(raw, "-o", out, "--chunk-records", "7", NULL), 2); /* exists */
    assert_int_equal(convert(raw, "-o", out, "--chunk-records", "7", "--force"), 0);
    sonde_memref_t c[301];
    assert_int_equal(read_all(out, SONDE_TRACE_FORMAT_SONDE, c, 301), 300);
    for (int i = 0; i < 300; ++i) {
        assert_int_equal(c[i].address, addrs[i]);
        assert_int_equal(c[i].type, SONDE_MEMREF_READ);
        assert_int_equal(c[i].size, 8);
    }
}

/* Whether `path` exists. */
static int exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* The number of entries of g_dir whose name starts with a dot (temporary files), "." and ".."
 * aside. */
static int hidden_files(void) {
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) ++n;
    closedir(d);
    return n;
}

static size_t slurp(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    const size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

static void test_convert_failures(void **state) {
    (void)state;
    const char *out = tmp_path("fail.sonde");
    assert_int_equal(convert(tmp_path("missing.lackey"), "-o", out, NULL, NULL, NULL), 2);
    static const char bad[] = "I  10,4\n Q 20,8\n";
    const char *in = tmp_path("bad.lackey");
    spit(in, bad, strlen(bad));
    /* A bad line: exit 1, and neither the output nor a temporary file is left. */
    assert_int_equal(convert(in, "-o", out, NULL, NULL, NULL), 1);
    assert_false(exists(out));
    assert_int_equal(hidden_files(), 0);
    assert_int_equal(convert(in, "-o", "/nonexistent-dir/x.sonde", NULL, NULL, NULL), 2);
    assert_int_equal(convert(in, "--format", "gzip", "-o", out, NULL), 2);
    assert_int_equal(convert(in, NULL, NULL, NULL, NULL, NULL), 2); /* -o is required */
    assert_int_equal(convert(in, "-o", out, "--level", "40", NULL), 2);
    assert_int_equal(convert(in, "-o", out, "--level", "-1", NULL), 2);
    assert_int_equal(convert(in, "-o", out, "--chunk-records", "0", NULL), 2);
    assert_int_equal(convert(in, "-o", g_dir, NULL, NULL, NULL), 2); /* a directory */
    assert_int_equal(convert("--help", NULL, NULL, NULL, NULL, NULL), 0);
    assert_int_equal(convert("--version", NULL, NULL, NULL, NULL, NULL), 0);
    assert_false(exists(out));
}

/* `sonde convert IN -o IN` used to truncate its input before reading it. */
static void test_convert_refuses_its_input_as_output(void **state) {
    (void)state;
    static const char text[] = "I  0401ab70,3\n L 04022f00,4\n";
    char in[512];
    make_path(in, "self.lackey");
    spit(in, text, strlen(text));
    char sym[512];
    make_path(sym, "self-link.sonde");
    char hard[512];
    make_path(hard, "self-hard.sonde");
    assert_int_equal(symlink(in, sym), 0);
    assert_int_equal(link(in, hard), 0);
    assert_int_equal(convert(in, "-o", in, NULL, NULL, NULL), 2);
    assert_int_equal(convert(in, "-o", in, "--force", NULL, NULL), 2);
    assert_int_equal(convert(in, "-o", sym, "--force", NULL, NULL), 2);
    assert_int_equal(convert(in, "-o", hard, "--force", NULL, NULL), 2);
    assert_int_equal(convert(sym, "-o", in, "--force", NULL, NULL), 2);
    char buf[256];
    assert_int_equal(slurp(in, buf, sizeof buf), strlen(text));
    assert_memory_equal(buf, text, strlen(text));
    assert_int_equal(hidden_files(), 0);
}

/* An existing output: refused without --force and left alone; replaced with --force, keeping
 * its permissions; kept as it was when the conversion fails; a new output gets 0644 less the
 * umask. */
static void test_convert_existing_output(void **state) {
    (void)state;
    static const char text[] = "I  0401ab70,3\n L 04022f00,4\n";
    char in[512];
    make_path(in, "good.lackey");
    spit(in, text, strlen(text));
    char out[512];
    make_path(out, "existing.sonde");
    spit(out, "precious", 8);
    assert_int_equal(chmod(out, 0600), 0);
    char buf[64];
    assert_int_equal(convert(in, "-o", out, NULL, NULL, NULL), 2);
    assert_int_equal(slurp(out, buf, sizeof buf), 8);
    assert_memory_equal(buf, "precious", 8);

    static const char bad[] = "I  10,4\n Q 20,8\n";
    char bad_in[512];
    make_path(bad_in, "bad2.lackey");
    spit(bad_in, bad, strlen(bad));
    assert_int_equal(convert(bad_in, "-o", out, "--force", NULL, NULL), 1);
    assert_int_equal(slurp(out, buf, sizeof buf), 8);
    assert_memory_equal(buf, "precious", 8);
    assert_int_equal(hidden_files(), 0);

    assert_int_equal(convert(in, "-o", out, "--force", NULL, NULL), 0);
    sonde_memref_t m[4];
    assert_int_equal(read_all(out, SONDE_TRACE_FORMAT_SONDE, m, 4), 2);
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    /* Through a symbolic link: the target is replaced, the link stays. */
    char target[512];
    make_path(target, "target.sonde");
    char sym[512];
    make_path(sym, "to-target.sonde");
    spit(target, "old", 3);
    assert_int_equal(symlink(target, sym), 0);
    assert_int_equal(convert(in, "-o", sym, "--force", NULL, NULL), 0);
    assert_int_equal(lstat(sym, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(read_all(target, SONDE_TRACE_FORMAT_SONDE, m, 4), 2);

    const mode_t old_mask = umask(027);
    char fresh[512];
    make_path(fresh, "fresh.sonde");
    assert_int_equal(convert(in, "-o", fresh, NULL, NULL, NULL), 0);
    umask(old_mask);
    assert_int_equal(stat(fresh, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_int_equal(hidden_files(), 0);
}

/* A truncated Sonde trace: converted with a warning (the complete chunks), refused by --strict
 * with no output written. */
static void test_convert_strict(void **state) {
    (void)state;
    uint64_t addrs[1000];
    for (int i = 0; i < 1000; ++i) addrs[i] = 0x1000 + (uint64_t)i * 64;
    char raw[512];
    make_path(raw, "strict.raw64");
    spit(raw, addrs, sizeof addrs);
    char full[512];
    make_path(full, "strict-full.sonde");
    assert_int_equal(convert(raw, "-o", full, "--chunk-records", "100", NULL), 0);
    struct stat st;
    assert_int_equal(stat(full, &st), 0);
    assert_int_equal(truncate(full, st.st_size - 40), 0); /* no footer any more */
    char out[512];
    make_path(out, "strict-out.sonde");
    assert_int_equal(convert(full, "-o", out, "--strict", NULL, NULL), 1);
    assert_false(exists(out));
    assert_int_equal(hidden_files(), 0);
    assert_int_equal(convert(full, "-o", out, NULL, NULL, NULL), 0);
    sonde_memref_t m[1001];
    assert_int_equal(read_all(out, SONDE_TRACE_FORMAT_SONDE, m, 1001), 1000);
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

/* Every shard of `a` and `b` holds the same records (shard ids aside); returns the total. */
static uint64_t same_records(const char *a, uint32_t fa, const char *b, uint32_t fb) {
    sonde_trace_reader_t *ra = NULL, *rb = NULL;
    assert_int_equal(sonde_trace_reader_open(a, fa, NULL, 0, &ra), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_trace_reader_open(b, fb, NULL, 0, &rb), SONDE_STATUS_SUCCESS);
    uint32_t na = 0, nb = 0;
    assert_int_equal(sonde_trace_reader_num_shards(ra, &na), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_trace_reader_num_shards(rb, &nb), SONDE_STATUS_SUCCESS);
    assert_int_equal(na, nb);
    enum { kBatch = 4096 };
    sonde_memref_t *ma = malloc(kBatch * sizeof *ma), *mb = malloc(kBatch * sizeof *mb);
    assert_non_null(ma);
    assert_non_null(mb);
    uint64_t total = 0;
    for (uint32_t s = 0; s < na; ++s) {
        size_t ka = 0, kb = 0, ia = 0, ib = 0;
        for (;;) {
            if (ia == ka) {
                assert_int_equal(sonde_trace_reader_read_shard(ra, s, ma, kBatch, &ka), SONDE_STATUS_SUCCESS);
                ia = 0;
            }
            if (ib == kb) {
                assert_int_equal(sonde_trace_reader_read_shard(rb, s, mb, kBatch, &kb), SONDE_STATUS_SUCCESS);
                ib = 0;
            }
            if (ka == 0 || kb == 0) break;
            for (; ia < ka && ib < kb; ++ia, ++ib, ++total) {
                const sonde_memref_t *x = &ma[ia], *y = &mb[ib];
                if (x->address != y->address || x->pc != y->pc || x->timestamp != y->timestamp ||
                    x->type != y->type || x->size != y->size)
                    fail_msg("shard %u record %llu differs: type %u/%u size %u/%u address %llx/%llx", s,
                             (unsigned long long)total, x->type, y->type, x->size, y->size,
                             (unsigned long long)x->address, (unsigned long long)y->address);
            }
        }
        assert_int_equal(ka, 0);
        assert_int_equal(kb, 0);
    }
    free(ma);
    free(mb);
    sonde_trace_reader_close(ra);
    sonde_trace_reader_close(rb);
    return total;
}

static void test_convert_drmemtrace(void **state) {
    (void)state;
    static const char *const inputs[] = {
        "core_serial/drmemtrace.threadsig.x64.tracedir",  /* version 7, 9 thread files */
        "drcacheoff.cpu/drmemtrace.simple_app.trace.zip", /* version 4, one zip */
        "reuse_offline/drmemtrace.small.x64.trace",       /* version 1, plain */
    };
    static const uint64_t records[] = {974910, 0, 0};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; ++i) {
        char in[768], out[512];
        snprintf(in, sizeof in, "%s/drmemtrace/%s", getenv("SONDE_SHARED_DATA"), inputs[i]);
        make_path(out, "dr.sonde");
        unlink(out);
        const char *format = i == 1 ? "drmemtrace" : "auto";
        assert_int_equal(convert(in, "-o", out, "--format", format, NULL), 0);
        const uint64_t n = same_records(in, SONDE_TRACE_FORMAT_AUTO, out, SONDE_TRACE_FORMAT_SONDE);
        if (records[i] != 0) assert_int_equal(n, records[i]);
        assert_true(n > 200);
        unlink(out);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convert_lackey_and_raw64),
        cmocka_unit_test(test_convert_failures),
        cmocka_unit_test(test_convert_refuses_its_input_as_output),
        cmocka_unit_test(test_convert_existing_output),
        cmocka_unit_test(test_convert_strict),
        cmocka_unit_test(test_convert_drmemtrace),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
