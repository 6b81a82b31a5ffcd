// bench/drmemtrace: decoding DynamoRIO drmemtrace traces. A large trace directory is made from
// DynamoRIO's threadsig test trace (tests/data/drmemtrace/core_serial): each of its 9 thread
// files becomes one with the records between the header and the footer repeated K times (K
// from argv[1], default 16), as a zip of K chunk members (what DynamoRIO writes) and as one
// gzip stream. For each container it prints
//   - the floor: decompressing the same files alone (libzip's zip_fread, zlib's gzread) into
//     a buffer, in trace records (12 bytes) per second. The floor makes the reader's calls with
//     the reader's sizes: reads of 64 KiB + 12 bytes (the reader's block, kDrReadBlock, plus
//     one record), and for gzip an input buffer of 32 KiB (gzbuffer), with which zlib inflates
//     straight into the caller's buffer, as it does for the reader. If the reader's sizes
//     change, kBlock and kGzInput below change with them;
//   - the reader: sonde_trace_reader_read_shard() over every thread file in turn, in trace
//     records per second (and the memrefs it delivers), and its ratio to the floor
//     (target >= 0.8);
//   - in parallel, with one worker per core: the floor with the files shared among threads,
//     and `sonde analyze`'s parallel mode (the analyzer with a counting tool, one shard per
//     thread file), and their ratio.
// One-thread figures are in the thread's CPU time (this machine may be shared: wall time would
// count other programs), parallel ones in wall time. Medians of 7 repetitions; a ratio is the
// median of the repetitions' ratios (the floor and the reader run back to back in each one, so a
// slow spell of a shared machine slows both). Prints figures,
// anchors and ratios; never fails.
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>
#include <time.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <sonde/analysis.h>
#include <sonde/trace.h>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kReps = 7;
constexpr size_t kRec = 12;
// The reader's sizes (src/trace/drmemtrace_container.h, drmemtrace_container.cpp).
constexpr size_t kBlock = 1u << 16;      // kDrReadBlock
constexpr size_t kBuf = kBlock + kRec;   // what each of the reader's reads asks for at most
constexpr size_t kGzInput = kBlock / 2;  // the gzip container's gzbuffer()

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of the calling thread, in seconds.
double thread_cpu() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

uint16_t type_of(const unsigned char *r) {
    uint16_t t;
    std::memcpy(&t, r, 2);
    return t;
}
uint16_t size_of(const unsigned char *r) {
    uint16_t s;
    std::memcpy(&s, r + 2, 2);
    return s;
}
void put(std::vector<unsigned char> &out, uint16_t type, uint16_t size, uint64_t value) {
    unsigned char r[kRec];
    std::memcpy(r, &type, 2);
    std::memcpy(r + 2, &size, 2);
    std::memcpy(r + 4, &value, 8);
    out.insert(out.end(), r, r + kRec);
}

// The decompressed records of a thread file's only chunk.
bool read_chunk(const std::string &path, std::vector<unsigned char> *out) {
    int code = 0;
    zip_t *z = zip_open(path.c_str(), ZIP_RDONLY, &code);
    if (z == nullptr) return false;
    zip_stat_t st;
    zip_stat_init(&st);
    zip_file_t *f = zip_stat_index(z, 0, 0, &st) == 0 ? zip_fopen_index(z, 0, 0) : nullptr;
    bool ok = f != nullptr && (st.valid & ZIP_STAT_SIZE);
    if (ok) {
        out->resize(st.size);
        ok = zip_fread(f, out->data(), st.size) == static_cast<zip_int64_t>(st.size);
    }
    if (f != nullptr) zip_fclose(f);
    zip_discard(z);
    return ok;
}

struct Made {
    std::vector<std::string> zips, gzs;
    uint64_t zip_raw = 0, gz_raw = 0;  // decompressed bytes of each container's files
};

