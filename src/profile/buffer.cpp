// Profile buffers: the memory profile arrays live in (owned, caller-provided, or a shared-memory
// file with a versioned header and an array directory) and the allocation of arrays in it.
// Allocation is a slow path under Buffer::mu; nothing here runs on the counting hot path.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <new>

#include "profile/profile.h"

namespace sonde::profile {

namespace {

std::atomic<uint64_t> g_next_serial{1};

constexpr uint64_t kPage = 4096;

uint64_t round_up(uint64_t v, uint64_t align) { return (v + align - 1) & ~(align - 1); }

sonde_profile_shared_array_t *directory(const Buffer &pb) {
    return reinterpret_cast<sonde_profile_shared_array_t *>(pb.base + sizeof(sonde_profile_shared_header_t));
}

// Maps `length` bytes of fd shared read-write; nullptr on failure.
uint8_t *map_shared(int fd, uint64_t length) {
    void *p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? nullptr : static_cast<uint8_t *>(p);
}

// A Buffer owning a shared mapping and its fd; on allocation failure both are released.
Buffer *adopt_shared(Backing backing, uint8_t *base, uint64_t region, int fd) {
    auto *pb = new (std::nothrow) Buffer();
    if (pb == nullptr) {
        munmap(base, region);
        close(fd);
        return nullptr;
    }
    pb->serial = g_next_serial.fetch_add(1, std::memory_order_relaxed);
    pb->backing = backing;
    pb->base = base;
    pb->region_size = region;
    pb->data_begin = SONDE_PROFILE_SHARED_HEADER_SIZE;
    pb->fd = fd;
    return pb;
}

}  // namespace

Buffer::~Buffer() {
    magic = 0;
    if (backing != Backing::kCaller && base != nullptr) munmap(base, region_size);
    if (fd >= 0) close(fd);
}

sonde_status_t create_owned(uint64_t size, Buffer **out) {
    if (size == 0 || size > kMaxBufferSize) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    auto *pb = new Buffer();
    void *p =
        mmap(nullptr, round_up(size, kPage), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        delete pb;
        return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    }
    pb->serial = g_next_serial.fetch_add(1, std::memory_order_relaxed);
    pb->backing = Backing::kOwned;
    pb->base = static_cast<uint8_t *>(p);
    pb->region_size = size;
    *out = pb;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t create_from_memory(void *memory, uint64_t size, Buffer **out) {
    if (size == 0 || size > kMaxBufferSize) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (reinterpret_cast<uintptr_t>(memory) % SONDE_PROFILE_MIN_CHUNK_ALIGNMENT != 0)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    auto *pb = new Buffer();
    pb->serial = g_next_serial.fetch_add(1, std::memory_order_relaxed);
    pb->backing = Backing::kCaller;
    pb->base = static_cast<uint8_t *>(memory);
    pb->region_size = size;
    *out = pb;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t create_shared(const char *path, uint64_t size, Buffer **out) {
    if (size == 0 || size > kMaxBufferSize) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    const uint64_t region = SONDE_PROFILE_SHARED_HEADER_SIZE + size;
    const int fd = path != nullptr ? open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)
                                   : memfd_create("sonde-profile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return SONDE_STATUS_ERROR_IO;
    uint8_t *base = nullptr;
    // A memfd is sealed against shrinking: no process can cut the region under a mapping.
    // Growing stays allowed (it cannot fault a mapping). A file cannot be sealed; calls
    // re-check its size instead (check_backing).
    if (ftruncate(fd, static_cast<off_t>(region)) != 0 ||
        (path == nullptr && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) ||
        (base = map_shared(fd, region)) == nullptr) {
        close(fd);
        return SONDE_STATUS_ERROR_IO;
    }
    Buffer *pb = adopt_shared(Backing::kSharedCreated, base, region, fd);
    if (pb == nullptr) return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    // The file is new and zero-filled by ftruncate; publish the header with num_arrays 0.
    sonde_profile_shared_header_t *h = pb->header();
    h->version = SONDE_PROFILE_SHARED_VERSION;
    h->header_size = SONDE_PROFILE_SHARED_HEADER_SIZE;
    h->size = region;
    h->bump = SONDE_PROFILE_SHARED_HEADER_SIZE;
    h->max_arrays = SONDE_PROFILE_SHARED_MAX_ARRAYS;
    h->num_arrays = 0;
    h->creator_pid = static_cast<uint64_t>(getpid());
    __atomic_store_n(&h->magic, SONDE_PROFILE_SHARED_MAGIC, __ATOMIC_RELEASE);
    *out = pb;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t open_shared(const char *path, Buffer **out) {
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return SONDE_STATUS_ERROR_IO;
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        close(fd);
        return SONDE_STATUS_ERROR_IO;
    }
    const uint64_t region = static_cast<uint64_t>(st.st_size);
    if (region < SONDE_PROFILE_SHARED_HEADER_SIZE ||
        region > kMaxBufferSize + SONDE_PROFILE_SHARED_HEADER_SIZE) {
        close(fd);
        return SONDE_STATUS_ERROR_FORMAT;
    }
    uint8_t *base = map_shared(fd, region);
    if (base == nullptr) {
        close(fd);
        return SONDE_STATUS_ERROR_IO;
    }
    const auto *h = reinterpret_cast<const sonde_profile_shared_header_t *>(base);
    sonde_status_t status = SONDE_STATUS_SUCCESS;
    if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != SONDE_PROFILE_SHARED_MAGIC)
        status = SONDE_STATUS_ERROR_FORMAT;
    else if (h->version != SONDE_PROFILE_SHARED_VERSION)
        status = SONDE_STATUS_ERROR_INCOMPATIBLE_ABI;
    else if (h->header_size != SONDE_PROFILE_SHARED_HEADER_SIZE || h->size != region ||
             h->max_arrays != SONDE_PROFILE_SHARED_MAX_ARRAYS ||
             __atomic_load_n(&h->num_arrays, __ATOMIC_ACQUIRE) > h->max_arrays)
        status = SONDE_STATUS_ERROR_FORMAT;
    if (status != SONDE_STATUS_SUCCESS) {
        munmap(base, region);
        close(fd);
        return status;
    }
    Buffer *pb = adopt_shared(Backing::kSharedOpened, base, region, fd);
    if (pb == nullptr) return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    *out = pb;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t check_backing(const Buffer &pb) {
    if (!pb.shared()) return SONDE_STATUS_SUCCESS;
    struct stat st {};
    if (fstat(pb.fd, &st) != 0) return SONDE_STATUS_ERROR_IO;
    // Pages past the end of the file raise SIGBUS when touched: refuse instead.
    if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) < pb.region_size)
        return SONDE_STATUS_ERROR_FORMAT;
    // Cut and grown back (the pages were zeroed, header included): not the buffer it was.
    if (__atomic_load_n(&pb.header()->magic, __ATOMIC_ACQUIRE) != SONDE_PROFILE_SHARED_MAGIC)
        return SONDE_STATUS_ERROR_FORMAT;
    return SONDE_STATUS_SUCCESS;
}

uint32_t published_arrays(const Buffer &pb) {
    const uint32_t n = __atomic_load_n(&pb.header()->num_arrays, __ATOMIC_ACQUIRE);
    return n > SONDE_PROFILE_SHARED_MAX_ARRAYS ? SONDE_PROFILE_SHARED_MAX_ARRAYS : n;
}

sonde_status_t open_array(const Buffer &pb, uint32_t index, Array *out) {
    if (index >= published_arrays(pb)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    const sonde_profile_shared_array_t e = directory(pb)[index];
    Array arr;
    if (make_array(e.record_size, e.num_records, e.num_thread_buckets, e.alignment, &arr) !=
            SONDE_STATUS_SUCCESS ||
        arr.num_buckets != e.num_thread_buckets || arr.chunk_size != e.chunk_size || arr.size() != e.size ||
        e.offset < pb.data_begin || e.offset > pb.region_size || e.size > pb.region_size - e.offset ||
        e.offset % arr.effective_alignment() != 0)
        return SONDE_STATUS_ERROR_FORMAT;
    arr.offset = e.offset;
    arr.buffer_serial = pb.serial;
    *out = arr;
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t allocate(Array &arr, Buffer &pb) {
    if (arr.allocated()) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    if (pb.backing == Backing::kSharedOpened) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    const sonde_status_t backing = check_backing(pb);
    if (backing != SONDE_STATUS_SUCCESS) return backing;
    std::lock_guard<std::mutex> lock(pb.mu);
    sonde_profile_shared_header_t *h = pb.shared() ? pb.header() : nullptr;
    if (h != nullptr && h->num_arrays >= SONDE_PROFILE_SHARED_MAX_ARRAYS) return SONDE_STATUS_ERROR_LIMIT;
    const uint64_t align = arr.effective_alignment();
    const uint64_t size = arr.size();
    uint64_t offset = 0;
    if (pb.has_allocator) {
        if (!pb.allocator.allocate(pb.allocator.context, size, align, &offset))
            return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
        if (offset % align != 0 || offset < pb.data_begin || offset > pb.region_size ||
            size > pb.region_size - offset)
            return SONDE_STATUS_ERROR;
    } else {
        const uint64_t bump = h != nullptr ? h->bump : pb.bump;
        offset = round_up(bump, align);
        if (offset > pb.region_size || size > pb.region_size - offset)
            return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
        if (h != nullptr)
            __atomic_store_n(&h->bump, offset + size, __ATOMIC_RELAXED);
        else
            pb.bump = offset + size;
    }
    if (h != nullptr) {
        sonde_profile_shared_array_t e{};
        e.offset = offset;
        e.size = size;
        e.record_size = arr.record_size;
        e.num_records = arr.num_records;
        e.num_thread_buckets = arr.num_buckets;
        e.chunk_size = arr.chunk_size;
        e.alignment = arr.alignment;
        directory(pb)[h->num_arrays] = e;
        __atomic_store_n(&h->num_arrays, h->num_arrays + 1, __ATOMIC_RELEASE);
    }
    arr.offset = offset;
    arr.buffer_serial = pb.serial;
    return SONDE_STATUS_SUCCESS;
}

}  // namespace sonde::profile
