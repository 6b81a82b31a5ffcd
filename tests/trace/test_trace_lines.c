/* The line table and adding to a finished trace (sonde_trace_writer_reopen), through the public
 * API: a memref trace with a module table is reopened, given methods, lines and more records;
 * everything reads back (lines in address order with their files, string ids kept, the old
 * records then the new); the header's minor version becomes 4 also for a file of an older one;
 * an adding cut before its footer recovers every block by scanning, the added tables too; and
 * every status: a missing file, a directory, a file that is not a Sonde trace, an incomplete
 * trace, NULL arguments, too small a struct_size, an empty or wrapping range, an index out of
 * range, a closed reader. */
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

#include <sonde/trace_events.h>

#include "craft.h"
#include "scratch.h"

static sonde_memref_t ref(uint64_t i, uint64_t pc) {
    sonde_memref_t m;
    memset(&m, 0, sizeof m);
    m.address = 0x10000 + 8 * i;
    m.pc = pc;
    m.timestamp = 100 + i;
    m.type = (i & 1) ? SONDE_MEMREF_WRITE : SONDE_MEMREF_READ;
    m.size = 8;
    return m;
}

/* A memref-only trace of n records on shard 0 (chunks of 64) and one module; its string table
 * holds "main" (id 1). */
static void write_base(const char *path, uint64_t n) {
    sonde_trace_writer_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    props.chunk_records = 64;
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(path, &props, &w), SONDE_STATUS_SUCCESS);
    for (uint64_t i = 0; i < n; ++i) {
        const sonde_memref_t m = ref(i, 0x401000 + 4 * (i % 3));
        assert_int_equal(sonde_trace_writer_write(w, 0, &m, 1), SONDE_STATUS_SUCCESS);
    }
    sonde_trace_module_t mod;
    memset(&mod, 0, sizeof mod);
    mod.struct_size = sizeof mod;
    mod.path = "/opt/prog";
    mod.name = "prog";
    mod.address = 0x400000;
    mod.size = 0x3000;
    assert_int_equal(sonde_trace_writer_add_module(w, &mod), SONDE_STATUS_SUCCESS);
    uint32_t id = 0;
    assert_int_equal(sonde_trace_writer_add_string(w, "main", &id), SONDE_STATUS_SUCCESS);
    assert_int_equal(id, 1);
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);
}

static sonde_trace_line_t line_entry(uint64_t address, uint64_t size, const char *file, uint32_t line) {
    sonde_trace_line_t l;
    memset(&l, 0, sizeof l);
    l.struct_size = sizeof l;
    l.module = 0;
    l.address = address;
    l.size = size;
    l.file = file;
    l.line = line;
    l.column = line + 1;
    return l;
}

/* Reopens `path` and adds a method, three lines (out of address order, two files) and n more
 * records to shard 0. */
static void add_names(const char *path, uint64_t first, uint64_t n) {
    char error[256] = "x";
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_reopen(path, error, sizeof error, &w), SONDE_STATUS_SUCCESS);
    assert_string_equal(error, "");
    uint32_t id = 0;
    assert_int_equal(sonde_trace_writer_add_string(w, "main", &id), SONDE_STATUS_SUCCESS);
    assert_int_equal(id, 1); /* the file's own string keeps its id */
    assert_int_equal(sonde_trace_writer_add_string(w, "new text", &id), SONDE_STATUS_SUCCESS);
    assert_int_equal(id, 2);
    sonde_trace_method_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.name = "kernel";
    m.full_name = "kernel(int*)";
    m.source_file = "/src/k.c";
    m.source_line = 10;
    m.module = 0;
    m.address = 0x401000;
    m.size = 0x20;
    assert_int_equal(sonde_trace_writer_add_method(w, &m), SONDE_STATUS_SUCCESS);
    sonde_trace_line_t l = line_entry(0x401008, 1, "/src/k.c", 12);
    assert_int_equal(sonde_trace_writer_add_line(w, &l), SONDE_STATUS_SUCCESS);
    l = line_entry(0x401000, 4, "/src/k.c", 11);
    assert_int_equal(sonde_trace_writer_add_line(w, &l), SONDE_STATUS_SUCCESS);
    l = line_entry(0x401004, 4, "/src/inc/k.h", 3);
    assert_int_equal(sonde_trace_writer_add_line(w, &l), SONDE_STATUS_SUCCESS);
    for (uint64_t i = first; i < first + n; ++i) {
        const sonde_memref_t r = ref(i, 0x401008);
        assert_int_equal(sonde_trace_writer_write(w, 0, &r, 1), SONDE_STATUS_SUCCESS);
    }
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);
}

static uint32_t header_minor(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char h[64];
    assert_int_equal(fread(h, 1, sizeof h, f), sizeof h);
    fclose(f);
    assert_int_equal(craft_get_le(h + 56, 8), craft_sum64(h, 56));
    return (uint32_t)craft_get_le(h + 28, 4);
}

