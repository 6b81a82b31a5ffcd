// Lackey text reader (see lackey.h). The text is decoded in blocks (block_decode.h): a block
// ends after its last whole line and is parsed on its own, on one of the reader's decode
// threads; the pc of a block's data lines before its first instruction line comes from the
// block before, applied in order. Hot path: decode() walks a block once; a record line with
// room after it is parsed with whole-word loads (record_fast), any other line byte by byte with
// a table-driven hex parser, which decides every line the fast parse does not take. It must not
// allocate or copy lines.
#include "trace/lackey.h"

#include <algorithm>
#include <cstring>
#include <new>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "trace/block_decode.h"
#include "trace/trace_format.h"
#include "trace/trace_stream.h"

namespace sonde::trace {

namespace {

struct HexTable {
    unsigned char v[256];
    HexTable() {
        std::memset(v, 0xFF, sizeof v);
        for (int c = '0'; c <= '9'; ++c) v[c] = static_cast<unsigned char>(c - '0');
        for (int c = 'a'; c <= 'f'; ++c) v[c] = static_cast<unsigned char>(c - 'a' + 10);
        for (int c = 'A'; c <= 'F'; ++c) v[c] = static_cast<unsigned char>(c - 'A' + 10);
    }
};
const HexTable kHex;

constexpr size_t kBlockBytes = 256u << 10;
constexpr size_t kMinBlockBytes = 16u << 10;
constexpr size_t kMaxLine = 4096;
// The shortest line that gives a record: "I  0,1" and a newline.
constexpr size_t kMinRecordLine = 7;

#if defined(__SSE2__)
// Bytes of block that record_fast() may read from a line's start: the 16 bytes of hex after
// the 3-byte head and the 8 bytes of size after the comma lie within them.
constexpr size_t kFastBytes = 32;

// The record line [line, eol] (eol: its newline) when it is "I  hex,dec" or " L|S|M hex,dec"
// with 1 to 15 hex digits and 1 to 6 decimal ones, size at most 0xFFFF, before "\n" or
// "\r\n": its type, address and size, parsed with whole-word loads and no branch per byte.
// False for any other line, which the byte-wise parse then accepts or refuses (16 hex digits,
// anything unusual). The block must hold kFastBytes from `line`. Lines are parsed
// independently of each other (their ends come from a newline mask), so that a core can work on
// several at once.
inline bool record_fast(const unsigned char *line, const unsigned char *eol, uint16_t *type, uint64_t *addr,
                        uint32_t *size) {
    const uint32_t head = static_cast<uint32_t>(line[0]) | static_cast<uint32_t>(line[1]) << 8 |
                          static_cast<uint32_t>(line[2]) << 16;
    constexpr uint32_t kI = 'I' | ' ' << 8 | ' ' << 16, kL = ' ' | 'L' << 8 | ' ' << 16,
                       kS = ' ' | 'S' << 8 | ' ' << 16, kM = ' ' | 'M' << 8 | ' ' << 16;
    const uint16_t t = head == kI   ? SONDE_MEMREF_IFETCH
                       : head == kL ? SONDE_MEMREF_READ
                       : head == kS ? SONDE_MEMREF_WRITE
                       : head == kM ? SONDE_MEMREF_MODIFY
                                    : UINT16_MAX;
    if (t == UINT16_MAX) return false;
    // The hex digits: which of the 16 bytes after the head are digits, how many come before
    // the first that is not, and their values.
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(line + 3));
    const __m128i digit =
        _mm_and_si128(_mm_cmpgt_epi8(c, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(c, _mm_set1_epi8('9' + 1)));
    const __m128i lower = _mm_or_si128(c, _mm_set1_epi8(0x20));  // 'A'-'F' as 'a'-'f'
    const __m128i alpha = _mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8('a' - 1)),
                                        _mm_cmplt_epi8(lower, _mm_set1_epi8('f' + 1)));
    const unsigned hex = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(digit, alpha)));
    const unsigned d = static_cast<unsigned>(__builtin_ctz(~hex));  // 0 to 16
    // The size's digits lie between the comma and the line's end (less one '\r').
    const unsigned char *const s = line + 4 + d;
    const unsigned char *const e = eol - (eol[-1] == '\r');
    const ptrdiff_t nd = e - s;
    if (d == 0 || d == 16 || line[3 + d] != ',' || nd < 1 || nd > 6) return false;
    // A digit's value is its low nibble, plus 9 for a letter (4 bits kept: the bytes after the
    // digits give garbage, shifted out below). Each pair of digits becomes one byte (16-bit lane
    // j: digit 2j, the more significant, in its low byte), the 8 bytes are packed into 64 bits,
    // first pair lowest, and swapped: all 16 bytes as one number.
    const __m128i nib = _mm_and_si128(
        _mm_add_epi8(_mm_and_si128(c, _mm_set1_epi8(0x0F)), _mm_and_si128(alpha, _mm_set1_epi8(9))),
        _mm_set1_epi8(0x0F));
    const __m128i pairs =
        _mm_or_si128(_mm_slli_epi16(_mm_and_si128(nib, _mm_set1_epi16(0x00FF)), 4), _mm_srli_epi16(nib, 8));
    const uint64_t all =
        __builtin_bswap64(static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_packus_epi16(pairs, pairs))));
    // The size: its nd bytes must be decimal digits (the first byte that is not one is at nd).
    uint64_t w;
    std::memcpy(&w, s, sizeof w);
    const uint64_t x = w ^ 0x3030303030303030ull;  // a digit's byte: its value, 0 to 9
    const uint64_t other =
        (((x & 0x7F7F7F7F7F7F7F7Full) + 0x7676767676767676ull) | x) & 0x8080808080808080ull;
    // nd <= 6, so a byte at nd exists in w: `other` is not 0 when the line is right.
    if (other == 0 || static_cast<ptrdiff_t>(__builtin_ctzll(other) >> 3) != nd) return false;
    // One or two digits (nearly every size), else the digits moved to the top bytes (zeros
    // before them) and combined in pairs, fours, eight.
    uint64_t value = (x & 0xF) * (nd == 1 ? 1 : 10) + (nd == 1 ? 0 : (x >> 8) & 0xF);
    if (nd > 2) {
        uint64_t v = x << (8 * (8 - nd));
        v = ((v & 0x0F0F0F0F0F0F0F0Full) * 2561) >> 8;
        v = ((v & 0x00FF00FF00FF00FFull) * 6553601) >> 16;
        value = ((v & 0x0000FFFF0000FFFFull) * 42949672960001ull) >> 32;
        if (value > 0xFFFF) return false;
    }
    *type = t;
    *addr = all >> (64 - 4 * d);
    *size = static_cast<uint32_t>(value);
    return true;
}

