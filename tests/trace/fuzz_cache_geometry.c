/* libFuzzer target: cache_sim geometries (`sonde analyze --cache`) and the accesses that run
 * through them. The first bytes build the level list: 1 to 4 levels, each from 4 bytes (name
 * I, D, L or U; size 2^0 to 2^30 bytes; ways a power of two up to 1024 or 1 to 64; line 2^0 to
 * 2^16 bytes; policy), so that most geometries are accepted and simulated; the rest are
 * accesses, 12 bytes each (address, size, type), split over two shards, run serially and in
 * parallel. An access costs a set scan per line it touches, so the accesses are cut where
 * their lines times the ways would pass 2^24: the per-input time limit catches hangs, not
 * long legitimate work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/analysis.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { kMaxAccesses = 4096 };

static void run(const char *config, const sonde_memref_t *m, size_t n, bool parallel) {
    sonde_analyzer_t *a = NULL;
    if (sonde_analyzer_create(&a) != SONDE_STATUS_SUCCESS) return;
    if (sonde_analyzer_add_tool(a, "cache_sim", config) == SONDE_STATUS_SUCCESS) {
        sonde_analyzer_add_memory_shard(a, m, n / 2, NULL);
        sonde_analyzer_add_memory_shard(a, m + n / 2, n - n / 2, NULL);
        sonde_analyzer_set_parallel(a, parallel);
        sonde_analyzer_set_workers(a, 2);
        if (sonde_analyzer_run(a) == SONDE_STATUS_SUCCESS) {
            size_t need = 0;
            sonde_analyzer_results_json(a, NULL, 0, &need);
            char *json = malloc(need ? need : 1);
            if (json != NULL) sonde_analyzer_results_json(a, json, need, &need);
            free(json);
        }
    }
    sonde_analyzer_destroy(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const char kNames[4] = {'I', 'D', 'L', 'U'};
    static const char *const kPolicies[4] = {"", ":lru", ":fifo", ":random"};
    const size_t levels = 1 + data[0] % 4;
    size_t pos = 1;
    char config[512];
    size_t len = 0;
    unsigned min_line = 1u << 16, max_ways = 1;
    for (size_t l = 0; l < levels && pos + 4 <= size; ++l, pos += 4) {
        const uint8_t *b = data + pos;
        const unsigned long long bytes = 1ull << (b[1] % 31);
        const unsigned ways = (b[2] & 0x80) ? 1u << (b[2] % 11) : 1u + b[2] % 64;
        const unsigned line = 1u << (b[3] % 17);
        min_line = line < min_line ? line : min_line;
        max_ways = ways > max_ways ? ways : max_ways;
        len += (size_t)snprintf(config + len, sizeof config - len, "%s%c%zu:%llu:%u:%u%s", l ? "," : "",
                                kNames[b[0] % 4], l, bytes, ways, line, kPolicies[b[0] >> 6]);
    }
    if (len == 0) return 0;
    size_t n = (size - pos) / 12 < kMaxAccesses ? (size - pos) / 12 : kMaxAccesses;
    uint64_t cost = 0;
    for (size_t i = 0; i < n; ++i) {
        const uint8_t *r = data + pos + 12 * i;
        cost += (2 + (uint64_t)(r[8] | r[9] << 8) / min_line) * max_ways;
        if (cost > (1u << 24)) n = i;
    }
    sonde_memref_t *m = calloc(n ? n : 1, sizeof *m);
    if (m == NULL) return 0;
    for (size_t i = 0; i < n; ++i) {
        const uint8_t *r = data + pos + 12 * i;
        uint64_t addr = 0;
        for (int k = 7; k >= 0; --k) addr = addr << 8 | r[k];
        m[i].address = addr;
        m[i].size = (uint16_t)(r[8] | r[9] << 8);
        m[i].type = (uint16_t)(r[10] % 5);
        if (m[i].type == SONDE_MEMREF_MARKER) m[i].size = (uint16_t)(1 + r[11] % 3);
        m[i].timestamp = r[11];
        m[i].shard = i < n / 2 ? 0 : 1;
    }
    run(config, m, n, false);
    run(config, m, n, true);
    free(m);
    return 0;
}