// Writes the large trace's thread files (zip and gz) into zip_dir and gz_dir.
bool make_trace(const std::string &src_dir, const std::string &zip_dir, const std::string &gz_dir, int k,
                Made *m) {
    std::vector<std::string> names;
    for (int i = 0;; ++i) {
        // The thread files of the test trace, in name order (the reader's order).
        static const char *const kFiles[] = {
            "drmemtrace.threadsig.872805.4975.trace.zip", "drmemtrace.threadsig.872884.3060.trace.zip",
            "drmemtrace.threadsig.872894.3824.trace.zip", "drmemtrace.threadsig.872901.9125.trace.zip",
            "drmemtrace.threadsig.872902.5666.trace.zip", "drmemtrace.threadsig.872903.3218.trace.zip",
            "drmemtrace.threadsig.872904.7848.trace.zip", "drmemtrace.threadsig.872905.5783.trace.zip",
            "drmemtrace.threadsig.872906.1041.trace.zip"};
        if (i == 9) break;
        names.push_back(kFiles[i]);
    }
    for (const std::string &name : names) {
        std::vector<unsigned char> raw;
        if (!read_chunk(src_dir + "/" + name, &raw)) return false;
        const size_t n = raw.size() / kRec;
        // prefix: up to the first timestamp marker; tail: the thread exit and footer records.
        size_t first = 0;
        while (first < n && !(type_of(&raw[first * kRec]) == 28 && size_of(&raw[first * kRec]) == 2)) ++first;
        size_t tail = n;
        while (tail > first &&
               (type_of(&raw[(tail - 1) * kRec]) == 26 || type_of(&raw[(tail - 1) * kRec]) == 23))
            --tail;
        const unsigned char *body = &raw[first * kRec];
        const size_t body_bytes = (tail - first) * kRec;
        // zip: chunk 0 = prefix + body + chunk footer; chunk i = ordinal + body (+ footer);
        // the last chunk ends with the tail instead of a chunk footer.
        std::vector<std::vector<unsigned char>> chunks(static_cast<size_t>(k));
        for (int c = 0; c < k; ++c) {
            std::vector<unsigned char> &ch = chunks[static_cast<size_t>(c)];
            if (c == 0)
                ch.insert(ch.end(), raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(first * kRec));
            else
                put(ch, 28, 22, static_cast<uint64_t>(c) * (tail - first));
            ch.insert(ch.end(), body, body + body_bytes);
            if (c + 1 < k)
                put(ch, 28, 21, static_cast<uint64_t>(c));
            else
                ch.insert(ch.end(), raw.begin() + static_cast<std::ptrdiff_t>(tail * kRec), raw.end());
            m->zip_raw += ch.size();
        }
        const std::string zpath = zip_dir + "/" + name;
        int code = 0;
        zip_t *z = zip_open(zpath.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
        if (z == nullptr) return false;
        for (int c = 0; c < k; ++c) {
            char member[32];
            std::snprintf(member, sizeof member, "chunk.%04d", c);
            zip_source_t *s = zip_source_buffer(z, chunks[static_cast<size_t>(c)].data(),
                                                chunks[static_cast<size_t>(c)].size(), 0);
            const zip_int64_t idx = s != nullptr ? zip_file_add(z, member, s, 0) : -1;
            if (idx < 0 ||
                zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), ZIP_CM_DEFLATE, 6) != 0) {
                zip_discard(z);
                return false;
            }
        }
        if (zip_close(z) != 0) return false;
        m->zips.push_back(zpath);
        // gz: one stream, prefix + body K times + tail (no chunk footers).
        std::string gname = name.substr(0, name.size() - 4) + ".gz";
        const std::string gpath = gz_dir + "/" + gname;
        gzFile g = gzopen(gpath.c_str(), "wb6");
        if (g == nullptr) return false;
        gzwrite(g, raw.data(), static_cast<unsigned>(first * kRec));
        for (int c = 0; c < k; ++c) gzwrite(g, body, static_cast<unsigned>(body_bytes));
        gzwrite(g, raw.data() + tail * kRec, static_cast<unsigned>((n - tail) * kRec));
        if (gzclose(g) != Z_OK) return false;
        m->gz_raw += first * kRec + static_cast<uint64_t>(k) * body_bytes + (n - tail) * kRec;
        m->gzs.push_back(gpath);
    }
    return true;
}

// The floor: decompress one file into a buffer; returns its bytes.
uint64_t inflate_zip(const std::string &path, unsigned char *buf) {
    int code = 0;
    zip_t *z = zip_open(path.c_str(), ZIP_RDONLY, &code);
    if (z == nullptr) return 0;
    uint64_t bytes = 0;
    const zip_int64_t n = zip_get_num_entries(z, 0);
    for (zip_int64_t i = 0; i < n; ++i) {
        zip_file_t *f = zip_fopen_index(z, static_cast<zip_uint64_t>(i), 0);
        if (f == nullptr) continue;
        zip_int64_t got;
        while ((got = zip_fread(f, buf, kBuf)) > 0) bytes += static_cast<uint64_t>(got);
        zip_fclose(f);
    }
    zip_discard(z);
    return bytes;
}
uint64_t inflate_gz(const std::string &path, unsigned char *buf) {
    gzFile g = gzopen(path.c_str(), "rb");
    if (g == nullptr) return 0;
    gzbuffer(g, kGzInput);
    uint64_t bytes = 0;
    int got;
    while ((got = gzread(g, buf, kBuf)) > 0) bytes += static_cast<uint64_t>(got);
    gzclose(g);
    return bytes;
}

