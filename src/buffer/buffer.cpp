// Buffer creation: validates the properties, maps the chunks and threads the free list. The
// ownership rules are in buffer.h; the table that names buffers is in table.cpp.
#include <sys/mman.h>

#include <cstring>
#include <new>

#include "buffer/buffer.h"

namespace sonde::buffer {

Buffer::~Buffer() {
    if (mapping) munmap(mapping, mapping_size);
}

sonde_status_t create_buffer(uint64_t session_handle, uint64_t size, sonde_buffer_callback_t cb,
                             void *user_data, const sonde_buffer_property_t *props, uint32_t n,
                             std::shared_ptr<Buffer> &out) {
    auto b = std::make_shared<Buffer>();
    b->session_handle = session_handle;
    b->callback = cb;
    b->user_data = user_data;
    bool seen[SONDE_BUFFER_PROPERTY_KIND_CONCURRENT_CALLBACKS + 1] = {};
    uint64_t chunk_size = 0;
    bool have_watermark = false;
    for (uint32_t i = 0; i < n; ++i) {
        const sonde_buffer_property_t &p = props[i];
        if (p.reserved != 0 || p.kind > SONDE_BUFFER_PROPERTY_KIND_CONCURRENT_CALLBACKS || seen[p.kind])
            return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
        seen[p.kind] = true;
        switch (p.kind) {
            case SONDE_BUFFER_PROPERTY_KIND_INTERVAL_FLUSH:
                if (p.value != 0 && p.value < 100000) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
                b->interval_ns = p.value;
                break;
            case SONDE_BUFFER_PROPERTY_KIND_POLICY:
                if (p.value != SONDE_BUFFER_POLICY_LOSSLESS && p.value != SONDE_BUFFER_POLICY_DISCARD)
                    return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
                b->policy = static_cast<uint32_t>(p.value);
                break;
            case SONDE_BUFFER_PROPERTY_KIND_WATERMARK:
                b->watermark = p.value;
                have_watermark = true;
                break;
            case SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT: b->lossless_timeout_ns = p.value; break;
            case SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE:
                if (p.value < 4096 || p.value > (64u << 20) || (p.value & (p.value - 1)) != 0)
                    return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
                chunk_size = p.value;
                break;
            case SONDE_BUFFER_PROPERTY_KIND_DELIVERY:
                if (p.value != SONDE_BUFFER_DELIVERY_THREAD && p.value != SONDE_BUFFER_DELIVERY_POLL)
                    return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
                b->delivery = static_cast<uint32_t>(p.value);
                break;
            case SONDE_BUFFER_PROPERTY_KIND_CONCURRENT_CALLBACKS:
                if (p.value > 1) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
                b->concurrent = p.value == 1;
                break;
        }
    }
    if (b->concurrent && b->delivery == SONDE_BUFFER_DELIVERY_POLL)
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (size < 8192 || size > (uint64_t{1} << 40)) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (chunk_size == 0) {
        chunk_size = 65536;
        while (chunk_size > 4096 && chunk_size > size / 4) chunk_size >>= 1;
    }
    const uint64_t count = size / chunk_size;
    if (count < 2) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (have_watermark && b->watermark > size) return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    if (!have_watermark) b->watermark = size / 2;
    b->chunk_size = static_cast<uint32_t>(chunk_size);
    b->capacity = static_cast<uint32_t>(chunk_size - 8);
    b->chunk_count = static_cast<uint32_t>(count);
    b->mapping_size = count * chunk_size;
    void *m = mmap(nullptr, b->mapping_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (m == MAP_FAILED) return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    b->mapping = m;
    b->chunks = std::vector<Chunk>(count);
    for (uint64_t i = 0; i < count; ++i) {
        Chunk &c = b->chunks[i];
        c.data = static_cast<char *>(m) + i * chunk_size;
        std::memcpy(c.data + b->capacity, &kGuard, 8);
        c.next = i + 1 < count ? &b->chunks[i + 1] : nullptr;
    }
    b->free_head = &b->chunks[0];
    out = std::move(b);
    return SONDE_STATUS_SUCCESS;
}

}  // namespace sonde::buffer
