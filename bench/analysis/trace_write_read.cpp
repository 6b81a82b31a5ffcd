// bench/analysis trace I/O: Sonde trace write MB/s (anchor: write() of the same bytes
// uncompressed), records/s reading one shard of a zstd Sonde trace (anchor: a copy loop over
// the same records in memory), and lackey parsing MB/s of text (anchor: zstd decompression of
// the same file alone), and records/s reading those lackey references converted to a Sonde
// trace. Medians of 5 repetitions; prints figure, anchor and ratio; never fails.
#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sonde/trace.h>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kReps = 5;
constexpr size_t kRecords = 8u << 20;  // 256 MiB of memrefs

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// A plausible stream: a few strided arrays, a loop's pcs, rising timestamps.
std::vector<sonde_memref_t> make_records() {
    std::vector<sonde_memref_t> v(kRecords);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < kRecords; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        sonde_memref_t &m = v[i];
        const unsigned stream = static_cast<unsigned>(i % 4);
        m.address = 0x7f0000000000ull + stream * 0x10000000ull + (i / 4) * 8 +
                    ((x & 0xF) == 0 ? (x >> 20) & 0xFFFF0 : 0);
        m.pc = 0x401000 + (i % 23) * 4;
        m.timestamp = 1000000 + i * 3;
        m.shard = 0;
        m.type = static_cast<uint16_t>(stream == 3 ? SONDE_MEMREF_WRITE
                                                   : (stream == 0 ? SONDE_MEMREF_IFETCH : SONDE_MEMREF_READ));
        m.size = stream == 0 ? 4 : 8;
    }
    return v;
}

}  // namespace