// Bit i set when w[i] is a newline, for the 64 bytes at w.
inline uint64_t newlines64(const unsigned char *w) {
    const __m128i nl = _mm_set1_epi8('\n');
    uint64_t m = 0;
    for (int i = 0; i < 4; ++i) {
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w + 16 * i));
        m |= static_cast<uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(c, nl))))
             << (16 * i);
    }
    return m;
}
#endif

class LackeyFormat final : public StreamFormat {
public:
    LackeyFormat(std::string path, uint32_t shard_id, bool compressed)
        : path_(std::move(path)), shard_id_(shard_id), compressed_(compressed) {}

    // After the last newline; at the end of the stream the last line may lack its newline,
    // unless it is longer than any line (then it is left over, and tail_error() says so).
    size_t cut(const unsigned char *data, size_t len, bool eof) const override {
        const void *nl = memrchr(data, '\n', len);
        const size_t whole =
            nl == nullptr ? 0 : static_cast<size_t>(static_cast<const unsigned char *>(nl) - data) + 1;
        return eof && len - whole <= kMaxLine ? len : whole;
    }
    size_t max_records(size_t bytes) const override { return bytes / kMinRecordLine + 1; }
    size_t max_record_bytes() const override { return kMaxLine; }
    std::string tail_error(uint64_t at, size_t) const override {
        return at_(at, "line longer than " + std::to_string(kMaxLine) + " bytes");
    }

