/* Profile arrays: geometry, buffers (owned, caller memory, caller allocator, shared files and
 * memfds), allocation, read/write/initialize, record offsets, views and inline helpers, sums,
 * snapshots, and every precondition that has a status. Single-threaded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/profile.h>

#define OK SONDE_STATUS_SUCCESS
#define INVALID SONDE_STATUS_ERROR_INVALID_ARGUMENT
#define NULLPTR SONDE_STATUS_ERROR_NULL_POINTER
#define PHASE SONDE_STATUS_ERROR_PHASE_FAILURE

static sonde_profile_array_t *make_array(uint32_t rs, uint32_t nr, uint32_t nb, uint32_t al) {
    sonde_profile_array_t *a = NULL;
    assert_int_equal(sonde_profile_array_create(rs, nr, nb, al, &a), OK);
    assert_non_null(a);
    return a;
}

static sonde_profile_buffer_t *make_buffer(uint64_t size) {
    sonde_profile_buffer_t *pb = NULL;
    assert_int_equal(sonde_profile_buffer_create(size, &pb), OK);
    assert_non_null(pb);
    return pb;
}

/* A temporary directory for shared files; removed with its files by cleanup_dir. */
static char g_dir[64];

static const char *tmp_path(const char *name) {
    static char path[128];
    if (g_dir[0] == 0) {
        snprintf(g_dir, sizeof g_dir, "/tmp/sonde-profile-XXXXXX");
        assert_non_null(mkdtemp(g_dir));
    }
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    return path;
}

static void write_file(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (size > 0) assert_int_equal(fwrite(data, 1, size, f), size);
    fclose(f);
}

static void test_geometry(void **state) {
    (void)state;
    sonde_profile_array_t *a = make_array(12, 10, 3, 64);
    assert_int_equal(sonde_profile_array_record_size(a), 12);
    assert_int_equal(sonde_profile_array_num_records(a), 10);
    assert_int_equal(sonde_profile_array_num_thread_buckets(a), 4); /* rounded up */
    assert_int_equal(sonde_profile_array_chunk_size(a), 128);       /* 120 -> 128 */
    assert_int_equal(sonde_profile_array_size(a), 512);
    assert_true(sonde_profile_array_offset(a) == SONDE_PROFILE_OFFSET_NONE);
    assert_false(sonde_profile_array_is_allocated(a));
    sonde_profile_array_destroy(a);

    a = make_array(8, 1, SONDE_PROFILE_DEFAULT_THREAD_BUCKETS, SONDE_PROFILE_DEFAULT_ALIGNMENT);
    assert_int_equal(sonde_profile_array_num_thread_buckets(a), 1);
    assert_int_equal(sonde_profile_array_chunk_size(a), 64);
    sonde_profile_array_destroy(a);

    a = make_array(8, 1, 1, 8); /* tiny alignment still gives a whole cache line */
    assert_int_equal(sonde_profile_array_chunk_size(a), 64);
    assert_int_equal(sonde_profile_array_num_thread_buckets(a), 1);
    sonde_profile_array_destroy(a);

    a = make_array(8, 40, 2, 256);
    assert_int_equal(sonde_profile_array_chunk_size(a), 512);
    assert_int_equal(sonde_profile_array_size(a), 1024);
    sonde_profile_array_destroy(a);

    a = make_array(64, 4, 8, 64); /* exact multiple: no padding */
    assert_int_equal(sonde_profile_array_chunk_size(a), 256);
    assert_int_equal(sonde_profile_array_num_thread_buckets(a), 8);
    sonde_profile_array_destroy(a);

    a = make_array(1, 1, 40000, SONDE_PROFILE_MAX_ALIGNMENT);
    assert_int_equal(sonde_profile_array_num_thread_buckets(a), SONDE_PROFILE_MAX_THREAD_BUCKETS);
    assert_int_equal(sonde_profile_array_chunk_size(a), SONDE_PROFILE_MAX_ALIGNMENT);
    sonde_profile_array_destroy(a);
}

static void test_create_preconditions(void **state) {
    (void)state;
    sonde_profile_array_t *a = (sonde_profile_array_t *)0x1;
    assert_int_equal(sonde_profile_array_create(8, 1, 1, 64, NULL), NULLPTR);
    assert_int_equal(sonde_profile_array_create(0, 1, 1, 64, &a), INVALID);
    assert_int_equal(sonde_profile_array_create(8, 0, 1, 64, &a), INVALID);
    assert_int_equal(sonde_profile_array_create(8, 1, 0, 64, &a), INVALID);
    assert_int_equal(sonde_profile_array_create(8, 1, 1, 0, &a), INVALID);
    assert_int_equal(sonde_profile_array_create(8, 1, 1, 3, &a), INVALID);
    assert_int_equal(sonde_profile_array_create(8, 1, 1, 48, &a), INVALID);
    assert_int_equal(sonde_profile_array_create(8, 1, 1, SONDE_PROFILE_MAX_ALIGNMENT * 2, &a), INVALID);
    assert_int_equal(sonde_profile_array_create(8, 1, SONDE_PROFILE_MAX_THREAD_BUCKETS + 1, 64, &a), INVALID);
    assert_int_equal(sonde_profile_array_create(8, 1, UINT32_MAX, 64, &a), INVALID);
    /* chunk size overflow: 2^20 * 2^13 = 2^33 bytes per chunk */
    assert_int_equal(sonde_profile_array_create(1u << 20, 1u << 13, 1, 64, &a), INVALID);
    assert_int_equal(sonde_profile_array_create(UINT32_MAX, UINT32_MAX, 1, 64, &a), INVALID);
    /* nothing was written on failure */
    assert_ptr_equal(a, (sonde_profile_array_t *)0x1);
    /* just below the limit: 2^32 - 64 bytes */
    assert_int_equal(sonde_profile_array_create(64, (1u << 26) - 1, 1, 64, &a), OK);
    assert_int_equal(sonde_profile_array_chunk_size(a), UINT32_MAX - 63);
    sonde_profile_array_destroy(a);
}

