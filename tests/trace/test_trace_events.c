/* Program events in Sonde traces through the public API (sonde/trace_events.h): a round trip of
 * events and tables beside memrefs in one file, several chunks per shard, rewinding, tables
 * written in pieces (the last entry of an index wins), recovery of a cut file with its tables,
 * and every status of the reading functions: NULL, wrong shard or index, a closed reader, too
 * small a struct_size; an extension index whose checksum holds but which lists an event chunk
 * twice is refused; a trace of format minor version 2 (before API calls) still reads, with no
 * API function, and API call events written by hand read back as they were. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/trace_events.h>

#include "craft.h"

static char g_dir[256];

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int slot;
    char *p = buf[slot++ & 3];
    snprintf(p, 512, "%s/%s", g_dir, name);
    return p;
}

static sonde_trace_event_t make_event(uint32_t shard, uint64_t i) {
    sonde_trace_event_t e;
    memset(&e, 0, sizeof e);
    e.timestamp = 5000 + i * 7 + shard;
    e.kind = (i % 2) == 0 ? SONDE_TRACE_EVENT_METHOD_ENTER : SONDE_TRACE_EVENT_METHOD_LEAVE;
    e.id = (uint32_t)((i / 2) % 5 + shard);
    e.value = i * 3;
    e.aux = (uint32_t)(i % 3);
    e.shard = 99; /* ignored by the writer */
    return e;
}

/* Two event shards of `n` events each, chunks of 100 events, memrefs on one shard, and tables. */
static void write_events_trace(const char *path, uint64_t n) {
    sonde_trace_writer_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    props.chunk_records = 100;
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(path, &props, &w), SONDE_STATUS_SUCCESS);

    uint32_t id = 77;
    assert_int_equal(sonde_trace_writer_add_string(w, "", &id), SONDE_STATUS_SUCCESS);
    assert_int_equal(id, 0);
    assert_int_equal(sonde_trace_writer_add_string(w, "phase one", &id), SONDE_STATUS_SUCCESS);
    assert_int_equal(id, 1);
    uint32_t again = 0;
    assert_int_equal(sonde_trace_writer_add_string(w, "phase one", &again), SONDE_STATUS_SUCCESS);
    assert_int_equal(again, 1);

    sonde_trace_module_t mod;
    memset(&mod, 0, sizeof mod);
    mod.struct_size = sizeof mod;
    mod.index = 0;
    mod.path = "/bin/prog";
    mod.name = "prog";
    mod.address = 0x400000;
    mod.size = 0x1000;
    assert_int_equal(sonde_trace_writer_add_module(w, &mod), SONDE_STATUS_SUCCESS);

    for (uint32_t i = 0; i < 6; ++i) {
        char name[32], full[64];
        snprintf(name, sizeof name, "f%u", i);
        snprintf(full, sizeof full, "ns::K::f%u(int)", i);
        sonde_trace_method_t m;
        memset(&m, 0, sizeof m);
        m.struct_size = SONDE_TRACE_METHOD_SIZE_1_2;
        m.index = i;
        m.name = name;
        m.class_name = "ns::K";
        m.full_name = full;
        m.mangled_name = "_Zmangled";
        m.source_file = i == 5 ? NULL : "prog.c";
        m.source_line = 10 + i;
        m.module = 0;
        m.address = 0x401000 + 16 * i;
        m.size = 16;
        m.visibility = 1;
        assert_int_equal(sonde_trace_writer_add_method(w, &m), SONDE_STATUS_SUCCESS);
    }
    sonde_trace_thread_t th;
    memset(&th, 0, sizeof th);
    th.struct_size = sizeof th;
    th.shard = 0;
    th.os_thread_id = 1234;
    th.name = "main";
    assert_int_equal(sonde_trace_writer_add_thread(w, &th), SONDE_STATUS_SUCCESS);

    sonde_trace_event_t batch[37];
    for (uint64_t base = 0; base < n; base += 37) {
        for (uint32_t s = 0; s < 2; ++s) {
            size_t k = 0;
            for (uint64_t i = base; i < n && k < 37; ++i) batch[k++] = make_event(s, i);
            assert_int_equal(sonde_trace_writer_write_events(w, s, batch, k), SONDE_STATUS_SUCCESS);
        }
    }
    /* A later entry replaces an earlier one: the thread's final name and a method renamed. */
    th.name = "renamed";
    assert_int_equal(sonde_trace_writer_add_thread(w, &th), SONDE_STATUS_SUCCESS);
    th.shard = 1;
    th.os_thread_id = 1235;
    th.name = "worker";
    assert_int_equal(sonde_trace_writer_add_thread(w, &th), SONDE_STATUS_SUCCESS);
    sonde_memref_t refs[10];
    memset(refs, 0, sizeof refs);
    for (int i = 0; i < 10; ++i) refs[i].address = 0x1000 + 8u * (unsigned)i;
    assert_int_equal(sonde_trace_writer_write(w, 0, refs, 10), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);
}

