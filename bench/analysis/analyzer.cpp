// Analyzer benchmark: records/s of a trivial counting tool through the analyzer, serial and
// parallel (2 workers), from memory and from a zstd Sonde trace; cache_sim refs/s; and the
// anchor, a plain scan loop over the same in-memory records. Then shards of skewed size (one
// ten times the others) through cache_sim with 1 and 2 workers: the largest-first dynamic
// assignment beside the fixed one of earlier releases (SONDE_ANALYZER_SCHEDULE=static), as
// speed-ups over one worker. Prints medians over repetitions and the ratios. It never fails on
// a figure.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <sonde/analysis.h>
#include <sonde/trace.h>

namespace {

constexpr int kReps = 5;
constexpr size_t kShards = 2;
constexpr size_t kPerShard = size_t(3) << 20;  // 3 Mi records per shard, 192 MiB in all

// The trivial tool: counts records by type. Serial state in one struct; parallel state per
// shard (a shard's functions run on one worker).
struct Counts {
    uint64_t by_type[8] = {};
};
struct Trivial {
    Counts serial;
    Counts shards[kShards];
};

void count(Counts *c, const sonde_memref_t *m, size_t n) {
    for (size_t i = 0; i < n; ++i) ++c->by_type[m[i].type & 7];
}
bool t_batch(void *t, const sonde_memref_t *m, size_t n) {
    count(&static_cast<Trivial *>(t)->serial, m, n);
    return true;
}
bool t_one(void *t, const sonde_memref_t *m) { return t_batch(t, m, 1); }
bool t_supported(void *) { return true; }
bool t_shard_init(void *t, uint32_t s, void *, void **sd) {
    *sd = &static_cast<Trivial *>(t)->shards[s];
    return true;
}
bool t_shard_batch(void *, void *sd, const sonde_memref_t *m, size_t n) {
    count(static_cast<Counts *>(sd), m, n);
    return true;
}
bool t_shard_one(void *t, void *sd, const sonde_memref_t *m) { return t_shard_batch(t, sd, m, 1); }

sonde_tool_ops_t trivial_ops() {
    sonde_tool_ops_t o = {};
    o.struct_size = sizeof o;
    o.name = "trivial";
    o.process_memref = t_one;
    o.process_memrefs = t_batch;
    o.parallel_shard_supported = t_supported;
    o.parallel_shard_init = t_shard_init;
    o.parallel_shard_memref = t_shard_one;
    o.parallel_shard_memrefs = t_shard_batch;
    return o;
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Synthetic records: per shard a mix of instruction fetches (a loop over 16 KiB of code),
// sequential and scattered data accesses over a 4 MiB working set; a timestamp every 1024
// records so that the serial view interleaves the shards. For caches this is a hard workload
// (about 30 % of references scatter over 4 MiB and miss in every level); the gzip trace below
// is the realistic one.
std::vector<std::vector<sonde_memref_t>> make_records() {
    std::vector<std::vector<sonde_memref_t>> shards(kShards, std::vector<sonde_memref_t>(kPerShard));
    for (size_t s = 0; s < kShards; ++s) {
        uint64_t x = 0x12345678u + s, seq = 0;
        for (size_t i = 0; i < kPerShard; ++i) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            sonde_memref_t &m = shards[s][i];
            m.shard = static_cast<uint32_t>(s);
            m.pc = 0x400000 + (i * 4) % 16384;
            m.timestamp = (i % 1024 == 0) ? (i / 1024) * 2 + s + 1 : 0;
            const unsigned kind = static_cast<unsigned>(x >> 60);
            if (kind < 6) {
                m.type = SONDE_MEMREF_IFETCH;
                m.address = m.pc;
                m.size = 4;
            } else {
                m.type = kind < 12 ? SONDE_MEMREF_READ : kind < 15 ? SONDE_MEMREF_WRITE : SONDE_MEMREF_MODIFY;
                m.address =
                    (kind & 1) ? 0x10000000 + (seq += 8) % (4u << 20) : 0x10000000 + ((x >> 20) % (4u << 20));
                m.size = 8;
            }
        }
    }
    return shards;
}

// One analyzer run; returns seconds, or a negative value on a failure (printed).
double run(const std::vector<std::vector<sonde_memref_t>> *memory, const std::string &trace, bool parallel,
           const char *builtin, uint32_t workers = 2,
           const std::vector<std::pair<const sonde_memref_t *, size_t>> *views = nullptr) {
    sonde_analyzer_t *a = nullptr;
    sonde_analyzer_create(&a);
    Trivial *trivial = new Trivial();
    const sonde_tool_ops_t ops = trivial_ops();
    sonde_status_t st = builtin != nullptr ? sonde_analyzer_add_tool(a, builtin, nullptr)
                                           : sonde_analyzer_add_tool_ops(a, &ops, trivial);
    if (views != nullptr) {
        for (const auto &v : *views)
            if (st == SONDE_STATUS_SUCCESS)
                st = sonde_analyzer_add_memory_shard(a, v.first, v.second, nullptr);
    } else if (memory != nullptr) {
        for (const auto &s : *memory)
            if (st == SONDE_STATUS_SUCCESS)
                st = sonde_analyzer_add_memory_shard(a, s.data(), s.size(), nullptr);
    } else if (st == SONDE_STATUS_SUCCESS) {
        st = sonde_analyzer_add_input(a, trace.c_str(), SONDE_TRACE_FORMAT_SONDE);
    }
    sonde_analyzer_set_parallel(a, parallel);
    sonde_analyzer_set_workers(a, workers);
    const double t0 = now();
    if (st == SONDE_STATUS_SUCCESS) st = sonde_analyzer_run(a);
    const double t = now() - t0;
    if (st != SONDE_STATUS_SUCCESS) std::fprintf(stderr, "run failed: %s\n", sonde_analyzer_error(a));
    sonde_analyzer_destroy(a);
    delete trivial;
    return st == SONDE_STATUS_SUCCESS ? t : -1.0;
}

double median_rate(double records, const std::vector<std::vector<sonde_memref_t>> *memory,
                   const std::string &trace, bool parallel, const char *builtin) {
    std::vector<double> rates;
    for (int r = 0; r < kReps; ++r) {
        const double t = run(memory, trace, parallel, builtin);
        if (t <= 0) return 0;
        rates.push_back(records / t);
    }
    return median(rates);
}

// Seconds of cache_sim over `views` with `workers` workers (parallel mode), the median of the
// repetitions; `fixed` selects the assignment of earlier releases.
double skew_seconds(const std::vector<std::pair<const sonde_memref_t *, size_t>> &views, uint32_t workers,
                    bool fixed) {
    if (fixed)
        setenv("SONDE_ANALYZER_SCHEDULE", "static", 1);
    else
        unsetenv("SONDE_ANALYZER_SCHEDULE");
    std::vector<double> t;
    for (int r = 0; r < kReps; ++r) t.push_back(run(nullptr, "", true, "cache_sim", workers, &views));
    unsetenv("SONDE_ANALYZER_SCHEDULE");
    return median(t);
}

}  // namespace

