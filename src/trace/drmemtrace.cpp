// drmemtrace reader (see drmemtrace.h): the directory listing, the per-thread shard reader that
// decodes 12-byte trace_entry_t records into sonde_memref_t, and format detection.
//
// Hot path: DrShardReader::decode() runs once per record. Loads, stores, prefetches and plain
// instructions take a table lookup and one 32-byte store each; everything else (markers,
// encodings, thread and header records) goes through the out-of-line slow path. No allocation
// after the first block except when one record expands into more memrefs than the caller has
// room for (kept in a small pending list).
#include "trace/drmemtrace.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "trace/drmemtrace_container.h"
#include "trace/trace_format.h"
#include "trace/trace_stream.h"

namespace sonde::trace {

namespace {

// drmemtrace's trace_type_t values that need more than a one-to-one mapping (the others are in
// Mapping below).
enum : uint16_t {
    kInstr = 10,
    kBundle = 17,
    kInstrFlush = 18,
    kInstrFlushEnd = 19,
    kDataFlush = 20,
    kDataFlushEnd = 21,
    kThread = 22,
    kThreadExit = 23,
    kPid = 24,
    kHeader = 25,
    kFooter = 26,
    kMarker = 28,
    kMaybeFetch = 30,
    kEncoding = 47,
    kLastType = 49,  // 50 is the INVALID sentinel
};
// trace_marker_type_t values the reader treats specially.
enum : uint16_t {
    kMarkerTimestamp = 2,
    kMarkerCpuId = 3,
    kMarkerChunkFooter = 21,
    kMarkerRecordOrdinal = 22,
    kMarkerFiletype = 9,
    kMarkerMax = 0xFFFF - SONDE_MARKER_DRMEMTRACE,
};
constexpr uint64_t kMaxVersion = 7;             // TRACE_ENTRY_VERSION_RETIRED_INSTRUCTIONS_ONLY
constexpr uint64_t kFiletypeRegdeps = 0x20000;  // OFFLINE_FILE_TYPE_ARCH_REGDEPS
constexpr size_t kRec = 12;                     // sizeof(trace_entry_t) in 64-bit traces
constexpr size_t kBlock = kDrReadBlock;         // decompressed bytes decoded per refill

// What a drmemtrace type becomes: kData/kFetch kinds carry their Sonde type; kSlow types go
// through the slow path; kBad types are errors.
enum Class : uint8_t { kBad, kData, kFetch, kSlow };
struct Mapping {
    uint8_t cls[kLastType + 1];
    uint16_t type[kLastType + 1];
    // For the hot loop, by min(type, 63) (63 is no type: the slow path): kFastData for a load,
    // store or prefetch, kFastFetch for a fetched instruction, 0 for the slow path.
    uint8_t fast[64];
    // The same by the whole 16-bit type (0 from 64 up), so that the hot loop indexes it without
    // clamping the type first.
    uint8_t fast16[65536];
    // By the same index: the Sonde type minus the drmemtrace type (mod 2^32), so that adding it
    // to the record's first 32 bits (type | size << 16) gives the memref's type | size << 16.
    uint32_t delta[64];
    Mapping() {
        for (int t = 0; t <= kLastType; ++t) {
            cls[t] = kSlow;
            type[t] = 0;
        }
        auto data = [&](int t, int sonde) {
            cls[t] = kData;
            type[t] = static_cast<uint16_t>(sonde);
        };
        auto fetch = [&](int t, int sonde) {
            cls[t] = kFetch;
            type[t] = static_cast<uint16_t>(sonde);
        };
        data(0, SONDE_MEMREF_READ);
        data(1, SONDE_MEMREF_WRITE);
        for (int t = 2; t <= 9; ++t) data(t, SONDE_MEMREF_PREFETCH + (t - 2));  // PREFETCH .. PREFETCH_INSTR
        data(27, SONDE_MEMREF_PREFETCH_HARDWARE);
        for (int t = 32; t <= 46; ++t) data(t, SONDE_MEMREF_PREFETCH_READ_L1_NT + (t - 32));
        fetch(kInstr, SONDE_MEMREF_IFETCH);
        fetch(11, SONDE_MEMREF_INSTR_DIRECT_JUMP);
        fetch(12, SONDE_MEMREF_INSTR_INDIRECT_JUMP);
        fetch(13, SONDE_MEMREF_INSTR_CONDITIONAL_JUMP);
        fetch(14, SONDE_MEMREF_INSTR_DIRECT_CALL);
        fetch(15, SONDE_MEMREF_INSTR_INDIRECT_CALL);
        fetch(16, SONDE_MEMREF_INSTR_RETURN);
        fetch(29, SONDE_MEMREF_INSTR_NO_FETCH);
        fetch(31, SONDE_MEMREF_INSTR_SYSENTER);
        fetch(48, SONDE_MEMREF_INSTR_TAKEN_JUMP);
        fetch(49, SONDE_MEMREF_INSTR_UNTAKEN_JUMP);
        for (int t = 0; t < 64; ++t) {
            const uint8_t c = t <= kLastType ? cls[t] : uint8_t{kBad};
            delta[t] = c == kData || c == kFetch ? static_cast<uint32_t>(type[t] - t) : 0;
            fast[t] = c == kData ? kFastData : c == kFetch ? kFastFetch : 0;
        }
        std::memset(fast16, 0, sizeof fast16);
        for (int t = 0; t < 63; ++t) fast16[t] = fast[t];
    }
    static constexpr uint8_t kFastData = 1, kFastFetch = 2;
};
const Mapping kMap;
static_assert(offsetof(sonde_memref_t, shard) == 24 && offsetof(sonde_memref_t, type) == 28 &&
                  offsetof(sonde_memref_t, size) == 30 && sizeof(sonde_memref_t) == 32,
              "the hot loop stores shard, type and size as one little-endian word");

inline uint16_t load16(const unsigned char *p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

// Why the first bytes of a thread file are not a drmemtrace header, or "" when they are.
std::string header_problem(const unsigned char *r, size_t have) {
    if (have < kRec)
        return "too short for a drmemtrace header record (" + std::to_string(have) + " of 12 bytes)";
    const uint16_t type = load16(r);
    const uint64_t value = fmt::load64(r + 4);
    if (type != kHeader)
        return "not a drmemtrace trace: the first record has type " + std::to_string(type) +
               ", not the header type 25";
    const uint64_t low = value & 0xFFFFFFFFu;
    if ((value >> 32) != 0 && low >= 1 && low <= kMaxVersion)
        return "8-byte records (a trace of a 32-bit program) are not supported";
    if (value == 0 || value > kMaxVersion)
        return "unsupported drmemtrace version " + std::to_string(value) +
               " (this reader knows versions 1 to " + std::to_string(kMaxVersion) + ")";
    return {};
}

bool starts_with(const std::string &s, const char *prefix) {
    return s.compare(0, std::strlen(prefix), prefix) == 0;
}
bool ends_with(const std::string &s, const char *suffix) {
    const size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}
std::string base_name(const std::string &path) {
    std::string p = path;
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    const size_t slash = p.rfind('/');
    return slash == std::string::npos ? p : p.substr(slash + 1);
}
bool is_schedule_file(const std::string &base) {
    return starts_with(base, "serial_schedule.bin") || starts_with(base, "cpu_schedule.bin");
}
// Files DynamoRIO keeps next to the thread files, which its readers skip too.
bool is_skipped_file(const std::string &base) {
    return is_schedule_file(base) || base == "modules.log" || base == "funclist.log" ||
           base == "encodings.bin" || base == "v2p.textproto";
}
bool is_dir(const std::string &path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

class DrShardReader final : public ShardReader {
public:
    // `input` counts the bytes of the file this reader consumes (`file_bytes` in all) for
    // progress; nullptr counts nothing.
    DrShardReader(const std::string &path, uint32_t shard_id, const Input *input = nullptr,
                  uint64_t file_bytes = 0)
        : path_(path), shard_id_(shard_id), input_(input), file_bytes_(file_bytes) {
        for (int t = 0; t < 64; ++t) hi_[t] = shard_id | uint64_t{kMap.delta[t]} << 32;
    }

    // Opens the file and checks its header; false (status() set) on failure.
    bool start() {
        std::string err;
        const sonde_status_t s = DrContainer::open(path_, &c_, &err);
        if (s != SONDE_STATUS_SUCCESS) return fail_raw(s, err);
        if (!c_->next_member()) return fail_container();
        buf_.reset(new unsigned char[kBlock + kRec]);
        fill();
        if (status_ != SONDE_STATUS_SUCCESS) return false;
        const std::string bad = header_problem(buf_.get(), len_);
        if (!bad.empty()) return fail(0, bad);
        return true;
    }

    size_t read(sonde_memref_t *out, size_t max) override {
        if (status_ != SONDE_STATUS_SUCCESS || c_ == nullptr) return 0;
        out_ = out;
        max_ = max;
        n_ = 0;
        while (pend_pos_ < pend_.size() && n_ < max_) out_[n_++] = pend_[pend_pos_++];
        if (pend_pos_ == pend_.size()) {
            pend_.clear();
            pend_pos_ = 0;
        }
        while (n_ < max_ && pend_.empty() && !done_) {
            if (len_ - pos_ < kRec) {
                if (!next_block()) break;
                continue;
            }
            decode_block();
            if (status_ != SONDE_STATUS_SUCCESS) return 0;
        }
        return status_ == SONDE_STATUS_SUCCESS ? n_ : 0;
    }

private:
    bool fail_raw(sonde_status_t s, const std::string &message) {
        if (status_ == SONDE_STATUS_SUCCESS) {
            status_ = s;
            error_ = message;
        }
        done_ = true;
        return false;
    }
    // A format error at `offset` of the current member's decompressed bytes.
    bool fail(uint64_t offset, const std::string &what) {
        return fail_raw(SONDE_STATUS_ERROR_FORMAT, c_->at(offset, what));
    }
    bool fail_container() {
        if (c_->status() != SONDE_STATUS_SUCCESS) return fail_raw(c_->status(), c_->error());
        return fail(0, "empty drmemtrace file");
    }
    uint64_t offset_of_pos() const { return base_ + pos_; }

    // Appends the container's next bytes after the unconsumed tail.
    void fill() {
        const size_t tail = len_ - pos_;
        std::memmove(buf_.get(), buf_.get() + pos_, tail);
        base_ += pos_;
        pos_ = 0;
        len_ = tail;
        while (len_ < kRec && !member_end_) {
            const size_t got = c_->read(buf_.get() + len_, kBlock + kRec - len_);
            if (got == 0) {
                if (c_->status() != SONDE_STATUS_SUCCESS) {
                    fail_raw(c_->status(), c_->error());
                    return;
                }
                member_end_ = true;
                break;
            }
            len_ += got;
        }
        report(c_->consumed());
    }

    // Adds the file bytes consumed since the last report to the input's count (at most the
    // file's size; the end of the shard reports the rest, so a whole read counts the file once).
    void report(uint64_t consumed) {
        if (input_ == nullptr) return;
        if (consumed > file_bytes_) consumed = file_bytes_;
        if (consumed > reported_) {
            input_->count_consumed(consumed - reported_);
            reported_ = consumed;
        }
    }

    // Refills the block; at the end of a member checks how it ends and moves to the next one.
    // False at the end of the shard or on an error.
    bool next_block() {
        fill();
        if (status_ != SONDE_STATUS_SUCCESS) return false;
        if (len_ >= kRec) return true;
        const bool chunked = c_->chunked();
        if (len_ != 0)
            return fail(base_, std::string(chunked ? "the chunk" : "the file") + " ends inside a record (" +
                                   std::to_string(len_) + " of 12 bytes)");
        const bool last = c_->member_index() + 1 >= c_->num_members();
        if (!last && !(last_type_ == kMarker && last_marker_ == kMarkerChunkFooter))
            return fail(base_, "the chunk ends without a chunk footer marker (a truncated chunk)");
        if (last) {
            if (!footer_seen_) return fail(base_, "the trace ends without a footer record (it is truncated)");
            if (enc_len_ != 0)
                return fail(base_, "the trace ends with an encoding that no instruction follows");
            done_ = true;
            report(file_bytes_);
            return false;
        }
        if (!c_->next_member()) return fail_container();
        base_ = 0;
        pos_ = len_ = 0;
        member_end_ = false;
        last_type_ = last_marker_ = 0;
        // A later chunk repeats the last timestamp and cpu id after its record ordinal: hidden.
        skip_ts_ = skip_cpu_ = true;
        special_ = true;
        return true;
    }

    void emit(uint16_t type, uint16_t size, uint64_t address, uint64_t pc) {
        sonde_memref_t m;
        m.address = address;
        m.pc = pc;
        m.timestamp = ts_;
        m.shard = shard_id_;
        m.type = type;
        m.size = size;
        if (n_ < max_)
            out_[n_++] = m;
        else
            pend_.push_back(m);
    }
    void emit_marker(uint16_t marker, uint64_t value) {
        if (!thread_seen_) {  // header markers wait for the thread and process ids
            sonde_memref_t m{value, 0, ts_, shard_id_, SONDE_MEMREF_MARKER, marker};
            header_.push_back(m);
            return;
        }
        emit(SONDE_MEMREF_MARKER, marker, value, 0);
    }
    // Ends the header and chunk-start states once a record that is not part of them comes.
    void settle() {
        skip_ts_ = skip_cpu_ = false;
        if (!thread_seen_ || awaiting_pid_) {
            thread_seen_ = true;
            awaiting_pid_ = false;
            for (const sonde_memref_t &m : header_) emit(m.type, m.size, m.address, m.pc);
            header_.clear();
        }
        special_ = false;
    }

    // Hot path: the whole records of the block from pos_, until the caller's room is full or a
    // record expands beyond it. Loads, stores, prefetches, fetched instructions and an encoding
    // record with the instruction it belongs to are decoded here with the state in locals (the
    // output cannot alias it for the compiler otherwise); every other record goes through
    // slow() with the state written back first.
    //
    // A memref's last word (shard | type << 32 | size << 48) is the record's first 8 bytes
    // (type | size << 16 | the address's low half << 32) shifted left by 32, plus hi_[index]
    // (the shard, and the Sonde type minus the drmemtrace type in the high half): one shift and
    // one add, no masking.
    void decode_block() {
        const unsigned char *const b = buf_.get();
        const unsigned char *const start = b + pos_;
        const unsigned char *p = start;
        const unsigned char *const end = p + (len_ - pos_) / kRec * kRec;
        sonde_memref_t *o = out_ + n_;
        sonde_memref_t *const limit = out_ + max_;
        uint64_t last_pc = last_pc_;
        uint16_t last_size = last_size_;
        uint64_t ts = ts_;
        const uint64_t shard = shard_id_;
        const uint64_t *const hi = hi_;
        // The fast path's table, or one that sends every record to the slow path while a header,
        // a chunk start or an encoding is pending.
        static const uint8_t kNone[65536] = {};
        const uint8_t *fast = !special_ && enc_len_ == 0 ? kMap.fast16 : kNone;
        // The fast loop runs to `stop`: the block's end or the caller's room, whichever is first.
        auto stop_at = [&] {
            return p + std::min(static_cast<size_t>(end - p) / kRec, static_cast<size_t>(limit - o)) * kRec;
        };
        const unsigned char *stop = stop_at();
        while (p < stop) {
            const uint64_t w = fmt::load64(p);  // type | size << 16 | the address's low half << 32
            const uint64_t a = fmt::load64(p + 4);
            const uint32_t head = static_cast<uint32_t>(w);
            const uint16_t t = static_cast<uint16_t>(head);
            const uint16_t size = static_cast<uint16_t>(head >> 16);
            const uint8_t k = fast[t];  // 0 for every type from 63 up
            // A load, store or prefetch, or a fetched instruction, with a size (the rare size 0
            // goes to the slow path: a fetch of size 0 only sets the pc); tested with two
            // predictable branches, the kind selected without branching (loads and fetches
            // interleave without a pattern).
            if (__builtin_expect(k != 0 && size != 0, 1)) {
                const bool fetch = k == kMap.kFastFetch;
                const uint64_t pc = fetch ? a : last_pc;
                put(o, a, pc, ts, (w << 32) + hi[t]);  // t < 63 here
                ++o;
                last_pc = pc;
                last_size = fetch ? size : last_size;
                p += kRec;
                continue;
            }
            // An encoding of up to 8 bytes followed by its instruction (about one record in
            // eight in an x86-64 trace): both at once, when nothing is pending and the caller has
            // room for both (stop - p counts records and room alike).
            if (t == kEncoding && fast == kMap.fast16 && size - 1u < 8u &&
                stop - p >= static_cast<ptrdiff_t>(2 * kRec)) {
                const uint64_t nw = fmt::load64(p + kRec);
                const uint32_t nhead = static_cast<uint32_t>(nw);
                const uint16_t nt = static_cast<uint16_t>(nhead);
                if (nt < 63 && kMap.fast[nt] == kMap.kFastFetch && (nhead >> 16) == size) {
                    const uint64_t na = fmt::load64(p + kRec + 4);
                    put(o, a & (~uint64_t{0} >> (64 - 8 * size)), 0, ts,
                        shard | uint64_t(SONDE_MEMREF_INSTR_ENCODING) << 32 | uint64_t(size) << 48);
                    put(o + 1, na, na, ts, (nw << 32) + hi[nt]);
                    o += 2;
                    last_pc = na;
                    last_size = size;
                    p += 2 * kRec;
                    continue;
                }
            }
            // Longer encodings, the instruction after them and plain markers are decoded here
            // too, when no header, chunk start or flush is pending and the caller has room for
            // two memrefs.
            if (!special_ && limit - o >= 2) {
                if (t == kEncoding && size - 1u < 8u && enc_len_ + size <= sizeof enc_) {
                    std::memcpy(enc_ + enc_len_, p + 4, size);
                    enc_len_ = static_cast<uint16_t>(enc_len_ + size);
                    fast = kNone;
                    p += kRec;
                    continue;
                }
                if (enc_len_ != 0 && t < 63 && kMap.fast[t] == kMap.kFastFetch && size != 0 &&
                    (enc_len_ == size || (filetype_ & kFiletypeRegdeps) != 0)) {
                    put(o, fmt::load64(enc_), fmt::load64(enc_ + 8), ts,
                        shard | uint64_t(SONDE_MEMREF_INSTR_ENCODING) << 32 | uint64_t(enc_len_) << 48);
                    ++o;
                    std::memset(enc_, 0, sizeof enc_);
                    enc_len_ = 0;
                    put(o, a, a, ts, (w << 32) + hi[t]);
                    ++o;
                    last_pc = a;
                    last_size = size;
                    fast = kMap.fast16;
                    p += kRec;
                    stop = stop_at();
                    continue;
                }
                // Timestamp and cpu markers (one record in about 300): outside a header or chunk
                // start nothing is skipped or settled, so marker() reduces to this.
                if (t == kMarker && fast == kMap.fast16 &&
                    (size == kMarkerTimestamp || size == kMarkerCpuId)) {
                    uint64_t value = a;
                    if (size == kMarkerTimestamp) {
                        ts = a > UINT64_MAX / 1000 ? UINT64_MAX : a * 1000;
                        value = ts;
                    } else {
                        cpu_ = a;
                        cpu_seen_ = true;
                    }
                    const uint64_t marker =
                        size == kMarkerTimestamp ? SONDE_MARKER_TIMESTAMP : SONDE_MARKER_CPU_ID;
                    put(o, value, 0, ts, shard | uint64_t(SONDE_MEMREF_MARKER) << 32 | marker << 48);
                    ++o;
                    last_marker_ = size;
                    p += kRec;
                    continue;
                }
                if (t == kMarker && fast == kMap.fast16 && size <= kMarkerMax && size != kMarkerTimestamp &&
                    size != kMarkerCpuId && size != kMarkerRecordOrdinal && size != kMarkerFiletype) {
                    put(o, a, 0, ts,
                        shard | uint64_t(SONDE_MEMREF_MARKER) << 32 |
                            uint64_t(SONDE_MARKER_DRMEMTRACE + size) << 48);
                    ++o;
                    last_marker_ = size;
                    p += kRec;
                    continue;
                }
            }
            // Slow path: hand the state back, decode one record, take it again.
            n_ = static_cast<size_t>(o - out_);
            pos_ = static_cast<size_t>(p - b);
            last_pc_ = last_pc;
            last_size_ = last_size;
            ts_ = ts;
            if (t > kLastType) {
                fail(offset_of_pos(), "unknown record type " + std::to_string(t));
                return;
            }
            slow(t, size, a, p);
            if (status_ != SONDE_STATUS_SUCCESS) return;
            last_marker_ = t == kMarker ? size : 0;
            o = out_ + n_;
            last_pc = last_pc_;
            last_size = last_size_;
            ts = ts_;
            fast = !special_ && enc_len_ == 0 ? kMap.fast16 : kNone;
            p += kRec;
            if (!pend_.empty()) break;  // the caller's room is full
            stop = stop_at();
        }
        n_ = static_cast<size_t>(o - out_);
        pos_ = static_cast<size_t>(p - b);
        last_pc_ = last_pc;
        last_size_ = last_size;
        ts_ = ts;
        if (p != start) last_type_ = load16(p - kRec);  // the type of the last record decoded
    }

    // Stores one memref; `hi` is its last word (shard | type << 32 | size << 48).
    static void put(sonde_memref_t *o, uint64_t address, uint64_t pc, uint64_t ts, uint64_t hi) {
        o->address = address;
        o->pc = pc;
        o->timestamp = ts;
        std::memcpy(reinterpret_cast<unsigned char *>(o) + offsetof(sonde_memref_t, shard), &hi, 8);
    }

    void slow(uint16_t t, uint16_t size, uint64_t a, const unsigned char *r) {
        if (flush_type_ != 0) {
            const uint16_t end_type =
                flush_type_ == SONDE_MEMREF_INSTR_FLUSH ? kInstrFlushEnd : kDataFlushEnd;
            if (t != end_type) {
                fail(offset_of_pos(), "a flush of unknown length is not followed by its end record (type " +
                                          std::to_string(end_type) + ")");
                return;
            }
            const uint64_t len = a - flush_start_;
            emit(flush_type_, len <= 0xFFFF ? static_cast<uint16_t>(len) : 0, flush_start_, a);
            flush_type_ = 0;
            return;
        }
        const uint8_t cls = kMap.cls[t];
        if (cls == kData) {
            settle();
            emit(kMap.type[t], size, a, last_pc_);
            return;
        }
        if (cls == kFetch || t == kMaybeFetch) {
            if (size == 0) {  // filtered traces: only sets the pc of the data records that follow
                last_pc_ = a;
                return;
            }
            if (special_) settle();
            uint16_t type = kMap.type[t];
            if (t == kMaybeFetch)
                type = static_cast<uint16_t>(a == last_pc_ ? uint16_t{SONDE_MEMREF_INSTR_NO_FETCH}
                                                           : uint16_t{SONDE_MEMREF_IFETCH});
            if (enc_len_ != 0) {
                if (enc_len_ != size && (filetype_ & kFiletypeRegdeps) == 0) {
                    fail(offset_of_pos(), "an encoding of " + std::to_string(enc_len_) +
                                              " bytes precedes an instruction of " + std::to_string(size) +
                                              " bytes");
                    return;
                }
                emit(SONDE_MEMREF_INSTR_ENCODING, enc_len_, fmt::load64(enc_), fmt::load64(enc_ + 8));
                std::memset(enc_, 0, sizeof enc_);
                enc_len_ = 0;
            }
            emit(type, size, a, a);
            last_pc_ = a;
            last_size_ = size;
            return;
        }
        switch (t) {
            case kMarker: marker(size, a); return;
            case kEncoding:
                if (size == 0 || size > 8 || enc_len_ + size > sizeof enc_) {
                    fail(offset_of_pos(), "encoding record of " + std::to_string(size) + " bytes (" +
                                              std::to_string(enc_len_) + " pending) is invalid");
                    return;
                }
                std::memcpy(enc_ + enc_len_, r + 4, size);
                enc_len_ = static_cast<uint16_t>(enc_len_ + size);
                return;
            case kThread:
                if (!thread_seen_) {
                    thread_seen_ = true;
                    awaiting_pid_ = true;
                    special_ = true;
                    tid_ = a;
                    emit(SONDE_MEMREF_MARKER, SONDE_MARKER_THREAD_ID, a, 0);
                } else if (a != tid_) {  // legacy files interleave threads
                    if (special_) settle();
                    tid_ = a;
                    emit(SONDE_MEMREF_MARKER, SONDE_MARKER_THREAD_ID, a, 0);
                }
                return;
            case kPid:
                if (!pid_seen_ || a != pid_) emit(SONDE_MEMREF_MARKER, SONDE_MARKER_PROCESS_ID, a, 0);
                pid_seen_ = true;
                pid_ = a;
                if (awaiting_pid_) settle();
                return;
            case kThreadExit:
                if (special_) settle();
                emit(SONDE_MEMREF_MARKER, SONDE_MARKER_THREAD_EXIT, a, 0);
                return;
            case kHeader:  // the first was checked by start(); later ones (legacy files) are skipped
                return;
            case kFooter: footer_seen_ = true; return;
            case kBundle: {
                if (special_) settle();
                if (size > 8 || last_size_ == 0) {
                    fail(offset_of_pos(), size > 8 ? "instruction bundle of more than 8 instructions"
                                                   : "instruction bundle with no instruction before it");
                    return;
                }
                for (uint16_t i = 0; i < size; ++i) {
                    const uint64_t pc = last_pc_ + last_size_;
                    emit(SONDE_MEMREF_IFETCH, r[4 + i], pc, pc);
                    last_pc_ = pc;
                    last_size_ = r[4 + i];
                }
                return;
            }
            case kInstrFlush:
            case kDataFlush: {
                if (special_) settle();
                const uint16_t type = t == kInstrFlush ? SONDE_MEMREF_INSTR_FLUSH : SONDE_MEMREF_DATA_FLUSH;
                if (size != 0) {
                    emit(type, size, a, a + size);
                } else {
                    flush_type_ = type;
                    flush_start_ = a;
                    special_ = true;  // the next record must be the end record
                }
                return;
            }
            default:
                fail(offset_of_pos(),
                     "record type " + std::to_string(t) + " is not expected in a final trace");
                return;
        }
    }

    void marker(uint16_t kind, uint64_t value) {
        switch (kind) {
            case kMarkerRecordOrdinal: return;  // chunk bookkeeping, hidden like drcachesim does
            case kMarkerTimestamp: {
                const uint64_t ns = value > UINT64_MAX / 1000 ? UINT64_MAX : value * 1000;
                if (skip_ts_ && ns == ts_) {
                    skip_ts_ = false;
                    return;
                }
                if (thread_seen_ && special_) settle();
                ts_ = ns;
                emit_marker(SONDE_MARKER_TIMESTAMP, ns);
                return;
            }
            case kMarkerCpuId:
                if (skip_cpu_ && cpu_seen_ && value == cpu_) {
                    skip_cpu_ = false;
                    return;
                }
                if (thread_seen_ && special_) settle();
                cpu_ = value;
                cpu_seen_ = true;
                emit_marker(SONDE_MARKER_CPU_ID, value);
                return;
            default:
                if (kind > kMarkerMax) {
                    fail(offset_of_pos(), "marker type " + std::to_string(kind) + " is out of range");
                    return;
                }
                if (thread_seen_ && special_) settle();
                if (kind == kMarkerFiletype) filetype_ = value;
                emit_marker(static_cast<uint16_t>(SONDE_MARKER_DRMEMTRACE + kind), value);
                return;
        }
    }

    std::string path_;
    uint32_t shard_id_;
    const Input *input_;
    uint64_t file_bytes_;
    uint64_t reported_ = 0;  // file bytes added to input_'s count so far
    uint64_t hi_[64];        // by the fast table's index: shard | (Sonde type - drmemtrace type) << 32
    std::unique_ptr<DrContainer> c_;
    std::unique_ptr<unsigned char[]> buf_;  // kBlock + kRec bytes, not zero-filled
    size_t pos_ = 0;
    size_t len_ = 0;
    uint64_t base_ = 0;  // member offset of buf_[0]
    bool member_end_ = false;
    bool done_ = false;
    // read()'s output
    sonde_memref_t *out_ = nullptr;
    size_t max_ = 0;
    size_t n_ = 0;
    std::vector<sonde_memref_t> pend_;  // memrefs beyond the caller's room
    size_t pend_pos_ = 0;
    // decoding state
    bool special_ = true;  // header or chunk start: the fast path defers to settle()
    bool thread_seen_ = false;
    bool awaiting_pid_ = false;
    bool pid_seen_ = false;
    bool footer_seen_ = false;
    bool skip_ts_ = false;
    bool skip_cpu_ = false;
    bool cpu_seen_ = false;
    std::vector<sonde_memref_t> header_;
    uint64_t filetype_ = 0;
    uint64_t tid_ = 0;
    uint64_t pid_ = 0;
    uint64_t ts_ = 0;  // ns
    uint64_t cpu_ = 0;
    uint64_t last_pc_ = 0;
    uint16_t last_size_ = 0;
    uint16_t last_type_ = 0;
    uint16_t last_marker_ = 0;
    unsigned char enc_[16] = {0};
    uint16_t enc_len_ = 0;
    uint16_t flush_type_ = 0;
    uint64_t flush_start_ = 0;
};

class DrInput final : public Input {
public:
    explicit DrInput(const std::string &path) {
        path_ = path;
        format_ = SONDE_TRACE_FORMAT_DRMEMTRACE;
    }
    size_t num_shards() const override { return files_.size(); }
    uint64_t shard_records(size_t) const override { return UINT64_MAX; }
    // The shard reader's block, its pending list's usual bound and the container's buffers.
    uint64_t shard_memory(size_t shard) const override {
        return shard < memory_.size() ? kBlock + kRec + (64u << 10) + memory_[shard] : 0;
    }
    uint64_t shard_bytes(size_t shard) const override { return shard < bytes_.size() ? bytes_[shard] : 0; }
    std::unique_ptr<ShardReader> open_shard(size_t shard, uint32_t shard_id) const override {
        if (shard >= files_.size()) return nullptr;
        auto r = std::make_unique<DrShardReader>(files_[shard], shard_id, this, bytes_[shard]);
        r->start();
        return r;
    }
    std::vector<std::string> files_;
    std::vector<uint64_t> memory_;  // each file's container memory
    std::vector<uint64_t> bytes_;   // each file's size
};

// Opens a thread file far enough to check its header; sets *memory to what its container
// holds while it is read.
sonde_status_t probe(const std::string &file, uint64_t *memory, std::string *error) {
    const std::string base = base_name(file);
    if (is_schedule_file(base)) {
        *error = fmt::at(file, 0,
                         "a drmemtrace schedule file (the as-traced thread schedule), not a thread trace; "
                         "give the directory or a thread file");
        return SONDE_STATUS_ERROR_FORMAT;
    }
    std::unique_ptr<DrContainer> c;
    sonde_status_t s = DrContainer::open(file, &c, error);
    if (s != SONDE_STATUS_SUCCESS) return s;
    *memory = c->memory();
    if (!c->next_member()) {
        if (c->status() != SONDE_STATUS_SUCCESS) {
            *error = c->error();
            return c->status();
        }
        *error = fmt::at(file, 0, "empty drmemtrace file");
        return SONDE_STATUS_ERROR_FORMAT;
    }
    unsigned char head[kRec];
    size_t have = 0;
    while (have < kRec) {
        const size_t got = c->read(head + have, kRec - have);
        if (got == 0) break;
        have += got;
    }
    if (c->status() != SONDE_STATUS_SUCCESS) {
        *error = c->error();
        return c->status();
    }
    const std::string bad = header_problem(head, have);
    if (!bad.empty()) {
        *error = c->at(0, bad);
        return SONDE_STATUS_ERROR_FORMAT;
    }
    return SONDE_STATUS_SUCCESS;
}

}  // namespace

sonde_status_t open_drmemtrace(const std::string &path, std::unique_ptr<Input> *out, std::string *error) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
        *error = path + ": cannot open: " + std::strerror(errno);
        return SONDE_STATUS_ERROR_IO;
    }
    auto in = std::make_unique<DrInput>(path);
    if (S_ISDIR(st.st_mode)) {
        // A run's top directory holds trace/ (and raw/): the thread files are in trace/.
        std::string dir = path;
        while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
        if (is_dir(dir + "/trace")) {
            dir += "/trace";
        } else if (is_dir(dir + "/raw")) {
            *error =
                path + ": holds only raw/ tracer output; post-process it with DynamoRIO's drraw2trace first";
            return SONDE_STATUS_ERROR_FORMAT;
        }
        DIR *d = ::opendir(dir.c_str());
        if (d == nullptr) {
            *error = dir + ": cannot open: " + std::strerror(errno);
            return SONDE_STATUS_ERROR_IO;
        }
        std::vector<std::string> names;
        while (const dirent *e = ::readdir(d)) {
            const std::string name = e->d_name;
            if (name == "." || name == ".." || is_skipped_file(name)) continue;
            names.push_back(name);
        }
        ::closedir(d);
        std::sort(names.begin(), names.end());
        for (const std::string &name : names) {
            const std::string file = dir + "/" + name;
            if (is_dir(file)) {
                *error = file + ": a directory inside the drmemtrace trace directory (expected thread files)";
                return SONDE_STATUS_ERROR_FORMAT;
            }
            struct stat fst;
            if (::stat(file.c_str(), &fst) == 0 && !S_ISREG(fst.st_mode)) {
                *error = file + ": not a regular file (expected drmemtrace thread files)";
                return SONDE_STATUS_ERROR_FORMAT;
            }
            in->files_.push_back(file);
        }
        if (in->files_.empty()) {
            *error = dir + ": no drmemtrace thread files in this directory";
            return SONDE_STATUS_ERROR_FORMAT;
        }
    } else if (!S_ISREG(st.st_mode)) {
        // The containers are opened by name more than once (the probe, then each reader).
        *error = path + ": a drmemtrace trace is read from a file or a directory, not from a pipe or device";
        return SONDE_STATUS_ERROR_IO;
    } else {
        in->files_.push_back(path);
    }
    in->memory_.resize(in->files_.size());
    in->bytes_.resize(in->files_.size());
    for (size_t i = 0; i < in->files_.size(); ++i) {
        const sonde_status_t s = probe(in->files_[i], &in->memory_[i], error);
        if (s != SONDE_STATUS_SUCCESS) return s;
        struct stat fs;
        in->bytes_[i] = ::stat(in->files_[i].c_str(), &fs) == 0 ? static_cast<uint64_t>(fs.st_size) : 0;
    }
    *out = std::move(in);
    return SONDE_STATUS_SUCCESS;
}

bool drmemtrace_claims_name(const std::string &path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return false;
    if (S_ISDIR(st.st_mode)) return true;
    const std::string base = base_name(path);
    if (is_schedule_file(base) || ends_with(base, ".trace")) return true;
    for (const char *ext : {".trace.zip", ".trace.gz", ".trace.lz4", ".trace.zst", ".trace.sz"})
        if (ends_with(base, ext)) return true;
    return false;
}

bool drmemtrace_claims_head(const unsigned char *raw, size_t raw_size, const unsigned char *decoded,
                            size_t decoded_size) {
    if (raw_size >= 4) {
        static const unsigned char kZip[4] = {'P', 'K', 3, 4};
        static const unsigned char kZipEmpty[4] = {'P', 'K', 5, 6};
        static const unsigned char kLz4[4] = {0x04, 0x22, 0x4D, 0x18};
        static const unsigned char kSnappy[4] = {0xFF, 0x06, 0x00, 0x00};
        if (std::memcmp(raw, kZip, 4) == 0 || std::memcmp(raw, kZipEmpty, 4) == 0 ||
            std::memcmp(raw, kLz4, 4) == 0 || std::memcmp(raw, kSnappy, 4) == 0 ||
            (raw[0] == 0x1F && raw[1] == 0x8B))
            return true;
    }
    if (decoded_size < kRec || load16(decoded) != kHeader || load16(decoded + 2) != 0) return false;
    const uint64_t low = fmt::load64(decoded + 4) & 0xFFFFFFFFu;
    return low >= 1 && low <= kMaxVersion;
}

}  // namespace sonde::trace
