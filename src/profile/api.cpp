// The extern "C" surface of include/sonde/profile.h: argument checks, then a call into
// sonde::profile. No logic lives here; no C++ exception leaves these functions.
#include <new>

#include "core/abi_struct.h"
#include "core/guarded.h"
#include "profile/profile.h"

using namespace sonde::profile;

namespace {

using sonde::guarded;

// Checks an array/buffer pair for a record operation; SUCCESS when arr is allocated in pb and,
// for a shared buffer, the file still covers the region (another process may have cut it).
sonde_status_t check_pair(const sonde_profile_array_t *arr, const sonde_profile_buffer_t *pb) {
    if (arr == nullptr || pb == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (!is_array(arr) || !is_buffer(pb)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    const sonde_status_t status = check_placement(*as_array(arr), *as_buffer(pb));
    if (status != SONDE_STATUS_SUCCESS) return status;
    return check_backing(*as_buffer(pb));
}

// Checks a record range of one bucket.
bool range_ok(const Array &a, uint32_t first, uint32_t count, uint32_t bucket) {
    return count != 0 && first < a.num_records && count <= a.num_records - first && bucket < a.num_buckets;
}

// Checks the arguments of read and write.
sonde_status_t check_records(const sonde_profile_array_t *arr, const sonde_profile_buffer_t *pb,
                             const void *records, uint32_t first, uint32_t count, uint32_t bucket) {
    if (records == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    const sonde_status_t status = check_pair(arr, pb);
    if (status != SONDE_STATUS_SUCCESS) return status;
    return range_ok(*as_array(arr), first, count, bucket) ? SONDE_STATUS_SUCCESS
                                                          : SONDE_STATUS_ERROR_INVALID_ARGUMENT;
}

sonde_status_t finish_buffer(sonde_status_t status, Buffer *pb, sonde_profile_buffer_t **out) {
    if (status == SONDE_STATUS_SUCCESS) *out = reinterpret_cast<sonde_profile_buffer_t *>(pb);
    return status;
}

}  // namespace

extern "C" {

SONDE_API uint32_t sonde_profile_thread_index(void) { return thread_index(); }

SONDE_API sonde_status_t sonde_profile_set_thread_index(uint32_t index) {
    if (index == UINT32_MAX) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    set_thread_index(index);
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_profile_buffer_create(uint64_t size, sonde_profile_buffer_t **out) {
    if (out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    return guarded([&] {
        Buffer *pb = nullptr;
        const sonde_status_t status = create_owned(size, &pb);
        return finish_buffer(status, pb, out);
    });
}

SONDE_API sonde_status_t sonde_profile_buffer_create_from_memory(void *memory, uint64_t size,
                                                                 sonde_profile_buffer_t **out) {
    if (memory == nullptr || out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    return guarded([&] {
        Buffer *pb = nullptr;
        const sonde_status_t status = create_from_memory(memory, size, &pb);
        return finish_buffer(status, pb, out);
    });
}

SONDE_API sonde_status_t sonde_profile_buffer_create_with_allocator(
    void *memory, uint64_t size, const sonde_profile_allocator_t *allocator, sonde_profile_buffer_t **out) {
    if (allocator == nullptr || out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    return guarded([&] {
        sonde_profile_allocator_t copy;
        sonde_status_t status = sonde::read_abi_struct(allocator, SONDE_PROFILE_ALLOCATOR_SIZE_1_0, &copy);
        if (status != SONDE_STATUS_SUCCESS) return status;
        if (copy.allocate == nullptr) return static_cast<sonde_status_t>(SONDE_STATUS_ERROR_NULL_POINTER);
        if (copy.reserved != 0) return static_cast<sonde_status_t>(SONDE_STATUS_ERROR_INVALID_ARGUMENT);
        Buffer *pb = nullptr;
        status = memory != nullptr ? create_from_memory(memory, size, &pb) : create_owned(size, &pb);
        if (status != SONDE_STATUS_SUCCESS) return status;
        pb->has_allocator = true;
        pb->allocator = copy;
        *out = reinterpret_cast<sonde_profile_buffer_t *>(pb);
        return status;
    });
}

SONDE_API sonde_status_t sonde_profile_buffer_create_shared(const char *path, uint64_t size,
                                                            sonde_profile_buffer_t **out) {
    if (out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    return guarded([&] {
        Buffer *pb = nullptr;
        const sonde_status_t status = create_shared(path, size, &pb);
        return finish_buffer(status, pb, out);
    });
}

SONDE_API sonde_status_t sonde_profile_buffer_open_shared(const char *path, sonde_profile_buffer_t **out) {
    if (path == nullptr || out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    return guarded([&] {
        Buffer *pb = nullptr;
        const sonde_status_t status = open_shared(path, &pb);
        return finish_buffer(status, pb, out);
    });
}

SONDE_API void sonde_profile_buffer_destroy(sonde_profile_buffer_t *pb) {
    if (pb == nullptr || !is_buffer(pb)) return;
    delete as_buffer(pb);
}

SONDE_API uint64_t sonde_profile_buffer_size(const sonde_profile_buffer_t *pb) {
    if (pb == nullptr || !is_buffer(pb)) return 0;
    return as_buffer(pb)->region_size - as_buffer(pb)->data_begin;
}

SONDE_API void *sonde_profile_buffer_data(const sonde_profile_buffer_t *pb) {
    if (pb == nullptr || !is_buffer(pb)) return nullptr;
    return as_buffer(pb)->base;
}

SONDE_API sonde_status_t sonde_profile_buffer_fd(const sonde_profile_buffer_t *pb, int *fd) {
    if (pb == nullptr || fd == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (!is_buffer(pb)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (!as_buffer(pb)->shared()) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    *fd = as_buffer(pb)->fd;
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_profile_buffer_num_arrays(const sonde_profile_buffer_t *pb, uint32_t *count) {
    if (pb == nullptr || count == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (!is_buffer(pb)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (!as_buffer(pb)->shared()) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    const sonde_status_t status = check_backing(*as_buffer(pb));
    if (status != SONDE_STATUS_SUCCESS) return status;
    *count = published_arrays(*as_buffer(pb));
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_profile_array_create(uint32_t record_size, uint32_t num_records,
                                                    uint32_t num_thread_buckets, uint32_t alignment,
                                                    sonde_profile_array_t **out) {
    if (out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    return guarded([&] {
        Array arr;
        const sonde_status_t status =
            make_array(record_size, num_records, num_thread_buckets, alignment, &arr);
        if (status == SONDE_STATUS_SUCCESS) *out = reinterpret_cast<sonde_profile_array_t *>(new Array(arr));
        return status;
    });
}

SONDE_API sonde_status_t sonde_profile_array_open(sonde_profile_buffer_t *pb, uint32_t index,
                                                  sonde_profile_array_t **out) {
    if (pb == nullptr || out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (!is_buffer(pb)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (!as_buffer(pb)->shared()) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    return guarded([&] {
        Array arr;
        sonde_status_t status = check_backing(*as_buffer(pb));
        if (status != SONDE_STATUS_SUCCESS) return status;
        status = open_array(*as_buffer(pb), index, &arr);
        if (status == SONDE_STATUS_SUCCESS) *out = reinterpret_cast<sonde_profile_array_t *>(new Array(arr));
        return status;
    });
}

SONDE_API void sonde_profile_array_destroy(sonde_profile_array_t *arr) {
    if (arr == nullptr || !is_array(arr)) return;
    as_array(arr)->magic = 0;
    delete as_array(arr);
}

SONDE_API sonde_status_t sonde_profile_array_allocate(sonde_profile_array_t *arr,
                                                      sonde_profile_buffer_t *pb) {
    if (arr == nullptr || pb == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (!is_array(arr) || !is_buffer(pb)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    return guarded([&] { return allocate(*as_array(arr), *as_buffer(pb)); });
}

SONDE_API sonde_status_t sonde_profile_array_initialize(const sonde_profile_array_t *arr,
                                                        sonde_profile_buffer_t *pb) {
    const sonde_status_t status = check_pair(arr, pb);
    if (status != SONDE_STATUS_SUCCESS) return status;
    initialize(*as_array(arr), *as_buffer(pb));
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_profile_array_read(const sonde_profile_array_t *arr,
                                                  const sonde_profile_buffer_t *pb, void *records,
                                                  uint32_t first_record, uint32_t num_records,
                                                  uint32_t thread_bucket) {
    const sonde_status_t status = check_records(arr, pb, records, first_record, num_records, thread_bucket);
    if (status != SONDE_STATUS_SUCCESS) return status;
    read_records(*as_array(arr), *as_buffer(pb), records, first_record, num_records, thread_bucket);
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_profile_array_write(const sonde_profile_array_t *arr,
                                                   sonde_profile_buffer_t *pb, const void *records,
                                                   uint32_t first_record, uint32_t num_records,
                                                   uint32_t thread_bucket) {
    const sonde_status_t status = check_records(arr, pb, records, first_record, num_records, thread_bucket);
    if (status != SONDE_STATUS_SUCCESS) return status;
    write_records(*as_array(arr), *as_buffer(pb), records, first_record, num_records, thread_bucket);
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_profile_array_record_offset(const sonde_profile_array_t *arr, uint32_t record,
                                                           uint32_t thread_bucket, uint64_t *offset) {
    if (arr == nullptr || offset == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (!is_array(arr)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    const Array &a = *as_array(arr);
    if (!a.allocated()) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    if (!range_ok(a, record, 1, thread_bucket)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    *offset = a.offset + static_cast<uint64_t>(thread_bucket) * a.chunk_size +
              static_cast<uint64_t>(record) * a.record_size;
    return SONDE_STATUS_SUCCESS;
}

SONDE_API uint64_t sonde_profile_array_size(const sonde_profile_array_t *arr) {
    return arr != nullptr && is_array(arr) ? as_array(arr)->size() : 0;
}

SONDE_API uint64_t sonde_profile_array_offset(const sonde_profile_array_t *arr) {
    return arr != nullptr && is_array(arr) ? as_array(arr)->offset : SONDE_PROFILE_OFFSET_NONE;
}

SONDE_API bool sonde_profile_array_is_allocated(const sonde_profile_array_t *arr) {
    return arr != nullptr && is_array(arr) && as_array(arr)->allocated();
}

SONDE_API uint32_t sonde_profile_array_record_size(const sonde_profile_array_t *arr) {
    return arr != nullptr && is_array(arr) ? as_array(arr)->record_size : 0;
}

SONDE_API uint32_t sonde_profile_array_num_records(const sonde_profile_array_t *arr) {
    return arr != nullptr && is_array(arr) ? as_array(arr)->num_records : 0;
}

SONDE_API uint32_t sonde_profile_array_num_thread_buckets(const sonde_profile_array_t *arr) {
    return arr != nullptr && is_array(arr) ? as_array(arr)->num_buckets : 0;
}

SONDE_API uint32_t sonde_profile_array_chunk_size(const sonde_profile_array_t *arr) {
    return arr != nullptr && is_array(arr) ? as_array(arr)->chunk_size : 0;
}

SONDE_API uint32_t sonde_profile_array_thread_bucket(const sonde_profile_array_t *arr) {
    if (arr == nullptr || !is_array(arr)) return 0;
    return thread_index() & (as_array(arr)->num_buckets - 1);
}

SONDE_API sonde_status_t sonde_profile_array_thread_record(const sonde_profile_array_t *arr,
                                                           sonde_profile_buffer_t *pb, uint32_t record,
                                                           void **record_ptr) {
    if (record_ptr == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    const sonde_status_t status = check_pair(arr, pb);
    if (status != SONDE_STATUS_SUCCESS) return status;
    const Array &a = *as_array(arr);
    if (record >= a.num_records) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    *record_ptr = record_address(a, *as_buffer(pb), record, thread_index() & (a.num_buckets - 1));
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_profile_array_view(const sonde_profile_array_t *arr,
                                                  sonde_profile_buffer_t *pb, sonde_profile_view_t *view) {
    if (view == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    const sonde_status_t status = check_pair(arr, pb);
    if (status != SONDE_STATUS_SUCCESS) return status;
    const Array &a = *as_array(arr);
    const Buffer &b = *as_buffer(pb);
    sonde_profile_view_t v{};
    v.struct_size = sizeof v;
    v.bucket = thread_index() & (a.num_buckets - 1);
    v.base = record_address(a, b, 0, 0);
    v.bucket_base = record_address(a, b, 0, v.bucket);
    v.chunk_size = a.chunk_size;
    v.record_size = a.record_size;
    v.num_records = a.num_records;
    v.bucket_mask = a.num_buckets - 1;
    return sonde::write_abi_struct(v, SONDE_PROFILE_VIEW_SIZE_1_0, view);
}

SONDE_API sonde_status_t sonde_profile_array_sum_u64(const sonde_profile_array_t *arr,
                                                     const sonde_profile_buffer_t *pb, uint32_t record,
                                                     uint32_t field_offset, uint64_t *sum) {
    if (sum == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    const sonde_status_t status = check_pair(arr, pb);
    if (status != SONDE_STATUS_SUCCESS) return status;
    const Array &a = *as_array(arr);
    if (record >= a.num_records || field_offset > a.record_size || a.record_size - field_offset < 8)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    // chunk_size is a multiple of 64, so the field has the same alignment in every bucket.
    if (reinterpret_cast<uintptr_t>(record_address(a, *as_buffer(pb), record, 0) + field_offset) % 8 != 0)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    *sum = sum_u64(a, *as_buffer(pb), record, field_offset);
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_profile_array_snapshot(const sonde_profile_array_t *arr,
                                                      const sonde_profile_buffer_t *pb, void *dst,
                                                      uint64_t dst_size) {
    if (dst == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    const sonde_status_t status = check_pair(arr, pb);
    if (status != SONDE_STATUS_SUCCESS) return status;
    if (dst_size < as_array(arr)->size()) return SONDE_STATUS_ERROR_BUFFER_TOO_SHORT;
    snapshot(*as_array(arr), *as_buffer(pb), dst);
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_profile_array_emit(const sonde_profile_array_t *arr,
                                                  const sonde_profile_buffer_t *pb, sonde_buffer_id_t buffer,
                                                  uint32_t flags, uint64_t *emitted) {
    if (emitted != nullptr) *emitted = 0;
    const sonde_status_t status = check_pair(arr, pb);
    if (status != SONDE_STATUS_SUCCESS) return status;
    return guarded([&] { return emit(*as_array(arr), *as_buffer(pb), buffer, flags, emitted); });
}

}  // extern "C"