static void test_null_accessors(void **state) {
    (void)state;
    assert_int_equal(sonde_profile_array_size(NULL), 0);
    assert_true(sonde_profile_array_offset(NULL) == SONDE_PROFILE_OFFSET_NONE);
    assert_false(sonde_profile_array_is_allocated(NULL));
    assert_int_equal(sonde_profile_array_record_size(NULL), 0);
    assert_int_equal(sonde_profile_array_num_records(NULL), 0);
    assert_int_equal(sonde_profile_array_num_thread_buckets(NULL), 0);
    assert_int_equal(sonde_profile_array_chunk_size(NULL), 0);
    assert_int_equal(sonde_profile_array_thread_bucket(NULL), 0);
    assert_int_equal(sonde_profile_buffer_size(NULL), 0);
    assert_null(sonde_profile_buffer_data(NULL));
    sonde_profile_array_destroy(NULL);
    sonde_profile_buffer_destroy(NULL);
}

static void test_thread_index(void **state) {
    (void)state;
    const uint32_t i = sonde_profile_thread_index();
    assert_int_equal(sonde_profile_thread_index(), i);
    assert_int_equal(sonde_profile_set_thread_index(UINT32_MAX), INVALID);
    assert_int_equal(sonde_profile_thread_index(), i);
    assert_int_equal(sonde_profile_set_thread_index(6), OK);
    assert_int_equal(sonde_profile_thread_index(), 6);
    sonde_profile_array_t *a = make_array(8, 1, 4, 64);
    assert_int_equal(sonde_profile_array_thread_bucket(a), 2);
    sonde_profile_array_destroy(a);
    assert_int_equal(sonde_profile_set_thread_index(0), OK);
}

