/*
 * call_counter: a Sonde client that counts calls per method and, at shutdown, writes one line
 * per method, "CALLS<TAB>NAME" (the demangled name without parameters, Class::method for C++),
 * most called first, to the file given by its option out=PATH (stdout without it).
 *
 *   sonde run --client ./call_counter.so=out=calls.txt -- ./program
 *
 * Observers run on the program's threads, several at once. Each thread counts in its own array
 * indexed by the dense method index (no atomic read-modify-write on the hot path, the profile
 * array idea), found by the dense thread index the event carries (no thread-local lookup, which
 * costs a __tls_get_addr call in a loaded plugin); the arrays are made under a mutex when a
 * thread first counts, and summed at shutdown. Counters are atomics written with plain relaxed
 * loads and stores, so the sum may read them while their thread runs.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/client.h>

#define MAX_METHODS (1u << 20)
#define MAX_THREADS 65536u /* Sonde's limit: thread indexes are below it */

static const sonde_api_t *api;
static sonde_client_id_t self;
static char out_path[4096];
static _Atomic uint64_t *handles; /* the id of each counted method, for the report */
static _Atomic uint64_t overflow;

/* Per-thread counters: one array per thread that counted, linked into a list. */
struct thread_counts {
    struct thread_counts *next;
    _Atomic uint64_t counts[MAX_METHODS];
};
static pthread_mutex_t list_mu = PTHREAD_MUTEX_INITIALIZER;
static struct thread_counts *all_threads;
static struct thread_counts *_Atomic *by_thread; /* MAX_THREADS entries, by thread index */

static struct thread_counts *new_thread_counts(uint32_t thread) {
    struct thread_counts *tc = calloc(1, sizeof *tc);
    if (tc == NULL) return NULL;
    pthread_mutex_lock(&list_mu);
    tc->next = all_threads;
    all_threads = tc;
    pthread_mutex_unlock(&list_mu);
    atomic_store_explicit(&by_thread[thread], tc, memory_order_release);
    return tc;
}

/* What the hot path leaves out of line: a thread's first count, a method beyond the array. */
static __attribute__((noinline)) void count_slow(const sonde_event_data_t *d, uint32_t i, uint32_t thread) {
    struct thread_counts *tc = atomic_load_explicit(&by_thread[thread], memory_order_relaxed);
    if (tc == NULL) tc = new_thread_counts(thread);
    if (i >= MAX_METHODS || tc == NULL) {
        atomic_fetch_add_explicit(&overflow, 1, memory_order_relaxed);
        return;
    }
    const uint64_t c = atomic_load_explicit(&tc->counts[i], memory_order_relaxed);
    atomic_store_explicit(&tc->counts[i], c + 1, memory_order_relaxed);
    if (c == 0) atomic_store_explicit(&handles[i], d->method.handle, memory_order_relaxed);
}

/* The hot path: a leaf (no call, so no register to save) but for the rare cases above. */
static void on_enter(const sonde_event_data_t *d, void *user_data) {
    (void)user_data;
    const uint32_t i = sonde_method_index(d->method);
    const uint32_t thread = sonde_thread_index(d->thread) % MAX_THREADS;
    struct thread_counts *tc = atomic_load_explicit(&by_thread[thread], memory_order_relaxed);
    if (tc == NULL || i >= MAX_METHODS) {
        count_slow(d, i, thread);
        return;
    }
    const uint64_t c = atomic_load_explicit(&tc->counts[i], memory_order_relaxed);
    atomic_store_explicit(&tc->counts[i], c + 1, memory_order_relaxed);
    if (c == 0) atomic_store_explicit(&handles[i], d->method.handle, memory_order_relaxed);
}

struct row {
    uint64_t calls;
    char name[600];
};

static int by_calls(const void *a, const void *b) {
    const struct row *x = a, *y = b;
    if (x->calls != y->calls) return x->calls < y->calls ? 1 : -1;
    return strcmp(x->name, y->name);
}

static void method_name(sonde_method_id_t id, char *out, size_t size) {
    char name[256], cls[256];
    sonde_method_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.name.entries = name;
    info.name.size = sizeof name;
    info.class_name.entries = cls;
    info.class_name.size = sizeof cls;
    const sonde_status_t st =
        api->get_method_info(self, id, SONDE_DATA_NAME | SONDE_DATA_CLASS_NAME | SONDE_DATA_ADDRESS, &info);
    if ((st == SONDE_STATUS_SUCCESS || st == SONDE_STATUS_PARTIAL_INFO) &&
        (info.valid_items & SONDE_DATA_NAME)) {
        if ((info.valid_items & SONDE_DATA_CLASS_NAME) && cls[0] != '\0')
            snprintf(out, size, "%s::%s", cls, name);
        else
            snprintf(out, size, "%s", name);
    } else {
        snprintf(out, size, "0x%llx", (unsigned long long)info.address);
    }
}

static void on_shutdown(const sonde_event_data_t *d, void *user_data) {
    (void)d;
    (void)user_data;
    FILE *f = out_path[0] != '\0' ? fopen(out_path, "w") : stdout;
    if (f == NULL) {
        perror(out_path);
        return;
    }
    struct row *rows = NULL;
    size_t n = 0, cap = 0;
    pthread_mutex_lock(&list_mu);
    struct thread_counts *list = all_threads;
    pthread_mutex_unlock(&list_mu);
    for (uint32_t i = 0; i < MAX_METHODS; ++i) {
        uint64_t c = 0;
        for (struct thread_counts *tc = list; tc != NULL; tc = tc->next)
            c += atomic_load_explicit(&tc->counts[i], memory_order_relaxed);
        if (c == 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            struct row *grown = realloc(rows, cap * sizeof *rows);
            if (grown == NULL) break;
            rows = grown;
        }
        rows[n].calls = c;
        sonde_method_id_t id = {atomic_load_explicit(&handles[i], memory_order_relaxed)};
        method_name(id, rows[n].name, sizeof rows[n].name);
        ++n;
    }
    qsort(rows, n, sizeof *rows, by_calls);
    for (size_t i = 0; i < n; ++i) fprintf(f, "%llu\t%s\n", (unsigned long long)rows[i].calls, rows[i].name);
    if (atomic_load(&overflow) != 0)
        fprintf(f, "%llu\t[more than %u methods]\n", (unsigned long long)atomic_load(&overflow), MAX_METHODS);
    free(rows);
    if (f != stdout)
        fclose(f);
    else
        fflush(f);
}

SONDE_EXPORT sonde_status_t sonde_client_instantiate(const sonde_api_t *a, sonde_client_id_t id,
                                                     const char *options) {
    if (a->abi_version < 1) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    api = a;
    self = id;
    if (strncmp(options, "out=", 4) == 0)
        snprintf(out_path, sizeof out_path, "%s", options + 4);
    else if (options[0] != '\0') {
        a->set_message(id, "unknown option (expected out=PATH)");
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    handles = calloc(MAX_METHODS, sizeof *handles);
    by_thread = calloc(MAX_THREADS, sizeof *by_thread);
    if (handles == NULL || by_thread == NULL) return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    sonde_status_t st = a->register_event(id, SONDE_EVENT_METHOD_ENTER,
                                          SONDE_DATA_METHOD_ID | SONDE_DATA_THREAD_ID, on_enter, NULL);
    if (st == SONDE_STATUS_SUCCESS) st = a->register_event(id, SONDE_EVENT_SHUTDOWN, 0, on_shutdown, NULL);
    return st;
}