int main() {
    const char *tmp = std::getenv("TMPDIR");
    const std::string dir = tmp ? tmp : "/tmp";
    const std::string trace = dir + "/sonde-bench-trace-" + std::to_string(getpid()) + ".sonde";
    const std::string raw = dir + "/sonde-bench-raw-" + std::to_string(getpid()) + ".bin";
    const std::vector<sonde_memref_t> recs = make_records();
    const double mb = static_cast<double>(recs.size() * sizeof(sonde_memref_t)) / 1e6;

    // 1. Write: Sonde trace (default level 1, 64K-record chunks) vs plain write().
    std::vector<double> w_trace, w_raw;
    uint64_t trace_bytes = 0;
    for (int r = 0; r < kReps; ++r) {
        auto t0 = Clock::now();
        sonde_trace_writer_t *w = nullptr;
        if (sonde_trace_writer_create(trace.c_str(), nullptr, &w) != SONDE_STATUS_SUCCESS) {
            std::printf("cannot create %s\n", trace.c_str());
            return 0;
        }
        for (size_t i = 0; i < recs.size(); i += 4096) sonde_trace_writer_write(w, 0, recs.data() + i, 4096);
        sonde_trace_writer_close(w);
        w_trace.push_back(mb / seconds_since(t0));
        t0 = Clock::now();
        const int fd = ::open(raw.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const auto *p = reinterpret_cast<const char *>(recs.data());
        size_t left = recs.size() * sizeof(sonde_memref_t);
        while (left > 0) {
            const ssize_t n = ::write(fd, p, std::min<size_t>(left, 4096 * 32));
            if (n <= 0) break;
            p += n;
            left -= static_cast<size_t>(n);
        }
        ::close(fd);
        w_raw.push_back(mb / seconds_since(t0));
    }
    FILE *f = std::fopen(trace.c_str(), "rb");
    if (f != nullptr) {
        std::fseek(f, 0, SEEK_END);
        trace_bytes = static_cast<uint64_t>(std::ftell(f));
        std::fclose(f);
    }
    ::unlink(raw.c_str());
    std::printf(
        "trace write: %.0f MB/s of memrefs (file %.1f MB, ratio %.1fx); anchor write() uncompressed %.0f "
        "MB/s; ratio %.2f\n",
        median(w_trace), static_cast<double>(trace_bytes) / 1e6,
        mb * 1e6 / static_cast<double>(trace_bytes ? trace_bytes : 1), median(w_raw),
        median(w_trace) / median(w_raw));

    // 2. Read one shard of the zstd trace vs a copy loop over the records in memory.
    std::vector<sonde_memref_t> batch(65536);
    std::vector<double> r_trace, r_mem;
    uint64_t sink = 0;
    for (int r = 0; r < kReps; ++r) {
        auto t0 = Clock::now();
        sonde_trace_reader_t *rd = nullptr;
        sonde_trace_reader_open(trace.c_str(), SONDE_TRACE_FORMAT_SONDE, nullptr, 0, &rd);
        size_t n = 0, total = 0;
        while (sonde_trace_reader_read_shard(rd, 0, batch.data(), batch.size(), &n) == SONDE_STATUS_SUCCESS &&
               n > 0) {
            total += n;
            sink += batch[n - 1].address;
        }
        sonde_trace_reader_close(rd);
        r_trace.push_back(static_cast<double>(total) / seconds_since(t0) / 1e6);
        t0 = Clock::now();
        for (size_t i = 0; i < recs.size(); i += batch.size()) {
            const size_t k = std::min(batch.size(), recs.size() - i);
            std::memcpy(batch.data(), recs.data() + i, k * sizeof(sonde_memref_t));
            sink += batch[k - 1].address;
        }
        r_mem.push_back(static_cast<double>(recs.size()) / seconds_since(t0) / 1e6);
    }
    ::unlink(trace.c_str());
    std::printf(
        "trace read (one shard, zstd): %.1f M records/s; anchor in-memory copy %.1f M records/s; ratio %.2f "
        "(target >= 50 M/s)\n",
        median(r_trace), median(r_mem), median(r_trace) / median(r_mem));

    // 3. Lackey: parse the real gzip trace vs decompressing it alone.
    const char *data = std::getenv("SONDE_SHARED_DATA");
    const std::string lackey = std::string(data ? data : SONDE_TEST_DATA_DIR) + "/gzip-gpl3.lackey.zst";
    if (::access(lackey.c_str(), R_OK) == 0) {
        std::vector<double> l_parse, l_unzstd;
        double text_mb = 0;
        for (int r = 0; r < kReps; ++r) {
            auto t0 = Clock::now();
            sonde_trace_reader_t *rd = nullptr;
            sonde_trace_reader_open(lackey.c_str(), SONDE_TRACE_FORMAT_LACKEY, nullptr, 0, &rd);
            size_t n = 0, total = 0;
            while (sonde_trace_reader_read_shard(rd, 0, batch.data(), batch.size(), &n) ==
                       SONDE_STATUS_SUCCESS &&
                   n > 0) {
                total += n;
                sink += batch[n - 1].address;
            }
            sonde_trace_reader_close(rd);
            const double t_parse = seconds_since(t0);
            // Anchor: streaming decompression only.
            t0 = Clock::now();
            FILE *in = std::fopen(lackey.c_str(), "rb");
            ZSTD_DStream *ds = ZSTD_createDStream();
            ZSTD_initDStream(ds);
            std::vector<char> ibuf(1 << 20), obuf(4 << 20);
            size_t text = 0, got;
            while ((got = std::fread(ibuf.data(), 1, ibuf.size(), in)) > 0) {
                ZSTD_inBuffer ib{ibuf.data(), got, 0};
                while (ib.pos < ib.size) {
                    ZSTD_outBuffer ob{obuf.data(), obuf.size(), 0};
                    if (ZSTD_isError(ZSTD_decompressStream(ds, &ob, &ib))) break;
                    text += ob.pos;
                }
            }
            ZSTD_freeDStream(ds);
            std::fclose(in);
            const double t_unzstd = seconds_since(t0);
            text_mb = static_cast<double>(text) / 1e6;
            l_parse.push_back(text_mb / t_parse);
            l_unzstd.push_back(text_mb / t_unzstd);
            if (r == 0) std::printf("lackey: %zu records from %.1f MB of text\n", total, text_mb);
        }
        std::printf(
            "lackey parse (zstd text): %.0f MB/s of text; anchor zstd decompression alone %.0f MB/s; ratio "
            "%.2f\n",
            median(l_parse), median(l_unzstd), median(l_parse) / median(l_unzstd));
        // The same references as a Sonde trace: read one shard vs the in-memory copy anchor.
        std::vector<sonde_memref_t> gz;
        sonde_trace_reader_t *rd = nullptr;
        sonde_trace_reader_open(lackey.c_str(), SONDE_TRACE_FORMAT_LACKEY, nullptr, 0, &rd);
        size_t n = 0;
        while (sonde_trace_reader_read_shard(rd, 0, batch.data(), batch.size(), &n) == SONDE_STATUS_SUCCESS &&
               n > 0)
            gz.insert(gz.end(), batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(n));
        sonde_trace_reader_close(rd);
        sonde_trace_writer_t *w = nullptr;
        if (!gz.empty() && sonde_trace_writer_create(trace.c_str(), nullptr, &w) == SONDE_STATUS_SUCCESS) {
            sonde_trace_writer_write(w, 0, gz.data(), gz.size());
            sonde_trace_writer_close(w);
            std::vector<double> g_read, g_mem;
            for (int r = 0; r < kReps; ++r) {
                auto t0 = Clock::now();
                sonde_trace_reader_open(trace.c_str(), SONDE_TRACE_FORMAT_SONDE, nullptr, 0, &rd);
                size_t total = 0;
                while (sonde_trace_reader_read_shard(rd, 0, batch.data(), batch.size(), &n) ==
                           SONDE_STATUS_SUCCESS &&
                       n > 0) {
                    total += n;
                    sink += batch[n - 1].address;
                }
                sonde_trace_reader_close(rd);
                g_read.push_back(static_cast<double>(total) / seconds_since(t0) / 1e6);
                t0 = Clock::now();
                for (size_t i = 0; i < gz.size(); i += batch.size()) {
                    const size_t k = std::min(batch.size(), gz.size() - i);
                    std::memcpy(batch.data(), gz.data() + i, k * sizeof(sonde_memref_t));
                    sink += batch[k - 1].address;
                }
                g_mem.push_back(static_cast<double>(gz.size()) / seconds_since(t0) / 1e6);
            }
            ::unlink(trace.c_str());
            std::printf(
                "trace read (gzip lackey as a Sonde trace): %.1f M records/s; anchor in-memory copy %.1f M "
                "records/s; ratio %.2f (target >= 50 M/s)\n",
                median(g_read), median(g_mem), median(g_read) / median(g_mem));
        }
    } else {
        std::printf("lackey parse: skipped (%s not found)\n", lackey.c_str());
    }
    std::printf("(checksum %llu)\n", static_cast<unsigned long long>(sink & 0xFF));
    return 0;
}
