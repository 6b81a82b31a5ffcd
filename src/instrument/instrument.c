/*
 * libsonde-instrument.so: turns a program built with -finstrument-functions into a source of
 * Sonde events without a source change, preloaded (LD_PRELOAD, what `sonde run` does) or linked.
 *
 *  - __cyg_profile_func_enter/exit resolve to sonde_method_enter/leave (the hot path lives in
 *    libsonde; the program calls it directly through its PLT).
 *  - A constructor initialises Sonde (which loads SONDE_CLIENTS and starts recording when
 *    SONDE_RECORD is set) unless the program already did; a destructor finalises it at exit if
 *    the constructor initialised it, so clients see SHUTDOWN after the program's own
 *    destructors; _exit and _Exit are wrapped to finalise too (not in a fork child).
 *  - pthread_create is wrapped so each new thread is registered (THREAD_START) before its start
 *    routine runs; its end is reported by libsonde at thread exit.
 *  - dlopen and dlclose are wrapped so module loads and unloads are reported
 *    (sonde_refresh_modules rescans dl_iterate_phdr after each).
 *  - The sanitizer-coverage callbacks of src/memtrace record memory references when
 *    SONDE_MEMTRACE is set (`sonde record --memory`): started by the constructor, each thread's
 *    references finished when it ends, the trace finished by the destructor and the _exit
 *    wrappers.
 *
 * Threads: the wrappers keep no state of their own beyond the real functions' addresses,
 * resolved once with dlsym(RTLD_NEXT) (races resolve to the same value).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sonde/sonde.h>

#include "memtrace/memtrace.h"

#define HOOK __attribute__((visibility("default"), no_instrument_function))

static int g_we_initialised;
static pid_t g_pid; /* the process that initialised: a fork child finalises nothing */

/* The next definition of `name` after this library, as a function pointer stored in *out. */
__attribute__((no_instrument_function)) static void next_fn(const char *name, void *out) {
    void *p = dlsym(RTLD_NEXT, name);
    memcpy(out, &p, sizeof p);
}

/* The hooks are GNU indirect functions resolved to sonde_method_enter and sonde_method_leave
 * themselves (same arguments, same calling convention): the program's call through its PLT lands
 * in libsonde's hot path directly, without a hop through this library. The resolvers run when
 * the program's hook slot is bound, after this library and libsonde are relocated. */
typedef void (*hook_fn)(void *, void *);

__attribute__((no_instrument_function, used)) static hook_fn resolve_enter(void) {
    return (hook_fn)(void (*)(const void *, const void *))sonde_method_enter;
}

__attribute__((no_instrument_function, used)) static hook_fn resolve_exit(void) {
    return (hook_fn)(void (*)(const void *, const void *))sonde_method_leave;
}

HOOK void __cyg_profile_func_enter(void *fn, void *call_site) __attribute__((ifunc("resolve_enter")));
HOOK void __cyg_profile_func_exit(void *fn, void *call_site) __attribute__((ifunc("resolve_exit")));

__attribute__((constructor, no_instrument_function)) static void sonde_instrument_init(void) {
    sonde_memtrace_prepare();
    if (!sonde_is_initialized() && sonde_initialize() == SONDE_STATUS_SUCCESS) {
        g_we_initialised = 1;
        g_pid = getpid();
    }
    sonde_memtrace_start();
}

__attribute__((destructor, no_instrument_function)) static void sonde_instrument_fini(void) {
    sonde_memtrace_stop();
    if (g_we_initialised && getpid() == g_pid && sonde_is_initialized()) sonde_finalize();
}

/* _exit and _Exit skip the destructors: finalise first (clients get SHUTDOWN, a recording is
 * finished), unless this is a fork child, which owns neither. exit() reaches the destructor
 * above instead (it calls the real _exit inside libc, not this one). */
typedef void (*exit_fn)(int);

__attribute__((no_instrument_function, noreturn)) static void exit_now(const char *name, int status) {
    sonde_instrument_fini();
    exit_fn real = NULL;
    next_fn(name, &real);
    if (real != NULL) real(status);
    abort(); /* unreachable: there is always a libc _exit */
}

HOOK void _exit(int status) { exit_now("_exit", status); }
HOOK void _Exit(int status) { exit_now("_Exit", status); }

struct start {
    void *(*routine)(void *);
    void *arg;
};

__attribute__((no_instrument_function)) static void *start_thread(void *p) {
    struct start s = *(struct start *)p;
    free(p);
    sonde_register_thread(NULL);
    void *ret = s.routine(s.arg);
    sonde_memtrace_thread_exit();
    return ret;
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
