/* Example: record a memory-reference trace from a running program.
 *
 * Two threads walk arrays (one row-major, one column-major) and emit a MEMREF record for
 * each access into a Sonde buffer whose callback is sonde_trace_buffer_consumer, so the
 * records go straight into a Sonde trace file, one shard per thread. Then the trace is
 * read back shard by shard and summarised.
 *
 *   trace_record [OUTPUT.sonde]        (default: trace_record.sonde in the current directory)
 *   sonde analyze OUTPUT.sonde --tool basic_counts,cache_sim
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <sonde/buffer.h>
#include <sonde/session.h>
#include <sonde/trace.h>

#define N 256

static double g_matrix[N][N];
static sonde_buffer_id_t g_buffer;

static void emit(const void *address, uint32_t type, uint64_t pc) {
    sonde_memref_record_t m = {(uint64_t)(uintptr_t)address, pc, sizeof(double), type};
    sonde_emit_timestamped(g_buffer, SONDE_RECORD_KIND_MEMREF, &m, sizeof m);
}

static void *walk(void *arg) {
    const int column_major = arg != NULL;
    double sum = 0;
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
            const double *p = column_major ? &g_matrix[j][i] : &g_matrix[i][j];
            emit(p, SONDE_MEMREF_READ, column_major ? 0x2000 : 0x1000);
            sum += *p;
        }
    static double results[2];
    results[column_major] = sum;
    emit(&results[column_major], SONDE_MEMREF_WRITE, column_major ? 0x2004 : 0x1004);
    return NULL;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "trace_record.sonde";
    sonde_trace_writer_t *writer = NULL;
    if (sonde_trace_writer_create(path, NULL, &writer) != SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "cannot create %s\n", path);
        return 1;
    }
    sonde_session_id_t session;
    if (sonde_initialize() != SONDE_STATUS_SUCCESS ||
        sonde_create_session(NULL, &session) != SONDE_STATUS_SUCCESS ||
        sonde_create_buffer(session, 4u << 20, sonde_trace_buffer_consumer, writer, NULL, 0, &g_buffer) !=
            SONDE_STATUS_SUCCESS ||
        sonde_start_session(session) != SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "cannot start a session\n");
        return 1;
    }
    pthread_t threads[2];
    for (uintptr_t t = 0; t < 2; ++t) pthread_create(&threads[t], NULL, walk, (void *)t);
    for (int t = 0; t < 2; ++t) pthread_join(threads[t], NULL);
    sonde_flush_data(session, g_buffer);
    sonde_stop_session(session);
    sonde_destroy_session(session);
    sonde_finalize();
    const sonde_status_t closed = sonde_trace_writer_close(writer);
    if (closed != SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "%s: %s\n", path, sonde_status_string(closed));
        return 1;
    }

    char error[512];
    sonde_trace_reader_t *reader = NULL;
    if (sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_SONDE, error, sizeof error, &reader) !=
        SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "%s\n", error);
        return 1;
    }
    uint32_t shards = 0;
    sonde_trace_reader_num_shards(reader, &shards);
    uint64_t total = 0;
    for (uint32_t s = 0; s < shards; ++s) {
        sonde_memref_t batch[1024];
        size_t n = 0;
        uint64_t reads = 0, writes = 0;
        while (sonde_trace_reader_read_shard(reader, s, batch, 1024, &n) == SONDE_STATUS_SUCCESS && n > 0)
            for (size_t i = 0; i < n; ++i) {
                reads += batch[i].type == SONDE_MEMREF_READ;
                writes += batch[i].type == SONDE_MEMREF_WRITE;
            }
        printf("shard %u: %llu reads, %llu writes\n", s, (unsigned long long)reads,
               (unsigned long long)writes);
        total += reads + writes;
    }
    sonde_trace_reader_close(reader);
    printf("%s: %u shards, %llu memrefs\n", path, shards, (unsigned long long)total);
    return total == 2 * (N * N + 1) ? 0 : 1;
}