static void check_events(sonde_trace_reader_t *r, uint32_t shard, uint64_t n) {
    sonde_trace_event_t buf[53];
    uint64_t i = 0;
    size_t got = 0;
    sonde_status_t st;
    while ((st = sonde_trace_reader_read_events(r, shard, buf, 53, &got)) == SONDE_STATUS_SUCCESS &&
           got > 0) {
        for (size_t k = 0; k < got; ++k, ++i) {
            const sonde_trace_event_t want = make_event(shard, i);
            assert_int_equal(buf[k].timestamp, want.timestamp);
            assert_int_equal(buf[k].kind, want.kind);
            assert_int_equal(buf[k].id, want.id);
            assert_int_equal(buf[k].value, want.value);
            assert_int_equal(buf[k].aux, want.aux);
            assert_int_equal(buf[k].shard, shard);
        }
    }
    assert_int_equal(st, SONDE_STATUS_SUCCESS);
    assert_int_equal(i, n);
}

static void test_layout(void **state) {
    (void)state;
    assert_int_equal(sizeof(sonde_trace_event_t), 32);
    assert_int_equal(offsetof(sonde_trace_event_t, value), 8);
    assert_int_equal(offsetof(sonde_trace_event_t, id), 16);
    assert_int_equal(offsetof(sonde_trace_event_t, shard), 20);
    assert_int_equal(offsetof(sonde_trace_event_t, kind), 24);
    assert_int_equal(offsetof(sonde_trace_event_t, aux), 28);
    assert_int_equal(sizeof(sonde_trace_method_t), SONDE_TRACE_METHOD_SIZE_1_2);
    assert_int_equal(sizeof(sonde_trace_module_t), SONDE_TRACE_MODULE_SIZE_1_2);
    assert_int_equal(sizeof(sonde_trace_thread_t), SONDE_TRACE_THREAD_SIZE_1_2);
    assert_int_equal(sizeof(sonde_trace_event_info_t), SONDE_TRACE_EVENT_INFO_SIZE_1_2);
}