    // Lines are found by their newlines, 64 bytes of the block at a time, and a record line
    // with kFastBytes of block after its start is parsed by record_fast(). Every other line,
    // and the block's last bytes, go to the byte-wise parse (line()), which accepts and refuses
    // exactly the lines that a parse of [line, newline), less one trailing '\r', would; where
    // record_fast() takes a line, line() gives the same record.
    void decode(DecodedBlock &b) const override { decode_block(b, nullptr); }
    bool decode_tapped(DecodedBlock &b, const BlockTap &tap, PieceBuffer &) const override {
        decode_block(b, &tap);
        return true;
    }

    std::string finish(DecodedBlock &b, uint64_t *carry, uint64_t lines_before) const override {
        sonde_memref_t *const r = b.records.get();
        for (size_t i = 0; i < b.carry_until; ++i) r[i].pc = *carry;
        if (b.sets_carry) *carry = b.carry_out;
        if (!b.failed) return std::string();
        return at_(b.offset + b.fail_pos, "bad lackey line " + std::to_string(lines_before + b.lines + 1) +
                                              ": \"" + b.fail_what + "\"");
    }

private:
    // A tapped block is tapped every PieceBuffer::kRecords records as they are decoded, which
    // the tap reads back from the core's nearest caches rather than after the whole block (up to
    // 37 K records, 1.2 MB).
    static constexpr size_t kTapPiece = PieceBuffer::kRecords;

    void decode_block(DecodedBlock &b, const BlockTap *tap) const {
        const unsigned char *const base = b.bytes.get();
        const unsigned char *p = base;
        const unsigned char *const end = base + b.len;
        sonde_memref_t *const out = b.records.get();
        size_t n = 0;
        size_t tapped = 0;  // records given to the tap so far
        if (tap != nullptr) {
            try {
                tap->begin(max_records(b.len), &b.tap);
            } catch (const std::bad_alloc &) {
                tap = nullptr;  // untapped: the reading thread uses the records
            }
        }
        uint64_t lines = 0;
        uint64_t pc = 0;
        size_t carry_until = SIZE_MAX;  // index of the block's first instruction record
        const uint32_t shard = shard_id_;
        auto emit = [&](uint16_t t, uint64_t a, uint32_t sz) {
            const bool fetch = t == SONDE_MEMREF_IFETCH;
            pc = fetch ? a : pc;
            carry_until = fetch && carry_until == SIZE_MAX ? n : carry_until;
            sonde_memref_t &m = out[n++];
            m.address = a;
            m.pc = pc;
            m.timestamp = 0;
            m.shard = shard;
            m.type = t;
            m.size = static_cast<uint16_t>(sz);
        };
        bool bad = false;
#if defined(__SSE2__)
        for (const unsigned char *w = base; end - w >= 64 && !bad; w += 64) {
            if (tap != nullptr && n - tapped >= kTapPiece) {
                tap->piece(out + tapped, n - tapped, &b.tap);
                tapped = n;
            }
            for (uint64_t nls = newlines64(w); nls != 0; nls &= nls - 1) {
                const unsigned char *const eol = w + __builtin_ctzll(nls);
                const unsigned char *const at = p;
                p = eol + 1;
                ++lines;
                uint16_t t;
                uint64_t a;
                uint32_t sz;
                if (static_cast<size_t>(end - at) >= kFastBytes && record_fast(at, eol, &t, &a, &sz)) {
                    emit(t, a, sz);
                    continue;
                }
                // The byte-wise parse ends at the same newline (the first after `at`).
                const Line l = line(at, end);
                if (l.kind == Line::kBad) {
                    --lines;
                    fail(b, at, end);
                    bad = true;
                    break;
                }
                if (l.kind == Line::kRecord) emit(l.type, l.addr, l.size);
            }
        }
#endif
        while (!bad && p < end) {
            const Line l = line(p, end);
            if (l.kind == Line::kBad) {
                fail(b, p, end);
                break;
            }
            if (l.kind == Line::kRecord) emit(l.type, l.addr, l.size);
            p = l.next;
            ++lines;
        }
        b.count = n;
        b.lines = lines;
        b.sets_carry = carry_until != SIZE_MAX;
        b.carry_until = b.sets_carry ? carry_until : n;
        b.carry_out = pc;
        // The records before a bad line are handed out too, so they are tapped as well.
        if (tap != nullptr) {
            tap->piece(out + tapped, n - tapped, &b.tap);
            try {
                tap->end(&b.tap);
                b.tapped = true;
            } catch (const std::bad_alloc &) {
            }
        }
    }

