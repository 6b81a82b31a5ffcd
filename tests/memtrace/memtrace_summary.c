/* Test helper of check_memtrace.py: reads a Sonde memref trace through the public API and
 * prints one line per shard, "key=value" words:
 *   shard reads writes read_sizes write_sizes (sizes: "4" when all accesses are 4 bytes, else
 *   "mixed") tid pid exits (THREAD_ID, PROCESS_ID and THREAD_EXIT markers: the first value and
 *   how many) first last (marker kinds of the first and last records, 0 for an access)
 *   write_walk read_walk (1 when the accesses of that type go up by their size from a 64-byte
 *   aligned start) write_pcs read_pcs (distinct call sites, up to 3 counted) ts_ok (1 when
 *   every record has a timestamp and none goes back),
 * then "warnings=..." (lines joined by '|') when the reader has any. Exit 1 when the trace cannot be read. */
#include <stdio.h>
#include <stdlib.h>

#include <sonde/trace.h>

typedef struct walk {
    uint64_t count, next, pcs[3];
    unsigned npcs;
    int ok, sizes_ok;
    uint16_t size;
} walk;

static void step(walk *w, const sonde_memref_t *m) {
    if (w->count == 0) {
        w->ok = m->address % 64 == 0;
        w->sizes_ok = 1;
        w->size = m->size;
    } else if (m->address != w->next) {
        w->ok = 0;
    }
    if (m->size != w->size) w->sizes_ok = 0;
    w->next = m->address + m->size;
    ++w->count;
    unsigned i = 0;
    while (i < w->npcs && w->pcs[i] != m->pc) ++i;
    if (i == w->npcs && w->npcs < 3) w->pcs[w->npcs++] = m->pc;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: memtrace_summary TRACE\n");
        return 2;
    }
    char error[512];
    sonde_trace_reader_t *r = NULL;
    if (sonde_trace_reader_open(argv[1], SONDE_TRACE_FORMAT_SONDE, error, sizeof error, &r) !=
        SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "%s\n", error);
        return 1;
    }
    uint32_t shards = 0;
    sonde_trace_reader_num_shards(r, &shards);
    enum { kBatch = 65536 };
    sonde_memref_t *batch = malloc(kBatch * sizeof *batch);
    if (batch == NULL) return 1;
    for (uint32_t s = 0; s < shards; ++s) {
        walk w = {0}, rd = {0};
        uint64_t tid = 0, pid = 0, exit_tid = 0, ntid = 0, npid = 0, nexit = 0, last_ts = 0;
        int first = -1, last = 0, ts_ok = 1;
        size_t n = 0;
        while (sonde_trace_reader_read_shard(r, s, batch, kBatch, &n) == SONDE_STATUS_SUCCESS && n != 0) {
            for (size_t i = 0; i < n; ++i) {
                const sonde_memref_t *m = &batch[i];
                const int marker = m->type == SONDE_MEMREF_MARKER ? m->size : 0;
                if (first < 0) first = marker;
                last = marker;
                if (m->timestamp == 0 || m->timestamp < last_ts) ts_ok = 0;
                last_ts = m->timestamp;
                if (marker == SONDE_MARKER_THREAD_ID && ntid++ == 0) tid = m->address;
                if (marker == SONDE_MARKER_PROCESS_ID && npid++ == 0) pid = m->address;
                if (marker == SONDE_MARKER_THREAD_EXIT && nexit++ == 0) exit_tid = m->address;
                if (m->type == SONDE_MEMREF_WRITE) step(&w, m);
                if (m->type == SONDE_MEMREF_READ) step(&rd, m);
            }
        }
        printf(
            "shard=%u reads=%llu writes=%llu read_sizes=%s write_sizes=%s tid=%llu/%llu pid=%llu/%llu "
            "exit=%llu/%llu first=%d last=%d write_walk=%d read_walk=%d write_pcs=%u read_pcs=%u ts_ok=%d\n",
            s, (unsigned long long)rd.count, (unsigned long long)w.count,
            rd.count == 0 ? "none" : (rd.sizes_ok ? (rd.size == 4 ? "4" : "other") : "mixed"),
            w.count == 0 ? "none" : (w.sizes_ok ? (w.size == 4 ? "4" : "other") : "mixed"),
            (unsigned long long)tid, (unsigned long long)ntid, (unsigned long long)pid,
            (unsigned long long)npid, (unsigned long long)exit_tid, (unsigned long long)nexit, first, last,
            w.count != 0 && w.ok, rd.count != 0 && rd.ok, w.npcs, rd.npcs, ts_ok);
    }
    const char *warnings = sonde_trace_reader_warnings(r);
    if (*warnings != '\0') {
        printf("warnings=");
        for (const char *p = warnings; *p != '\0'; ++p) putchar(*p == '\n' ? '|' : *p);
        putchar('\n');
    }
    free(batch);
    sonde_trace_reader_close(r);
    return 0;
}
