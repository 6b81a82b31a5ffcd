/* Buffers: creation and properties, emission, delivery guarantees, policies and loss
 * accounting, reserve/commit, stale ids, statistics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect.h" /* tests/common */
#include "gate.h"    /* tests/common */

static sonde_session_id_t g_session;
static collector_t g_col;

static int setup(void **state) {
    (void)state;
    if (sonde_initialize() != SONDE_STATUS_SUCCESS) return -1;
    collector_init(&g_col);
    return sonde_create_session(NULL, &g_session) == SONDE_STATUS_SUCCESS ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    sonde_destroy_session(g_session);
    collector_free(&g_col);
    return sonde_finalize() == SONDE_STATUS_SUCCESS ? 0 : -1;
}

static sonde_buffer_id_t make_buffer(uint64_t size, const sonde_buffer_property_t *p, uint32_t n) {
    sonde_buffer_id_t b = {0};
    assert_int_equal(sonde_create_buffer(g_session, size, collector_cb, &g_col, p, n, &b),
                     SONDE_STATUS_SUCCESS);
    return b;
}

static sonde_buffer_stats_t stats_of(sonde_buffer_id_t b) {
    sonde_buffer_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    assert_int_equal(sonde_get_buffer_stats(g_session, b, &st), SONDE_STATUS_SUCCESS);
    return st;
}

