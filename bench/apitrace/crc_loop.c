/* bench_apitrace's program: N calls of zlib's crc32 over a 64-byte buffer, not instrumented,
 * timed by the program itself (so that start-up and the tracer's set-up are not counted): the
 * wall time of the loop and the CPU time of the calling thread (which leaves out a tracer's
 * other threads and processes, and time spent waiting for a core).
 * Prints "calls N ns T cpu C crc X". usage: crc_loop N */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <zlib.h>

static long long now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    const long n = argc > 1 ? atol(argv[1]) : 1000000;
    unsigned char buf[64];
    for (int i = 0; i < 64; ++i) buf[i] = (unsigned char)(i * 31 + 7);
    uLong crc = 0;
    const long long t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < n; ++i) crc = crc32(crc, buf, sizeof buf);
    const long long t1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    printf("calls %ld ns %lld cpu %lld crc %lu\n", n, t1 - t0, c1 - c0, crc);
    return 0;
}