    // One line parsed byte by byte: a record, a line to skip (empty, or valgrind's "==" log
    // lines) or a bad one, and where the next line starts. A record line ("I  hex,dec",
    // " L hex,dec", " S ...", " M ...") is parsed forward to its end, which must then be the
    // newline (or "\r\n", or the end of the block); other lines are found with memchr.
    struct Line {
        enum Kind { kRecord, kSkip, kBad } kind;
        uint16_t type;
        uint64_t addr;
        uint32_t size;
        const unsigned char *next;
    };
    static Line line(const unsigned char *at, const unsigned char *end) {
        Line l{Line::kBad, SONDE_MEMREF_READ, 0, 0, end};
        bool record = false;
        if (end - at >= 4) {
            if (at[0] == 'I' && at[1] == ' ' && at[2] == ' ') {
                l.type = SONDE_MEMREF_IFETCH;
                record = true;
            } else if (at[0] == ' ' && at[2] == ' ' && (at[1] == 'L' || at[1] == 'S' || at[1] == 'M')) {
                l.type = at[1] == 'L'   ? SONDE_MEMREF_READ
                         : at[1] == 'S' ? SONDE_MEMREF_WRITE
                                        : SONDE_MEMREF_MODIFY;
                record = true;
            }
        }
        if (!record) {
            // Not a record: empty or "==" lines are skipped, anything else is refused.
            const unsigned char *nl =
                static_cast<const unsigned char *>(std::memchr(at, '\n', static_cast<size_t>(end - at)));
            if (nl == nullptr) nl = end;  // the stream's last line has no newline
            const unsigned char *stop = nl;
            if (stop > at && stop[-1] == '\r') --stop;
            const size_t len = static_cast<size_t>(stop - at);
            if (len == 0 || (at[0] == '=' && len >= 2 && at[1] == '=')) {
                l.kind = Line::kSkip;
                l.next = nl < end ? nl + 1 : end;
            }
            return l;
        }
        const unsigned char *q = at + 3;
        int digits = 0;
        while (q < end && kHex.v[*q] != 0xFF) {
            l.addr = (l.addr << 4) | kHex.v[*q++];
            ++digits;
        }
        int sdigits = 0;
        if (!(digits > 0 && digits <= 16 && q < end && *q == ',')) return l;
        ++q;
        while (q < end && *q >= '0' && *q <= '9' && sdigits < 6) {
            l.size = l.size * 10 + static_cast<uint32_t>(*q++ - '0');
            ++sdigits;
        }
        // The line ends here: "\n", "\r\n", or the block's end (after a '\r' or not).
        if (q < end && *q == '\r') ++q;
        if (!(sdigits > 0 && l.size <= 0xFFFF && (q == end || *q == '\n'))) return l;
        l.kind = Line::kRecord;
        l.next = q < end ? q + 1 : end;
        return l;
    }
    // Records the bad line: its position and its first 40 bytes, printable.
    static void fail(DecodedBlock &b, const unsigned char *line, const unsigned char *end) {
        size_t len = 0;
        while (line + len < end && line[len] != '\n' && len < 40) ++len;
        b.failed = true;
        b.fail_pos = static_cast<size_t>(line - b.bytes.get());
        b.fail_what.clear();
        for (size_t i = 0; i < len; ++i)
            b.fail_what += (line[i] >= 0x20 && line[i] < 0x7F) ? static_cast<char>(line[i]) : '?';
    }
    std::string at_(uint64_t offset, const std::string &what) const {
        return fmt::at(path_, offset, what + (compressed_ ? " (offset in the decompressed text)" : ""));
    }

