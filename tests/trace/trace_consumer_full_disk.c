/* A live session recorded through sonde_trace_buffer_consumer into a trace file, for
 * check_full_disk.py, which runs it under a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored: a
 * write then fails with EFBIG, like on a full disk).
 *
 * Usage: trace_consumer_full_disk PATH RECORDS
 * Two threads emit RECORDS MEMREF records each (addresses that compress poorly, 1024 records
 * per chunk, so that chunks are written while the session runs). Then the writer is closed and
 * the program prints on stdout "close STATUS_NAME" and, on the next line, "error MESSAGE" with
 * sonde_trace_writer_error() as it was before the close. Exit status 0 whatever the writer
 * answered (the script judges it), 1 when a Sonde call other than the writer's fails. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/buffer.h>
#include <sonde/session.h>
#include <sonde/trace.h>

static sonde_buffer_id_t g_buffer;
static uint64_t g_records;

static void *producer(void *arg) {
    uint64_t x = 0x9E3779B97F4A7C15ull * (1 + (uintptr_t)arg);
    for (uint64_t i = 0; i < g_records; ++i) {
        x ^= x << 13; /* xorshift: addresses that compress poorly */
        x ^= x >> 7;
        x ^= x << 17;
        sonde_memref_record_t m;
        m.address = x;
        m.pc = x >> 3;
        m.size = 8;
        m.type = (uint32_t)(i % 4);
        const sonde_status_t s = sonde_emit_timestamped(g_buffer, SONDE_RECORD_KIND_MEMREF, &m, sizeof m);
        if (s != SONDE_STATUS_SUCCESS && s != SONDE_STATUS_ERROR_BUFFER_FULL) return (void *)1;
    }
    return NULL;
}

#define CHECK(call)                                                     \
    do {                                                                \
        const sonde_status_t st_ = (call);                              \
        if (st_ != SONDE_STATUS_SUCCESS) {                              \
            fprintf(stderr, "%s: %s\n", #call, sonde_status_name(st_)); \
            return 1;                                                   \
        }                                                               \
    } while (0)

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PATH RECORDS\n", argv[0]);
        return 2;
    }
    g_records = strtoull(argv[2], NULL, 10);
    sonde_trace_writer_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    props.chunk_records = 1024;
    sonde_trace_writer_t *w = NULL;
    CHECK(sonde_trace_writer_create(argv[1], &props, &w));
    CHECK(sonde_initialize());
    sonde_session_id_t session;
    CHECK(sonde_create_session(NULL, &session));
    CHECK(sonde_create_buffer(session, 1u << 20, sonde_trace_buffer_consumer, w, NULL, 0, &g_buffer));
    CHECK(sonde_start_session(session));
    pthread_t th[2];
    for (uintptr_t t = 0; t < 2; ++t)
        if (pthread_create(&th[t], NULL, producer, (void *)t) != 0) return 1;
    int failed = 0;
    for (int t = 0; t < 2; ++t) {
        void *ret = NULL;
        pthread_join(th[t], &ret);
        failed |= ret != NULL;
    }
    if (failed) {
        fprintf(stderr, "an emission failed\n");
        return 1;
    }
    CHECK(sonde_flush_data(session, g_buffer));
    CHECK(sonde_stop_session(session));
    CHECK(sonde_destroy_buffer(session, g_buffer));
    CHECK(sonde_destroy_session(session));
    CHECK(sonde_finalize());
    char error[1024];
    snprintf(error, sizeof error, "%s", sonde_trace_writer_error(w));
    const sonde_status_t st = sonde_trace_writer_close(w);
    printf("close %s\nerror %s\n", sonde_status_name(st), error);
    return 0;
}
