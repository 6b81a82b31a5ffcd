// Sonde trace file layout (docs/trace-format.md is the byte-level reference): constants,
// little-endian field access, the 64-bit checksum, and the error-message helper shared by the
// trace writer and the readers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <sonde/trace.h>
#include <sonde/trace_events.h>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "Sonde trace records are stored in host layout; little-endian hosts only");
static_assert(sizeof(sonde_memref_t) == 32, "sonde_memref_t must be 32 bytes");
static_assert(sizeof(sonde_trace_event_t) == 32, "sonde_trace_event_t must be 32 bytes");

namespace sonde::trace::fmt {

constexpr char kFileMagic[8] = {'S', 'O', 'N', 'D', 'E', 'T', 'R', 'C'};
constexpr char kIndexMagic[8] = {'S', 'O', 'N', 'D', 'E', 'I', 'D', 'X'};
constexpr char kFooterMagic[8] = {'S', 'O', 'N', 'D', 'E', 'E', 'N', 'D'};
constexpr char kExtIndexMagic[8] = {'S', 'O', 'N', 'D', 'E', 'X', 'I', 'X'};
constexpr uint32_t kChunkMagic = 0x4B4E4843u;  // "CHNK" read as a little-endian u32
constexpr uint32_t kEventMagic = 0x544E5645u;  // "EVNT"
constexpr uint32_t kTableMagic = 0x4C424154u;  // "TABL"
constexpr uint32_t kVersion = 1;
// Minor version (header offset 28): 0 for memref-only files of version 1.0, 1 since program
// events and tables (version 1.1), 2 since records may hold the 1.2 memref kinds and markers
// (version 1.2), 3 since API call events and the API function table, 4 since the line table
// (both also version 1.2 of the library). Readers of 1.0 ignore it and still read the memref
// chunks; readers of minor 1 and 2 skip the API function table (an unknown table type) and
// return the API events as kinds they do not know; readers of minor 1 to 3 skip the line table.
constexpr uint32_t kMinorVersion = 4;
// The first minor version whose records may hold the 1.2 kinds.
constexpr uint32_t kMinorKinds12 = 2;
// Bytes per event in a decompressed event chunk: timestamp and value (u64 deltas), id (u32
// delta), kind and aux (u32).
constexpr uint32_t kEventSize = 28;
constexpr size_t kExtIndexHeaderSize = 24;
constexpr size_t kExtTableEntrySize = 16;
constexpr uint64_t kMaxTableBytes = 1ull << 30;  // decompressed size of one table block
constexpr uint32_t kMaxString = 1u << 20;
constexpr uint32_t kMaxMethodIndex = 1u << 24;
// Table types (TABL block header offset 4).
enum TableType : uint32_t {
    kTableStrings = 1,
    kTableModules = 2,
    kTableMethods = 3,
    kTableThreads = 4,
    kTableApiFunctions = 5,  // minor version 3
    kTableLines = 6,         // minor version 4
};
// Bytes of one line table entry: module, line, address, size, file (a string id), column.
constexpr size_t kLineEntrySize = 32;
constexpr uint32_t kMaxApiArgs = 16;  // arguments of one API function
// Bytes per record in a decompressed chunk payload: the columns address, pc and timestamp
// (u64 deltas) and type and size (u16); the shard is the chunk's.
constexpr uint32_t kRecordSize = 28;
constexpr size_t kHeaderSize = 64;
constexpr size_t kChunkHeaderSize = 48;
constexpr size_t kIndexHeaderSize = 24;
constexpr size_t kIndexEntrySize = 32;
constexpr size_t kFooterSize = 32;
constexpr uint32_t kMaxShard = 65535;
constexpr uint32_t kMaxChunkRecords = 1u << 20;
constexpr uint32_t kDefaultChunkRecords = 65536;
constexpr int kDefaultLevel = 1;

inline uint64_t load64(const unsigned char *p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
inline uint32_t load32(const unsigned char *p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
inline void store64(unsigned char *p, uint64_t v) { std::memcpy(p, &v, 8); }
inline void store32(unsigned char *p, uint32_t v) { std::memcpy(p, &v, 4); }

// The format's checksum ("sonde64", docs/trace-format.md): 8 bytes per step, about one cycle
// per byte. Pure function, any thread.
uint64_t checksum64(const void *data, size_t size);

// A block's fixed 48-byte header, decoded (memref chunk CHNK, event chunk EVNT, table TABL).
// For a table, `shard` is the table type, `records` the entry count and `first_ts` the
// decompressed size.
struct ChunkHeader {
    uint32_t magic = kChunkMagic;
    uint32_t shard = 0;
    uint32_t records = 0;
    uint32_t compressed_size = 0;
    uint64_t first_ts = 0;
    uint64_t last_ts = 0;
    uint64_t payload_checksum = 0;
};

void encode_chunk_header(const ChunkHeader &h, unsigned char out[kChunkHeaderSize]);
// Returns an empty string when valid, else what is wrong (magic, checksum, field ranges).
// Only memref chunks (CHNK) are accepted.
std::string decode_chunk_header(const unsigned char in[kChunkHeaderSize], ChunkHeader *h);
// Any block: checks the header checksum first, then the fields of the known magics; a block
// of an unknown magic with a valid checksum is accepted as it is (h->magic says which), so
// that a reader can skip blocks of a later minor version.
std::string decode_block_header(const unsigned char in[kChunkHeaderSize], ChunkHeader *h);

// Column coding of an event chunk payload (docs/trace-format.md, "Event chunk payload"):
// `out` receives n * kEventSize bytes.
void encode_event_columns(const sonde_trace_event_t *events, size_t n, unsigned char *out);
// Decodes events [from, from + count) of a payload of n events, continuing the running sums in
// `state` (timestamp, value, id).
void decode_event_columns(const unsigned char *payload, size_t n, size_t from, size_t count, uint32_t shard,
                          uint64_t state[3], sonde_trace_event_t *out);

// Column coding of a chunk payload (docs/trace-format.md, "Chunk payload"): `out` receives
// n * kRecordSize bytes. Cost: one pass over the records.
void encode_columns(const sonde_memref_t *records, size_t n, unsigned char *out);

// Decodes records [from, from + count) of a payload of n records into `out`, continuing the
// running sums in `state` (address, pc, timestamp; zero before record 0). Cost: one pass,
// about a nanosecond per record; no allocation.
void decode_columns(const unsigned char *payload, size_t n, size_t from, size_t count, uint32_t shard,
                    uint64_t state[3], sonde_memref_t *out);

// Checks the type column (and, for markers, the size column) of a payload of n records of a
// file of minor version `minor`: empty when every record is a known memref type
// (SONDE_MEMREF_READ .. SONDE_MEMREF_MARKER; from minor version 2 also the 1.2 kinds,
// SONDE_MEMREF_INSTR_NO_FETCH .. SONDE_MEMREF_DATA_FLUSH and SONDE_MEMREF_PREFETCH ..
// SONDE_MEMREF_PREFETCH_LAST) and every marker a known marker type (SONDE_MARKER_TIMESTAMP ..
// SONDE_MARKER_CPU_ID; from minor version 2 also up to SONDE_MARKER_SAMPLE_SKIPPED and
// SONDE_MARKER_DRMEMTRACE and above), else "chunk record I: ..." for the first that is not.
// Cost: one pass over 2n bytes.
std::string check_columns(const unsigned char *payload, size_t n, uint32_t minor);
// Same for records about to be written (to a file of this library's minor version): SIZE_MAX
// when all are valid, else the first bad one.
size_t first_invalid(const sonde_memref_t *records, size_t n);

// "PATH: offset N: what"
std::string at(const std::string &path, uint64_t offset, const std::string &what);
// Throws std::bad_alloc when `zstd_result` is zstd's allocation failure, so that running out
// of memory is reported as such and not as a damaged input or a failed write.
void throw_if_zstd_out_of_memory(size_t zstd_result);

}  // namespace sonde::trace::fmt