int main() {
    const auto records = make_records();
    const double total = double(kShards * kPerShard);

    // Anchor: a plain loop over the same records, counting by type.
    std::vector<double> scan;
    uint64_t sink = 0;
    for (int r = 0; r < kReps; ++r) {
        Counts c;
        const double t0 = now();
        for (const auto &s : records) count(&c, s.data(), s.size());
        scan.push_back(total / (now() - t0));
        sink += c.by_type[0];
    }
    const double floor = median(scan);

    const double serial_mem = median_rate(total, &records, "", false, nullptr);
    const double par_mem = median_rate(total, &records, "", true, nullptr);

    char path[] = "/tmp/sonde-bench-analyzer-XXXXXX";
    const int fd = mkstemp(path);
    if (fd >= 0) close(fd);
    sonde_trace_writer_t *w = nullptr;
    bool have_trace = fd >= 0 && sonde_trace_writer_create(path, nullptr, &w) == SONDE_STATUS_SUCCESS;
    for (size_t s = 0; have_trace && s < kShards; ++s)
        have_trace = sonde_trace_writer_write(w, static_cast<uint32_t>(s), records[s].data(),
                                              records[s].size()) == SONDE_STATUS_SUCCESS;
    if (w != nullptr && sonde_trace_writer_close(w) != SONDE_STATUS_SUCCESS) have_trace = false;
    struct stat sb = {};
    stat(path, &sb);
    const double serial_file = have_trace ? median_rate(total, nullptr, path, false, nullptr) : 0;
    const double par_file = have_trace ? median_rate(total, nullptr, path, true, nullptr) : 0;
    unlink(path);

    const double cache_serial = median_rate(total, &records, "", false, "cache_sim");
    const double cache_par = median_rate(total, &records, "", true, "cache_sim");

    // cache_sim on a real trace held in memory: the gzip lackey trace of the test data.
    std::vector<std::vector<sonde_memref_t>> gzip(1);
    const char *data = std::getenv("SONDE_SHARED_DATA");
    const std::string gzip_path =
        std::string(data != nullptr ? data : SONDE_TEST_DATA_DIR) + "/gzip-gpl3.lackey.zst";
    sonde_trace_reader_t *reader = nullptr;
    if (sonde_trace_reader_open(gzip_path.c_str(), SONDE_TRACE_FORMAT_LACKEY, nullptr, 0, &reader) ==
        SONDE_STATUS_SUCCESS) {
        std::vector<sonde_memref_t> batch(65536);
        size_t n = 0;
        while (sonde_trace_reader_read_shard(reader, 0, batch.data(), batch.size(), &n) ==
                   SONDE_STATUS_SUCCESS &&
               n > 0)
            gzip[0].insert(gzip[0].end(), batch.begin(), batch.begin() + static_cast<long>(n));
        sonde_trace_reader_close(reader);
    }
    const double gzip_refs = double(gzip[0].size());
    const double gzip_rate = gzip_refs > 0 ? median_rate(gzip_refs, &gzip, "", false, "cache_sim") : 0;

    // Skewed shards: one of 10 units first, then 10 of one unit (a unit is 256 Ki records),
    // slices of the records above. Ideal for 2 workers: 2.0x; the fixed assignment gives worker
    // 0 the large shard and half the small ones (15 units against 5): 1.33x at best.
    constexpr size_t kUnit = size_t(256) << 10;
    std::vector<std::pair<const sonde_memref_t *, size_t>> skew;
    skew.emplace_back(records[0].data(), 10 * kUnit);
    for (size_t i = 0; i < 10; ++i) skew.emplace_back(records[1].data() + i * kUnit, kUnit);
    const double skew_one = skew_seconds(skew, 1, false);
    const double skew_dynamic = skew_seconds(skew, 2, false);
    const double skew_fixed = skew_seconds(skew, 2, true);

    std::printf("analyzer benchmark: %zu shards x %zu records (%.0f MiB in memory), median of %d runs\n",
                kShards, kPerShard, total * sizeof(sonde_memref_t) / 1048576.0, kReps);
    std::printf("  anchor: plain scan loop over the records       %8.1f M records/s\n", floor / 1e6);
    std::printf("  trivial tool, serial, memory                   %8.1f M records/s  ratio to scan %.2f\n",
                serial_mem / 1e6, serial_mem / floor);
    std::printf("  trivial tool, parallel 2 workers, memory       %8.1f M records/s  ratio to serial %.2f\n",
                par_mem / 1e6, par_mem / serial_mem);
    if (have_trace) {
        std::printf("  zstd Sonde trace: %.1f MiB (%.2f bytes/record)\n", double(sb.st_size) / 1048576.0,
                    double(sb.st_size) / total);
        std::printf(
            "  trivial tool, serial, trace file               %8.1f M records/s  ratio to scan %.2f\n",
            serial_file / 1e6, serial_file / floor);
        std::printf(
            "  trivial tool, parallel 2 workers, trace file   %8.1f M records/s  ratio to serial %.2f, "
            "%.1f M records/s per worker\n",
            par_file / 1e6, par_file / serial_file, par_file / 2e6);
    } else {
        std::printf("  trace file: could not be written\n");
    }
    std::printf("  cache_sim (cachegrind hierarchy), serial       %8.1f M refs/s     ratio to scan %.3f\n",
                cache_serial / 1e6, cache_serial / floor);
    std::printf(
        "  cache_sim, parallel 2 workers                  %8.1f M refs/s     %.1f M refs/s per worker\n",
        cache_par / 1e6, cache_par / 2e6);
    if (gzip_refs > 0)
        std::printf(
            "  cache_sim, serial, gzip lackey trace in memory %8.1f M refs/s     ratio to scan %.3f (%.1f M "
            "refs)\n",
            gzip_rate / 1e6, gzip_rate / floor, gzip_refs / 1e6);
    else
        std::printf("  cache_sim on the gzip trace: %s not found (set SONDE_SHARED_DATA)\n",
                    gzip_path.c_str());
    std::printf("  skewed shards (1 of 10 units, 10 of 1 unit; %.1f M refs), cache_sim:\n",
                20.0 * kUnit / 1e6);
    std::printf("    1 worker                                     %8.3f s\n", skew_one);
    std::printf("    2 workers, largest first, dynamic            %8.3f s  speed-up %.2fx (target >= 1.8x)\n",
                skew_dynamic, skew_one / skew_dynamic);
    std::printf("    2 workers, fixed s %% workers (anchor)        %8.3f s  speed-up %.2fx\n", skew_fixed,
                skew_one / skew_fixed);
    return sink == 0xFFFFFFFFFFFFFFFFull ? 1 : 0;
}