/* Every check of a trace after add_names(path, base, more). */
static void check_named(const char *path, uint64_t base, uint64_t more, int expect_complete) {
    char error[256] = "";
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_SONDE, error, sizeof error, &r),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(*sonde_trace_reader_warnings(r) == '\0', expect_complete);
    uint32_t n = 0;
    assert_int_equal(sonde_trace_reader_num_lines(r, &n), SONDE_STATUS_SUCCESS);
    assert_int_equal(n, 3);
    sonde_trace_line_t l;
    memset(&l, 0, sizeof l);
    l.struct_size = sizeof l;
    const uint64_t want_address[3] = {0x401000, 0x401004, 0x401008};
    const char *want_file[3] = {"/src/k.c", "/src/inc/k.h", "/src/k.c"};
    const uint32_t want_line[3] = {11, 3, 12};
    for (uint32_t i = 0; i < 3; ++i) {
        assert_int_equal(sonde_trace_reader_get_line(r, i, &l), SONDE_STATUS_SUCCESS);
        assert_int_equal(l.address, want_address[i]);
        assert_string_equal(l.file, want_file[i]);
        assert_int_equal(l.line, want_line[i]);
        assert_int_equal(l.column, want_line[i] + 1);
        assert_int_equal(l.module, 0);
    }
    assert_int_equal(l.size, 1);
    sonde_trace_event_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(sonde_trace_reader_event_info(r, &info), SONDE_STATUS_SUCCESS);
    assert_int_equal(info.num_methods, 1);
    assert_int_equal(info.num_modules, 1);
    sonde_trace_method_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    assert_int_equal(sonde_trace_reader_get_method(r, 0, &m), SONDE_STATUS_SUCCESS);
    assert_string_equal(m.full_name, "kernel(int*)");
    assert_int_equal(m.address, 0x401000);
    sonde_trace_module_t mod;
    memset(&mod, 0, sizeof mod);
    mod.struct_size = sizeof mod;
    assert_int_equal(sonde_trace_reader_get_module(r, 0, &mod), SONDE_STATUS_SUCCESS);
    assert_string_equal(mod.path, "/opt/prog");
    const char *text = NULL;
    assert_int_equal(sonde_trace_reader_get_string(r, 1, &text), SONDE_STATUS_SUCCESS);
    assert_string_equal(text, "main");
    assert_int_equal(sonde_trace_reader_get_string(r, 2, &text), SONDE_STATUS_SUCCESS);
    assert_string_equal(text, "new text");
    /* The old records, then the added ones, in order. */
    sonde_memref_t batch[100];
    size_t got = 0;
    uint64_t i = 0;
    while (sonde_trace_reader_read_shard(r, 0, batch, 100, &got) == SONDE_STATUS_SUCCESS && got > 0)
        for (size_t k = 0; k < got; ++k, ++i) {
            assert_int_equal(batch[k].address, ref(i, 0).address);
            assert_int_equal(batch[k].pc, i < base ? 0x401000 + 4 * (i % 3) : 0x401008);
        }
    assert_int_equal(i, base + more);
    sonde_trace_reader_close(r);
}

static void test_reopen_round_trip(void **state) {
    (void)state;
    const char *path = scratch_path("named.sonde");
    write_base(path, 300);
    add_names(path, 300, 70);
    assert_int_equal(header_minor(path), 4);
    check_named(path, 300, 70, 1);
    /* A second adding keeps what the first wrote. */
    char error[256];
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_reopen(path, error, sizeof error, &w), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);
    check_named(path, 300, 70, 1);
}

/* A file of an older minor version (1: memrefs and tables, no line table) takes the writer's. */
static void test_reopen_older_minor(void **state) {
    (void)state;
    const char *path = scratch_path("minor1.sonde");
    write_base(path, 100);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    unsigned char h[64];
    assert_int_equal(fread(h, 1, sizeof h, f), sizeof h);
    h[28] = 1;
    const uint64_t sum = craft_sum64(h, 56);
    for (int i = 0; i < 8; ++i) h[56 + i] = (unsigned char)(sum >> (8 * i));
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    assert_int_equal(fwrite(h, 1, sizeof h, f), sizeof h);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(header_minor(path), 1);
    add_names(path, 100, 5);
    assert_int_equal(header_minor(path), 4);
    check_named(path, 100, 5, 1);
}

/* An adding cut before its footer: the scan recovers the old blocks and the added ones. */
static void test_reopen_cut(void **state) {
    (void)state;
    const char *path = scratch_path("cut.sonde");
    write_base(path, 200);
    add_names(path, 200, 10);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size - 32), 0); /* no footer */
    check_named(path, 200, 10, 0);
}

