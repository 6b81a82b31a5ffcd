/* libFuzzer target: fuzzed Sonde traces through the analyzer with every built-in tool, in
 * parallel (basic_counts, cache_sim) and serially (the same and reuse_distance, per shard; then
 * reuse_distance alone, whose tap runs on the decoding threads as they decode each chunk in
 * pieces: src/trace/source.h, BlockTap), then their results as text and JSON. Checksums are
 * recomputed first (fuzz_fix_checksums) so that mutations reach the index, the chunks and the
 * tools instead of stopping at a checksum.
 * The hangs and blow-ups this guards against are in the tools: a wrapped access, state for
 * declared but empty shards, decode buffers of every shard at once.
 *
 * Inputs of more than kMaxRecords records are read (every shard, the serial view) but not
 * analysed: the tools' cost per record is bounded, and the per-input time limit is there to
 * catch hangs, not long legitimate work. */
#include <stdlib.h>

#include <sonde/analysis.h>

#include "fuzz_trace_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { kMaxRecords = 1 << 16 };

enum mode { kParallel, kSerial, kTapped };

static void analyse(const char *path, enum mode mode) {
    const bool parallel = mode == kParallel;
    sonde_analyzer_t *a = NULL;
    if (sonde_analyzer_create(&a) != SONDE_STATUS_SUCCESS) return;
    if (mode == kTapped) {
        sonde_analyzer_add_tool(a, "reuse_distance", NULL);
    } else {
        sonde_analyzer_add_tool(a, "basic_counts", NULL);
        sonde_analyzer_add_tool(a, "cache_sim", parallel ? NULL : "L1:4K:4:64:fifo,L2:64K:8:32:random");
        if (!parallel) sonde_analyzer_add_tool(a, "reuse_distance", "per_shard=1");
    }
    sonde_analyzer_set_parallel(a, parallel);
    sonde_analyzer_set_workers(a, 2);
    if (sonde_analyzer_add_input(a, path, SONDE_TRACE_FORMAT_SONDE) == SONDE_STATUS_SUCCESS) {
        bool complete = true;
        const char *warnings = "";
        sonde_analyzer_input_warnings(a, 0, &complete, &warnings);
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
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *d = malloc(size ? size : 1);
    if (d == NULL) return 0;
    memcpy(d, data, size);
    fuzz_fix_checksums(d, size);
    if (fuzz_read_all(d, size, SONDE_TRACE_FORMAT_SONDE) <= kMaxRecords) {
        char path[64];
        const int fd = fuzz_memfd(d, size, path, sizeof path);
        if (fd >= 0) {
            analyse(path, kParallel);
            analyse(path, kSerial);
            analyse(path, kTapped);
            close(fd);
        }
    }
    free(d);
    return 0;
}
