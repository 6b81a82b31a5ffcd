/* libFuzzer target: option strings of the built-in tools through the public analyzer API
 * (sonde_analyzer_add_tool), the way `sonde analyze --tool`, `--cache`, `--line-size` and the
 * reuse_distance options reach them. The first byte chooses the tool and the mode; the rest is
 * the option string. A tool that accepts its options then runs, serially or in parallel, over
 * two shards of accesses that include every edge: addresses at 0 and at the top of the address
 * space, sizes 0, 1 and 65535 (clamped there at the top), markers. Wide accesses elsewhere stay
 * at 4096 bytes: with 1-byte lines and 1024 ways in 16 levels, each line costs a scan of every
 * way, and the per-input time limit is for hangs, not long legitimate work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/analysis.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const sonde_memref_t kShard0[] = {
    {0x1000, 0x400000, 10, 0, SONDE_MEMREF_READ, 8},
    {0xfffffffffffffff8ull, 0x400004, 11, 0, SONDE_MEMREF_READ, 16},
    {0xffffffffffffffffull, 0xffffffffffffffffull, 12, 0, SONDE_MEMREF_IFETCH, 2},
    {0xffffffffffffff9cull, 0, 13, 0, SONDE_MEMREF_WRITE, 65535},
    {0, 0, 14, 0, SONDE_MEMREF_MODIFY, 0},
    {3, 0, 15, 0, SONDE_MEMREF_MARKER, SONDE_MARKER_CPU_ID},
    {0x1040, 0x400008, 0, 0, SONDE_MEMREF_WRITE, 64},
};
static const sonde_memref_t kShard1[] = {
    {0x8000000000000000ull, 0x500000, 10, 1, SONDE_MEMREF_READ, 4096},
    {0x1000, 0x500004, 16, 1, SONDE_MEMREF_READ, 1},
    {0x7ffffffffffff000ull, 0x500008, 16, 1, SONDE_MEMREF_MODIFY, 4096},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const kTools[3] = {"basic_counts", "cache_sim", "reuse_distance"};
    if (size == 0) return 0;
    char *options = malloc(size);
    if (options == NULL) return 0;
    memcpy(options, data + 1, size - 1);
    options[size - 1] = '\0';
    sonde_analyzer_t *a = NULL;
    if (sonde_analyzer_create(&a) != SONDE_STATUS_SUCCESS) {
        free(options);
        return 0;
    }
    if (sonde_analyzer_add_tool(a, kTools[data[0] % 3], options) == SONDE_STATUS_SUCCESS) {
        sonde_analyzer_add_memory_shard(a, kShard0, sizeof kShard0 / sizeof kShard0[0], NULL);
        sonde_analyzer_add_memory_shard(a, kShard1, sizeof kShard1 / sizeof kShard1[0], NULL);
        sonde_analyzer_set_parallel(a, (data[0] & 4) != 0);
        sonde_analyzer_set_workers(a, 2);
        if (sonde_analyzer_run(a) == SONDE_STATUS_SUCCESS) {
            FILE *sink = fopen("/dev/null", "w");
            if (sink != NULL) {
                sonde_analyzer_print_results(a, sink);
                fclose(sink);
            }
            size_t need = 0;
            sonde_analyzer_results_json(a, NULL, 0, &need);
            char *json = malloc(need ? need : 1);
            if (json != NULL) sonde_analyzer_results_json(a, json, need, &need);
            free(json);
        }
    }
    sonde_analyzer_destroy(a);
    free(options);
    return 0;
}
