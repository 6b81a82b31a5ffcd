// Profile arrays (GTPin GtProfileArray model): the internal objects behind include/sonde/profile.h.
//
// Ownership and threads:
//  - A Buffer owns its mapping (or borrows caller memory). Its allocation state (bump offset,
//    caller allocator, shared directory) is guarded by Buffer::mu; everything else in it is
//    immutable after creation, so readers and the hot path take no lock.
//  - An Array is geometry plus the offset and buffer serial set once by allocate; the caller
//    must not allocate one array from two threads at once. After that it is read-only.
//  - Record memory is written by the threads owning the buckets (relaxed atomic stores in the
//    inline helpers) and read by anyone with relaxed atomic loads, word by word.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include <sonde/profile.h>

namespace sonde::profile {

constexpr uint64_t kBufferMagic = 0x53445042'55464631ull;  // identifies a live Buffer object
constexpr uint64_t kArrayMagic = 0x53445041'52524159ull;   // identifies a live Array object
constexpr uint64_t kMaxBufferSize = 1ull << 46;            // 64 TiB: keeps offset arithmetic safe

enum class Backing { kOwned, kCaller, kSharedCreated, kSharedOpened };

struct Buffer {
    uint64_t magic = kBufferMagic;
    uint64_t serial = 0;  // unique per Buffer object in this process
    Backing backing = Backing::kOwned;
    uint8_t *base = nullptr;   // offset 0
    uint64_t region_size = 0;  // bytes addressable from base (shared: header included)
    uint64_t data_begin = 0;   // first offset arrays may use
    int fd = -1;
    std::mutex mu;      // guards bump, allocator calls and the shared directory
    uint64_t bump = 0;  // next free offset (non-shared); shared buffers use header->bump
    bool has_allocator = false;
    sonde_profile_allocator_t allocator{};

    sonde_profile_shared_header_t *header() const {
        return reinterpret_cast<sonde_profile_shared_header_t *>(base);
    }
    bool shared() const { return backing == Backing::kSharedCreated || backing == Backing::kSharedOpened; }
    ~Buffer();
};

struct Array {
    uint64_t magic = kArrayMagic;
    uint32_t record_size = 0;
    uint32_t num_records = 0;
    uint32_t num_buckets = 0;
    uint32_t alignment = 0;  // as asked
    uint32_t chunk_size = 0;
    uint64_t offset = SONDE_PROFILE_OFFSET_NONE;
    uint64_t buffer_serial = 0;  // the Buffer it was allocated in

    bool allocated() const { return offset != SONDE_PROFILE_OFFSET_NONE; }
    uint64_t size() const { return static_cast<uint64_t>(chunk_size) * num_buckets; }
    uint64_t effective_alignment() const {
        return alignment > SONDE_PROFILE_MIN_CHUNK_ALIGNMENT ? alignment : SONDE_PROFILE_MIN_CHUNK_ALIGNMENT;
    }
};

inline bool is_buffer(const sonde_profile_buffer_t *pb) {
    return reinterpret_cast<const Buffer *>(pb)->magic == kBufferMagic;
}
inline bool is_array(const sonde_profile_array_t *arr) {
    return reinterpret_cast<const Array *>(arr)->magic == kArrayMagic;
}
inline Buffer *as_buffer(sonde_profile_buffer_t *pb) { return reinterpret_cast<Buffer *>(pb); }
inline const Buffer *as_buffer(const sonde_profile_buffer_t *pb) {
    return reinterpret_cast<const Buffer *>(pb);
}
inline Array *as_array(sonde_profile_array_t *arr) { return reinterpret_cast<Array *>(arr); }
inline const Array *as_array(const sonde_profile_array_t *arr) {
    return reinterpret_cast<const Array *>(arr);
}

// thread_index.cpp
uint32_t thread_index();
void set_thread_index(uint32_t index);

// buffer.cpp: each returns SUCCESS and sets *out, or a failure status and leaves *out alone.
sonde_status_t create_owned(uint64_t size, Buffer **out);
sonde_status_t create_from_memory(void *memory, uint64_t size, Buffer **out);
sonde_status_t create_shared(const char *path, uint64_t size, Buffer **out);
sonde_status_t open_shared(const char *path, Buffer **out);
// Whether a shared buffer's file still covers its mapping (fstat of its fd) and still starts
// with the header: SUCCESS (also for buffers that are not shared), FORMAT (the file was cut
// below the mapped size, or cut and grown back), IO (fstat failed). Every call that touches
// the region but the inline hot path asks it first; a truncation racing the call between the
// check and the access can still fault (documented in docs/robustness.md).
sonde_status_t check_backing(const Buffer &pb);
uint32_t published_arrays(const Buffer &pb);
sonde_status_t allocate(Array &arr, Buffer &pb);

// array.cpp
sonde_status_t make_array(uint32_t record_size, uint32_t num_records, uint32_t num_buckets,
                          uint32_t alignment, Array *out);
sonde_status_t open_array(const Buffer &pb, uint32_t index, Array *out);
// Checks that arr is allocated in pb and lies inside it: PHASE_FAILURE / INVALID_ARGUMENT.
sonde_status_t check_placement(const Array &arr, const Buffer &pb);
uint8_t *record_address(const Array &arr, const Buffer &pb, uint32_t record, uint32_t bucket);
void initialize(const Array &arr, const Buffer &pb);
void read_records(const Array &arr, const Buffer &pb, void *dst, uint32_t first, uint32_t count,
                  uint32_t bucket);
void write_records(const Array &arr, const Buffer &pb, const void *src, uint32_t first, uint32_t count,
                   uint32_t bucket);
uint64_t sum_u64(const Array &arr, const Buffer &pb, uint32_t record, uint32_t field_offset);
void snapshot(const Array &arr, const Buffer &pb, void *dst);
// Copies `bytes` from src to dst, moving every 8-byte-aligned (in src) u64 whole.
void copy_words(uint8_t *dst, const uint8_t *src, uint64_t bytes);

// emit.cpp
sonde_status_t emit(const Array &arr, const Buffer &pb, sonde_buffer_id_t buffer, uint32_t flags,
                    uint64_t *emitted);

}  // namespace sonde::profile
