/* An old client keeps working: a program written against the 1.0 layouts, with its own copies
 * of the structs and no Sonde header, loads libsonde.so.1 with dlopen and calls through dlsym.
 * A newer client's larger struct with a zero tail is accepted; a non-zero tail is refused. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct { uint64_t handle; } id_v10;
typedef struct { uint32_t struct_size, flags; const char *name; } session_props_v10;
typedef struct {
    uint32_t struct_size, reserved;
    uint64_t emitted, delivered, dropped, bytes, callbacks, failures;
} stats_v10;
typedef struct { uint32_t size; uint16_t kind, flags; } header_v10;
typedef void (*cb_v10)(const header_v10 *, const header_v10 *, id_v10, id_v10, void *);

static void *lib;
/* POSIX idiom: dlsym returns void *; copy it into the function pointer. */
#define LOAD(var, name) do { void *p_ = dlsym(lib, name); memcpy(&(var), &p_, sizeof(var)); } while (0)

static void count_cb(const header_v10 *b, const header_v10 *e, id_v10 s, id_v10 bu, void *u) {
    (void)s; (void)bu;
    for (const header_v10 *r = b; r < e; r = (const header_v10 *)((const char *)r + r->size))
        if (r->kind >= 0x8000) ++*(int *)u;
}

static void test_old_client(void **state) {
    (void)state;
    const char *path = getenv("SONDE_LIBRARY");
    lib = dlopen(path ? path : "libsonde.so.1", RTLD_NOW | RTLD_LOCAL);
    assert_non_null(lib);
    uint32_t (*init)(void);
    LOAD(init, "sonde_initialize");
    uint32_t (*fini)(void);
    LOAD(fini, "sonde_finalize");
    uint32_t (*create)(const session_props_v10 *, id_v10 *);
    LOAD(create, "sonde_create_session");
    uint32_t (*start)(id_v10);
    LOAD(start, "sonde_start_session");
    uint32_t (*stop)(id_v10);
    LOAD(stop, "sonde_stop_session");
    uint32_t (*create_buffer)(id_v10, uint64_t, cb_v10, void *, const void *, uint32_t, id_v10 *);
    LOAD(create_buffer, "sonde_create_buffer");
    uint32_t (*emit)(id_v10, uint32_t, const void *, uint32_t);
    LOAD(emit, "sonde_emit");
    uint32_t (*stats)(id_v10, id_v10, stats_v10 *);
    LOAD(stats, "sonde_get_buffer_stats");
    uint32_t (*version)(uint32_t *, uint32_t *, uint32_t *);
    LOAD(version, "sonde_get_version");
    assert_true(init && fini && create && start && stop && create_buffer && emit && stats && version);
    uint32_t major = 0;
    version(&major, NULL, NULL);
    assert_int_equal(major, 1);

    assert_int_equal(init(), 0);
    session_props_v10 props = {sizeof props, 0, "old-client"};
    id_v10 s, b;
    assert_int_equal(create(&props, &s), 0);
    int count = 0;
    assert_int_equal(create_buffer(s, 1 << 16, count_cb, &count, NULL, 0, &b), 0);
    assert_int_equal(start(s), 0);
    uint64_t v = 7;
    for (int i = 0; i < 100; ++i) assert_int_equal(emit(b, 0x8000, &v, 8), 0);
    assert_int_equal(stop(s), 0);
    assert_int_equal(count, 100);
    stats_v10 st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    assert_int_equal(stats(s, b, &st), 0);
    assert_int_equal(st.emitted, 100);
    assert_int_equal(st.delivered, 100);

    /* A newer client: larger struct. Zero tail accepted, non-zero tail NOT_SUPPORTED (17). */
    struct { session_props_v10 v10; uint64_t future; } newer;
    memset(&newer, 0, sizeof newer);
    newer.v10.struct_size = sizeof newer;
    id_v10 s2;
    assert_int_equal(create(&newer.v10, &s2), 0);
    newer.future = 1;
    assert_int_equal(create(&newer.v10, &s2), 17);
    /* Older than 1.0: INCOMPATIBLE_ABI (19). */
    props.struct_size = 8;
    assert_int_equal(create(&props, &s2), 19);
    assert_int_equal(fini(), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_old_client)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