    std::string path_;
    uint32_t shard_id_;
    bool compressed_;
};

// Decoded bytes per block for `decoded` bytes of text: kBlockBytes, less for a small input (so
// that several threads share it), at least kMinBlockBytes (twice the longest line).
size_t block_bytes_for(uint64_t decoded, unsigned threads) {
    const uint64_t share = decoded / (2 * uint64_t{threads}) + 1;
    return static_cast<size_t>(std::clamp<uint64_t>(share, kMinBlockBytes, kBlockBytes));
}

size_t block_bytes(const Source &source, unsigned threads) {
    if (!source.seekable()) return kBlockBytes;
    return block_bytes_for(source.size() * (source.zstd() ? 32 : 1), threads);
}

// ---- byte ranges of a plain file (Input::open_range) ----
//
// A range's records are those of the lines whose first byte lies in it. Finding them costs a
// forward scan to the range's first line start (at most the range) and to the first line start
// after it (at most kMaxLine + 2 bytes: a longer line is an error, reported by the range that
// holds its start, as a reader of the whole file reports it), and a backward scan from the first
// line start to the last instruction line before it, for the pc its data lines start with (one
// line back in a lackey trace, where every instruction has its line).

constexpr size_t kScan = 64u << 10;  // bytes read per step of a scan

// The first line start in [at, limit) of `source` (lines start at 0 and after each newline), or
// `limit` when no line starts there.
sonde_status_t line_start(const Source &source, uint64_t at, uint64_t limit, uint64_t *start,
                          std::string *error) {
    *start = limit;
    if (at >= limit) return SONDE_STATUS_SUCCESS;
    if (at == 0) {
        *start = 0;
        return SONDE_STATUS_SUCCESS;
    }
    std::unique_ptr<unsigned char[]> buf(new unsigned char[kScan]);
    for (uint64_t pos = at - 1; pos + 1 < limit;) {  // a newline at pos starts a line at pos + 1
        size_t got = 0;
        const size_t want = static_cast<size_t>(std::min<uint64_t>(kScan, limit - 1 - pos));
        if (const sonde_status_t st = source.read_at(pos, buf.get(), want, &got, error)) return st;
        if (got == 0) break;
        const void *nl = std::memchr(buf.get(), '\n', got);
        if (nl != nullptr) {
            *start = pos + static_cast<uint64_t>(static_cast<const unsigned char *>(nl) - buf.get()) + 1;
            return SONDE_STATUS_SUCCESS;
        }
        pos += got;
    }
    return SONDE_STATUS_SUCCESS;
}

// Whether the line at `q` of `source` is an instruction line ("I  addr,..."), and its address,
// parsed as decode() parses it (a line decode() refuses stops a reader of the lines before it).
sonde_status_t instruction_at(const Source &source, uint64_t q, bool *is_instruction, uint64_t *pc,
                              std::string *error) {
    unsigned char line[3 + 16 + 1];
    size_t got = 0;
    *is_instruction = false;
    if (const sonde_status_t st = source.read_at(q, line, sizeof line, &got, error)) return st;
    if (got < 4 || line[0] != 'I' || line[1] != ' ' || line[2] != ' ') return SONDE_STATUS_SUCCESS;
    uint64_t addr = 0;
    for (size_t i = 3; i < got && kHex.v[line[i]] != 0xFF; ++i) addr = (addr << 4) | kHex.v[line[i]];
    *is_instruction = true;
    *pc = addr;
    return SONDE_STATUS_SUCCESS;
}

