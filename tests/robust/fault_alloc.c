/* The allocation counter and, outside AddressSanitizer builds, malloc, calloc, realloc and
 * free of the test executable: they interpose libc's (the executable comes first in the
 * symbol lookup order) and forward to the next definition, found with dlsym(RTLD_NEXT). While
 * dlsym itself runs, allocations come from a small static arena that free ignores. See
 * fault_alloc.h. */
#include "fault_alloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define FAULT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAULT_SANITIZED 1
#endif
#endif

static atomic_bool armed;
static atomic_bool fired;
static atomic_uint_fast64_t counted;
static atomic_uint_fast64_t fail_at;

void fault_arm(uint64_t n) {
    atomic_store(&fired, false);
    atomic_store(&counted, 0);
    atomic_store(&fail_at, n);
    atomic_store(&armed, true);
}

uint64_t fault_disarm(void) {
    atomic_store(&armed, false);
    return atomic_load(&counted);
}

bool fault_fired(void) { return atomic_load(&fired); }

bool fault_should_fail(void) {
    if (!atomic_load_explicit(&armed, memory_order_acquire)) return false;
    const uint64_t n = atomic_fetch_add(&counted, 1) + 1;
    if (n != atomic_load(&fail_at)) return false;
    atomic_store(&fired, true);
    return true;
}

#if defined(FAULT_SANITIZED)

/* The sanitizer's allocator serves malloc; only operator new is counted (fault_alloc.h). */
void *fault_raw_malloc(size_t n) { return malloc(n); }

#else

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void (*free_fn)(void *);

static malloc_fn real_malloc;
static calloc_fn real_calloc;
static realloc_fn real_realloc;
static free_fn real_free;

static _Alignas(16) unsigned char arena[64 * 1024];
static atomic_size_t arena_used;
static atomic_int resolving;

static void *arena_alloc(size_t n) {
    n = (n + 15) & ~(size_t)15;
    const size_t at = atomic_fetch_add(&arena_used, n);
    if (at + n > sizeof arena) return NULL;
    return arena + at;
}

static int in_arena(const void *p) {
    return (const unsigned char *)p >= arena && (const unsigned char *)p < arena + sizeof arena;
}

static void resolve(void) {
    if (real_free != NULL) return;
    atomic_fetch_add(&resolving, 1);
    void *m = dlsym(RTLD_NEXT, "malloc");
    void *c = dlsym(RTLD_NEXT, "calloc");
    void *r = dlsym(RTLD_NEXT, "realloc");
    void *f = dlsym(RTLD_NEXT, "free");
    memcpy(&real_malloc, &m, sizeof m);
    memcpy(&real_calloc, &c, sizeof c);
    memcpy(&real_realloc, &r, sizeof r);
    memcpy(&real_free, &f, sizeof f);
    atomic_fetch_sub(&resolving, 1);
}

__attribute__((constructor(101))) static void fault_alloc_init(void) { resolve(); }

void *fault_raw_malloc(size_t n) {
    if (real_malloc == NULL) resolve();
    return real_malloc(n);
}

void *malloc(size_t n) {
    if (real_malloc == NULL) {
        if (atomic_load(&resolving)) return arena_alloc(n);
        resolve();
    }
    if (fault_should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    return real_malloc(n);
}

void *calloc(size_t n, size_t size) {
    if (real_calloc == NULL) {
        if (atomic_load(&resolving)) return arena_alloc(n * size); /* the arena is zeroed */
        resolve();
    }
    if (fault_should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    return real_calloc(n, size);
}

void *realloc(void *p, size_t n) {
    if (real_realloc == NULL) resolve();
    if (in_arena(p)) { /* rare: move an arena block into real memory */
        void *q = malloc(n);
        const size_t left = (size_t)(arena + sizeof arena - (unsigned char *)p);
        if (q != NULL) memcpy(q, p, n < left ? n : left);
        return q;
    }
    if (fault_should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    return real_realloc(p, n);
}

void free(void *p) {
    if (p == NULL || in_arena(p)) return;
    if (real_free == NULL) resolve();
    real_free(p);
}

#endif
