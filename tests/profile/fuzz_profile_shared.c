/* libFuzzer target: a shared profile buffer file that another process wrote. The input is the
 * file's bytes, handed to sonde_profile_buffer_open_shared() as a memfd (/proc/self/fd/N).
 * When it opens, every directory entry (and the first index past them) goes through
 * sonde_profile_array_open(), and every array that opens through the calls that read or touch
 * the region: its geometry, record_offset, thread_record, view, snapshot, read, sum_u64, write
 * and initialize. What they answer is checked against each other: a geometry inside the region,
 * read and sum_u64 equal to what the snapshot holds, sum_u64 refusing exactly the fields that
 * are not 8-byte aligned or not inside the record, write of the same bytes changing nothing,
 * initialize leaving zeros. Then the file is cut to half its size, as another process may do,
 * and every call that touches the region must answer an error instead of faulting.
 * A check that fails aborts (a crash for libFuzzer and the replay driver). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <unistd.h>

#include <sonde/profile.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Bounds on the work per input (a region of 1 MiB stays well under a second). */
#define MAX_RECORDS_CHECKED 4096u
#define MAX_WORDS_CHECKED 8u

#define CHECK(cond)                                                                                       \
    do {                                                                                                  \
        if (!(cond)) {                                                                                    \
            fprintf(stderr, "fuzz_profile_shared: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                                      \
        }                                                                                                 \
    } while (0)

static uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Everything an opened array answers, checked against its snapshot. */
static void check_array(sonde_profile_buffer_t *pb, sonde_profile_array_t *arr) {
    const uint64_t offset = sonde_profile_array_offset(arr);
    const uint64_t size = sonde_profile_array_size(arr);
    const uint32_t record_size = sonde_profile_array_record_size(arr);
    const uint32_t records = sonde_profile_array_num_records(arr);
    const uint32_t buckets = sonde_profile_array_num_thread_buckets(arr);
    const uint32_t chunk = sonde_profile_array_chunk_size(arr);
    const uint64_t region = SONDE_PROFILE_SHARED_HEADER_SIZE + sonde_profile_buffer_size(pb);
    CHECK(sonde_profile_array_is_allocated(arr));
    CHECK(record_size > 0 && records > 0 && buckets > 0 && (buckets & (buckets - 1)) == 0);
    CHECK(chunk % 64 == 0 && (uint64_t)record_size * records <= chunk);
    CHECK(size == (uint64_t)chunk * buckets);
    CHECK(offset >= SONDE_PROFILE_SHARED_HEADER_SIZE && offset <= region && size <= region - offset);

    uint64_t at = 0;
    CHECK(sonde_profile_array_record_offset(arr, records - 1, buckets - 1, &at) == SONDE_STATUS_SUCCESS);
    CHECK(at == offset + (uint64_t)(buckets - 1) * chunk + (uint64_t)(records - 1) * record_size);
    CHECK(sonde_profile_array_record_offset(arr, records, 0, &at) == SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK(sonde_profile_array_record_offset(arr, 0, buckets, &at) == SONDE_STATUS_ERROR_INVALID_ARGUMENT);

    const unsigned char *base = (const unsigned char *)sonde_profile_buffer_data(pb);
    void *mine = NULL;
    CHECK(sonde_profile_array_thread_record(arr, pb, records - 1, &mine) == SONDE_STATUS_SUCCESS);
    CHECK((const unsigned char *)mine >= base + offset &&
          (const unsigned char *)mine + record_size <= base + offset + size);
    CHECK(sonde_profile_array_thread_record(arr, pb, records, &mine) == SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    sonde_profile_view_t view;
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    CHECK(sonde_profile_array_view(arr, pb, &view) == SONDE_STATUS_SUCCESS);
    CHECK(view.base == base + offset && view.chunk_size == chunk && view.record_size == record_size &&
          view.num_records == records && view.bucket_mask == buckets - 1);

    unsigned char *snap = malloc(size != 0 ? size : 1);
    CHECK(snap != NULL);
    CHECK(sonde_profile_array_snapshot(arr, pb, snap, size - 1) == SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    CHECK(sonde_profile_array_snapshot(arr, pb, snap, size) == SONDE_STATUS_SUCCESS);
    CHECK(memcmp(snap, base + offset, size) == 0);

    unsigned char *record = malloc(record_size);
    CHECK(record != NULL);
    const uint32_t nrec = records < MAX_RECORDS_CHECKED ? records : MAX_RECORDS_CHECKED;
    for (uint32_t r = 0; r < nrec; ++r) {
        const uint32_t b = r & (buckets - 1);
        CHECK(sonde_profile_array_read(arr, pb, record, r, 1, b) == SONDE_STATUS_SUCCESS);
        CHECK(memcmp(record, snap + (uint64_t)b * chunk + (uint64_t)r * record_size, record_size) == 0);
        /* Writing the same bytes back changes nothing. */
        CHECK(sonde_profile_array_write(arr, pb, record, r, 1, b) == SONDE_STATUS_SUCCESS);
        CHECK(memcmp(base + offset + (uint64_t)b * chunk + (uint64_t)r * record_size, record, record_size) ==
              0);
        for (uint32_t w = 0; w < MAX_WORDS_CHECKED && w * 8 < record_size + 8; ++w) {
            /* Fields at 8-byte steps and one byte off them, the last one past the record. */
            for (uint32_t skew = 0; skew < 2; ++skew) {
                const uint32_t field = w * 8 + skew;
                uint64_t sum = 0;
                const sonde_status_t st = sonde_profile_array_sum_u64(arr, pb, r, field, &sum);
                const uint64_t rel = (uint64_t)r * record_size + field;
                const int inside = (uint64_t)field + 8 <= record_size;
                const int aligned = (offset + rel) % 8 == 0;
                if (!inside || !aligned) {
                    CHECK(st == SONDE_STATUS_ERROR_INVALID_ARGUMENT);
                    continue;
                }
                CHECK(st == SONDE_STATUS_SUCCESS);
                uint64_t expect = 0;
                for (uint32_t k = 0; k < buckets; ++k) expect += load64(snap + (uint64_t)k * chunk + rel);
                CHECK(sum == expect);
            }
        }
    }
    CHECK(sonde_profile_array_read(arr, pb, record, records, 1, 0) == SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK(sonde_profile_array_read(arr, pb, record, 0, 1, buckets) == SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK(sonde_profile_array_read(arr, pb, record, 0, 0, 0) == SONDE_STATUS_ERROR_INVALID_ARGUMENT);

    CHECK(sonde_profile_array_initialize(arr, pb) == SONDE_STATUS_SUCCESS);
    CHECK(sonde_profile_array_snapshot(arr, pb, snap, size) == SONDE_STATUS_SUCCESS);
    for (uint64_t i = 0; i < size; ++i) CHECK(snap[i] == 0);
    free(record);
    free(snap);
}

/* After the cut: every call that touches the region answers an error, none faults. */
static void check_cut(sonde_profile_buffer_t *pb, sonde_profile_array_t *arr) {
    uint32_t count = 0;
    CHECK(sonde_profile_buffer_num_arrays(pb, &count) == SONDE_STATUS_ERROR_FORMAT);
    sonde_profile_array_t *again = NULL;
    CHECK(sonde_profile_array_open(pb, 0, &again) != SONDE_STATUS_SUCCESS && again == NULL);
    if (arr == NULL) return;
    const uint64_t size = sonde_profile_array_size(arr);
    const uint32_t record_size = sonde_profile_array_record_size(arr);
    unsigned char *snap = malloc(size != 0 ? size : 1);
    unsigned char *record = malloc(record_size);
    CHECK(snap != NULL && record != NULL);
    uint64_t sum = 0;
    void *mine = NULL;
    sonde_profile_view_t view;
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    CHECK(sonde_profile_array_snapshot(arr, pb, snap, size) == SONDE_STATUS_ERROR_FORMAT);
    CHECK(sonde_profile_array_read(arr, pb, record, 0, 1, 0) == SONDE_STATUS_ERROR_FORMAT);
    CHECK(sonde_profile_array_write(arr, pb, record, 0, 1, 0) == SONDE_STATUS_ERROR_FORMAT);
    CHECK(sonde_profile_array_sum_u64(arr, pb, 0, 0, &sum) != SONDE_STATUS_SUCCESS);
    CHECK(sonde_profile_array_initialize(arr, pb) == SONDE_STATUS_ERROR_FORMAT);
    CHECK(sonde_profile_array_thread_record(arr, pb, 0, &mine) == SONDE_STATUS_ERROR_FORMAT);
    CHECK(sonde_profile_array_view(arr, pb, &view) == SONDE_STATUS_ERROR_FORMAT);
    free(record);
    free(snap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const int fd = memfd_create("fuzz_profile_shared", MFD_CLOEXEC);
    CHECK(fd >= 0);
    for (size_t done = 0; done < size;) {
        const ssize_t n = write(fd, data + done, size - done);
        CHECK(n > 0);
        done += (size_t)n;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    sonde_profile_buffer_t *pb = NULL;
    const sonde_status_t st = sonde_profile_buffer_open_shared(path, &pb);
    if (st != SONDE_STATUS_SUCCESS) {
        CHECK(pb == NULL);
        CHECK(st == SONDE_STATUS_ERROR_FORMAT || st == SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
        close(fd);
        return 0;
    }
    CHECK(SONDE_PROFILE_SHARED_HEADER_SIZE + sonde_profile_buffer_size(pb) == size);
    uint32_t count = 0;
    CHECK(sonde_profile_buffer_num_arrays(pb, &count) == SONDE_STATUS_SUCCESS);
    CHECK(count <= SONDE_PROFILE_SHARED_MAX_ARRAYS);
    sonde_profile_array_t *last = NULL;
    for (uint32_t i = 0; i <= count; ++i) {
        sonde_profile_array_t *arr = NULL;
        const sonde_status_t ost = sonde_profile_array_open(pb, i, &arr);
        if (i == count) {
            CHECK(ost == SONDE_STATUS_ERROR_INVALID_ARGUMENT && arr == NULL);
            break;
        }
        if (ost != SONDE_STATUS_SUCCESS) {
            CHECK(ost == SONDE_STATUS_ERROR_FORMAT && arr == NULL);
            continue;
        }
        check_array(pb, arr);
        sonde_profile_array_destroy(last);
        last = arr;
    }
    /* Another process cuts the file to half its size. */
    CHECK(ftruncate(fd, (off_t)(size / 2)) == 0);
    check_cut(pb, last);
    sonde_profile_array_destroy(last);
    sonde_profile_buffer_destroy(pb);
    close(fd);
    return 0;
}
