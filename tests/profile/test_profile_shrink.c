/* A shared profile buffer whose file is cut under its mappings: every call that touches the
 * region answers SONDE_STATUS_ERROR_FORMAT instead of dying with SIGBUS, in the creating
 * process and in a process that opened the file; a memfd buffer refuses to shrink. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/profile.h>

#define RECORDS 4
#define BUCKETS 2

typedef struct fixture_t {
    char dir[64];
    char path[128];
    sonde_profile_buffer_t *creator, *reader;
    sonde_profile_array_t *carr, *rarr;
} fixture_t;

static void make_fixture(fixture_t *f) {
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/sonde-profile-cut-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/counters.prof", f->dir);
    assert_int_equal(sonde_profile_buffer_create_shared(f->path, 1 << 16, &f->creator), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_create(16, RECORDS, BUCKETS, 64, &f->carr), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_allocate(f->carr, f->creator), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_initialize(f->carr, f->creator), SONDE_STATUS_SUCCESS);
    const uint64_t rec[2] = {7, 0};
    assert_int_equal(sonde_profile_array_write(f->carr, f->creator, rec, 1, 1, 0), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_buffer_open_shared(f->path, &f->reader), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_open(f->reader, 0, &f->rarr), SONDE_STATUS_SUCCESS);
    uint64_t sum = 0;
    assert_int_equal(sonde_profile_array_sum_u64(f->rarr, f->reader, 1, 0, &sum), SONDE_STATUS_SUCCESS);
    assert_int_equal(sum, 7);
}

static void free_fixture(fixture_t *f) {
    sonde_profile_array_destroy(f->rarr);
    sonde_profile_array_destroy(f->carr);
    sonde_profile_buffer_destroy(f->reader);
    sonde_profile_buffer_destroy(f->creator);
    unlink(f->path);
    rmdir(f->dir);
}

/* Every call of one array/buffer pair that touches the region answers `expect`. */
static void check_calls(sonde_profile_array_t *arr, sonde_profile_buffer_t *pb, sonde_status_t expect) {
    uint64_t recs[RECORDS * 2] = {0};
    uint64_t snap[BUCKETS * 64 / 8];
    uint64_t sum = 99, emitted = 99;
    void *ptr = NULL;
    uint32_t n = 99;
    sonde_profile_view_t v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    const sonde_buffer_id_t none = {0};
    assert_int_equal(sonde_profile_array_read(arr, pb, recs, 0, RECORDS, 0), expect);
    assert_int_equal(sonde_profile_array_write(arr, pb, recs, 0, RECORDS, 1), expect);
    assert_int_equal(sonde_profile_array_initialize(arr, pb), expect);
    assert_int_equal(sonde_profile_array_sum_u64(arr, pb, 0, 0, &sum), expect);
    assert_int_equal(sonde_profile_array_snapshot(arr, pb, snap, sizeof snap), expect);
    assert_int_equal(sonde_profile_array_emit(arr, pb, none, 0, &emitted), expect);
    assert_int_equal(emitted, 0);
    assert_int_equal(sonde_profile_array_view(arr, pb, &v), expect);
    assert_int_equal(sonde_profile_array_thread_record(arr, pb, 0, &ptr), expect);
    assert_int_equal(sonde_profile_buffer_num_arrays(pb, &n), expect);
    if (expect != SONDE_STATUS_SUCCESS) {
        assert_int_equal(sum, 99);
        assert_null(ptr);
        assert_int_equal(n, 99);
    }
}

static void check_both(fixture_t *f, sonde_status_t expect) {
    check_calls(f->carr, f->creator, expect);
    check_calls(f->rarr, f->reader, expect);
    for (int i = 0; i < 2; ++i) {
        sonde_profile_array_t *again = NULL;
        assert_int_equal(sonde_profile_array_open(i == 0 ? f->reader : f->creator, 0, &again), expect);
        assert_true((again != NULL) == (expect == SONDE_STATUS_SUCCESS));
        sonde_profile_array_destroy(again);
    }
    sonde_profile_array_t *more = NULL;
    assert_int_equal(sonde_profile_array_create(8, 1, 1, 64, &more), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_allocate(more, f->creator), expect);
    assert_int_equal(sonde_profile_array_is_allocated(more), expect == SONDE_STATUS_SUCCESS);
    sonde_profile_array_destroy(more);
}

/* Cut to the header only: the arrays are gone, the header is still mapped. */
static void test_cut_arrays(void **state) {
    (void)state;
    fixture_t f;
    make_fixture(&f);
    check_both(&f, SONDE_STATUS_SUCCESS);
    assert_int_equal(truncate(f.path, SONDE_PROFILE_SHARED_HEADER_SIZE), 0);
    check_both(&f, SONDE_STATUS_ERROR_FORMAT);
    /* Sizes and pointers that need no access still answer. */
    assert_int_equal(sonde_profile_buffer_size(f.reader), 1 << 16);
    assert_non_null(sonde_profile_buffer_data(f.creator));
    free_fixture(&f);
}

