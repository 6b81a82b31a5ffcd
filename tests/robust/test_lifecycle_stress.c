/* Lifecycle stress (suite 'stress': also run under ThreadSanitizer and AddressSanitizer).
 * For SONDE_STRESS_SECONDS (default 3) seconds:
 *   - producer threads emit (emit, emit_timestamped, reserve/commit) into whichever buffers
 *     are live, tagging every record with its buffer's instance number;
 *   - a spawner creates short-lived producer threads whose exit delivers their records;
 *   - two controllers create sessions and buffers (LOSSLESS and DISCARD, some with an interval
 *     flush), start, stop and flush them, destroy buffers and sessions gracefully (producers
 *     kept out first, then flush, stats, destroy) or abruptly (while producers emit), load a
 *     client plugin and register linked-in clients, and finalize and re-initialise the
 *     runtime.
 * Then every instance is accounted for exactly: each record a producer was told was accepted
 * reached its own buffer's callback exactly once and no other record did; for graceful
 * destroys, sonde_get_buffer_stats before the destroy agrees with the producers and the
 * callback (emitted == accepted + full == delivered + dropped). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <sonde/sonde.h>

#define MAX_INST 32768
#define LIVE 8
#define PRODUCERS 4
#define CONTROLLERS 2
#define MAX_CLIENT_LOADS 4

typedef struct inst_t {
    uint32_t index;
    atomic_uint_fast64_t session, buffer; /* handles */
    atomic_int open;                      /* producers may use it */
    atomic_int users;                     /* producers between their open check and done */
    atomic_uint_fast64_t accepted, full;  /* what producers were told */
    pthread_mutex_t mu;                   /* the callback's counters */
    uint64_t seen, foreign, bad_spans;
    /* graceful destroy: the counters read before destroying it */
    int have_stats;
    sonde_buffer_stats_t stats;
    uint64_t seen_at_stats;
} inst_t;

static inst_t g_inst[MAX_INST];
static atomic_uint g_next_inst;
static _Atomic(inst_t *) g_live[LIVE];
static atomic_int g_stop;
static atomic_uint_fast64_t g_problems;
static char g_problem[256];
static pthread_mutex_t g_problem_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_live_mu = PTHREAD_MUTEX_INITIALIZER; /* controllers' claims on slots */

static void problem(const char *what, sonde_status_t st) {
    if (atomic_fetch_add(&g_problems, 1) == 0) {
        pthread_mutex_lock(&g_problem_mu);
        snprintf(g_problem, sizeof g_problem, "%s: %s", what, sonde_status_name(st));
        pthread_mutex_unlock(&g_problem_mu);
    }
}

/* st must be one of the n listed statuses (SUCCESS is always allowed). */
static sonde_status_t expect(const char *what, sonde_status_t st, int n, ...) {
    if (st == SONDE_STATUS_SUCCESS) return st;
    va_list ap;
    va_start(ap, n);
    int allowed = 0;
    for (int i = 0; i < n; ++i)
        if ((sonde_status_t)va_arg(ap, int) == st) allowed = 1;
    va_end(ap);
    if (!allowed) problem(what, st);
    return st;
}

#define NOT_INIT SONDE_STATUS_ERROR_NOT_INITIALIZED
#define NO_SESSION SONDE_STATUS_ERROR_SESSION_NOT_FOUND
#define NO_BUFFER SONDE_STATUS_ERROR_BUFFER_NOT_FOUND

typedef struct payload_t {
    uint64_t inst;
    uint64_t seq;
} payload_t;

static void inst_cb(const sonde_record_header_t *begin, const sonde_record_header_t *end,
                    sonde_session_id_t s, sonde_buffer_id_t b, void *user) {
    inst_t *in = (inst_t *)user;
    pthread_mutex_lock(&in->mu);
    for (const sonde_record_header_t *r = begin; r < end;) {
        const sonde_record_header_t *next = NULL;
        if (sonde_next_record(r, &next, s, b) != SONDE_STATUS_SUCCESS) {
            in->bad_spans++;
            break;
        }
        if (sonde_record_kind(r) == SONDE_RECORD_KIND_USER) {
            payload_t p;
            memcpy(&p, sonde_record_payload(r, NULL), sizeof p);
            if (p.inst == in->index)
                in->seen++;
            else
                in->foreign++;
        }
        r = next;
    }
    pthread_mutex_unlock(&in->mu);
}