static void test_create_buffer_arguments(void **state) {
    (void)state;
    sonde_buffer_id_t b;
    assert_int_equal(sonde_create_buffer(g_session, 1 << 20, NULL, NULL, NULL, 0, &b),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_create_buffer(g_session, 1 << 20, collector_cb, NULL, NULL, 0, NULL),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_create_buffer(g_session, 1 << 20, collector_cb, NULL, NULL, 2, &b),
                     SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_create_buffer(g_session, 100, collector_cb, NULL, NULL, 0, &b),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    sonde_session_id_t stale = {(uint64_t)999 << 32 | 7};
    assert_int_equal(sonde_create_buffer(stale, 1 << 20, collector_cb, NULL, NULL, 0, &b),
                     SONDE_STATUS_ERROR_SESSION_NOT_FOUND);

    const sonde_buffer_property_t bad[][1] = {
        {{SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, 7}},
        {{SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 5000}},    /* not a power of two */
        {{SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 1024}},    /* too small */
        {{SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 1 << 20}}, /* fewer than two chunks */
        {{SONDE_BUFFER_PROPERTY_KIND_WATERMARK, 0, 1 << 30}},  /* above the size */
        {{SONDE_BUFFER_PROPERTY_KIND_INTERVAL_FLUSH, 0, 10}},  /* below 100 us */
        {{99, 0, 1}},                                          /* unknown kind */
        {{SONDE_BUFFER_PROPERTY_KIND_POLICY, 1, 0}},           /* reserved non-zero */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
        assert_int_equal(sonde_create_buffer(g_session, 1 << 20, collector_cb, NULL, bad[i], 1, &b),
                         SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    const sonde_buffer_property_t twice[2] = {{SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, 0},
                                              {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, 1}};
    assert_int_equal(sonde_create_buffer(g_session, 1 << 20, collector_cb, NULL, twice, 2, &b),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    const sonde_buffer_property_t all[5] = {
        {SONDE_BUFFER_PROPERTY_KIND_INTERVAL_FLUSH, 0, 50000000},
        {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, SONDE_BUFFER_POLICY_DISCARD},
        {SONDE_BUFFER_PROPERTY_KIND_WATERMARK, 0, 1 << 18},
        {SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT, 0, 1000000},
        {SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 1 << 16}};
    b = make_buffer(1 << 20, all, 5);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
}

static void test_stopped_session_records_nothing(void **state) {
    (void)state;
    sonde_buffer_id_t b = make_buffer(1 << 20, NULL, 0);
    uint64_t v = 42;
    for (int i = 0; i < 1000; ++i)
        assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE);
    assert_int_equal(sonde_emit_timestamped(b, SONDE_RECORD_KIND_USER, &v, 8),
                     SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE);
    void *p = (void *)&v;
    assert_int_equal(sonde_reserve(b, SONDE_RECORD_KIND_USER, 8, &p), SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE);
    assert_null(p);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    sonde_buffer_stats_t st = stats_of(b);
    assert_int_equal(st.records_emitted, 0);
    assert_int_equal(st.callbacks, 0);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
}

static void test_state_word(void **state) {
    (void)state;
    sonde_buffer_id_t b = make_buffer(1 << 16, NULL, 0);
    const volatile uint64_t *w = sonde_buffer_state_word(b);
    assert_non_null(w);
    assert_false(sonde_buffer_is_recording(w, b));
    sonde_start_session(g_session);
    assert_true(sonde_buffer_is_recording(w, b));
    sonde_stop_session(g_session);
    assert_false(sonde_buffer_is_recording(w, b));
    sonde_start_session(g_session);
    sonde_buffer_id_t forged = {b.handle + ((uint64_t)1 << 32)};
    assert_false(sonde_buffer_is_recording(w, forged));
    assert_null(sonde_buffer_state_word(forged));
    assert_null(sonde_buffer_state_word((sonde_buffer_id_t){0}));
    assert_null(sonde_buffer_state_word((sonde_buffer_id_t){5000}));
    assert_false(sonde_buffer_is_recording(NULL, b));
    sonde_destroy_buffer(g_session, b);
    assert_false(sonde_buffer_is_recording(w, b)); /* the word outlives the buffer */
    assert_null(sonde_buffer_state_word(b));
    sonde_stop_session(g_session);
}

static void test_emit_flush_deliver_in_order(void **state) {
    (void)state;
    g_col.count = 0;
    sonde_buffer_id_t b = make_buffer(1 << 20, NULL, 0);
    assert_int_equal(sonde_start_session(g_session), SONDE_STATUS_SUCCESS);
    for (uint64_t i = 0; i < 5000; ++i) {
        if (i % 2)
            assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER + 1, &i, sizeof i), SONDE_STATUS_SUCCESS);
        else
            assert_int_equal(sonde_emit_timestamped(b, SONDE_RECORD_KIND_USER, &i, sizeof i),
                             SONDE_STATUS_SUCCESS);
    }
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(collector_count(&g_col), 5000);
    assert_int_equal(g_col.bad_spans, 0);
    uint64_t tid = g_col.items[0].thread_id;
    assert_true(tid > 0);
    for (uint64_t i = 0; i < 5000; ++i) {
        uint64_t v;
        memcpy(&v, g_col.items[i].payload, 8);
        assert_int_equal(v, i);
        assert_int_equal(g_col.items[i].thread_id, tid);
        assert_int_equal(g_col.items[i].kind, i % 2 ? SONDE_RECORD_KIND_USER + 1 : SONDE_RECORD_KIND_USER);
        assert_int_equal(g_col.items[i].flags & SONDE_RECORD_FLAG_TIMESTAMP, i % 2 ? 0 : 1);
        assert_int_equal(g_col.items[i].payload_size, 8);
    }
    sonde_buffer_stats_t st = stats_of(b);
    assert_int_equal(st.records_emitted, 5000);
    assert_int_equal(st.records_delivered, 5000);
    assert_int_equal(st.records_dropped, 0);
    assert_true(st.callbacks >= 1);
    assert_true(st.bytes_delivered >= 5000 * 16);
    assert_int_equal(sonde_stop_session(g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
}

/* Payload sizes that are not multiples of 8 are padded with zeros. */
static void test_payload_padding_and_sizes(void **state) {
    (void)state;
    g_col.count = 0;
    sonde_buffer_id_t b = make_buffer(1 << 20, NULL, 0);
    sonde_start_session(g_session);
    unsigned char buf[300];
    for (size_t i = 0; i < sizeof buf; ++i) buf[i] = (unsigned char)(i + 1);
    const uint32_t sizes[] = {0, 1, 7, 8, 9, 15, 17, 64, 129, 300};
    for (size_t i = 0; i < 10; ++i)
        assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, buf, sizes[i]), SONDE_STATUS_SUCCESS);
    sonde_flush_data(g_session, b);
    assert_int_equal(collector_count(&g_col), 10);
    for (size_t i = 0; i < 10; ++i) {
        assert_int_equal(g_col.items[i].payload_size, (sizes[i] + 7) & ~7u);
        size_t n = sizes[i] < 64 ? sizes[i] : 64;
        assert_memory_equal(g_col.items[i].payload, buf, n);
        for (size_t j = sizes[i]; j < g_col.items[i].payload_size && j < 64; ++j)
            assert_int_equal(g_col.items[i].payload[j], 0);
    }
    sonde_stop_session(g_session);
    sonde_destroy_buffer(g_session, b);
}

static void test_emit_bad_arguments(void **state) {
    (void)state;
    sonde_buffer_id_t b = make_buffer(1 << 16, NULL, 0);
    sonde_start_session(g_session);
    uint64_t small = 0;
    sonde_memref_record_t m = {0x1000, 0x400000, 8, SONDE_MEMREF_READ};
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_NONE, &small, 8), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_THREAD, &small, 8), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_LOSS, &small, 8), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_emit(b, 7, &small, 8), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_emit(b, 0x10000, &small, 8), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_MEMREF, &small, 8), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_MEMREF, &m, sizeof m), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, NULL, 8), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, NULL, 0), SONDE_STATUS_SUCCESS);
    /* Larger than a chunk can hold (64 KiB buffer -> 16 KiB chunks). */
    static unsigned char big[1 << 15];
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, big, sizeof big),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, big, SONDE_RECORD_MAX_PAYLOAD + 1),
                     SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    sonde_buffer_stats_t st = stats_of(b);
    assert_int_equal(st.records_emitted, 2);
    /* Forged and stale buffer ids. */
    sonde_buffer_id_t forged[] = {
        {0}, {(uint64_t)1 << 32 | 5000}, {(uint64_t)12345 << 32 | (b.handle & 0xffffffff)}};
    for (size_t i = 0; i < 3; ++i) {
        assert_int_equal(sonde_emit(forged[i], SONDE_RECORD_KIND_USER, &small, 8),
                         SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
        assert_int_equal(sonde_flush_data(g_session, forged[i].handle ? forged[i] : (sonde_buffer_id_t){1}),
                         SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
        assert_int_equal(sonde_destroy_buffer(g_session, forged[i]), SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    }
    sonde_stop_session(g_session);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &small, 8), SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    assert_int_equal(sonde_get_buffer_stats(g_session, b, &st), SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    /* A buffer asked through the wrong session is not found. */
    sonde_session_id_t other;
    sonde_create_session(NULL, &other);
    sonde_buffer_id_t b2 = make_buffer(1 << 16, NULL, 0);
    assert_int_equal(sonde_flush_data(other, b2), SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    assert_int_equal(sonde_destroy_buffer(other, b2), SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    sonde_destroy_session(other);
    assert_int_equal(sonde_flush_data(other, b2), SONDE_STATUS_ERROR_SESSION_NOT_FOUND);
    sonde_destroy_buffer(g_session, b2);
}

static void test_stats_struct_size(void **state) {
    (void)state;
    sonde_buffer_id_t b = make_buffer(1 << 16, NULL, 0);
    sonde_buffer_stats_t st;
    assert_int_equal(sonde_get_buffer_stats(g_session, b, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    memset(&st, 0, sizeof st);
    st.struct_size = 16;
    assert_int_equal(sonde_get_buffer_stats(g_session, b, &st), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    /* A newer caller's larger struct: only our bytes are written, the tail is untouched. */
    struct {
        sonde_buffer_stats_t v1;
        uint64_t tail;
    } big;
    memset(&big, 0, sizeof big);
    big.v1.struct_size = sizeof big;
    big.tail = 0xABCDEF;
    assert_int_equal(sonde_get_buffer_stats(g_session, b, &big.v1), SONDE_STATUS_SUCCESS);
    assert_int_equal(big.tail, 0xABCDEF);
    assert_int_equal(big.v1.struct_size, sizeof big);
    sonde_destroy_buffer(g_session, b);
}

static void test_standard_kinds_round_trip(void **state) {
    (void)state;
    g_col.count = 0;
    sonde_buffer_id_t b = make_buffer(1 << 16, NULL, 0);
    sonde_start_session(g_session);
    sonde_tracer_record_t t = {100, 200, 7, 1, 2};
    sonde_profiler_record_t p = {3, 99, sonde_get_timestamp()};
    sonde_memref_record_t m = {0xdead0, 0x401000, 4, SONDE_MEMREF_WRITE};
    sonde_call_record_t c = {55, sonde_get_timestamp(), SONDE_CALL_LEAVE, 0};
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_TRACER, &t, sizeof t), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_PROFILER, &p, sizeof p), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_MEMREF, &m, sizeof m), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_CALL, &c, sizeof c), SONDE_STATUS_SUCCESS);
    sonde_flush_data(g_session, b);
    assert_int_equal(collector_count(&g_col), 4);
    assert_int_equal(g_col.items[0].kind, SONDE_RECORD_KIND_TRACER);
    assert_memory_equal(g_col.items[0].payload, &t, sizeof t);
    assert_memory_equal(g_col.items[1].payload, &p, sizeof p);
    assert_memory_equal(g_col.items[2].payload, &m, sizeof m);
    assert_memory_equal(g_col.items[3].payload, &c, sizeof c);
    sonde_stop_session(g_session);
    sonde_destroy_buffer(g_session, b);
}

/* ---- record accessors --------------------------------------------------------------- */
static void test_record_accessors(void **state) {
    (void)state;
    uint64_t mem[4] = {0};
    sonde_record_header_t h = {24, SONDE_RECORD_KIND_USER, SONDE_RECORD_FLAG_TIMESTAMP};
    memcpy(mem, &h, sizeof h);
    mem[1] = 123456;
    mem[2] = 77;
    const sonde_record_header_t *r = (const sonde_record_header_t *)mem;
    uint32_t size = 99;
    assert_int_equal(sonde_record_kind(r), SONDE_RECORD_KIND_USER);
    assert_int_equal(sonde_record_kind(NULL), SONDE_RECORD_KIND_NONE);
    const uint64_t *payload = (const uint64_t *)sonde_record_payload(r, &size);
    assert_int_equal(size, 8);
    assert_int_equal(*payload, 77);
    uint64_t ts = 0;
    assert_int_equal(sonde_record_timestamp(r, &ts), SONDE_STATUS_SUCCESS);
    assert_int_equal(ts, 123456);
    assert_int_equal(sonde_record_timestamp(r, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_null(sonde_record_payload(NULL, &size));
    assert_int_equal(size, 0);
    h.flags = 0;
    memcpy(mem, &h, sizeof h);
    assert_int_equal(sonde_record_timestamp(r, &ts), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    h.size = 4; /* shorter than a header */
    memcpy(mem, &h, sizeof h);
    assert_null(sonde_record_payload(r, &size));
    /* Outside a callback, sonde_next_record has no span to validate against. */
    const sonde_record_header_t *next = r;
    sonde_buffer_id_t b = make_buffer(1 << 16, NULL, 0);
    assert_int_equal(sonde_next_record(r, &next, g_session, b), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_next_record(r, NULL, g_session, b), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_next_record(NULL, &next, g_session, b), SONDE_STATUS_ERROR_NULL_POINTER);
    sonde_buffer_id_t stale = {b.handle + ((uint64_t)1 << 40)};
    assert_int_equal(sonde_next_record(r, &next, g_session, stale), SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
    sonde_destroy_buffer(g_session, b);
}

/* A callback that damages the span it is given: sonde_next_record must refuse to walk past
 * the damage instead of reading beyond the end. */
static sonde_status_t g_corrupt_results[6];
static void corrupting_cb(const sonde_record_header_t *begin, const sonde_record_header_t *end,
                          sonde_session_id_t s, sonde_buffer_id_t b, void *u) {
    (void)u;
    const sonde_record_header_t *next = NULL;
    /* The span: THREAD, then two 16-byte USER records. */
    const sonde_record_header_t *first = (const sonde_record_header_t *)((const char *)begin + begin->size);
    sonde_record_header_t *second = (sonde_record_header_t *)((char *)first + first->size);
    uint32_t saved = second->size;
    second->size = 1000000; /* runs past the end */
    g_corrupt_results[0] = sonde_next_record(first, &next, s, b);
    second->size = 12; /* not a multiple of 8 */
    g_corrupt_results[1] = sonde_next_record(first, &next, s, b);
    second->size = saved;
    uint16_t kind = second->kind;
    second->kind = 0;
    g_corrupt_results[2] = sonde_next_record(first, &next, s, b);
    second->kind = 9; /* undefined Sonde kind */
    g_corrupt_results[3] = sonde_next_record(first, &next, s, b);
    second->kind = kind;
    g_corrupt_results[4] =
        sonde_next_record((const sonde_record_header_t *)((const char *)end + 64), &next, s, b);
    g_corrupt_results[5] = sonde_next_record(first, &next, s, b);
}

static void test_next_record_detects_corruption(void **state) {
    (void)state;
    sonde_buffer_id_t b;
    assert_int_equal(sonde_create_buffer(g_session, 1 << 16, corrupting_cb, NULL, NULL, 0, &b),
                     SONDE_STATUS_SUCCESS);
    sonde_start_session(g_session);
    uint64_t v = 1;
    sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8);
    sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(g_corrupt_results[0], SONDE_STATUS_ERROR_RECORD_CORRUPTED);
    assert_int_equal(g_corrupt_results[1], SONDE_STATUS_ERROR_RECORD_CORRUPTED);
    assert_int_equal(g_corrupt_results[2], SONDE_STATUS_ERROR_RECORD_CORRUPTED);
    assert_int_equal(g_corrupt_results[3], SONDE_STATUS_ERROR_RECORD_CORRUPTED);
    assert_int_equal(g_corrupt_results[4], SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(g_corrupt_results[5], SONDE_STATUS_SUCCESS);
    sonde_stop_session(g_session);
    sonde_destroy_buffer(g_session, b);
}

/* ---- reserve / commit --------------------------------------------------------------- */
static void test_reserve_commit(void **state) {
    (void)state;
    g_col.count = 0;
    sonde_buffer_id_t b = make_buffer(1 << 16, NULL, 0);
    sonde_start_session(g_session);
    void *p = NULL;
    assert_int_equal(sonde_commit(b), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_reserve(b, SONDE_RECORD_KIND_USER, 8, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_reserve(b, SONDE_RECORD_KIND_USER, 12, &p), SONDE_STATUS_SUCCESS);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % 8, 0);
    memcpy(p, "hello world!", 12);
    void *q = NULL;
    uint64_t v = 5;
    assert_int_equal(sonde_reserve(b, SONDE_RECORD_KIND_USER, 8, &q), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_commit(b), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_commit(b), SONDE_STATUS_ERROR_PHASE_FAILURE);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    /* Many reservations across chunk boundaries. */
    for (uint64_t i = 0; i < 10000; ++i) {
        assert_int_equal(sonde_reserve(b, SONDE_RECORD_KIND_USER + 2, 8, &p), SONDE_STATUS_SUCCESS);
        memcpy(p, &i, 8);
        assert_int_equal(sonde_commit(b), SONDE_STATUS_SUCCESS);
    }
    sonde_flush_data(g_session, b);
    size_t n = collector_count(&g_col);
    assert_int_equal(n, 10002);
    assert_memory_equal(g_col.items[0].payload, "hello world!\0\0\0\0", 16);
    for (uint64_t i = 0; i < 10000; ++i) {
        uint64_t got;
        memcpy(&got, g_col.items[i + 2].payload, 8);
        assert_int_equal(got, i);
    }
    sonde_buffer_stats_t st = stats_of(b);
    assert_int_equal(st.records_emitted, st.records_delivered + st.records_dropped);
    sonde_stop_session(g_session);
    sonde_destroy_buffer(g_session, b);
}

/* A reservation that writes past its size into the chunk's guard word is reported. */
static void test_guard_word_detects_overrun(void **state) {
    (void)state;
    const sonde_buffer_property_t props[1] = {{SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096}};
    sonde_buffer_id_t b = make_buffer(1 << 14, props, 1);
    sonde_start_session(g_session);
    /* Chunk: 4088 usable bytes; THREAD marker 24; five 8-byte records; then a reservation of
     * 4024 bytes ends exactly at the guard. */
    for (int i = 0; i < 5; ++i)
        assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, NULL, 0), SONDE_STATUS_SUCCESS);
    void *p = NULL;
    assert_int_equal(sonde_reserve(b, SONDE_RECORD_KIND_USER, 4016, &p), SONDE_STATUS_SUCCESS);
    memset(p, 0x11, 4016 + 8); /* 8 bytes too many */
    assert_int_equal(sonde_commit(b), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_ERROR_CORRUPTED_SESSION_BUFFER);
    /* The guard is restored; later deliveries are clean. */
    uint64_t v = 1;
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    sonde_stop_session(g_session);
    sonde_destroy_buffer(g_session, b);
}

/* ---- delivery guarantees ------------------------------------------------------------ */
typedef struct {
    sonde_buffer_id_t b;
    uint64_t n;
} worker_arg_t;

static void *emit_worker(void *arg) {
    worker_arg_t *a = (worker_arg_t *)arg;
    for (uint64_t i = 0; i < a->n; ++i) sonde_emit(a->b, SONDE_RECORD_KIND_USER, &i, 8);
    return NULL; /* thread exit delivers what it emitted */
}

static void test_thread_exit_delivers(void **state) {
    (void)state;
    g_col.count = 0;
    sonde_buffer_id_t b = make_buffer(1 << 20, NULL, 0);
    sonde_start_session(g_session);
    worker_arg_t a = {b, 777};
    pthread_t t;
    pthread_create(&t, NULL, emit_worker, &a);
    pthread_join(t, NULL);
    /* No flush: the exiting thread delivered its records before it ended. */
    assert_int_equal(collector_count(&g_col), 777);
    sonde_buffer_stats_t st = stats_of(b);
    assert_int_equal(st.records_emitted, 777);
    assert_int_equal(st.records_delivered, 777);
    sonde_stop_session(g_session);
    sonde_destroy_buffer(g_session, b);
}

static void test_stop_destroy_finalize_deliver(void **state) {
    (void)state;
    uint64_t v = 3;
    /* stop */
    g_col.count = 0;
    sonde_buffer_id_t b = make_buffer(1 << 20, NULL, 0);
    sonde_start_session(g_session);
    for (int i = 0; i < 10; ++i) sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8);
    assert_int_equal(sonde_stop_session(g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(collector_count(&g_col), 10);
    /* destroy buffer */
    sonde_start_session(g_session);
    for (int i = 0; i < 10; ++i) sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(collector_count(&g_col), 20);
    /* destroy session */
    b = make_buffer(1 << 20, NULL, 0);
    for (int i = 0; i < 10; ++i) sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8);
    assert_int_equal(sonde_destroy_session(g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(collector_count(&g_col), 30);
    /* finalize */
    assert_int_equal(sonde_create_session(NULL, &g_session), SONDE_STATUS_SUCCESS);
    b = make_buffer(1 << 20, NULL, 0);
    sonde_start_session(g_session);
    for (int i = 0; i < 10; ++i) sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8);
    assert_int_equal(sonde_finalize(), SONDE_STATUS_SUCCESS);
    assert_int_equal(collector_count(&g_col), 40);
    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_create_session(NULL, &g_session), SONDE_STATUS_SUCCESS);
}

static void test_interval_flush(void **state) {
    (void)state;
    g_col.count = 0;
    const uint64_t interval = 20 * 1000 * 1000; /* 20 ms */
    const sonde_buffer_property_t props[1] = {{SONDE_BUFFER_PROPERTY_KIND_INTERVAL_FLUSH, 0, interval}};
    sonde_buffer_id_t b = make_buffer(1 << 20, props, 1);
    sonde_start_session(g_session);
    uint64_t v = 9;
    const uint64_t t0 = sonde_get_timestamp();
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    /* No flush: wait (a liveness bound far above two intervals, not a speed check). */
    while (collector_count(&g_col) == 0 && sonde_get_timestamp() - t0 < 10ull * 1000 * 1000 * 1000)
        usleep(1000);
    const uint64_t waited = sonde_get_timestamp() - t0;
    assert_int_equal(collector_count(&g_col), 1);
    print_message("interval flush delivered after %.1f ms (interval 20 ms)\n", waited / 1e6);
    sonde_stop_session(g_session);
    sonde_destroy_buffer(g_session, b);
}

/* Four chunks of 4096 bytes with `policy`, whose consumer is stuck (gate closed) once this
 * returns, in the started session. */
static sonde_buffer_id_t stuck_buffer(collector_t *col, uint32_t policy, uint64_t timeout_ns) {
    const sonde_buffer_property_t props[3] = {{SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096},
                                              {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, policy},
                                              {SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT, 0, timeout_ns}};
    sonde_buffer_id_t b;
    assert_int_equal(sonde_create_buffer(g_session, 4 * 4096, gated_cb, col, props, 3, &b),
                     SONDE_STATUS_SUCCESS);
    sonde_start_session(g_session);
    gate(0);
    return b;
}

/* The end of a stuck_buffer case: the consumer saw `delivered` records and a LOSS report of
 * each of `dropped` drops, with no bad span; then the buffer goes. */
static void close_stuck(sonde_buffer_id_t b, collector_t *col, uint64_t delivered, uint64_t dropped) {
    assert_int_equal(collector_count(col), delivered);
    assert_int_equal(col->losses, dropped);
    assert_int_equal(col->bad_spans, 0);
    sonde_stop_session(g_session);
    sonde_destroy_buffer(g_session, b);
    collector_free(col);
}

static void run_policy_case(uint32_t policy, uint64_t timeout_ns) {
    collector_t col;
    collector_init(&col);
    const sonde_buffer_id_t b = stuck_buffer(&col, policy, timeout_ns);
    /* Four chunks of ~250 records each: this many records cannot fit while the consumer is
     * stuck. Under LOSSLESS each drop first waits for the timeout, so emit fewer. */
    const uint64_t total = policy == SONDE_BUFFER_POLICY_DISCARD ? 5000 : 1500;
    uint64_t ok = 0, full = 0;
    for (uint64_t i = 0; i < total; ++i) {
        sonde_status_t st = sonde_emit(b, SONDE_RECORD_KIND_USER, &i, 8);
        if (st == SONDE_STATUS_SUCCESS)
            ok++;
        else if (st == SONDE_STATUS_ERROR_BUFFER_FULL)
            full++;
        else
            fail_msg("unexpected %s", sonde_status_name(st));
    }
    gate(1);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    /* After the drops, more records: the first of them is preceded by a LOSS record. */
    for (uint64_t i = 0; i < 10; ++i)
        assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &i, 8), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    const sonde_buffer_stats_t st = stats_of(b);
    assert_true(full > 0);
    assert_int_equal(st.records_emitted, total + 10);
    assert_int_equal(st.records_dropped, full);
    assert_int_equal(st.records_emitted, st.records_delivered + st.records_dropped);
    close_stuck(b, &col, ok + 10, full);
}

static void test_discard_counts_and_reports_loss(void **state) {
    (void)state;
    run_policy_case(SONDE_BUFFER_POLICY_DISCARD, 0);
}

/* A DISCARD producer that found no free chunk drops every later record without the lock,
 * whichever entry it takes (sonde_emit, sonde_emit_timestamped, sonde_emit_inline), until the
 * consumer returns a chunk; every drop is counted once and reported in-stream. */
static void test_discard_starved_entries(void **state) {
    (void)state;
    collector_t col;
    collector_init(&col);
    const sonde_buffer_id_t b = stuck_buffer(&col, SONDE_BUFFER_POLICY_DISCARD, 0);
    uint64_t v = 0, ok = 0, full = 0;
    sonde_status_t st;
    while ((st = sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8)) == SONDE_STATUS_SUCCESS) ++ok, ++v;
    assert_int_equal(st, SONDE_STATUS_ERROR_BUFFER_FULL);
    ++full;
    sonde_producer_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = SONDE_PRODUCER_SIZE_1_2;
    assert_int_equal(sonde_buffer_producer(b, &p), SONDE_STATUS_SUCCESS);
    for (int i = 0; i < 300; ++i, ++full) {
        const uint64_t payload[2] = {v, v};
        switch (i % 3) {
            case 0: st = sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8); break;
            case 1: st = sonde_emit_timestamped(b, SONDE_RECORD_KIND_USER, &v, 8); break;
            default: st = sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, payload, sizeof payload); break;
        }
        assert_int_equal(st, SONDE_STATUS_ERROR_BUFFER_FULL);
    }
    assert_int_equal(stats_of(b).records_dropped, full);
    gate(1);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    /* Chunks came back: the next record of each entry is accepted. */
    const uint64_t payload[2] = {1, 2};
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_emit_timestamped(b, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_emit_inline(&p, SONDE_RECORD_KIND_USER, payload, sizeof payload),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    const sonde_buffer_stats_t stats = stats_of(b);
    assert_int_equal(stats.records_emitted, ok + full + 3);
    assert_int_equal(stats.records_dropped, full);
    assert_int_equal(stats.records_delivered, ok + 3);
    close_stuck(b, &col, ok + 3, full);
}

static void test_lossless_drops_only_after_timeout(void **state) {
    (void)state;
    run_policy_case(SONDE_BUFFER_POLICY_LOSSLESS, 2 * 1000 * 1000); /* 2 ms */
}

/* LOSSLESS with a consumer that keeps up: several threads, tiny buffer, no drop. */
static void test_lossless_never_drops(void **state) {
    (void)state;
    collector_t col;
    collector_init(&col);
    const sonde_buffer_property_t props[2] = {{SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096},
                                              {SONDE_BUFFER_PROPERTY_KIND_WATERMARK, 0, 4096}};
    sonde_buffer_id_t b;
    assert_int_equal(sonde_create_buffer(g_session, 8 * 4096, collector_cb, &col, props, 2, &b),
                     SONDE_STATUS_SUCCESS);
    sonde_start_session(g_session);
    worker_arg_t a = {b, 50000};
    pthread_t t[3];
    for (int i = 0; i < 3; ++i) pthread_create(&t[i], NULL, emit_worker, &a);
    for (int i = 0; i < 3; ++i) pthread_join(t[i], NULL);
    sonde_flush_data(g_session, b);
    sonde_buffer_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    sonde_get_buffer_stats(g_session, b, &st);
    assert_int_equal(st.records_emitted, 150000);
    assert_int_equal(st.records_dropped, 0);
    assert_int_equal(st.records_delivered, 150000);
    assert_int_equal(collector_count(&col), 150000);
    sonde_stop_session(g_session);
    sonde_destroy_buffer(g_session, b);
    collector_free(&col);
}

/* Calls that would deliver are refused from inside a callback; emission into the same buffer
 * from the callback never waits. */
static sonde_status_t g_in_cb[6];
static void reentrant_cb(const sonde_record_header_t *b, const sonde_record_header_t *e, sonde_session_id_t s,
                         sonde_buffer_id_t bu, void *u) {
    (void)b;
    (void)e;
    (void)u;
    sonde_buffer_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    g_in_cb[0] = sonde_flush_data(s, bu);
    g_in_cb[1] = sonde_stop_session(s);
    g_in_cb[2] = sonde_destroy_buffer(s, bu);
    g_in_cb[3] = sonde_finalize();
    g_in_cb[4] = sonde_get_buffer_stats(s, bu, &st);
    uint64_t v = 1;
    sonde_status_t r = sonde_emit(bu, SONDE_RECORD_KIND_USER, &v, 8);
    g_in_cb[5] =
        (r == SONDE_STATUS_SUCCESS || r == SONDE_STATUS_ERROR_BUFFER_FULL) ? SONDE_STATUS_SUCCESS : r;
}

static void test_reentrant_calls_from_callback(void **state) {
    (void)state;
    sonde_buffer_id_t b;
    assert_int_equal(sonde_create_buffer(g_session, 1 << 16, reentrant_cb, NULL, NULL, 0, &b),
                     SONDE_STATUS_SUCCESS);
    sonde_start_session(g_session);
    uint64_t v = 1;
    sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(g_in_cb[0], SONDE_STATUS_ERROR_IN_CALLBACK);
    assert_int_equal(g_in_cb[1], SONDE_STATUS_ERROR_IN_CALLBACK);
    assert_int_equal(g_in_cb[2], SONDE_STATUS_ERROR_IN_CALLBACK);
    assert_int_equal(g_in_cb[3], SONDE_STATUS_ERROR_IN_CALLBACK);
    assert_int_equal(g_in_cb[4], SONDE_STATUS_SUCCESS);
    assert_int_equal(g_in_cb[5], SONDE_STATUS_SUCCESS);
    sonde_stop_session(g_session);
    sonde_destroy_buffer(g_session, b);
}

/* The refusal holds from any callback, whatever buffer and session the call names: a callback
 * of one session cannot flush, stop or destroy another one either (the call would wait for
 * deliveries, the running one among them), nor destroy its own session. Those buffers and
 * sessions are untouched and work once the callback has returned. */
static sonde_session_id_t g_other_session;
static sonde_buffer_id_t g_other_buffer;
static sonde_status_t g_cross[5];
static void cross_cb(const sonde_record_header_t *b, const sonde_record_header_t *e, sonde_session_id_t s,
                     sonde_buffer_id_t bu, void *u) {
    (void)b;
    (void)e;
    (void)bu;
    (void)u;
    g_cross[0] = sonde_flush_data(g_other_session, g_other_buffer);
    g_cross[1] = sonde_stop_session(g_other_session);
    g_cross[2] = sonde_destroy_buffer(g_other_session, g_other_buffer);
    g_cross[3] = sonde_destroy_session(g_other_session);
    g_cross[4] = sonde_destroy_session(s);
}

static void test_calls_refused_from_any_callback(void **state) {
    (void)state;
    collector_t col;
    collector_init(&col);
    assert_int_equal(sonde_create_session(NULL, &g_other_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(
        sonde_create_buffer(g_other_session, 1 << 16, collector_cb, &col, NULL, 0, &g_other_buffer),
        SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(g_other_session), SONDE_STATUS_SUCCESS);
    uint64_t v = 7;
    assert_int_equal(sonde_emit(g_other_buffer, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    for (int i = 0; i < 5; ++i) g_cross[i] = SONDE_STATUS_SUCCESS;
    sonde_buffer_id_t b;
    assert_int_equal(sonde_create_buffer(g_session, 1 << 16, cross_cb, NULL, NULL, 0, &b),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    for (int i = 0; i < 5; ++i) assert_int_equal(g_cross[i], SONDE_STATUS_ERROR_IN_CALLBACK);
    /* Nothing was done: the other session still runs and delivers. */
    bool active = false;
    assert_int_equal(sonde_session_is_active(g_other_session, &active), SONDE_STATUS_SUCCESS);
    assert_true(active);
    assert_int_equal(collector_count(&col), 0);
    assert_int_equal(sonde_flush_data(g_other_session, g_other_buffer), SONDE_STATUS_SUCCESS);
    assert_int_equal(collector_count(&col), 1);
    assert_int_equal(sonde_stop_session(g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_destroy_session(g_other_session), SONDE_STATUS_SUCCESS);
    collector_free(&col);
}

/* Emitting into its own LOSSLESS buffer from the callback never waits for space, even with a
 * long lossless timeout: once no chunk is free the record is dropped and counted at once. */
static int g_fill_calls;
static uint64_t g_fill_accepted, g_fill_ns;
static sonde_status_t g_fill_last;
static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static void fill_own_cb(const sonde_record_header_t *b, const sonde_record_header_t *e, sonde_session_id_t s,
                        sonde_buffer_id_t bu, void *u) {
    (void)b;
    (void)e;
    (void)s;
    (void)u;
    /* Only the first delivery fills the buffer. The records it emits seal chunks, so a worker of
     * the delivery pool may deliver them too, after the flush (atomic: two threads). */
    if (__atomic_fetch_add(&g_fill_calls, 1, __ATOMIC_ACQ_REL) != 0) return;
    const uint64_t start = now_ns();
    uint64_t v = 0;
    for (int i = 0; i < 1000000; ++i) {
        g_fill_last = sonde_emit(bu, SONDE_RECORD_KIND_USER, &v, 8);
        if (g_fill_last != SONDE_STATUS_SUCCESS) break;
        ++g_fill_accepted;
    }
    g_fill_ns = now_ns() - start;
}

static void test_emit_into_own_buffer_from_callback_never_waits(void **state) {
    (void)state;
    const sonde_buffer_property_t props[3] = {
        {SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096},
        {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, SONDE_BUFFER_POLICY_LOSSLESS},
        {SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT, 0, 60ull * 1000 * 1000 * 1000}}; /* 60 s */
    sonde_buffer_id_t b;
    assert_int_equal(sonde_create_buffer(g_session, 8 * 4096, fill_own_cb, NULL, props, 3, &b),
                     SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_start_session(g_session), SONDE_STATUS_SUCCESS);
    uint64_t v = 1;
    assert_int_equal(sonde_emit(b, SONDE_RECORD_KIND_USER, &v, 8), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_flush_data(g_session, b), SONDE_STATUS_SUCCESS);
    /* the records it emitted may be delivered by the same flush */
    assert_true(__atomic_load_n(&g_fill_calls, __ATOMIC_ACQUIRE) >= 1);
    assert_int_equal(g_fill_last, SONDE_STATUS_ERROR_BUFFER_FULL);
    assert_true(g_fill_accepted > 0);
    /* Far below the 60 s a producer outside the callback would wait. */
    assert_true(g_fill_ns < 20ull * 1000 * 1000 * 1000);
    assert_true(stats_of(b).records_dropped >= 1);
    assert_int_equal(sonde_stop_session(g_session), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
}

/* Destroying a buffer while other threads emit: they see BUFFER_NOT_FOUND, nothing crashes,
 * and every record accepted before the destroy was delivered. */
typedef struct {
    sonde_buffer_id_t b;
    uint64_t ok;
    sonde_status_t last;
} churn_arg_t;

static void *churn_worker(void *arg) {
    churn_arg_t *a = (churn_arg_t *)arg;
    for (uint64_t i = 0;; ++i) {
        sonde_status_t st = sonde_emit(a->b, SONDE_RECORD_KIND_USER, &i, 8);
        if (st == SONDE_STATUS_SUCCESS)
            a->ok++;
        else if (st != SONDE_STATUS_ERROR_BUFFER_FULL) {
            a->last = st;
            break;
        }
    }
    return NULL;
}

static void test_destroy_while_emitting(void **state) {
    (void)state;
    for (int round = 0; round < 5; ++round) {
        collector_t col;
        collector_init(&col);
        sonde_buffer_id_t b;
        assert_int_equal(sonde_create_buffer(g_session, 1 << 20, collector_cb, &col, NULL, 0, &b),
                         SONDE_STATUS_SUCCESS);
        sonde_start_session(g_session);
        churn_arg_t a[2] = {{b, 0, 0}, {b, 0, 0}};
        pthread_t t[2];
        for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, churn_worker, &a[i]);
        usleep(2000);
        assert_int_equal(sonde_destroy_buffer(g_session, b), SONDE_STATUS_SUCCESS);
        for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
        for (int i = 0; i < 2; ++i) assert_int_equal(a[i].last, SONDE_STATUS_ERROR_BUFFER_NOT_FOUND);
        assert_int_equal(collector_count(&col), a[0].ok + a[1].ok);
        sonde_stop_session(g_session);
        collector_free(&col);
    }
}

/* Records from several threads: each span names its thread, per-thread order is kept. */
static void *seq_worker(void *arg) {
    worker_arg_t *a = (worker_arg_t *)arg;
    for (uint64_t i = 0; i < a->n; ++i)
        assert_int_equal(sonde_emit(a->b, SONDE_RECORD_KIND_USER, &i, 8), SONDE_STATUS_SUCCESS);
    return NULL;
}

static void test_threads_identified_and_ordered(void **state) {
    (void)state;
    collector_t col;
    collector_init(&col);
    const sonde_buffer_property_t props[1] = {{SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096}};
    sonde_buffer_id_t b;
    assert_int_equal(sonde_create_buffer(g_session, 1 << 20, collector_cb, &col, props, 1, &b),
                     SONDE_STATUS_SUCCESS);
    sonde_start_session(g_session);
    worker_arg_t a = {b, 20000};
    pthread_t t[4];
    for (int i = 0; i < 4; ++i) pthread_create(&t[i], NULL, seq_worker, &a);
    for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
    sonde_flush_data(g_session, b);
    assert_int_equal(collector_count(&col), 80000);
    uint64_t tids[4] = {0}, next[4] = {0};
    for (size_t i = 0; i < col.count; ++i) {
        int k = 0;
        while (k < 4 && tids[k] != 0 && tids[k] != col.items[i].thread_id) ++k;
        assert_true(k < 4);
        tids[k] = col.items[i].thread_id;
        uint64_t v;
        memcpy(&v, col.items[i].payload, 8);
        assert_int_equal(v, next[k]);
        next[k]++;
    }
    for (int k = 0; k < 4; ++k) assert_int_equal(next[k], 20000);
    sonde_stop_session(g_session);
    sonde_destroy_buffer(g_session, b);
    collector_free(&col);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_buffer_arguments),
        cmocka_unit_test(test_stopped_session_records_nothing),
        cmocka_unit_test(test_state_word),
        cmocka_unit_test(test_emit_flush_deliver_in_order),
        cmocka_unit_test(test_payload_padding_and_sizes),
        cmocka_unit_test(test_emit_bad_arguments),
        cmocka_unit_test(test_stats_struct_size),
        cmocka_unit_test(test_standard_kinds_round_trip),
        cmocka_unit_test(test_record_accessors),
        cmocka_unit_test(test_next_record_detects_corruption),
        cmocka_unit_test(test_reserve_commit),
        cmocka_unit_test(test_guard_word_detects_overrun),
        cmocka_unit_test(test_thread_exit_delivers),
        cmocka_unit_test(test_stop_destroy_finalize_deliver),
        cmocka_unit_test(test_interval_flush),
        cmocka_unit_test(test_discard_counts_and_reports_loss),
        cmocka_unit_test(test_discard_starved_entries),
        cmocka_unit_test(test_lossless_drops_only_after_timeout),
        cmocka_unit_test(test_lossless_never_drops),
        cmocka_unit_test(test_reentrant_calls_from_callback),
        cmocka_unit_test(test_calls_refused_from_any_callback),
        cmocka_unit_test(test_emit_into_own_buffer_from_callback_never_waits),
        cmocka_unit_test(test_destroy_while_emitting),
        cmocka_unit_test(test_threads_identified_and_ordered),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
