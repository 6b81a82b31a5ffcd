/* An unmodified program (no -finstrument-functions) whose library calls `sonde record --api`
 * traces (tests/apitrace/check_api_record.py):
 *   zlib N      N crc32 calls over global buffers, then 3 compress2/uncompress round trips
 *   threads N   two threads, N crc32 calls each
 *   recursion N at_ping(N) (libapitrace_a), which recurses through at_pong (libapitrace_b)
 *   errno       at_set_errno: the callee sees the caller's errno, the caller the callee's
 *   scale       at_scale(2.5, &{1.25, 0.5}): a double and a struct pointer
 *   dlopen LIB  dlopen LIB (libapitrace_d, which loads libapitrace_c) and call at_outer(3)
 *               through dlsym: at_outer calls at_late and at_late calls at_ping, each through
 *               an import slot of a library loaded late
 * Exits 0 when every result is the expected one, 1 otherwise. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "at_libs.h"

static unsigned char g_data[4096];
static unsigned char g_packed[8192];
static unsigned char g_unpacked[4096];

static int run_zlib(long n) {
    for (size_t i = 0; i < sizeof g_data; ++i) g_data[i] = (unsigned char)(i * 7 + i / 13);
    uLong crc = 0;
    for (long i = 0; i < n; ++i) crc = crc32(crc, g_data + (i % 64), (uInt)(16 + (i % 100)));
    for (int k = 0; k < 3; ++k) {
        uLongf packed = sizeof g_packed;
        if (compress2(g_packed, &packed, g_data, sizeof g_data - (uLong)k * 100, k + 1) != Z_OK) return 1;
        uLongf unpacked = sizeof g_unpacked;
        if (uncompress(g_unpacked, &unpacked, g_packed, packed) != Z_OK) return 1;
        if (unpacked != sizeof g_data - (uLong)k * 100 || memcmp(g_unpacked, g_data, unpacked) != 0) return 1;
    }
    printf("crc %lu\n", crc);
    return 0;
}

static long g_per_thread;

static void *worker(void *arg) {
    const unsigned char *base = arg;
    uLong crc = 0;
    for (long i = 0; i < g_per_thread; ++i) crc = crc32(crc, base, 32);
    return (void *)(uintptr_t)crc;
}

static int run_threads(long n) {
    g_per_thread = n;
    pthread_t a, b;
    if (pthread_create(&a, NULL, worker, g_data) != 0 || pthread_create(&b, NULL, worker, g_data + 64) != 0)
        return 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}

static int run_errno(void) {
    errno = 11;
    const int seen = at_set_errno(42);
    const int after = errno;
    printf("seen %d after %d\n", seen, after);
    return seen == 11 && after == 42 ? 0 : 1;
}

static int run_scale(void) {
    const struct at_point p = {1.25, 0.5};
    const double r = at_scale(2.5, &p);
    printf("point %p result %.17g\n", (const void *)&p, r);
    return r == 4.375 ? 0 : 1;
}

static int run_dlopen(const char *lib) {
    void *h = dlopen(lib, RTLD_NOW);
    if (h == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void *sym = dlsym(h, "at_outer");
    if (sym == NULL) return 1;
    int (*late)(int);
    memcpy(&late, &sym, sizeof late);
    const int r = late(3);
    dlclose(h);
    return r == 104 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const long n = argc > 2 ? atol(argv[2]) : 0;
    if (strcmp(argv[1], "zlib") == 0) return run_zlib(n);
    if (strcmp(argv[1], "threads") == 0) return run_threads(n);
    if (strcmp(argv[1], "recursion") == 0) return at_ping((int)n) == n ? 0 : 1;
    if (strcmp(argv[1], "errno") == 0) return run_errno();
    if (strcmp(argv[1], "scale") == 0) return run_scale();
    if (strcmp(argv[1], "dlopen") == 0 && argc > 2) return run_dlopen(argv[2]);
    return 2;
}