static uint64_t seconds(void) {
    const char *s = getenv("SONDE_STRESS_SECONDS");
    const uint64_t v = s != NULL ? strtoull(s, NULL, 10) : 3;
    return v == 0 ? 1 : v;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- producers ---------------------------------------------------------------------------- */

/* One record into a live instance, by one of the three producer calls. */
static void produce_one(unsigned *seed, uint64_t seq) {
    inst_t *in = atomic_load(&g_live[rand_r(seed) % LIVE]);
    if (in == NULL) return;
    atomic_fetch_add(&in->users, 1);
    if (!atomic_load(&in->open)) {
        atomic_fetch_sub(&in->users, 1);
        return;
    }
    const sonde_buffer_id_t b = {atomic_load(&in->buffer)};
    const payload_t p = {in->index, seq};
    sonde_status_t st;
    const int how = rand_r(seed) % 8;
    if (how < 5) {
        st = sonde_emit(b, SONDE_RECORD_KIND_USER, &p, sizeof p);
    } else if (how < 7) {
        st = sonde_emit_timestamped(b, SONDE_RECORD_KIND_USER, &p, sizeof p);
    } else {
        void *where = NULL;
        st = sonde_reserve(b, SONDE_RECORD_KIND_USER, sizeof p, &where);
        if (st == SONDE_STATUS_SUCCESS) {
            memcpy(where, &p, sizeof p);
            st = sonde_commit(b);
            if (st != SONDE_STATUS_SUCCESS) problem("commit after a successful reserve", st);
        }
    }
    if (st == SONDE_STATUS_SUCCESS)
        atomic_fetch_add(&in->accepted, 1);
    else if (st == SONDE_STATUS_ERROR_BUFFER_FULL)
        atomic_fetch_add(&in->full, 1);
    else
        expect("emit", st, 3, SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE, NO_BUFFER, NOT_INIT);
    atomic_fetch_sub(&in->users, 1);
}

static void *producer(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
    uint64_t seq = 0;
    while (!atomic_load(&g_stop)) {
        produce_one(&seed, seq++);
        if ((seq & 127) == 0) usleep(50);
    }
    return NULL;
}

static void *short_producer(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (uint64_t i = 0; i < 50; ++i) produce_one(&seed, i);
    return NULL; /* the exit delivers what it emitted */
}

static void *spawner(void *arg) {
    (void)arg;
    uintptr_t n = 1000;
    while (!atomic_load(&g_stop)) {
        pthread_t t[3];
        int made = 0;
        for (int i = 0; i < 3; ++i)
            if (pthread_create(&t[made], NULL, short_producer, (void *)n++) == 0) ++made;
        for (int i = 0; i < made; ++i) pthread_join(t[i], NULL);
        usleep(200);
    }
    return NULL;
}

/* ---- controllers -------------------------------------------------------------------------- */

static void create_instance(unsigned *seed) {
    pthread_mutex_lock(&g_live_mu);
    int slot = -1;
    for (int i = 0; i < LIVE && slot < 0; ++i)
        if (atomic_load(&g_live[i]) == NULL) slot = i;
    if (slot < 0 || atomic_load(&g_next_inst) >= MAX_INST) {
        pthread_mutex_unlock(&g_live_mu);
        return;
    }
    inst_t *in = &g_inst[atomic_fetch_add(&g_next_inst, 1)];
    sonde_session_id_t s;
    if (expect("create_session", sonde_create_session(NULL, &s), 1, NOT_INIT) != SONDE_STATUS_SUCCESS) {
        pthread_mutex_unlock(&g_live_mu);
        return;
    }
    const int discard = rand_r(seed) % 2;
    const int interval = rand_r(seed) % 3 == 0;
    const sonde_buffer_property_t props[4] = {
        {SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 4096},
        {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0,
         discard ? SONDE_BUFFER_POLICY_DISCARD : SONDE_BUFFER_POLICY_LOSSLESS},
        {SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT, 0, 2000000},
        {SONDE_BUFFER_PROPERTY_KIND_INTERVAL_FLUSH, 0, 1000000}};
    sonde_buffer_id_t b;
    /* DISCARD buffers are small: with more producing threads than chunks they drop. */
    const uint64_t size = (discard ? 4 : 16) * 4096;
    if (expect("create_buffer", sonde_create_buffer(s, size, inst_cb, in, props, interval ? 4 : 3, &b), 2,
               NOT_INIT, NO_SESSION) != SONDE_STATUS_SUCCESS) {
        expect("destroy_session", sonde_destroy_session(s), 2, NOT_INIT, NO_SESSION);
        pthread_mutex_unlock(&g_live_mu);
        return;
    }
    atomic_store(&in->session, s.handle);
    atomic_store(&in->buffer, b.handle);
    atomic_store(&in->open, 1);
    atomic_store(&g_live[slot], in);
    pthread_mutex_unlock(&g_live_mu);
    expect("start_session", sonde_start_session(s), 4, NOT_INIT, NO_SESSION,
           SONDE_STATUS_ERROR_SESSION_ACTIVE, SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE);
}

/* Takes an instance out of the live set (NULL if the slot is empty). */
static inst_t *take(int slot) {
    pthread_mutex_lock(&g_live_mu);
    inst_t *in = atomic_load(&g_live[slot]);
    atomic_store(&g_live[slot], NULL);
    pthread_mutex_unlock(&g_live_mu);
    return in;
}

/* Keeps producers out, then flush, stats and destroy: the stats are final. */
static void destroy_gracefully(inst_t *in) {
    atomic_store(&in->open, 0);
    while (atomic_load(&in->users) != 0) sched_yield();
    const sonde_session_id_t s = {atomic_load(&in->session)};
    const sonde_buffer_id_t b = {atomic_load(&in->buffer)};
    if (expect("flush (graceful)", sonde_flush_data(s, b), 3, NOT_INIT, NO_SESSION, NO_BUFFER) ==
        SONDE_STATUS_SUCCESS) {
        sonde_buffer_stats_t st;
        memset(&st, 0, sizeof st);
        st.struct_size = sizeof st;
        if (expect("stats", sonde_get_buffer_stats(s, b, &st), 3, NOT_INIT, NO_SESSION, NO_BUFFER) ==
            SONDE_STATUS_SUCCESS) {
            pthread_mutex_lock(&in->mu);
            in->seen_at_stats = in->seen;
            pthread_mutex_unlock(&in->mu);
            in->stats = st;
            in->have_stats = 1;
        }
    }
    expect("destroy_buffer (graceful)", sonde_destroy_buffer(s, b), 3, NOT_INIT, NO_SESSION, NO_BUFFER);
    expect("destroy_session (graceful)", sonde_destroy_session(s), 2, NOT_INIT, NO_SESSION);
}

/* Destroys while producers may be emitting into it. */
static void destroy_abruptly(inst_t *in, int whole_session) {
    const sonde_session_id_t s = {atomic_load(&in->session)};
    const sonde_buffer_id_t b = {atomic_load(&in->buffer)};
    if (!whole_session)
        expect("destroy_buffer (abrupt)", sonde_destroy_buffer(s, b), 3, NOT_INIT, NO_SESSION, NO_BUFFER);
    expect("destroy_session (abrupt)", sonde_destroy_session(s), 2, NOT_INIT, NO_SESSION);
    atomic_store(&in->open, 0);
}

static atomic_int g_client_loads;
static atomic_uint_fast64_t g_session_starts; /* seen by the linked-in clients */

static void on_session_start(const sonde_event_data_t *data, void *user_data) {
    (void)data;
    (void)user_data;
    atomic_fetch_add(&g_session_starts, 1);
}

static sonde_status_t counting_client(const sonde_api_t *api, sonde_client_id_t id, const char *options) {
    (void)options;
    return api->register_event(id, SONDE_EVENT_SESSION_START, 0, on_session_start, NULL);
}

/* The first time plugin_ok from tests/client (dlopen'ed; once, since its options live in one
 * static buffer that a second instantiation would overwrite under its running observer), then
 * clients linked into this program. */
static void load_client(void) {
    const int n = atomic_fetch_add(&g_client_loads, 1);
    if (n >= MAX_CLIENT_LOADS) return;
    sonde_client_id_t id;
    if (n == 0) {
        const char *dir = getenv("SONDE_TEST_PLUGIN_DIR");
        if (dir == NULL) return;
        char path[1024], out[64];
        snprintf(path, sizeof path, "%s/plugin_ok.so", dir);
        snprintf(out, sizeof out, "/tmp/sonde-stress-client-%d.txt", (int)getpid());
        expect("load_client", sonde_load_client(path, out, &id), 0);
    } else {
        expect("register_client", sonde_register_client(counting_client, NULL, &id), 0);
    }
}

static void *controller(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg * 104729u + 3;
    while (!atomic_load(&g_stop)) {
        const int op = rand_r(&seed) % 100;
        const int slot = rand_r(&seed) % LIVE;
        inst_t *peek = atomic_load(&g_live[slot]);
        if (op < 25) {
            create_instance(&seed);
        } else if (op < 40 && peek != NULL) {
            const sonde_session_id_t s = {atomic_load(&peek->session)};
            expect("stop_session", sonde_stop_session(s), 3, NOT_INIT, NO_SESSION,
                   SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE);
            usleep(rand_r(&seed) % 100);
            expect("start_session", sonde_start_session(s), 3, NOT_INIT, NO_SESSION,
                   SONDE_STATUS_ERROR_SESSION_ACTIVE);
        } else if (op < 60 && peek != NULL) {
            const sonde_session_id_t s = {atomic_load(&peek->session)};
            const sonde_buffer_id_t b = {atomic_load(&peek->buffer)};
            expect("flush", sonde_flush_data(s, b), 3, NOT_INIT, NO_SESSION, NO_BUFFER);
        } else if (op < 75) {
            inst_t *in = take(slot);
            if (in != NULL) destroy_gracefully(in);
        } else if (op < 88) {
            inst_t *in = take(slot);
            if (in != NULL) destroy_abruptly(in, op < 82);
        } else if (op < 90) {
            load_client();
        } else if (op < 92) {
            /* Finalize (racing everything) and initialise again. */
            expect("finalize", sonde_finalize(), 1, NOT_INIT);
            usleep(rand_r(&seed) % 200);
            expect("initialize", sonde_initialize(), 1, SONDE_STATUS_ERROR_ALREADY_INITIALIZED);
        } else if (!sonde_is_initialized()) {
            expect("initialize", sonde_initialize(), 1, SONDE_STATUS_ERROR_ALREADY_INITIALIZED);
        }
        usleep(rand_r(&seed) % 300);
    }
    return NULL;
}

static void test_lifecycle_stress(void **state) {
    (void)state;
    for (uint32_t i = 0; i < MAX_INST; ++i) {
        g_inst[i].index = i;
        pthread_mutex_init(&g_inst[i].mu, NULL);
    }
    assert_int_equal(sonde_initialize(), SONDE_STATUS_SUCCESS);
    pthread_t prod[PRODUCERS], ctl[CONTROLLERS], spawn;
    for (uintptr_t i = 0; i < PRODUCERS; ++i)
        assert_int_equal(pthread_create(&prod[i], NULL, producer, (void *)i), 0);
    for (uintptr_t i = 0; i < CONTROLLERS; ++i)
        assert_int_equal(pthread_create(&ctl[i], NULL, controller, (void *)i), 0);
    assert_int_equal(pthread_create(&spawn, NULL, spawner, NULL), 0);

    const double end = now_s() + (double)seconds();
    while (now_s() < end && atomic_load(&g_problems) == 0) usleep(10000);
    atomic_store(&g_stop, 1);
    for (int i = 0; i < PRODUCERS; ++i) pthread_join(prod[i], NULL);
    for (int i = 0; i < CONTROLLERS; ++i) pthread_join(ctl[i], NULL);
    pthread_join(spawn, NULL);

    if (!sonde_is_initialized()) expect("initialize", sonde_initialize(), 0);
    for (int i = 0; i < LIVE; ++i) {
        inst_t *in = take(i);
        if (in != NULL) destroy_gracefully(in);
    }
    expect("finalize (end)", sonde_finalize(), 0);
    if (atomic_load(&g_problems) != 0)
        fail_msg("%llu unexpected answers, first: %s", (unsigned long long)atomic_load(&g_problems),
                 g_problem);

    const uint32_t n = atomic_load(&g_next_inst);
    uint64_t accepted = 0, full = 0, graceful = 0;
    for (uint32_t i = 0; i < n; ++i) {
        inst_t *in = &g_inst[i];
        const uint64_t acc = atomic_load(&in->accepted), fl = atomic_load(&in->full);
        accepted += acc;
        full += fl;
        if (in->foreign != 0 || in->bad_spans != 0)
            fail_msg("instance %u: %llu foreign records, %llu bad spans", i, (unsigned long long)in->foreign,
                     (unsigned long long)in->bad_spans);
        if (in->seen != acc)
            fail_msg("instance %u: %llu records accepted, %llu delivered to its callback", i,
                     (unsigned long long)acc, (unsigned long long)in->seen);
        if (in->have_stats) {
            ++graceful;
            const sonde_buffer_stats_t *st = &in->stats;
            if (st->records_emitted != acc + fl || st->records_dropped != fl ||
                st->records_emitted != st->records_delivered + st->records_dropped ||
                st->records_delivered != in->seen_at_stats || in->seen_at_stats != acc)
                fail_msg(
                    "instance %u: stats emitted %llu delivered %llu dropped %llu; producers %llu accepted "
                    "%llu full; callback %llu",
                    i, (unsigned long long)st->records_emitted, (unsigned long long)st->records_delivered,
                    (unsigned long long)st->records_dropped, (unsigned long long)acc, (unsigned long long)fl,
                    (unsigned long long)in->seen_at_stats);
        }
    }
    print_message(
        "%u buffers (%llu destroyed gracefully), %llu records accepted, %llu dropped, %d clients, "
        "%llu session starts seen by them\n",
        n, (unsigned long long)graceful, (unsigned long long)accepted, (unsigned long long)full,
        atomic_load(&g_client_loads) < MAX_CLIENT_LOADS ? atomic_load(&g_client_loads) : MAX_CLIENT_LOADS,
        (unsigned long long)atomic_load(&g_session_starts));
    assert_true(n > 0);
    assert_true(accepted > 0);
    for (uint32_t i = 0; i < MAX_INST; ++i) pthread_mutex_destroy(&g_inst[i].mu);
    char out[64];
    snprintf(out, sizeof out, "/tmp/sonde-stress-client-%d.txt", (int)getpid());
    unlink(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifecycle_stress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