/* Cut to nothing: not even the header may be read. */
static void test_cut_everything(void **state) {
    (void)state;
    fixture_t f;
    make_fixture(&f);
    assert_int_equal(truncate(f.path, 0), 0);
    check_both(&f, SONDE_STATUS_ERROR_FORMAT);
    sonde_profile_buffer_t *late = NULL;
    assert_int_equal(sonde_profile_buffer_open_shared(f.path, &late), SONDE_STATUS_ERROR_FORMAT);
    assert_null(late);
    free_fixture(&f);
}

/* Cut and grown back to the old size: no fault any more, but the pages (header included)
 * are zero, so the buffer is refused rather than read as counters that were reset. */
static void test_cut_and_regrown(void **state) {
    (void)state;
    fixture_t f;
    make_fixture(&f);
    struct stat st;
    assert_int_equal(stat(f.path, &st), 0);
    assert_int_equal(truncate(f.path, 0), 0);
    assert_int_equal(truncate(f.path, st.st_size), 0);
    check_both(&f, SONDE_STATUS_ERROR_FORMAT);
    free_fixture(&f);
}

/* Growing the file is harmless: every call goes on. */
static void test_grown(void **state) {
    (void)state;
    fixture_t f;
    make_fixture(&f);
    struct stat st;
    assert_int_equal(stat(f.path, &st), 0);
    assert_int_equal(truncate(f.path, st.st_size + 8192), 0);
    check_both(&f, SONDE_STATUS_SUCCESS);
    free_fixture(&f);
}

/* A memfd buffer is sealed against shrinking, through its own descriptor and through another
 * open of /proc/PID/fd/N; it may still grow. */
static void test_memfd_sealed(void **state) {
    (void)state;
    sonde_profile_buffer_t *pb = NULL;
    sonde_profile_array_t *arr = NULL;
    assert_int_equal(sonde_profile_buffer_create_shared(NULL, 1 << 16, &pb), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_create(16, RECORDS, BUCKETS, 64, &arr), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_allocate(arr, pb), SONDE_STATUS_SUCCESS);
    int fd = -1;
    assert_int_equal(sonde_profile_buffer_fd(pb, &fd), SONDE_STATUS_SUCCESS);
    const int seals = fcntl(fd, F_GET_SEALS);
    assert_true(seals >= 0);
    assert_true((seals & F_SEAL_SHRINK) != 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(ftruncate(fd, 0), -1);
    assert_int_equal(errno, EPERM);
    assert_int_equal(ftruncate(fd, st.st_size - 1), -1);
    assert_int_equal(errno, EPERM);

    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)getpid(), fd);
    const int other = open(path, O_RDWR | O_CLOEXEC);
    assert_true(other >= 0);
    assert_int_equal(ftruncate(other, SONDE_PROFILE_SHARED_HEADER_SIZE), -1);
    assert_int_equal(errno, EPERM);
    assert_int_equal(ftruncate(other, st.st_size + 4096), 0);
    close(other);

    check_calls(arr, pb, SONDE_STATUS_SUCCESS);
    sonde_profile_array_destroy(arr);
    sonde_profile_buffer_destroy(pb);
}

/* Buffers that are not shared have no file to check. */
static void test_owned_unaffected(void **state) {
    (void)state;
    sonde_profile_buffer_t *pb = NULL;
    sonde_profile_array_t *arr = NULL;
    assert_int_equal(sonde_profile_buffer_create(1 << 16, &pb), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_create(16, RECORDS, BUCKETS, 64, &arr), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_allocate(arr, pb), SONDE_STATUS_SUCCESS);
    uint64_t recs[RECORDS * 2] = {0};
    uint64_t snap[BUCKETS * 64 / 8], sum = 0;
    assert_int_equal(sonde_profile_array_read(arr, pb, recs, 0, RECORDS, 0), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_snapshot(arr, pb, snap, sizeof snap), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_profile_array_sum_u64(arr, pb, 0, 0, &sum), SONDE_STATUS_SUCCESS);
    sonde_profile_array_destroy(arr);
    sonde_profile_buffer_destroy(pb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_arrays),      cmocka_unit_test(test_cut_everything),
        cmocka_unit_test(test_cut_and_regrown), cmocka_unit_test(test_grown),
        cmocka_unit_test(test_memfd_sealed),    cmocka_unit_test(test_owned_unaffected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