static void test_round_trip(void **state) {
    (void)state;
    const char *path = tmp_path("events.sonde");
    write_events_trace(path, 1001);
    char err[256];
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_AUTO, err, sizeof err, &r),
                     SONDE_STATUS_SUCCESS);
    assert_string_equal(sonde_trace_reader_warnings(r), "");

    sonde_trace_event_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(sonde_trace_reader_event_info(r, &info), SONDE_STATUS_SUCCESS);
    assert_int_equal(info.num_shards, 2);
    assert_int_equal(info.num_events, 2002);
    assert_int_equal(info.num_methods, 6);
    assert_int_equal(info.num_modules, 1);
    assert_int_equal(info.num_strings, 2);
    assert_int_equal(info.num_threads, 2);
    assert_int_equal(info.first_timestamp, 5000);
    assert_int_equal(info.last_timestamp, 5000 + 1000 * 7 + 1);
    uint64_t count = 0;
    assert_int_equal(sonde_trace_reader_shard_events(r, 1, &count), SONDE_STATUS_SUCCESS);
    assert_int_equal(count, 1001);

    check_events(r, 0, 1001);
    check_events(r, 1, 1001);
    assert_int_equal(sonde_trace_reader_rewind_events(r, 1), SONDE_STATUS_SUCCESS);
    check_events(r, 1, 1001);

    /* The memrefs of the same file read as before. */
    uint32_t shards = 0;
    assert_int_equal(sonde_trace_reader_num_shards(r, &shards), SONDE_STATUS_SUCCESS);
    assert_int_equal(shards, 1);
    sonde_memref_t refs[20];
    size_t got = 0;
    assert_int_equal(sonde_trace_reader_read_shard(r, 0, refs, 20, &got), SONDE_STATUS_SUCCESS);
    assert_int_equal(got, 10);
    assert_int_equal(refs[9].address, 0x1000 + 72);

    sonde_trace_method_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    assert_int_equal(sonde_trace_reader_get_method(r, 3, &m), SONDE_STATUS_SUCCESS);
    assert_string_equal(m.name, "f3");
    assert_string_equal(m.class_name, "ns::K");
    assert_string_equal(m.full_name, "ns::K::f3(int)");
    assert_string_equal(m.mangled_name, "_Zmangled");
    assert_string_equal(m.source_file, "prog.c");
    assert_int_equal(m.source_line, 13);
    assert_int_equal(m.module, 0);
    assert_int_equal(m.address, 0x401030);
    assert_int_equal(m.size, 16);
    assert_int_equal(m.visibility, 1);
    assert_int_equal(sonde_trace_reader_get_method(r, 5, &m), SONDE_STATUS_SUCCESS);
    assert_string_equal(m.source_file, "");

    sonde_trace_module_t mod;
    memset(&mod, 0, sizeof mod);
    mod.struct_size = sizeof mod;
    assert_int_equal(sonde_trace_reader_get_module(r, 0, &mod), SONDE_STATUS_SUCCESS);
    assert_string_equal(mod.path, "/bin/prog");
    assert_string_equal(mod.name, "prog");
    assert_int_equal(mod.address, 0x400000);

    sonde_trace_thread_t th;
    memset(&th, 0, sizeof th);
    th.struct_size = sizeof th;
    assert_int_equal(sonde_trace_reader_get_thread(r, 0, &th), SONDE_STATUS_SUCCESS);
    assert_int_equal(th.os_thread_id, 1234);
    assert_string_equal(th.name, "renamed");
    assert_int_equal(sonde_trace_reader_get_thread(r, 1, &th), SONDE_STATUS_SUCCESS);
    assert_string_equal(th.name, "worker");

    const char *text = NULL;
    assert_int_equal(sonde_trace_reader_get_string(r, 1, &text), SONDE_STATUS_SUCCESS);
    assert_string_equal(text, "phase one");
    assert_int_equal(sonde_trace_reader_get_string(r, 0, &text), SONDE_STATUS_SUCCESS);
    assert_string_equal(text, "");
    sonde_trace_reader_close(r);
}