static void test_buffer_create(void **state) {
    (void)state;
    sonde_profile_buffer_t *pb = (sonde_profile_buffer_t *)0x1;
    assert_int_equal(sonde_profile_buffer_create(4096, NULL), NULLPTR);
    assert_int_equal(sonde_profile_buffer_create(0, &pb), INVALID);
    assert_int_equal(sonde_profile_buffer_create(UINT64_MAX, &pb), INVALID);
    assert_ptr_equal(pb, (sonde_profile_buffer_t *)0x1);
    pb = make_buffer(1000);
    assert_int_equal(sonde_profile_buffer_size(pb), 1000);
    const unsigned char *data = sonde_profile_buffer_data(pb);
    assert_non_null(data);
    assert_int_equal((uintptr_t)data % 4096, 0);
    for (int i = 0; i < 1000; ++i) assert_int_equal(data[i], 0);
    int fd = 0;
    uint32_t n = 0;
    assert_int_equal(sonde_profile_buffer_fd(pb, &fd), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(sonde_profile_buffer_fd(pb, NULL), NULLPTR);
    assert_int_equal(sonde_profile_buffer_fd(NULL, &fd), NULLPTR);
    assert_int_equal(sonde_profile_buffer_num_arrays(pb, &n), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(sonde_profile_buffer_num_arrays(pb, NULL), NULLPTR);
    assert_int_equal(sonde_profile_buffer_num_arrays(NULL, &n), NULLPTR);
    sonde_profile_array_t *opened = NULL;
    assert_int_equal(sonde_profile_array_open(pb, 0, &opened), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(sonde_profile_array_open(pb, 0, NULL), NULLPTR);
    assert_int_equal(sonde_profile_array_open(NULL, 0, &opened), NULLPTR);
    sonde_profile_buffer_destroy(pb);
}

static void test_allocate(void **state) {
    (void)state;
    sonde_profile_buffer_t *pb = make_buffer(2048);
    sonde_profile_array_t *a = make_array(8, 3, 2, 64);   /* chunk 64, size 128 */
    sonde_profile_array_t *b = make_array(8, 1, 1, 256);  /* chunk 256 */
    sonde_profile_array_t *c = make_array(8, 200, 1, 64); /* 1600 bytes: no room left */
    assert_int_equal(sonde_profile_array_allocate(NULL, pb), NULLPTR);
    assert_int_equal(sonde_profile_array_allocate(a, NULL), NULLPTR);
    /* an array passed as buffer and the other way round are recognised */
    assert_int_equal(sonde_profile_array_allocate(a, (sonde_profile_buffer_t *)b), INVALID);
    assert_int_equal(sonde_profile_array_allocate((sonde_profile_array_t *)pb, pb), INVALID);

    assert_int_equal(sonde_profile_array_allocate(a, pb), OK);
    assert_true(sonde_profile_array_is_allocated(a));
    assert_int_equal(sonde_profile_array_offset(a), 0);
    assert_int_equal(sonde_profile_array_allocate(a, pb), PHASE);
    assert_int_equal(sonde_profile_array_offset(a), 0);

    assert_int_equal(sonde_profile_array_allocate(b, pb), OK);
    assert_int_equal(sonde_profile_array_offset(b), 256); /* 128 rounded up to 256 */

    assert_int_equal(sonde_profile_array_allocate(c, pb), SONDE_STATUS_ERROR_OUT_OF_MEMORY);
    assert_false(sonde_profile_array_is_allocated(c));

    /* An array allocated in one buffer is refused with another one. */
    sonde_profile_buffer_t *other = make_buffer(4096);
    uint64_t v = 0;
    void *p = NULL;
    assert_int_equal(sonde_profile_array_read(a, other, &v, 0, 1, 0), INVALID);
    assert_int_equal(sonde_profile_array_write(a, other, &v, 0, 1, 0), INVALID);
    assert_int_equal(sonde_profile_array_initialize(a, other), INVALID);
    assert_int_equal(sonde_profile_array_thread_record(a, other, 0, &p), INVALID);
    assert_int_equal(sonde_profile_array_sum_u64(a, other, 0, 0, &v), INVALID);
    assert_int_equal(sonde_profile_array_allocate(c, other), OK);
    sonde_profile_buffer_destroy(other);

    sonde_profile_array_destroy(a);
    sonde_profile_array_destroy(b);
    sonde_profile_array_destroy(c);
    sonde_profile_buffer_destroy(pb);
}

/* Every record operation on an unallocated array answers PHASE_FAILURE and writes nothing. */
static void test_not_allocated(void **state) {
    (void)state;
    sonde_profile_buffer_t *pb = make_buffer(4096);
    sonde_profile_array_t *a = make_array(16, 4, 2, 64);
    unsigned char out[1024];
    memset(out, 0xAB, sizeof out);
    uint64_t off = 77, sum = 77;
    void *p = (void *)0x1;
    sonde_profile_view_t view;
    memset(&view, 0xAB, sizeof view);
    view.struct_size = sizeof view;
    assert_int_equal(sonde_profile_array_initialize(a, pb), PHASE);
    assert_int_equal(sonde_profile_array_read(a, pb, out, 0, 1, 0), PHASE);
    assert_int_equal(sonde_profile_array_write(a, pb, out, 0, 1, 0), PHASE);
    assert_int_equal(sonde_profile_array_record_offset(a, 0, 0, &off), PHASE);
    assert_int_equal(sonde_profile_array_thread_record(a, pb, 0, &p), PHASE);
    assert_int_equal(sonde_profile_array_view(a, pb, &view), PHASE);
    assert_int_equal(sonde_profile_array_sum_u64(a, pb, 0, 0, &sum), PHASE);
    assert_int_equal(sonde_profile_array_snapshot(a, pb, out, sizeof out), PHASE);
    sonde_buffer_id_t none = {0};
    uint64_t emitted = 5;
    assert_int_equal(sonde_profile_array_emit(a, pb, none, 0, &emitted), PHASE);
    assert_int_equal(emitted, 0);
    assert_int_equal(off, 77);
    assert_int_equal(sum, 77);
    assert_ptr_equal(p, (void *)0x1);
    assert_int_equal(view.bucket, 0xABABABABu);
    for (size_t i = 0; i < sizeof out; ++i) assert_int_equal(out[i], 0xAB);
    const unsigned char *data = sonde_profile_buffer_data(pb);
    for (int i = 0; i < 4096; ++i) assert_int_equal(data[i], 0);
    sonde_profile_array_destroy(a);
    sonde_profile_buffer_destroy(pb);
}

static void test_read_write(void **state) {
    (void)state;
    /* Caller memory with guard bytes around the buffer. */
    static _Alignas(64) unsigned char mem[64 + 1024 + 64];
    memset(mem, 0x5A, sizeof mem);
    sonde_profile_buffer_t *pb = NULL;
    assert_int_equal(sonde_profile_buffer_create_from_memory(mem + 64, 1024, &pb), OK);
    assert_ptr_equal(sonde_profile_buffer_data(pb), mem + 64);
    sonde_profile_array_t *a = make_array(12, 5, 2, 64); /* chunk 64, size 128 */
    assert_int_equal(sonde_profile_array_allocate(a, pb), OK);
    assert_int_equal(sonde_profile_array_initialize(a, pb), OK);
    for (int i = 0; i < 128; ++i) assert_int_equal(mem[64 + i], 0);
    for (size_t i = 64 + 128; i < sizeof mem; ++i) assert_int_equal(mem[i], 0x5A);
    for (int i = 0; i < 64; ++i) assert_int_equal(mem[i], 0x5A);

    unsigned char in[60], back[60];
    for (int i = 0; i < 60; ++i) in[i] = (unsigned char)(i + 1);
    assert_int_equal(sonde_profile_array_write(a, pb, in, 0, 5, 1), OK);
    assert_int_equal(sonde_profile_array_write(a, pb, in, 1, 2, 0), OK);
    memset(back, 0, sizeof back);
    assert_int_equal(sonde_profile_array_read(a, pb, back, 0, 5, 1), OK);
    assert_memory_equal(back, in, 60);
    assert_int_equal(sonde_profile_array_read(a, pb, back, 0, 3, 0), OK);
    for (int i = 0; i < 12; ++i) assert_int_equal(back[i], 0);
    assert_memory_equal(back + 12, in, 24);
    /* record_offset locates the same bytes */
    uint64_t off = 0;
    assert_int_equal(sonde_profile_array_record_offset(a, 3, 1, &off), OK);
    assert_int_equal(off, 64 + 3 * 12);
    assert_memory_equal(mem + 64 + off, in + 36, 12);
    assert_int_equal(sonde_profile_array_record_offset(a, 4, 1, &off), OK);
    assert_int_equal(off, 64 + 48);

    /* ranges */
    unsigned char keep[60];
    memcpy(keep, back, sizeof keep);
    assert_int_equal(sonde_profile_array_read(a, pb, back, 0, 0, 0), INVALID);
    assert_int_equal(sonde_profile_array_read(a, pb, back, 5, 1, 0), INVALID);
    assert_int_equal(sonde_profile_array_read(a, pb, back, 4, 2, 0), INVALID);
    assert_int_equal(sonde_profile_array_read(a, pb, back, 1, UINT32_MAX, 0), INVALID);
    assert_int_equal(sonde_profile_array_read(a, pb, back, 0, 1, 2), INVALID);
    assert_int_equal(sonde_profile_array_read(a, pb, NULL, 0, 1, 0), NULLPTR);
    assert_int_equal(sonde_profile_array_read(NULL, pb, back, 0, 1, 0), NULLPTR);
    assert_int_equal(sonde_profile_array_read(a, NULL, back, 0, 1, 0), NULLPTR);
    assert_memory_equal(back, keep, sizeof keep);
    assert_int_equal(sonde_profile_array_write(a, pb, in, 0, 0, 0), INVALID);
    assert_int_equal(sonde_profile_array_write(a, pb, in, 5, 1, 0), INVALID);
    assert_int_equal(sonde_profile_array_write(a, pb, in, 3, 3, 0), INVALID);
    assert_int_equal(sonde_profile_array_write(a, pb, in, 0, 1, UINT32_MAX), INVALID);
    assert_int_equal(sonde_profile_array_write(a, pb, NULL, 0, 1, 0), NULLPTR);
    assert_int_equal(sonde_profile_array_write(NULL, pb, in, 0, 1, 0), NULLPTR);
    assert_int_equal(sonde_profile_array_write(a, NULL, in, 0, 1, 0), NULLPTR);
    assert_int_equal(sonde_profile_array_record_offset(a, 5, 0, &off), INVALID);
    assert_int_equal(sonde_profile_array_record_offset(a, 0, 2, &off), INVALID);
    assert_int_equal(sonde_profile_array_record_offset(a, 0, 0, NULL), NULLPTR);
    assert_int_equal(sonde_profile_array_record_offset(NULL, 0, 0, &off), NULLPTR);
    assert_int_equal(sonde_profile_array_record_offset((sonde_profile_array_t *)pb, 0, 0, &off), INVALID);
    assert_int_equal(off, 64 + 48);
    for (size_t i = 64 + 128; i < sizeof mem; ++i) assert_int_equal(mem[i], 0x5A);

    /* initialize clears every bucket */
    assert_int_equal(sonde_profile_array_initialize(a, pb), OK);
    for (int i = 0; i < 128; ++i) assert_int_equal(mem[64 + i], 0);
    assert_int_equal(sonde_profile_array_initialize(NULL, pb), NULLPTR);
    assert_int_equal(sonde_profile_array_initialize(a, NULL), NULLPTR);

    sonde_profile_array_destroy(a);
    sonde_profile_buffer_destroy(pb);
    for (int i = 0; i < 64; ++i) assert_int_equal(mem[i], 0x5A);

    assert_int_equal(sonde_profile_buffer_create_from_memory(NULL, 64, &pb), NULLPTR);
    assert_int_equal(sonde_profile_buffer_create_from_memory(mem, 64, NULL), NULLPTR);
    assert_int_equal(sonde_profile_buffer_create_from_memory(mem + 8, 64, &pb), INVALID);
    assert_int_equal(sonde_profile_buffer_create_from_memory(mem, 0, &pb), INVALID);
}

static void test_view_and_helpers(void **state) {
    (void)state;
    sonde_profile_buffer_t *pb = make_buffer(8192);
    sonde_profile_array_t *a = make_array(24, 3, 3, 64); /* 4 buckets, chunk 128 */
    assert_int_equal(sonde_profile_array_allocate(a, pb), OK);
    assert_int_equal(sonde_profile_array_initialize(a, pb), OK);
    assert_int_equal(sonde_profile_set_thread_index(5), OK); /* bucket 1 */

    sonde_profile_view_t v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    assert_int_equal(sonde_profile_array_view(a, pb, &v), OK);
    const unsigned char *base = sonde_profile_buffer_data(pb);
    assert_int_equal(v.struct_size, sizeof v);
    assert_int_equal(v.bucket, 1);
    assert_ptr_equal(v.base, base + sonde_profile_array_offset(a));
    assert_ptr_equal(v.bucket_base, v.base + 128);
    assert_int_equal(v.chunk_size, 128);
    assert_int_equal(v.record_size, 24);
    assert_int_equal(v.num_records, 3);
    assert_int_equal(v.bucket_mask, 3);

    void *p = NULL;
    assert_int_equal(sonde_profile_array_thread_record(a, pb, 2, &p), OK);
    assert_ptr_equal(p, sonde_profile_view_record(&v, 2));
    assert_ptr_equal(sonde_profile_view_bucket_record(&v, 3, 1), v.base + 3 * 128 + 24);
    uint64_t off = 0;
    assert_int_equal(sonde_profile_array_record_offset(a, 2, 1, &off), OK);
    assert_ptr_equal(p, base + off);

    for (int i = 0; i < 10; ++i) sonde_profile_view_add_u64(&v, 2, 8, 3);
    sonde_profile_view_add_u64_shared(&v, 2, 8, 1);
    sonde_profile_view_add_u64(&v, 0, 16, 7);
    assert_int_equal(sonde_profile_counter_load((const uint64_t *)((unsigned char *)p + 8)), 31);

    /* a value in another bucket adds into the sum */
    uint64_t rec[3] = {0, 100, 0};
    assert_int_equal(sonde_profile_array_write(a, pb, rec, 2, 1, 3), OK);
    uint64_t sum = 0;
    assert_int_equal(sonde_profile_array_sum_u64(a, pb, 2, 8, &sum), OK);
    assert_int_equal(sum, 131);
    assert_int_equal(sonde_profile_array_sum_u64(a, pb, 0, 16, &sum), OK);
    assert_int_equal(sum, 7);
    assert_int_equal(sonde_profile_array_sum_u64(a, pb, 1, 0, &sum), OK);
    assert_int_equal(sum, 0);

    /* preconditions of sum, thread_record and view */
    sum = 99;
    assert_int_equal(sonde_profile_array_sum_u64(a, pb, 3, 0, &sum), INVALID);
    assert_int_equal(sonde_profile_array_sum_u64(a, pb, 0, 17, &sum), INVALID);
    assert_int_equal(sonde_profile_array_sum_u64(a, pb, 0, 24, &sum), INVALID);
    assert_int_equal(sonde_profile_array_sum_u64(a, pb, 0, UINT32_MAX, &sum), INVALID);
    assert_int_equal(sonde_profile_array_sum_u64(a, pb, 0, 4, &sum), INVALID); /* misaligned */
    assert_int_equal(sonde_profile_array_sum_u64(a, pb, 0, 0, NULL), NULLPTR);
    assert_int_equal(sonde_profile_array_sum_u64(NULL, pb, 0, 0, &sum), NULLPTR);
    assert_int_equal(sonde_profile_array_sum_u64(a, NULL, 0, 0, &sum), NULLPTR);
    assert_int_equal(sum, 99);
    assert_int_equal(sonde_profile_array_thread_record(a, pb, 3, &p), INVALID);
    assert_int_equal(sonde_profile_array_thread_record(a, pb, 0, NULL), NULLPTR);
    assert_int_equal(sonde_profile_array_thread_record(NULL, pb, 0, &p), NULLPTR);
    assert_int_equal(sonde_profile_array_view(a, pb, NULL), NULLPTR);
    assert_int_equal(sonde_profile_array_view(NULL, pb, &v), NULLPTR);
    assert_int_equal(sonde_profile_array_view((sonde_profile_array_t *)pb, pb, &v), INVALID);
    sonde_profile_view_t small;
    memset(&small, 0, sizeof small);
    small.struct_size = 8;
    assert_int_equal(sonde_profile_array_view(a, pb, &small), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    assert_null(small.bucket_base);
    /* a larger caller struct: only Sonde's size is written */
    struct {
        sonde_profile_view_t view;
        uint64_t extra;
    } big;
    memset(&big, 0, sizeof big);
    big.view.struct_size = sizeof big;
    big.extra = 42;
    assert_int_equal(sonde_profile_array_view(a, pb, &big.view), OK);
    assert_int_equal(big.extra, 42);
    assert_ptr_equal(big.view.bucket_base, v.bucket_base);

    /* A record of 12 bytes: record 1 starts at 12, so its first u64 is not aligned. */
    sonde_profile_array_t *odd = make_array(12, 4, 1, 64);
    assert_int_equal(sonde_profile_array_allocate(odd, pb), OK);
    assert_int_equal(sonde_profile_array_sum_u64(odd, pb, 1, 0, &sum), INVALID);
    assert_int_equal(sonde_profile_array_sum_u64(odd, pb, 1, 4, &sum), OK);
    assert_int_equal(sonde_profile_array_sum_u64(odd, pb, 0, 0, &sum), OK);
    sonde_profile_array_destroy(odd);

    assert_int_equal(sonde_profile_set_thread_index(0), OK);
    sonde_profile_array_destroy(a);
    sonde_profile_buffer_destroy(pb);
}

static void test_snapshot(void **state) {
    (void)state;
    sonde_profile_buffer_t *pb = make_buffer(8192);
    sonde_profile_array_t *a = make_array(16, 5, 2, 64); /* chunk 128, size 256 */
    assert_int_equal(sonde_profile_array_allocate(a, pb), OK);
    assert_int_equal(sonde_profile_array_initialize(a, pb), OK);
    uint64_t rec0[10], rec1[10];
    for (int i = 0; i < 10; ++i) rec0[i] = (uint64_t)i + 1, rec1[i] = (uint64_t)i * 1000;
    assert_int_equal(sonde_profile_array_write(a, pb, rec0, 0, 5, 0), OK);
    assert_int_equal(sonde_profile_array_write(a, pb, rec1, 0, 5, 1), OK);
    unsigned char snap[257];
    memset(snap, 0xEE, sizeof snap);
    assert_int_equal(sonde_profile_array_snapshot(a, pb, snap, 255), SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_int_equal(snap[0], 0xEE);
    assert_int_equal(sonde_profile_array_snapshot(a, pb, snap + 1, 256), OK); /* unaligned dst */
    assert_memory_equal(snap + 1, rec0, 80);
    for (int i = 80; i < 128; ++i) assert_int_equal(snap[1 + i], 0);
    assert_memory_equal(snap + 1 + 128, rec1, 80);
    assert_int_equal(snap[0], 0xEE);
    assert_int_equal(sonde_profile_array_snapshot(a, pb, NULL, 256), NULLPTR);
    assert_int_equal(sonde_profile_array_snapshot(NULL, pb, snap, 256), NULLPTR);
    assert_int_equal(sonde_profile_array_snapshot(a, NULL, snap, 256), NULLPTR);
    sonde_profile_array_destroy(a);
    sonde_profile_buffer_destroy(pb);
}

/* A caller allocator that hands out space from the top of the buffer downwards. */
typedef struct top_down_t {
    uint64_t top;
    int calls;
    int mode; /* 0 normal, 1 refuse, 2 misaligned, 3 out of range */
} top_down_t;

static bool top_down_allocate(void *context, uint64_t size, uint64_t alignment, uint64_t *offset) {
    top_down_t *t = context;
    t->calls++;
    if (t->mode == 1 || size > t->top) return false;
    if (t->mode == 2) {
        *offset = alignment / 2;
        return true;
    }
    if (t->mode == 3) {
        *offset = 1u << 20;
        return true;
    }
    t->top = (t->top - size) & ~(alignment - 1);
    *offset = t->top;
    return true;
}

static void test_allocator(void **state) {
    (void)state;
    top_down_t td = {4096, 0, 0};
    sonde_profile_allocator_t alloc;
    memset(&alloc, 0, sizeof alloc);
    alloc.struct_size = sizeof alloc;
    alloc.context = &td;
    alloc.allocate = top_down_allocate;
    sonde_profile_buffer_t *pb = NULL;
    assert_int_equal(sonde_profile_buffer_create_with_allocator(NULL, 4096, &alloc, &pb), OK);
    sonde_profile_array_t *a = make_array(8, 10, 2, 64); /* size 256 */
    sonde_profile_array_t *b = make_array(8, 1, 1, 1024);
    assert_int_equal(sonde_profile_array_allocate(a, pb), OK);
    assert_int_equal(sonde_profile_array_offset(a), 4096 - 256);
    assert_int_equal(sonde_profile_array_allocate(b, pb), OK);
    assert_int_equal(sonde_profile_array_offset(b), 2048);
    assert_int_equal(td.calls, 2);
    uint64_t v = 9, back = 0;
    assert_int_equal(sonde_profile_array_write(a, pb, &v, 9, 1, 1), OK);
    assert_int_equal(sonde_profile_array_read(a, pb, &back, 9, 1, 1), OK);
    assert_int_equal(back, 9);
    assert_int_equal(
        *(const uint64_t *)((const unsigned char *)sonde_profile_buffer_data(pb) + 4096 - 256 + 128 + 72), 9);

    sonde_profile_array_t *c = make_array(8, 1, 1, 64);
    td.mode = 1;
    assert_int_equal(sonde_profile_array_allocate(c, pb), SONDE_STATUS_ERROR_OUT_OF_MEMORY);
    td.mode = 2;
    assert_int_equal(sonde_profile_array_allocate(c, pb), SONDE_STATUS_ERROR);
    td.mode = 3;
    assert_int_equal(sonde_profile_array_allocate(c, pb), SONDE_STATUS_ERROR);
    assert_false(sonde_profile_array_is_allocated(c));
    td.mode = 0;
    assert_int_equal(sonde_profile_array_allocate(c, pb), OK);
    sonde_profile_buffer_destroy(pb);

    /* the same allocator over caller memory */
    static _Alignas(64) unsigned char mem[2048];
    top_down_t td2 = {2048, 0, 0};
    alloc.context = &td2;
    assert_int_equal(sonde_profile_buffer_create_with_allocator(mem, sizeof mem, &alloc, &pb), OK);
    sonde_profile_array_t *d = make_array(8, 4, 1, 64);
    assert_int_equal(sonde_profile_array_allocate(d, pb), OK);
    assert_int_equal(sonde_profile_array_offset(d), 2048 - 64);
    sonde_profile_buffer_destroy(pb);

    /* bad allocator structs */
    pb = (sonde_profile_buffer_t *)0x1;
    assert_int_equal(sonde_profile_buffer_create_with_allocator(NULL, 4096, NULL, &pb), NULLPTR);
    assert_int_equal(sonde_profile_buffer_create_with_allocator(NULL, 4096, &alloc, NULL), NULLPTR);
    sonde_profile_allocator_t bad = alloc;
    bad.allocate = NULL;
    assert_int_equal(sonde_profile_buffer_create_with_allocator(NULL, 4096, &bad, &pb), NULLPTR);
    bad = alloc;
    bad.reserved = 1;
    assert_int_equal(sonde_profile_buffer_create_with_allocator(NULL, 4096, &bad, &pb), INVALID);
    bad = alloc;
    bad.struct_size = 8;
    assert_int_equal(sonde_profile_buffer_create_with_allocator(NULL, 4096, &bad, &pb),
                     SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    struct {
        sonde_profile_allocator_t a;
        uint64_t extra;
    } bigger;
    memset(&bigger, 0, sizeof bigger);
    bigger.a = alloc;
    bigger.a.struct_size = sizeof bigger;
    bigger.extra = 1;
    assert_int_equal(sonde_profile_buffer_create_with_allocator(NULL, 4096, &bigger.a, &pb),
                     SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_int_equal(sonde_profile_buffer_create_with_allocator(NULL, 0, &alloc, &pb), INVALID);
    assert_int_equal(sonde_profile_buffer_create_with_allocator(mem + 1, 64, &alloc, &pb), INVALID);
    assert_ptr_equal(pb, (sonde_profile_buffer_t *)0x1);
    bigger.extra = 0; /* zero trailing bytes are accepted */
    assert_int_equal(sonde_profile_buffer_create_with_allocator(NULL, 4096, &bigger.a, &pb), OK);
    sonde_profile_buffer_destroy(pb);

    sonde_profile_array_destroy(a);
    sonde_profile_array_destroy(b);
    sonde_profile_array_destroy(c);
    sonde_profile_array_destroy(d);
}

static void check_header(const sonde_profile_buffer_t *pb, uint64_t size, uint32_t arrays) {
    const sonde_profile_shared_header_t *h = sonde_profile_buffer_data(pb);
    assert_true(h->magic == SONDE_PROFILE_SHARED_MAGIC);
    assert_memory_equal(&h->magic, "SONDEPRF", 8);
    assert_int_equal(h->version, SONDE_PROFILE_SHARED_VERSION);
    assert_int_equal(h->header_size, SONDE_PROFILE_SHARED_HEADER_SIZE);
    assert_int_equal(h->size, SONDE_PROFILE_SHARED_HEADER_SIZE + size);
    assert_int_equal(h->max_arrays, SONDE_PROFILE_SHARED_MAX_ARRAYS);
    assert_int_equal(h->num_arrays, arrays);
    assert_int_equal(h->creator_pid, (uint64_t)getpid());
    uint32_t n = 99;
    assert_int_equal(sonde_profile_buffer_num_arrays(pb, &n), OK);
    assert_int_equal(n, arrays);
}

static void test_shared_file(void **state) {
    (void)state;
    const char *path = tmp_path("counters.prof");
    char saved[128];
    strcpy(saved, path);
    sonde_profile_buffer_t *pb = NULL;
    assert_int_equal(sonde_profile_buffer_create_shared(saved, 0, &pb), INVALID);
    assert_int_equal(sonde_profile_buffer_create_shared(saved, 4096, NULL), NULLPTR);
    assert_int_equal(sonde_profile_buffer_create_shared("/nonexistent-dir/x", 4096, &pb),
                     SONDE_STATUS_ERROR_IO);
    assert_int_equal(sonde_profile_buffer_create_shared(saved, 8192, &pb), OK);
    assert_int_equal(sonde_profile_buffer_size(pb), 8192);
    struct stat st;
    assert_int_equal(stat(saved, &st), 0);
    assert_int_equal(st.st_size, 4096 + 8192);
    check_header(pb, 8192, 0);
    int fd = -1;
    assert_int_equal(sonde_profile_buffer_fd(pb, &fd), OK);
    assert_true(fd >= 0);

    sonde_profile_array_t *a = make_array(16, 3, 2, 64);
    sonde_profile_array_t *b = make_array(8, 2, 4, 128);
    assert_int_equal(sonde_profile_array_allocate(a, pb), OK);
    assert_int_equal(sonde_profile_array_offset(a), SONDE_PROFILE_SHARED_HEADER_SIZE);
    assert_int_equal(sonde_profile_array_allocate(b, pb), OK);
    assert_int_equal(sonde_profile_array_offset(b), SONDE_PROFILE_SHARED_HEADER_SIZE + 128);
    check_header(pb, 8192, 2);
    const sonde_profile_shared_header_t *h = sonde_profile_buffer_data(pb);
    assert_int_equal(h->bump, SONDE_PROFILE_SHARED_HEADER_SIZE + 128 + 512);
    const sonde_profile_shared_array_t *dir = (const void *)(h + 1);
    assert_int_equal(dir[1].offset, SONDE_PROFILE_SHARED_HEADER_SIZE + 128);
    assert_int_equal(dir[1].size, 512);
    assert_int_equal(dir[1].record_size, 8);
    assert_int_equal(dir[1].num_records, 2);
    assert_int_equal(dir[1].num_thread_buckets, 4);
    assert_int_equal(dir[1].chunk_size, 128);
    assert_int_equal(dir[1].alignment, 128);
    assert_int_equal(sonde_profile_array_initialize(a, pb), OK);
    assert_int_equal(sonde_profile_array_initialize(b, pb), OK);

    /* A second mapping of the file sees the counters written through the first. */
    sonde_profile_buffer_t *reader = NULL;
    assert_int_equal(sonde_profile_buffer_open_shared(saved, &reader), OK);
    assert_int_equal(sonde_profile_buffer_size(reader), 8192);
    uint32_t n = 0;
    assert_int_equal(sonde_profile_buffer_num_arrays(reader, &n), OK);
    assert_int_equal(n, 2);
    sonde_profile_array_t *rb = NULL;
    assert_int_equal(sonde_profile_array_open(reader, 1, &rb), OK);
    assert_true(sonde_profile_array_is_allocated(rb));
    assert_int_equal(sonde_profile_array_offset(rb), sonde_profile_array_offset(b));
    assert_int_equal(sonde_profile_array_num_thread_buckets(rb), 4);
    assert_int_equal(sonde_profile_array_chunk_size(rb), 128);
    sonde_profile_array_t *missing = NULL;
    assert_int_equal(sonde_profile_array_open(reader, 2, &missing), INVALID);
    assert_null(missing);
    /* the writer's array object is bound to the writer's buffer */
    uint64_t sum = 0;
    assert_int_equal(sonde_profile_array_sum_u64(b, reader, 1, 0, &sum), INVALID);

    sonde_profile_view_t v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    assert_int_equal(sonde_profile_array_view(b, pb, &v), OK);
    for (int i = 0; i < 1000; ++i) sonde_profile_view_add_u64(&v, 1, 0, 1);
    uint64_t other = 5;
    assert_int_equal(sonde_profile_array_write(b, pb, &other, 1, 1, (v.bucket + 1) & 3), OK);
    assert_int_equal(sonde_profile_array_sum_u64(rb, reader, 1, 0, &sum), OK);
    assert_int_equal(sum, 1005);
    /* and writes through the reader reach the writer */
    assert_int_equal(sonde_profile_array_write(rb, reader, &other, 0, 1, 0), OK);
    assert_int_equal(sonde_profile_array_sum_u64(b, pb, 0, 0, &sum), OK);
    assert_int_equal(sum, 5);
    /* arrays cannot be allocated through an opened buffer */
    sonde_profile_array_t *c = make_array(8, 1, 1, 64);
    assert_int_equal(sonde_profile_array_allocate(c, reader), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    assert_false(sonde_profile_array_is_allocated(c));

    sonde_profile_array_destroy(rb);
    sonde_profile_buffer_destroy(reader);
    sonde_profile_array_destroy(a);
    sonde_profile_array_destroy(b);
    sonde_profile_array_destroy(c);
    sonde_profile_buffer_destroy(pb);
    /* the file stays: it can be opened after the writer is gone */
    assert_int_equal(sonde_profile_buffer_open_shared(saved, &reader), OK);
    assert_int_equal(sonde_profile_array_open(reader, 1, &rb), OK);
    assert_int_equal(sonde_profile_array_sum_u64(rb, reader, 1, 0, &sum), OK);
    assert_int_equal(sum, 1005);
    sonde_profile_array_destroy(rb);
    sonde_profile_buffer_destroy(reader);
    unlink(saved);
}

static void test_shared_memfd(void **state) {
    (void)state;
    sonde_profile_buffer_t *pb = NULL;
    assert_int_equal(sonde_profile_buffer_create_shared(NULL, 4096, &pb), OK);
    check_header(pb, 4096, 0);
    int fd = -1;
    assert_int_equal(sonde_profile_buffer_fd(pb, &fd), OK);
    sonde_profile_array_t *a = make_array(8, 4, 1, 64);
    assert_int_equal(sonde_profile_array_allocate(a, pb), OK);
    assert_int_equal(sonde_profile_array_initialize(a, pb), OK);
    uint64_t vals[4] = {1, 2, 3, 4};
    assert_int_equal(sonde_profile_array_write(a, pb, vals, 0, 4, 0), OK);

    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    sonde_profile_buffer_t *reader = NULL;
    assert_int_equal(sonde_profile_buffer_open_shared(path, &reader), OK);
    sonde_profile_array_t *ra = NULL;
    assert_int_equal(sonde_profile_array_open(reader, 0, &ra), OK);
    uint64_t back[4] = {0};
    assert_int_equal(sonde_profile_array_read(ra, reader, back, 0, 4, 0), OK);
    assert_memory_equal(back, vals, sizeof vals);
    sonde_profile_array_destroy(ra);
    sonde_profile_buffer_destroy(reader);
    sonde_profile_array_destroy(a);
    sonde_profile_buffer_destroy(pb);
}

static void test_shared_directory_full(void **state) {
    (void)state;
    sonde_profile_buffer_t *pb = NULL;
    assert_int_equal(sonde_profile_buffer_create_shared(NULL, 64 * 1024, &pb), OK);
    sonde_profile_array_t *arrays[SONDE_PROFILE_SHARED_MAX_ARRAYS + 1];
    for (uint32_t i = 0; i <= SONDE_PROFILE_SHARED_MAX_ARRAYS; ++i) {
        arrays[i] = make_array(8, 1, 1, 64);
        assert_int_equal(sonde_profile_array_allocate(arrays[i], pb),
                         i < SONDE_PROFILE_SHARED_MAX_ARRAYS ? OK : SONDE_STATUS_ERROR_LIMIT);
    }
    assert_false(sonde_profile_array_is_allocated(arrays[SONDE_PROFILE_SHARED_MAX_ARRAYS]));
    check_header(pb, 64 * 1024, SONDE_PROFILE_SHARED_MAX_ARRAYS);
    for (uint32_t i = 0; i <= SONDE_PROFILE_SHARED_MAX_ARRAYS; ++i) sonde_profile_array_destroy(arrays[i]);
    sonde_profile_buffer_destroy(pb);
}

/* Corrupted and truncated files are refused by open_shared / array_open. */
static void test_shared_corrupt(void **state) {
    (void)state;
    char good[128], bad[128];
    strcpy(good, tmp_path("good.prof"));
    strcpy(bad, tmp_path("bad.prof"));
    sonde_profile_buffer_t *pb = NULL, *r = (sonde_profile_buffer_t *)0x1;
    assert_int_equal(sonde_profile_buffer_open_shared(NULL, &r), NULLPTR);
    assert_int_equal(sonde_profile_buffer_open_shared(good, NULL), NULLPTR);
    assert_int_equal(sonde_profile_buffer_open_shared(tmp_path("missing.prof"), &r), SONDE_STATUS_ERROR_IO);
    assert_ptr_equal(r, (sonde_profile_buffer_t *)0x1);

    assert_int_equal(sonde_profile_buffer_create_shared(good, 4096, &pb), OK);
    sonde_profile_array_t *a = make_array(16, 4, 2, 64);
    assert_int_equal(sonde_profile_array_allocate(a, pb), OK);
    sonde_profile_array_destroy(a);
    sonde_profile_buffer_destroy(pb);
    const size_t size = 8192;
    unsigned char *img = malloc(size + 64);
    assert_non_null(img);
    FILE *f = fopen(good, "rb");
    assert_non_null(f);
    assert_int_equal(fread(img, 1, size, f), size);
    fclose(f);
    sonde_profile_shared_header_t *h = (sonde_profile_shared_header_t *)img;
    sonde_profile_shared_array_t *dir = (sonde_profile_shared_array_t *)(h + 1);

    /* truncated or extended files */
    const size_t lengths[] = {0, 100, 4095, size - 1 /* size field disagrees */, size + 64};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; ++i) {
        write_file(bad, img, lengths[i]);
        assert_int_equal(sonde_profile_buffer_open_shared(bad, &r), SONDE_STATUS_ERROR_FORMAT);
    }
    /* one header field broken at a time */
    const sonde_profile_shared_header_t saved = *h;
    sonde_profile_shared_header_t headers[5];
    const sonde_status_t expect[5] = {SONDE_STATUS_ERROR_FORMAT, SONDE_STATUS_ERROR_INCOMPATIBLE_ABI,
                                      SONDE_STATUS_ERROR_FORMAT, SONDE_STATUS_ERROR_FORMAT,
                                      SONDE_STATUS_ERROR_FORMAT};
    for (int i = 0; i < 5; ++i) headers[i] = saved;
    headers[0].magic ^= 1;
    headers[1].version = 2;
    headers[2].header_size = 64;
    headers[3].num_arrays = 64;
    headers[4].max_arrays = 1000;
    for (int i = 0; i < 5; ++i) {
        *h = headers[i];
        write_file(bad, img, size);
        assert_int_equal(sonde_profile_buffer_open_shared(bad, &r), expect[i]);
    }
    *h = saved;
    assert_ptr_equal(r, (sonde_profile_buffer_t *)0x1);

    /* directory entries that do not describe a valid array inside the region */
    const sonde_profile_shared_array_t entry = dir[0];
    sonde_profile_shared_array_t broken[8];
    for (int i = 0; i < 8; ++i) broken[i] = entry;
    broken[0].chunk_size = 32;
    broken[1].size = 1u << 20;
    broken[2].offset = size; /* past the end */
    broken[3].offset = 64;   /* inside the header */
    broken[4].alignment = 3;
    broken[5].num_thread_buckets = 3;    /* not a power of two */
    broken[6].offset = entry.offset + 8; /* misaligned */
    broken[7].record_size = 0;
    for (int i = 0; i < 8; ++i) {
        dir[0] = broken[i];
        write_file(bad, img, size);
        assert_int_equal(sonde_profile_buffer_open_shared(bad, &r), OK);
        sonde_profile_array_t *ra = NULL;
        assert_int_equal(sonde_profile_array_open(r, 0, &ra), SONDE_STATUS_ERROR_FORMAT);
        assert_null(ra);
        sonde_profile_buffer_destroy(r);
    }
    dir[0] = entry;
    write_file(bad, img, size);
    assert_int_equal(sonde_profile_buffer_open_shared(bad, &r), OK);
    sonde_profile_array_t *ra = NULL;
    assert_int_equal(sonde_profile_array_open(r, 0, &ra), OK);
    assert_int_equal(sonde_profile_array_open((sonde_profile_buffer_t *)ra, 0, &ra), INVALID);
    sonde_profile_array_destroy(ra);
    sonde_profile_buffer_destroy(r);
    free(img);
    unlink(bad);
    unlink(good);
}

static int cleanup_dir(void **state) {
    (void)state;
    if (g_dir[0] != 0) rmdir(g_dir);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geometry),         cmocka_unit_test(test_create_preconditions),
        cmocka_unit_test(test_null_accessors),   cmocka_unit_test(test_thread_index),
        cmocka_unit_test(test_buffer_create),    cmocka_unit_test(test_allocate),
        cmocka_unit_test(test_not_allocated),    cmocka_unit_test(test_read_write),
        cmocka_unit_test(test_view_and_helpers), cmocka_unit_test(test_snapshot),
        cmocka_unit_test(test_allocator),        cmocka_unit_test(test_shared_file),
        cmocka_unit_test(test_shared_memfd),     cmocka_unit_test(test_shared_directory_full),
        cmocka_unit_test(test_shared_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, cleanup_dir);
}
