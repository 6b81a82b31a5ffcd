// Profile arrays: geometry (GtProfileArray rules), record addressing and the copying readers
// and writers. Every copy of record memory moves naturally aligned u64 words with relaxed
// atomic loads/stores, so a copy racing the owning threads never tears a counter.
#include <cstring>

#include "profile/profile.h"

namespace sonde::profile {

namespace {

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

uint64_t round_up(uint64_t v, uint64_t align) { return (v + align - 1) & ~(align - 1); }

uint32_t next_power_of_two(uint32_t v) {
    uint32_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

// Copies between record memory (`shared`, which others may be writing) and private memory.
// Head and tail bytes that do not form an aligned word move one byte at a time.
template <bool kLoad>
void move_words(uint8_t *shared, uint8_t *priv, uint64_t bytes) {
    while (bytes > 0 && reinterpret_cast<uintptr_t>(shared) % 8 != 0) {
        if (kLoad)
            *priv = __atomic_load_n(shared, __ATOMIC_RELAXED);
        else
            __atomic_store_n(shared, *priv, __ATOMIC_RELAXED);
        ++shared, ++priv, --bytes;
    }
    for (; bytes >= 8; shared += 8, priv += 8, bytes -= 8) {
        auto *word = reinterpret_cast<uint64_t *>(shared);
        if (kLoad) {
            const uint64_t v = __atomic_load_n(word, __ATOMIC_RELAXED);
            std::memcpy(priv, &v, 8);
        } else {
            uint64_t v;
            std::memcpy(&v, priv, 8);
            __atomic_store_n(word, v, __ATOMIC_RELAXED);
        }
    }
    for (; bytes > 0; ++shared, ++priv, --bytes) {
        if (kLoad)
            *priv = __atomic_load_n(shared, __ATOMIC_RELAXED);
        else
            __atomic_store_n(shared, *priv, __ATOMIC_RELAXED);
    }
}

}  // namespace

sonde_status_t make_array(uint32_t record_size, uint32_t num_records, uint32_t num_buckets,
                          uint32_t alignment, Array *out) {
    if (record_size == 0 || num_records == 0 || num_buckets == 0 ||
        num_buckets > SONDE_PROFILE_MAX_THREAD_BUCKETS)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (!is_power_of_two(alignment) || alignment > SONDE_PROFILE_MAX_ALIGNMENT)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    Array arr;
    arr.record_size = record_size;
    arr.num_records = num_records;
    arr.num_buckets = next_power_of_two(num_buckets);
    arr.alignment = alignment;
    const uint64_t chunk =
        round_up(static_cast<uint64_t>(record_size) * num_records, arr.effective_alignment());
    if (chunk > UINT32_MAX) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    arr.chunk_size = static_cast<uint32_t>(chunk);
    *out = arr;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t check_placement(const Array &arr, const Buffer &pb) {
    if (!arr.allocated()) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    if (arr.buffer_serial != pb.serial || arr.offset > pb.region_size ||
        arr.size() > pb.region_size - arr.offset)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    return SONDE_STATUS_SUCCESS;
}

uint8_t *record_address(const Array &arr, const Buffer &pb, uint32_t record, uint32_t bucket) {
    return pb.base + arr.offset + static_cast<uint64_t>(bucket) * arr.chunk_size +
           static_cast<uint64_t>(record) * arr.record_size;
}

void initialize(const Array &arr, const Buffer &pb) {
    // offset and size are multiples of 64 and the base is 64-byte aligned: whole words only.
    auto *word = reinterpret_cast<uint64_t *>(pb.base + arr.offset);
    for (uint64_t i = 0, n = arr.size() / 8; i < n; ++i) __atomic_store_n(&word[i], 0, __ATOMIC_RELAXED);
}

void read_records(const Array &arr, const Buffer &pb, void *dst, uint32_t first, uint32_t count,
                  uint32_t bucket) {
    move_words<true>(record_address(arr, pb, first, bucket), static_cast<uint8_t *>(dst),
                     static_cast<uint64_t>(count) * arr.record_size);
}

void write_records(const Array &arr, const Buffer &pb, const void *src, uint32_t first, uint32_t count,
                   uint32_t bucket) {
    move_words<false>(record_address(arr, pb, first, bucket), static_cast<uint8_t *>(const_cast<void *>(src)),
                      static_cast<uint64_t>(count) * arr.record_size);
}

void copy_words(uint8_t *dst, const uint8_t *src, uint64_t bytes) {
    move_words<true>(const_cast<uint8_t *>(src), dst, bytes);
}

uint64_t sum_u64(const Array &arr, const Buffer &pb, uint32_t record, uint32_t field_offset) {
    uint64_t sum = 0;
    for (uint32_t b = 0; b < arr.num_buckets; ++b) {
        const auto *p = reinterpret_cast<const uint64_t *>(record_address(arr, pb, record, b) + field_offset);
        sum += __atomic_load_n(p, __ATOMIC_RELAXED);
    }
    return sum;
}

void snapshot(const Array &arr, const Buffer &pb, void *dst) {
    copy_words(static_cast<uint8_t *>(dst), pb.base + arr.offset, arr.size());
}

}  // namespace sonde::profile
