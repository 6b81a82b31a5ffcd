// Profile arrays into the record stream: one SONDE_RECORD_KIND_PROFILER record per non-zero
// u64 counter (per bucket, or summed over buckets), through the public sonde_emit. A slow
// path meant for periodic collection; it costs one sonde_emit per non-zero counter.
#include "profile/profile.h"
#include <sonde/buffer.h>
#include <sonde/record.h>
#include <sonde/session.h>

namespace sonde::profile {

namespace {

constexpr uint32_t kMaxWords = 1u << 16;  // word index is 16 bits of the counter id

const uint64_t *word_at(const Array &arr, const Buffer &pb, uint32_t bucket, uint32_t record, uint32_t word) {
    return reinterpret_cast<const uint64_t *>(record_address(arr, pb, record, bucket)) + word;
}

}  // namespace

sonde_status_t emit(const Array &arr, const Buffer &pb, sonde_buffer_id_t buffer, uint32_t flags,
                    uint64_t *emitted) {
    uint64_t count = 0;
    if (emitted != nullptr) *emitted = 0;
    if ((flags & ~SONDE_PROFILE_EMIT_SUMMED) != 0 || arr.record_size % 8 != 0 ||
        arr.record_size / 8 > kMaxWords)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    const bool summed = (flags & SONDE_PROFILE_EMIT_SUMMED) != 0;
    if (!summed && arr.num_buckets > SONDE_PROFILE_COUNTER_ALL_BUCKETS)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    const uint32_t words = arr.record_size / 8;
    sonde_profiler_record_t rec{};
    rec.timestamp_ns = sonde_get_timestamp();
    sonde_status_t status = SONDE_STATUS_SUCCESS;
    auto send = [&](uint32_t bucket, uint32_t record, uint32_t word, uint64_t value) {
        if (value == 0) return true;
        rec.counter_id = SONDE_PROFILE_COUNTER_ID(bucket, record, word);
        rec.value = value;
        status = sonde_emit(buffer, SONDE_RECORD_KIND_PROFILER, &rec, sizeof rec);
        if (status != SONDE_STATUS_SUCCESS) return false;
        ++count;
        return true;
    };
    bool ok = true;
    if (summed) {
        for (uint32_t r = 0; ok && r < arr.num_records; ++r)
            for (uint32_t w = 0; ok && w < words; ++w) {
                uint64_t sum = 0;
                for (uint32_t b = 0; b < arr.num_buckets; ++b)
                    sum += __atomic_load_n(word_at(arr, pb, b, r, w), __ATOMIC_RELAXED);
                ok = send(SONDE_PROFILE_COUNTER_ALL_BUCKETS, r, w, sum);
            }
    } else {
        for (uint32_t b = 0; ok && b < arr.num_buckets; ++b)
            for (uint32_t r = 0; ok && r < arr.num_records; ++r)
                for (uint32_t w = 0; ok && w < words; ++w)
                    ok = send(b, r, w, __atomic_load_n(word_at(arr, pb, b, r, w), __ATOMIC_RELAXED));
    }
    if (emitted != nullptr) *emitted = count;
    return status;
}

}  // namespace sonde::profile