// The pc in force at line start `s` of `source`: the address of the last instruction line before
// it, 0 when there is none (the pc a reader of the whole file starts with).
sonde_status_t pc_before(const Source &source, uint64_t s, uint64_t *pc, std::string *error) {
    *pc = 0;
    if (s == 0) return SONDE_STATUS_SUCCESS;
    std::unique_ptr<unsigned char[]> buf(new unsigned char[kScan]);
    // Line starts before s: 0, and p + 1 for each newline p < s - 1 (s - 1 ends the line before s).
    for (uint64_t hi = s - 1; hi > 0;) {
        const uint64_t lo = hi > kScan ? hi - kScan : 0;
        size_t got = 0;
        if (const sonde_status_t st =
                source.read_at(lo, buf.get(), static_cast<size_t>(hi - lo), &got, error))
            return st;
        if (got != hi - lo) {
            *error = fmt::at(source.path(), lo + got, "the file ended while it was read (it shrank)");
            return SONDE_STATUS_ERROR_IO;
        }
        for (size_t n = got; n > 0;) {
            const void *nl = memrchr(buf.get(), '\n', n);
            if (nl == nullptr) break;
            const size_t p = static_cast<size_t>(static_cast<const unsigned char *>(nl) - buf.get());
            bool found = false;
            if (const sonde_status_t st = instruction_at(source, lo + p + 1, &found, pc, error)) return st;
            if (found) return SONDE_STATUS_SUCCESS;
            n = p;
        }
        hi = lo;
    }
    bool found = false;
    return instruction_at(source, 0, &found, pc, error);
}

class LackeyInput final : public Input {
public:
    explicit LackeyInput(std::unique_ptr<Source> source) {
        path_ = source->path();
        format_ = SONDE_TRACE_FORMAT_LACKEY;
        source_ = std::move(source);
    }
    size_t num_shards() const override { return 1; }
    uint64_t shard_records(size_t) const override {
        return source_->seekable() && source_->size() == 0 ? 0 : UINT64_MAX;
    }
    uint64_t shard_memory(size_t shard) const override {
        if (shard != 0) return 0;
        const unsigned threads = decode_threads();
        const LackeyFormat format(path_, 0, false);
        return StreamBlocks::memory(format, threads, block_bytes(*source_, threads)) +
               ByteStream::memory(*source_);
    }
    uint64_t shard_bytes(size_t shard) const override { return shard == 0 ? source_->size() : 0; }
    std::unique_ptr<ShardReader> open_shard(size_t shard, uint32_t shard_id) const override {
        if (shard != 0) return nullptr;
        const unsigned threads = decode_threads();
        return open_stream_shard<LackeyFormat>(source_.get(), threads, block_bytes(*source_, threads), path_,
                                               shard_id, source_->zstd());
    }
    bool byte_ranges() const override { return source_->seekable() && !source_->zstd(); }
    // The lines that start in [begin, end): from the first line start at or after begin to the
    // first at or after end (see "byte ranges" above).
    std::unique_ptr<ShardReader> open_range(uint32_t shard_id, uint64_t begin, uint64_t end) const override {
        if (!byte_ranges()) return nullptr;
        const Source &src = *source_;
        const uint64_t size = src.size();
        begin = std::min(begin, size);
        end = std::max(begin, std::min(end, size));
        uint64_t from = 0, to = 0, pc = 0;
        std::string error;
        sonde_status_t st = line_start(src, begin, end, &from, &error);
        if (st == SONDE_STATUS_SUCCESS && from < end) {
            st = line_start(src, end, std::min<uint64_t>(size, end + kMaxLine + 2), &to, &error);
            if (st == SONDE_STATUS_SUCCESS) st = pc_before(src, from, &pc, &error);
        } else {
            to = from;
        }
        if (st != SONDE_STATUS_SUCCESS) return std::make_unique<BlockShardReader>(nullptr, 1, st, error);
        const unsigned threads = decode_threads();
        return open_stream_range<LackeyFormat>(source_.get(), threads, block_bytes_for(to - from, threads),
                                               from, to, pc, path_, shard_id, false);
    }
};

}  // namespace

sonde_status_t open_lackey(std::unique_ptr<Source> source, std::unique_ptr<Input> *out, std::string *) {
    *out = std::make_unique<LackeyInput>(std::move(source));
    return SONDE_STATUS_SUCCESS;
}

}  // namespace sonde::trace
