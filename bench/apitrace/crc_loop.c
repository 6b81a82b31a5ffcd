/* bench_apitrace's program: N calls of zlib's crc32 over a 64-byte buffer, not instrumented,
 * timed by the program itself (so that start-up and the tracer's set-up are not counted).
 * Prints "calls N ns T crc C". usage: crc_loop N */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <zlib.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    const long n = argc > 1 ? atol(argv[1]) : 1000000;
    unsigned char buf[64];
    for (int i = 0; i < 64; ++i) buf[i] = (unsigned char)(i * 31 + 7);
    uLong crc = 0;
    const long long t0 = now_ns();
    for (long i = 0; i < n; ++i) crc = crc32(crc, buf, sizeof buf);
    const long long t1 = now_ns();
    printf("calls %ld ns %lld crc %lu\n", n, t1 - t0, crc);
    return 0;
}
