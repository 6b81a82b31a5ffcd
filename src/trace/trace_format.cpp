// Sonde trace format helpers: the checksum and chunk-header coding (see trace_format.h).
#include "trace/trace_format.h"

#include <zstd.h>
#include <zstd_errors.h>

#include <new>

namespace sonde::trace::fmt {

namespace {
inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
constexpr uint64_t kP1 = 0x87C37B91114253D5ull;
constexpr uint64_t kP2 = 0x4CF5AD432745937Full;
}  // namespace

uint64_t checksum64(const void *data, size_t size) {
    const auto *p = static_cast<const unsigned char *>(data);
    uint64_t h = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(size);
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        h ^= load64(p + i) * kP1;
        h = rotl(h, 27) * kP2 + 1;
    }
    if (i < size) {
        unsigned char tail[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        std::memcpy(tail, p + i, size - i);
        h ^= load64(tail) * kP1;
        h = rotl(h, 27) * kP2 + 1;
    }
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    return h;
}

void encode_chunk_header(const ChunkHeader &h, unsigned char out[kChunkHeaderSize]) {
    store32(out + 0, h.magic);
    store32(out + 4, h.shard);
    store32(out + 8, h.records);
    store32(out + 12, h.compressed_size);
    store64(out + 16, h.first_ts);
    store64(out + 24, h.last_ts);
    store64(out + 32, h.payload_checksum);
    store64(out + 40, checksum64(out, 40));
}

std::string decode_block_header(const unsigned char in[kChunkHeaderSize], ChunkHeader *h) {
    if (load64(in + 40) != checksum64(in, 40)) {
        const uint32_t m = load32(in);
        if (m != kChunkMagic && m != kEventMagic && m != kTableMagic) return "bad chunk magic";
        return "chunk header checksum mismatch";
    }
    h->magic = load32(in);
    h->shard = load32(in + 4);
    h->records = load32(in + 8);
    h->compressed_size = load32(in + 12);
    h->first_ts = load64(in + 16);
    h->last_ts = load64(in + 24);
    h->payload_checksum = load64(in + 32);
    if (h->magic == kChunkMagic) return decode_chunk_header(in, h);
    if (h->magic == kEventMagic) {
        if (h->shard > kMaxShard) return "event chunk shard " + std::to_string(h->shard) + " out of range";
        if (h->records == 0 || h->records > kMaxChunkRecords)
            return "event chunk count " + std::to_string(h->records) + " out of range";
        if (h->compressed_size == 0 ||
            h->compressed_size > ZSTD_compressBound(static_cast<size_t>(h->records) * kEventSize))
            return "event chunk compressed size " + std::to_string(h->compressed_size) + " out of range";
        return {};
    }
    if (h->magic == kTableMagic) {
        if (h->first_ts > kMaxTableBytes)
            return "table size " + std::to_string(h->first_ts) + " out of range";
        if (h->compressed_size == 0 ||
            h->compressed_size > ZSTD_compressBound(static_cast<size_t>(h->first_ts)))
            return "table compressed size " + std::to_string(h->compressed_size) + " out of range";
        return {};
    }
    return {};  // a block of a later minor version: skipped by its size
}

std::string decode_chunk_header(const unsigned char in[kChunkHeaderSize], ChunkHeader *h) {
    if (load32(in) != kChunkMagic) return "bad chunk magic";
    if (load64(in + 40) != checksum64(in, 40)) return "chunk header checksum mismatch";
    h->magic = kChunkMagic;
    h->shard = load32(in + 4);
    h->records = load32(in + 8);
    h->compressed_size = load32(in + 12);
    h->first_ts = load64(in + 16);
    h->last_ts = load64(in + 24);
    h->payload_checksum = load64(in + 32);
    if (h->shard > kMaxShard) return "chunk shard " + std::to_string(h->shard) + " out of range";
    if (h->records == 0 || h->records > kMaxChunkRecords)
        return "chunk record count " + std::to_string(h->records) + " out of range";
    if (h->compressed_size == 0 ||
        h->compressed_size > ZSTD_compressBound(static_cast<size_t>(h->records) * kRecordSize))
        return "chunk compressed size " + std::to_string(h->compressed_size) + " out of range";
    return {};
}

void encode_columns(const sonde_memref_t *records, size_t n, unsigned char *out) {
    unsigned char *addr = out, *pc = out + 8 * n, *ts = out + 16 * n, *type = out + 24 * n,
                  *size = out + 26 * n;
    uint64_t pa = 0, pp = 0, pt = 0;
    for (size_t i = 0; i < n; ++i) {
        const sonde_memref_t &r = records[i];
        store64(addr + 8 * i, r.address - pa);
        store64(pc + 8 * i, r.pc - pp);
        store64(ts + 8 * i, r.timestamp - pt);
        std::memcpy(type + 2 * i, &r.type, 2);
        std::memcpy(size + 2 * i, &r.size, 2);
        pa = r.address;
        pp = r.pc;
        pt = r.timestamp;
    }
}

void decode_columns(const unsigned char *payload, size_t n, size_t from, size_t count, uint32_t shard,
                    uint64_t state[3], sonde_memref_t *out) {
    const unsigned char *addr = payload, *pc = payload + 8 * n, *ts = payload + 16 * n,
                        *type = payload + 24 * n, *size = payload + 26 * n;
    uint64_t pa = state[0], pp = state[1], pt = state[2];
    for (size_t k = 0; k < count; ++k) {
        const size_t i = from + k;
        pa += load64(addr + 8 * i);
        pp += load64(pc + 8 * i);
        pt += load64(ts + 8 * i);
        sonde_memref_t &m = out[k];
        m.address = pa;
        m.pc = pp;
        m.timestamp = pt;
        m.shard = shard;
        std::memcpy(&m.type, type + 2 * i, 2);
        std::memcpy(&m.size, size + 2 * i, 2);
    }
    state[0] = pa;
    state[1] = pp;
    state[2] = pt;
}

namespace {
inline bool valid_record(uint16_t type, uint16_t size, uint32_t minor) {
    if (type < SONDE_MEMREF_MARKER) return true;
    if (minor < kMinorKinds12)
        return type == SONDE_MEMREF_MARKER && size >= SONDE_MARKER_TIMESTAMP && size <= SONDE_MARKER_CPU_ID;
    if (type == SONDE_MEMREF_MARKER)
        return (size >= SONDE_MARKER_TIMESTAMP && size <= SONDE_MARKER_SAMPLE_SKIPPED) ||
               size >= SONDE_MARKER_DRMEMTRACE;
    return (type >= SONDE_MEMREF_INSTR_NO_FETCH && type <= SONDE_MEMREF_DATA_FLUSH) ||
           (type >= SONDE_MEMREF_PREFETCH && type <= SONDE_MEMREF_PREFETCH_LAST);
}
}  // namespace

std::string check_columns(const unsigned char *payload, size_t n, uint32_t minor) {
    const unsigned char *type = payload + 24 * n, *size = payload + 26 * n;
    uint16_t bad = 0;
    for (size_t i = 0; i < n; ++i) {  // the common case: no record above MODIFY/IFETCH
        uint16_t t;
        std::memcpy(&t, type + 2 * i, 2);
        bad = static_cast<uint16_t>(bad | (t >= SONDE_MEMREF_MARKER));
    }
    if (bad == 0) return {};
    const bool v12 = minor >= kMinorKinds12;
    for (size_t i = 0; i < n; ++i) {
        uint16_t t, sz;
        std::memcpy(&t, type + 2 * i, 2);
        std::memcpy(&sz, size + 2 * i, 2);
        if (valid_record(t, sz, minor)) continue;
        if (t != SONDE_MEMREF_MARKER)
            return "chunk record " + std::to_string(i) + ": memref type " + std::to_string(t) +
                   (v12 ? " is not a known type (0 to 17, 32 to 55)" : " is not a known type (0 to 4)");
        return "chunk record " + std::to_string(i) + ": marker type " + std::to_string(sz) +
               (v12 ? " is not a known marker type (1 to 10, 256 and above)"
                    : " is not a known marker type (1 to 3)");
    }
    return {};
}

size_t first_invalid(const sonde_memref_t *records, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (!valid_record(records[i].type, records[i].size, kMinorVersion)) return i;
    return SIZE_MAX;
}

void encode_event_columns(const sonde_trace_event_t *events, size_t n, unsigned char *out) {
    unsigned char *ts = out, *value = out + 8 * n, *id = out + 16 * n, *kind = out + 20 * n,
                  *aux = out + 24 * n;
    uint64_t pt = 0, pv = 0;
    uint32_t pi = 0;
    for (size_t i = 0; i < n; ++i) {
        const sonde_trace_event_t &e = events[i];
        store64(ts + 8 * i, e.timestamp - pt);
        store64(value + 8 * i, e.value - pv);
        store32(id + 4 * i, e.id - pi);
        store32(kind + 4 * i, e.kind);
        store32(aux + 4 * i, e.aux);
        pt = e.timestamp;
        pv = e.value;
        pi = e.id;
    }
}

void decode_event_columns(const unsigned char *payload, size_t n, size_t from, size_t count, uint32_t shard,
                          uint64_t state[3], sonde_trace_event_t *out) {
    const unsigned char *ts = payload, *value = payload + 8 * n, *id = payload + 16 * n,
                        *kind = payload + 20 * n, *aux = payload + 24 * n;
    uint64_t pt = state[0], pv = state[1];
    uint32_t pi = static_cast<uint32_t>(state[2]);
    for (size_t k = 0; k < count; ++k) {
        const size_t i = from + k;
        pt += load64(ts + 8 * i);
        pv += load64(value + 8 * i);
        pi += load32(id + 4 * i);
        sonde_trace_event_t &e = out[k];
        e.timestamp = pt;
        e.value = pv;
        e.id = pi;
        e.shard = shard;
        e.kind = load32(kind + 4 * i);
        e.aux = load32(aux + 4 * i);
    }
    state[0] = pt;
    state[1] = pv;
    state[2] = pi;
}

std::string at(const std::string &path, uint64_t offset, const std::string &what) {
    return path + ": offset " + std::to_string(offset) + ": " + what;
}

void throw_if_zstd_out_of_memory(size_t zstd_result) {
    if (ZSTD_isError(zstd_result) && ZSTD_getErrorCode(zstd_result) == ZSTD_error_memory_allocation)
        throw std::bad_alloc();
}

}  // namespace sonde::trace::fmt
