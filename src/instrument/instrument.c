/*
 * libsonde-instrument.so: turns a program built with -finstrument-functions into a source of
 * Sonde events without a source change, preloaded (LD_PRELOAD, what `sonde run` does) or linked.
 *
 *  - __cyg_profile_func_enter/exit forward to sonde_method_enter/leave (the hot path lives in
 *    libsonde; these two are marked no_instrument_function so they never report themselves).
 *  - A constructor initialises Sonde (which loads SONDE_CLIENTS) unless the program already did;
 *    a destructor finalises it at exit if the constructor initialised it, so clients see
 *    SHUTDOWN after the program's own destructors.
 *  - pthread_create is wrapped so each new thread is registered (THREAD_START) before its start
 *    routine runs; its end is reported by libsonde at thread exit.
 *  - dlopen and dlclose are wrapped so module loads and unloads are reported
 *    (sonde_refresh_modules rescans dl_iterate_phdr after each).
 *
 * Threads: the wrappers keep no state of their own beyond the real functions' addresses,
 * resolved once with dlsym(RTLD_NEXT) (races resolve to the same value).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/sonde.h>

#define HOOK __attribute__((visibility("default"), no_instrument_function))

static int g_we_initialised;

/* The next definition of `name` after this library, as a function pointer stored in *out. */
__attribute__((no_instrument_function)) static void next_fn(const char *name, void *out) {
    void *p = dlsym(RTLD_NEXT, name);
    memcpy(out, &p, sizeof p);
}

HOOK void __cyg_profile_func_enter(void *fn, void *call_site) { sonde_method_enter(fn, call_site); }

HOOK void __cyg_profile_func_exit(void *fn, void *call_site) { sonde_method_leave(fn, call_site); }

__attribute__((constructor, no_instrument_function)) static void sonde_instrument_init(void) {
    if (!sonde_is_initialized() && sonde_initialize() == SONDE_STATUS_SUCCESS) g_we_initialised = 1;
}

__attribute__((destructor, no_instrument_function)) static void sonde_instrument_fini(void) {
    if (g_we_initialised && sonde_is_initialized()) sonde_finalize();
}

struct start {
    void *(*routine)(void *);
    void *arg;
};

__attribute__((no_instrument_function)) static void *start_thread(void *p) {
    struct start s = *(struct start *)p;
    free(p);
    sonde_register_thread(NULL);
    return s.routine(s.arg);
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

HOOK int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*routine)(void *), void *arg) {
    static create_fn cached;
    create_fn real = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (real == NULL) {
        next_fn("pthread_create", &real);
        __atomic_store_n(&cached, real, __ATOMIC_RELEASE);
    }
    if (real == NULL) return 11; /* EAGAIN */
    struct start *s = malloc(sizeof *s);
    if (s == NULL) return real(thread, attr, routine, arg);
    s->routine = routine;
    s->arg = arg;
    const int rc = real(thread, attr, start_thread, s);
    if (rc != 0) free(s);
    return rc;
}

typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);

HOOK void *dlopen(const char *file, int mode) {
    static dlopen_fn cached;
    dlopen_fn real = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (real == NULL) {
        next_fn("dlopen", &real);
        __atomic_store_n(&cached, real, __ATOMIC_RELEASE);
    }
    if (real == NULL) return NULL;
    void *h = real(file, mode);
    if (h != NULL) sonde_refresh_modules();
    return h;
}

HOOK int dlclose(void *handle) {
    static dlclose_fn cached;
    dlclose_fn real = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (real == NULL) {
        next_fn("dlclose", &real);
        __atomic_store_n(&cached, real, __ATOMIC_RELEASE);
    }
    if (real == NULL) return -1;
    const int rc = real(handle);
    if (rc == 0) sonde_refresh_modules();
    return rc;
}