static void test_reader_statuses(void **state) {
    (void)state;
    const char *path = tmp_path("statuses.sonde");
    write_events_trace(path, 10);
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    sonde_trace_event_t ev[4];
    size_t got = 9;
    sonde_trace_event_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    sonde_trace_method_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    sonde_trace_module_t mod;
    memset(&mod, 0, sizeof mod);
    mod.struct_size = sizeof mod;
    sonde_trace_thread_t th;
    memset(&th, 0, sizeof th);
    th.struct_size = sizeof th;
    const char *text = NULL;
    uint64_t count = 0;

    /* NULL. */
    assert_int_equal(sonde_trace_reader_event_info(NULL, &info), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_event_info(r, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_read_events(NULL, 0, ev, 4, &got), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(got, 0);
    assert_int_equal(sonde_trace_reader_read_events(r, 0, NULL, 4, &got), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_read_events(r, 0, ev, 4, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_shard_events(r, 0, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_get_method(r, 0, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_get_module(NULL, 0, &mod), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_get_thread(r, 0, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_get_string(r, 0, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_rewind_events(NULL, 0), SONDE_STATUS_ERROR_NULL_POINTER);

    /* Wrong shard, index or id; max 0. */
    assert_int_equal(sonde_trace_reader_read_events(r, 2, ev, 4, &got), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_reader_read_events(r, 0, ev, 0, &got), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_reader_shard_events(r, 2, &count), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_reader_rewind_events(r, 7), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_reader_get_method(r, 6, &m), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_reader_get_module(r, 1, &mod), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_reader_get_thread(r, 2, &th), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_reader_get_string(r, 2, &text), SONDE_STATUS_ERROR_INVALID_ARGUMENT);

    /* The API function table: none in this trace. */
    sonde_trace_api_function_t fn;
    memset(&fn, 0, sizeof fn);
    fn.struct_size = sizeof fn;
    uint32_t num_api = 9;
    assert_int_equal(sonde_trace_reader_num_api_functions(r, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_num_api_functions(NULL, &num_api), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(num_api, 0);
    assert_int_equal(sonde_trace_reader_num_api_functions(r, &num_api), SONDE_STATUS_SUCCESS);
    assert_int_equal(num_api, 0);
    assert_int_equal(sonde_trace_reader_get_api_function(r, 0, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_reader_get_api_function(r, 0, &fn), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    fn.struct_size = SONDE_TRACE_API_FUNCTION_SIZE_1_2 - 1;
    assert_int_equal(sonde_trace_reader_get_api_function(r, 0, &fn), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    fn.struct_size = sizeof fn;

    /* Too small a struct_size: nothing is written. */
    info.struct_size = SONDE_TRACE_EVENT_INFO_SIZE_1_2 - 1;
    assert_int_equal(sonde_trace_reader_event_info(r, &info), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    m.struct_size = SONDE_TRACE_METHOD_SIZE_1_2 - 1;
    assert_int_equal(sonde_trace_reader_get_method(r, 0, &m), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    assert_null(m.name);
    mod.struct_size = SONDE_TRACE_MODULE_SIZE_1_2 - 1;
    assert_int_equal(sonde_trace_reader_get_module(r, 0, &mod), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    th.struct_size = SONDE_TRACE_THREAD_SIZE_1_2 - 1;
    assert_int_equal(sonde_trace_reader_get_thread(r, 0, &th), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);

    /* A larger struct than the library knows: its tail is left alone. */
    struct {
        sonde_trace_method_t m;
        uint64_t tail;
    } newer;
    memset(&newer, 0, sizeof newer);
    newer.m.struct_size = sizeof newer;
    newer.tail = 0xABCDu;
    assert_int_equal(sonde_trace_reader_get_method(r, 0, &newer.m), SONDE_STATUS_SUCCESS);
    assert_string_equal(newer.m.name, "f0");
    assert_int_equal(newer.tail, 0xABCDu);

    /* A closed reader is refused by every function of the events header. */
    assert_int_equal(sonde_trace_reader_close(r), SONDE_STATUS_SUCCESS);
    info.struct_size = sizeof info;
    m.struct_size = sizeof m;
    assert_int_equal(sonde_trace_reader_event_info(r, &info), SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(sonde_trace_reader_read_events(r, 0, ev, 4, &got), SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(sonde_trace_reader_shard_events(r, 0, &count), SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(sonde_trace_reader_rewind_events(r, 0), SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(sonde_trace_reader_get_method(r, 0, &m), SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(sonde_trace_reader_get_module(r, 0, &mod), SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(sonde_trace_reader_get_thread(r, 0, &th), SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(sonde_trace_reader_get_string(r, 0, &text), SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(sonde_trace_reader_num_api_functions(r, &num_api), SONDE_STATUS_ERROR_ILLEGAL_ID);
    assert_int_equal(sonde_trace_reader_get_api_function(r, 0, &fn), SONDE_STATUS_ERROR_ILLEGAL_ID);
}

/* A trace of format minor version 2 (what the library wrote before API calls) reads as before:
 * the header's minor version is set back to 2, its checksum recomputed. */
static void test_minor_version_2(void **state) {
    (void)state;
    const char *path = tmp_path("minor2.sonde");
    write_events_trace(path, 250);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    unsigned char h[64];
    assert_int_equal(fread(h, 1, sizeof h, f), sizeof h);
    assert_int_equal(h[28], 4); /* what this library writes */
    h[28] = 2;
    const uint64_t sum = craft_sum64(h, 56);
    for (int i = 0; i < 8; ++i) h[56 + i] = (unsigned char)(sum >> (8 * i));
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    assert_int_equal(fwrite(h, 1, sizeof h, f), sizeof h);
    assert_int_equal(fclose(f), 0);

    char error[256] = "";
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_SONDE, error, sizeof error, &r),
                     SONDE_STATUS_SUCCESS);
    check_events(r, 0, 250);
    check_events(r, 1, 250);
    sonde_trace_method_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    assert_int_equal(sonde_trace_reader_get_method(r, 0, &m), SONDE_STATUS_SUCCESS);
    assert_string_equal(m.name, "f0");
    uint32_t num_api = 9;
    assert_int_equal(sonde_trace_reader_num_api_functions(r, &num_api), SONDE_STATUS_SUCCESS);
    assert_int_equal(num_api, 0);
    assert_int_equal(sonde_trace_reader_close(r), SONDE_STATUS_SUCCESS);
}

/* API call events written through the public writer read back unchanged, in order. */
static void test_api_events(void **state) {
    (void)state;
    const char *path = tmp_path("api.sonde");
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(path, NULL, &w), SONDE_STATUS_SUCCESS);
    uint32_t text = 0;
    assert_int_equal(sonde_trace_writer_add_string(w, "hello", &text), SONDE_STATUS_SUCCESS);
    const sonde_trace_event_t in[4] = {
        {900, 800, 0, 0, SONDE_TRACE_EVENT_API_CALL, 1},
        {900, 0x1234, text, 0, SONDE_TRACE_EVENT_API_ARG, 0 | SONDE_TRACE_API_TEXT},
        {900, 5, 0, 0, SONDE_TRACE_EVENT_API_RETURN, 0},
        {900, 42, 0, 0, SONDE_TRACE_EVENT_API_END, 0},
    };
    assert_int_equal(sonde_trace_writer_write_events(w, 0, in, 4), SONDE_STATUS_SUCCESS);
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    sonde_trace_event_t out[8];
    size_t got = 0;
    assert_int_equal(sonde_trace_reader_read_events(r, 0, out, 8, &got), SONDE_STATUS_SUCCESS);
    assert_int_equal(got, 4);
    for (size_t i = 0; i < 4; ++i) {
        assert_int_equal(out[i].kind, in[i].kind);
        assert_int_equal(out[i].value, in[i].value);
        assert_int_equal(out[i].id, in[i].id);
        assert_int_equal(out[i].aux, in[i].aux);
        assert_int_equal(out[i].timestamp, 900);
    }
    const char *s = NULL;
    assert_int_equal(sonde_trace_reader_get_string(r, out[1].id, &s), SONDE_STATUS_SUCCESS);
    assert_string_equal(s, "hello");
    assert_int_equal(sonde_trace_reader_close(r), SONDE_STATUS_SUCCESS);
}

static void test_writer_statuses(void **state) {
    (void)state;
    sonde_trace_writer_t *w = NULL;
    assert_int_equal(sonde_trace_writer_create(tmp_path("w.sonde"), NULL, &w), SONDE_STATUS_SUCCESS);
    uint32_t id = 0;
    sonde_trace_event_t ev;
    memset(&ev, 0, sizeof ev);
    sonde_trace_method_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = SONDE_TRACE_METHOD_SIZE_1_2;
    assert_int_equal(sonde_trace_writer_add_string(NULL, "x", &id), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_writer_add_string(w, NULL, &id), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_writer_write_events(w, 0, NULL, 1), SONDE_STATUS_ERROR_NULL_POINTER);
    assert_int_equal(sonde_trace_writer_write_events(w, 65536, &ev, 1), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_writer_add_method(w, NULL), SONDE_STATUS_ERROR_NULL_POINTER);
    m.index = 1u << 24;
    assert_int_equal(sonde_trace_writer_add_method(w, &m), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    m.index = 0;
    m.struct_size = SONDE_TRACE_METHOD_SIZE_1_2 - 8;
    assert_int_equal(sonde_trace_writer_add_method(w, &m), SONDE_STATUS_ERROR_INCOMPATIBLE_ABI);
    struct {
        sonde_trace_method_t m;
        uint64_t tail;
    } newer;
    memset(&newer, 0, sizeof newer);
    newer.m.struct_size = sizeof newer;
    newer.tail = 1;
    assert_int_equal(sonde_trace_writer_add_method(w, &newer.m), SONDE_STATUS_ERROR_NOT_SUPPORTED);
    sonde_trace_thread_t th;
    memset(&th, 0, sizeof th);
    th.struct_size = sizeof th;
    th.shard = 70000;
    assert_int_equal(sonde_trace_writer_add_thread(w, &th), SONDE_STATUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(sonde_trace_writer_close(w), SONDE_STATUS_SUCCESS);

    /* An empty trace has no events and no tables but the empty string. */
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(tmp_path("w.sonde"), SONDE_TRACE_FORMAT_SONDE, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    sonde_trace_event_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(sonde_trace_reader_event_info(r, &info), SONDE_STATUS_SUCCESS);
    assert_int_equal(info.num_shards, 0);
    assert_int_equal(info.num_events, 0);
    assert_int_equal(info.num_strings, 1);
    sonde_trace_reader_close(r);
}

/* A file cut after some chunks (no index, no footer): the events of its complete chunks and the
 * tables written before them are recovered by scanning, with a warning. */
static void test_truncated_recovery(void **state) {
    (void)state;
    const char *full = tmp_path("full.sonde");
    write_events_trace(full, 1000);
    FILE *f = fopen(full, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *bytes = malloc((size_t)size);
    assert_int_equal(fread(bytes, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    /* Cut in the middle of the file: some event chunks survive, the rest are lost. */
    const char *cut = tmp_path("cut.sonde");
    f = fopen(cut, "wb");
    assert_non_null(f);
    fwrite(bytes, 1, (size_t)size / 2, f);
    fclose(f);
    free(bytes);
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(cut, SONDE_TRACE_FORMAT_AUTO, NULL, 0, &r),
                     SONDE_STATUS_SUCCESS);
    const char *warn = sonde_trace_reader_warnings(r);
    assert_non_null(strstr(warn, "no footer"));
    assert_non_null(strstr(warn, "event chunks"));
    sonde_trace_event_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(sonde_trace_reader_event_info(r, &info), SONDE_STATUS_SUCCESS);
    assert_true(info.num_events > 0 && info.num_events < 2000);
    assert_int_equal(info.num_events % 100, 0); /* whole chunks only */
    assert_int_equal(info.num_methods, 6);      /* the tables precede the first chunk */
    sonde_trace_method_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    assert_int_equal(sonde_trace_reader_get_method(r, 2, &m), SONDE_STATUS_SUCCESS);
    assert_string_equal(m.name, "f2");
    uint64_t n0 = 0;
    sonde_trace_reader_shard_events(r, 0, &n0);
    check_events(r, 0, n0);
    sonde_trace_reader_close(r);
}

/* An extension index with a valid checksum that lists one event chunk twice (entry 1 given
 * entry 0's offset) would count its events twice: the open is refused, naming the index. */
static void test_duplicate_event_entry(void **state) {
    (void)state;
    const char *path = tmp_path("dup.sonde");
    write_events_trace(path, 1000);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const size_t size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *d = malloc(size);
    assert_int_equal(fread(d, 1, size, f), size);
    const uint64_t ioff = craft_get_le(d + size - 32 + 8, 8);
    const uint64_t ext = craft_get_le(d + ioff + 16, 8);
    assert_true(ext > 64 && ext < ioff);
    assert_memory_equal(d + ext, "SONDEXIX", 8);
    const uint32_t nev = (uint32_t)craft_get_le(d + ext + 8, 4);
    const uint32_t ntab = (uint32_t)craft_get_le(d + ext + 16, 4);
    assert_true(nev >= 2);
    const size_t xsize = 24 + (size_t)nev * 32 + (size_t)ntab * 16 + 8;
    memcpy(d + ext + 24 + 32, d + ext + 24, 8); /* entry 1's offset := entry 0's */
    craft_le(d + ext + xsize - 8, craft_sum64(d + ext, xsize - 8), 8);
    fseek(f, 0, SEEK_SET);
    assert_int_equal(fwrite(d, 1, size, f), size);
    fclose(f);
    free(d);
    sonde_trace_reader_t *r = NULL;
    char err[512];
    assert_int_equal(sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_AUTO, err, sizeof err, &r),
                     SONDE_STATUS_ERROR_FORMAT);
    assert_null(r);
    assert_non_null(strstr(err, "extension index"));
}

static int setup(void **state) {
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/sonde-events-XXXXXX", tmp ? tmp : "/tmp");
    return mkdtemp(g_dir) == NULL ? -1 : 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_reader_statuses),
        cmocka_unit_test(test_writer_statuses),
        cmocka_unit_test(test_truncated_recovery),
        cmocka_unit_test(test_duplicate_event_entry),
        cmocka_unit_test(test_minor_version_2),
        cmocka_unit_test(test_api_events),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