// The floor over `files` with `threads` threads taking files in turn; returns the bytes.
uint64_t floor_run(const std::vector<std::string> &files, bool zip, unsigned threads) {
    std::atomic<size_t> next{0};
    std::atomic<uint64_t> bytes{0};
    auto work = [&] {
        std::vector<unsigned char> buf(kBuf);
        for (size_t i; (i = next.fetch_add(1)) < files.size();)
            bytes += zip ? inflate_zip(files[i], buf.data()) : inflate_gz(files[i], buf.data());
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto &t : pool) t.join();
    return bytes.load();
}

// The reader, one thread: every shard in turn; returns the memrefs.
uint64_t reader_run(const std::string &dir) {
    sonde_trace_reader_t *r = nullptr;
    char err[512];
    if (sonde_trace_reader_open(dir.c_str(), SONDE_TRACE_FORMAT_DRMEMTRACE, err, sizeof err, &r) !=
        SONDE_STATUS_SUCCESS) {
        std::printf("cannot open %s: %s\n", dir.c_str(), err);
        return 0;
    }
    uint32_t shards = 0;
    sonde_trace_reader_num_shards(r, &shards);
    std::vector<sonde_memref_t> batch(4096);  // 128 KiB: stays in the cache with the decode block
    uint64_t total = 0, sink = 0;
    for (uint32_t s = 0; s < shards; ++s) {
        size_t n = 0;
        while (sonde_trace_reader_read_shard(r, s, batch.data(), batch.size(), &n) == SONDE_STATUS_SUCCESS &&
               n > 0) {
            total += n;
            sink += batch[n - 1].address;
        }
    }
    if (*sonde_trace_reader_error(r) != '\0') std::printf("read error: %s\n", sonde_trace_reader_error(r));
    sonde_trace_reader_close(r);
    return total + (sink == 1 ? 1 : 0);
}

// A tool that counts memrefs, for the analyzer's parallel mode.
std::atomic<uint64_t> g_count{0};
bool count_batch(void *, const sonde_memref_t *, size_t n) {
    g_count.fetch_add(n, std::memory_order_relaxed);
    return true;
}
bool count_shard_batch(void *, void *, const sonde_memref_t *, size_t n) {
    g_count.fetch_add(n, std::memory_order_relaxed);
    return true;
}
bool supported(void *) { return true; }

// `sonde analyze DIR` in parallel with `workers` workers; returns the memrefs.
uint64_t analyzer_run(const std::string &dir, unsigned workers) {
    sonde_tool_ops_t ops;
    std::memset(&ops, 0, sizeof ops);
    ops.struct_size = SONDE_TOOL_OPS_SIZE_1_0;
    ops.name = "count";
    ops.process_memrefs = count_batch;
    ops.parallel_shard_supported = supported;
    ops.parallel_shard_memrefs = count_shard_batch;
    g_count = 0;
    sonde_analyzer_t *a = nullptr;
    sonde_analyzer_create(&a);
    sonde_analyzer_add_tool_ops(a, &ops, nullptr);
    if (sonde_analyzer_add_input(a, dir.c_str(), SONDE_TRACE_FORMAT_DRMEMTRACE) != SONDE_STATUS_SUCCESS ||
        sonde_analyzer_set_parallel(a, true) != SONDE_STATUS_SUCCESS ||
        sonde_analyzer_set_workers(a, workers) != SONDE_STATUS_SUCCESS ||
        sonde_analyzer_run(a) != SONDE_STATUS_SUCCESS)
        std::printf("analyzer: %s\n", sonde_analyzer_error(a));
    sonde_analyzer_destroy(a);
    return g_count.load();
}

