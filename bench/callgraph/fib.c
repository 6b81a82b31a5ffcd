/*
 * The call-heavy program of bench_callgraph: recursive fib, timed from inside so that process
 * start-up (loading clients) is not counted, after one untimed call of fib so that what a tool
 * does once per function (Sonde symbolises a method and asks the filters at its first call) is
 * not counted either: the figure is the steady cost per call. Prints "calls <N> ns <T>", T being the
 * CPU time of the calling thread: what the hooks cost the program's own thread, unaffected by
 * other processes sharing the cores (each recorder's writer runs elsewhere: Sonde's delivery
 * thread, uftrace's recording process).
 * Built twice: plain, and with -finstrument-functions linked to the empty hooks (which
 * LD_PRELOAD of libsonde-instrument.so or uftrace's libmcount replace).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long long calls;

__attribute__((noinline)) static int fib(int n) {
    ++calls;
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 30;
    struct timespec a, b;
    volatile int warm = fib(1); /* the first call, untimed */
    (void)warm;
    calls = 0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    const int r = fib(n);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    const long long ns = (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
    printf("calls %llu ns %lld result %d\n", calls, ns, r);
    return 0;
}