static void test_statuses(void **state) {
    (void)state;
    char error[256];
    sonde_trace_writer_t *w = (sonde_trace_writer_t *)1;
    assert_int_equal(sonde_trace_writer_reopen(NULL, error, sizeof error, &w),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_null(w);
    assert_int_equal(sonde_trace_writer_reopen("x", error, sizeof error, NULL),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_writer_reopen(scratch_path("missing.sonde"), error, sizeof error, &w),
                     SONDE_STATUS_ERROR_IO);
    assert_non_null(strstr(error, "missing.sonde"));
    assert_int_equal(sonde_trace_writer_reopen(g_scratch_dir, error, sizeof error, &w),
                     SONDE_STATUS_ERROR_IO);
    assert_non_null(strstr(error, "not a regular file"));
    const char *text = scratch_path("text.sonde");
    FILE *f = fopen(text, "w");
    assert_non_null(f);
    fputs("this is not a trace, but it is longer than a header of sixty-four bytes\n", f);
    fclose(f);
    assert_int_equal(sonde_trace_writer_reopen(text, error, sizeof error, &w), SONDE_STATUS_ERROR_FORMAT);
    assert_non_null(strstr(error, "bad magic"));
    /* Incomplete: a trace without its footer has no index to extend. */
    const char *cut = scratch_path("incomplete.sonde");
    write_base(cut, 200);
    struct stat st;
    assert_int_equal(stat(cut, &st), 0);
    assert_int_equal(truncate(cut, st.st_size - 32), 0);
    assert_int_equal(sonde_trace_writer_reopen(cut, error, sizeof error, &w), SONDE_STATUS_ERROR_FORMAT);
    assert_non_null(strstr(error, "only a complete trace"));
    assert_null(w);

    const char *path = scratch_path("statuses.sonde");
    write_base(path, 10);
    assert_int_equal(sonde_trace_writer_reopen(path, NULL, 0, &w), SONDE_STATUS_SUCCESS);
    sonde_trace_line_t l = line_entry(0x1000, 0, "a.c", 1);
    assert_int_equal(sonde_trace_writer_add_line(w, &l), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    l = line_entry(UINT64_MAX, 2, "a.c", 1);
    assert_int_equal(sonde_trace_writer_add_line(w, &l), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    l = line_entry(UINT64_MAX, 1, "a.c", 1);
    assert_int_equal(sonde_trace_writer_add_line(w, &l), SONDE_STATUS_SUCCESS);
    l = line_entry(0x1000, 1, NULL, 1);
    assert_int_equal(sonde_trace_writer_add_line(w, &l), SONDE_STATUS_ERROR_NULL_POINTER);
    l = line_entry(0x1000, 1, "a.c", 1);
    l.struct_size = 8;
    assert_int_equal(sonde_trace_writer_add_line(w, &l), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    assert_int_equal(sonde_trace_writer_add_line(NULL, &l), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_writer_add_line(w, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);

    char err[256];
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_SONDE, err, sizeof err, &r),
                     SONDE_STATUS_SUCCESS);
    uint32_t n = 0;
    assert_int_equal(sonde_trace_reader_num_lines(r, &n), SONDE_STATUS_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(sonde_trace_reader_num_lines(r, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_num_lines(NULL, &n), SONDE_STATUS_ERROR_NULL_POINTER);
    memset(&l, 0, sizeof l);
    l.struct_size = sizeof l;
    assert_int_equal(sonde_trace_reader_get_line(r, 0, &l), SONDE_STATUS_SUCCESS);
    assert_int_equal(l.address, UINT64_MAX);
    assert_string_equal(l.file, "a.c");
    assert_int_equal(sonde_trace_reader_get_line(r, 1, &l), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_reader_get_line(r, 0, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    l.struct_size = 16;
    assert_int_equal(sonde_trace_reader_get_line(r, 0, &l), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    assert_int_equal(sonde_trace_reader_close(r), SONDE_STATUS_SUCCESS);
    l.struct_size = sizeof l;
    assert_int_equal(sonde_trace_reader_num_lines(r, &n), SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(sonde_trace_reader_get_line(r, 0, &l), SONDE_STATUS_ERROR_ILLEGAL_ID);

    /* A trace without a line table: no lines. */
    write_base(path, 10);
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_SONDE, err, sizeof err, &r),
                     SONDE_STATUS_SUCCESS);
    n = 9;
    assert_int_equal(sonde_trace_reader_num_lines(r, &n), SONDE_STATUS_SUCCESS);
    assert_int_equal(n, 0);
    sonde_trace_reader_close(r);
}

static int setup(void **state) {
    (void)state;
    return scratch_setup("sonde-lines");
}

static int teardown(void **state) {
    (void)state;
    return scratch_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reopen_round_trip),
        cmocka_unit_test(test_reopen_older_minor),
        cmocka_unit_test(test_reopen_cut),
        cmocka_unit_test(test_statuses),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