void measure(const char *label, const std::string &dir, const std::vector<std::string> &files, bool zip,
             uint64_t raw_bytes, unsigned cores) {
    const double records = static_cast<double>(raw_bytes) / kRec;
    std::vector<double> t_floor, t_read, w_read, t_pfloor, t_par;
    uint64_t memrefs = 0, par_memrefs = 0;
    for (int r = 0; r < kReps; ++r) {
        double c0 = thread_cpu();
        const uint64_t b = floor_run(files, zip, 1);
        t_floor.push_back(thread_cpu() - c0);
        if (b != raw_bytes)
            std::printf("(floor read %llu bytes, expected %llu)\n", (unsigned long long)b,
                        (unsigned long long)raw_bytes);
        c0 = thread_cpu();
        auto t0 = Clock::now();
        memrefs = reader_run(dir);
        t_read.push_back(thread_cpu() - c0);
        w_read.push_back(seconds_since(t0));
        t0 = Clock::now();
        floor_run(files, zip, cores);
        t_pfloor.push_back(seconds_since(t0));
        t0 = Clock::now();
        par_memrefs = analyzer_run(dir, cores);
        t_par.push_back(seconds_since(t0));
    }
    std::vector<double> ratio, pratio;
    for (int r = 0; r < kReps; ++r) {
        ratio.push_back(t_floor[r] / t_read[r]);
        pratio.push_back(t_pfloor[r] / t_par[r]);
    }
    const double tf = median(t_floor), tr = median(t_read), wr = median(w_read), tpf = median(t_pfloor),
                 tp = median(t_par);
    std::printf("%s: %llu trace records decode to %llu memrefs\n", label,
                static_cast<unsigned long long>(records), static_cast<unsigned long long>(memrefs));
    std::printf(
        "%s, one thread (CPU time): reader %.1f M trace records/s (%.1f M memrefs/s); floor (decompression "
        "alone) %.1f "
        "M "
        "records/s; ratio %.2f (target >= 0.8)\n",
        label, records / tr / 1e6, static_cast<double>(memrefs) / tr / 1e6, records / tf / 1e6,
        median(ratio));
    std::printf(
        "%s, %u workers (wall time): sonde analyze parallel %.1f M trace records/s (%.1f M memrefs/s); floor "
        "%.1f M "
        "records/s; ratio %.2f; speedup over the one-thread reader's wall time %.2fx\n",
        label, cores, records / tp / 1e6, static_cast<double>(par_memrefs) / tp / 1e6, records / tpf / 1e6,
        median(pratio), wr / tp);
}

}  // namespace

int main(int argc, char **argv) {
    const int k = argc > 1 ? std::max(1, std::atoi(argv[1])) : 16;
    const char *data = std::getenv("SONDE_SHARED_DATA");
    const std::string src = std::string(data ? data : SONDE_TEST_DATA_DIR) +
                            "/drmemtrace/core_serial/drmemtrace.threadsig.x64.tracedir";
    const char *tmp = std::getenv("TMPDIR");
    const std::string base =
        std::string(tmp ? tmp : "/tmp") + "/sonde-bench-drmemtrace-" + std::to_string(getpid());
    const std::string zip_dir = base + "-zip", gz_dir = base + "-gz";
    if (::mkdir(zip_dir.c_str(), 0700) != 0 || ::mkdir(gz_dir.c_str(), 0700) != 0) {
        std::printf("cannot create %s\n", zip_dir.c_str());
        return 0;
    }
    Made m;
    const auto t0 = Clock::now();
    const bool made = make_trace(src, zip_dir, gz_dir, k, &m);
    if (made) {
        uint64_t zip_bytes = 0, gz_bytes = 0;
        struct stat st;
        for (const auto &f : m.zips)
            zip_bytes += ::stat(f.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
        for (const auto &f : m.gzs)
            gz_bytes += ::stat(f.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
        std::printf(
            "trace: 9 thread files, body repeated %d times: %.1f M records of 12 bytes (%.0f MB), zip %.1f "
            "MB, gz "
            "%.1f MB (made in %.1f s)\n",
            k, static_cast<double>(m.zip_raw) / kRec / 1e6, static_cast<double>(m.zip_raw) / 1e6,
            static_cast<double>(zip_bytes) / 1e6, static_cast<double>(gz_bytes) / 1e6, seconds_since(t0));
        const unsigned cores = std::max(2u, std::thread::hardware_concurrency());
        measure("zip (chunk members)", zip_dir, m.zips, true, m.zip_raw, cores);
        measure("gz (one stream)", gz_dir, m.gzs, false, m.gz_raw, cores);
    } else {
        std::printf("cannot make the trace from %s\n", src.c_str());
    }
    for (const auto &f : m.zips) ::unlink(f.c_str());
    for (const auto &f : m.gzs) ::unlink(f.c_str());
    ::rmdir(zip_dir.c_str());
    ::rmdir(gz_dir.c_str());
    return 0;
}
