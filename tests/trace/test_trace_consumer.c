/* The trace buffer consumer: a live session's MEMREF records from several threads go to a
 * Sonde trace through sonde_trace_buffer_consumer, one dense shard per Sonde thread, with
 * the timestamps of sonde_emit_timestamped; other kinds are skipped. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/buffer.h>
#include <sonde/session.h>
#include <sonde/trace.h>

#define THREADS 3
#define PER_THREAD 20000

static sonde_buffer_id_t g_buffer;

static void *producer(void *arg) {
    const uint64_t t = (uint64_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < PER_THREAD; ++i) {
        sonde_memref_record_t m;
        m.address = (t << 40) | i;
        m.pc = 0x1000 + t;
        m.size = 4;
        m.type = (uint32_t)(i % 4);
        sonde_status_t s = (i % 2) ? sonde_emit_timestamped(g_buffer, SONDE_RECORD_KIND_MEMREF, &m, sizeof m)
                                   : sonde_emit(g_buffer, SONDE_RECORD_KIND_MEMREF, &m, sizeof m);
        if (s != SONDE_STATUS_SUCCESS) return (void *)1;
        if (i % 1000 == 0) {
            sonde_profiler_record_t p = {1, i, 0};
            if (sonde_emit(g_buffer, SONDE_RECORD_KIND_PROFILER, &p, sizeof p) != SONDE_STATUS_SUCCESS)
                return (void *)1;
        }
    }
    return NULL;
}

static void test_consumer(void **state) {
    (void)state;
    char path[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/sonde-consumer-%d.sonde", tmp ? tmp : "/tmp", (int)getpid());
    sonde_trace_writer_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    props.chunk_records = 4096;
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(path, &props, &w), SONDE_STATUS_SUCCESS);

    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    sonde_session_id_t session;
    assert_int_equal(sonde_create_session(NULL, &session), SONDE_STATUS_SUCCESS);
    assert_int_equal(
        sonde_create_buffer(session, 4u << 20, sonde_trace_buffer_consumer, w, NULL, 0, &g_buffer),
        SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(session), SONDE_STATUS_SUCCESS);
    pthread_t th[THREADS];
    for (uintptr_t t = 0; t < THREADS; ++t)
        assert_int_equal(pthread_create(&th[t], NULL, producer, (void *)t), 0);
    for (int t = 0; t < THREADS; ++t) {
        void *ret = (void *)2;
        pthread_join(th[t], &ret);
        assert_null(ret);
    }
    assert_int_equal(sonde_flush_data(session, g_buffer), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_stop_session(session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_destroy_buffer(session, g_buffer), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_destroy_session(session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
    assert_string_equal(sonde_trace_writer_error(w), "");
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);

    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    uint32_t shards = 0;
    sonde_trace_reader_num_shards(r, &shards);
    assert_int_equal(shards, THREADS);
    int seen[THREADS] = {0, 0, 0};
    static sonde_memref_t m[PER_THREAD + 1];
    for (uint32_t s = 0; s < shards; ++s) {
        size_t total = 0, n;
        while (sonde_trace_reader_read_shard(r, s, m + total, PER_THREAD + 1 - total, &n) ==
                   SONDE_STATUS_SUCCESS &&
               n > 0)
            total += n;
        assert_int_equal(total, PER_THREAD);
        const uint64_t t = m[0].address >> 40;
        assert_true(t < THREADS);
        assert_int_equal(seen[t], 0);
        seen[t] = 1;
        uint64_t last_ts = 0;
        for (uint64_t i = 0; i < PER_THREAD; ++i) {
            assert_int_equal(m[i].address, (t << 40) | i);
            assert_int_equal(m[i].pc, 0x1000 + t);
            assert_int_equal(m[i].type, i % 4);
            assert_int_equal(m[i].size, 4);
            assert_int_equal(m[i].shard, s);
            if (i % 2) {
                assert_true(m[i].timestamp >= last_ts && m[i].timestamp > 0);
                last_ts = m[i].timestamp;
            } else {
                assert_int_equal(m[i].timestamp, 0);
            }
        }
    }
    sonde_trace_reader_close(r);
    unlink(path);
}

static void test_consumer_bad_input(void **state) {
    (void)state;
    sonde_session_id_t s = {0};
    sonde_buffer_id_t b = {0};
    /* NULL writer or span: nothing happens. */
    sonde_trace_buffer_consumer(NULL, NULL, s, b, NULL);
    char path[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/sonde-consumer-bad-%d.sonde", tmp ? tmp : "/tmp", (int)getpid());
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(path, NULL, &w), SONDE_STATUS_SUCCESS);
    sonde_trace_buffer_consumer(NULL, NULL, s, b, w);
    /* A span whose record claims more bytes than the span holds: the writer fails, no crash. */
    uint64_t span[4] = {0, 0, 0, 0};
    sonde_record_header_t h = {64, SONDE_RECORD_KIND_MEMREF, 0};
    memcpy(span, &h, sizeof h);
    sonde_trace_buffer_consumer((const sonde_record_header_t *)span,
                                (const sonde_record_header_t *)(span + 4), s, b, w);
    assert_non_null(strstr(sonde_trace_writer_error(w), "invalid size 64"));
    sonde_memref_t m;
    memset(&m, 0, sizeof m);
    assert_int_equal(sonde_trace_writer_write(w, 0, &m, 1), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_ERROR_RECORD_CORRUPTED);

    /* A MEMREF record of a type no reader accepts: the writer fails instead of writing it. */
    assert_int_equal(sonde_trace_writer_create(path, NULL, &w), SONDE_STATUS_SUCCESS);
    const sonde_record_header_t mh = {sizeof(sonde_record_header_t) + sizeof(sonde_memref_record_t),
                                      SONDE_RECORD_KIND_MEMREF, 0};
    const sonde_memref_record_t bad = {0x1000, 0x400000, 8, 9};
    memcpy(span, &mh, sizeof mh);
    memcpy((unsigned char *)span + sizeof mh, &bad, sizeof bad);
    sonde_trace_buffer_consumer((const sonde_record_header_t *)span,
                                (const sonde_record_header_t *)(span + 4), s, b, w);
    assert_non_null(strstr(sonde_trace_writer_error(w), "MEMREF record of type 9"));
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_ERROR_RECORD_CORRUPTED);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_consumer),
        cmocka_unit_test(test_consumer_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
