/* Fills then sums a 64-byte-aligned 4 MiB int array: 2^20 4-byte stores in fill, 2^20 4-byte
 * loads in sum, nothing else instrumented (at -O1 the loop state stays in registers). With an
 * argument "crash" it gets SIGSEGV after the fill; with "wait" it prints its pid after the fill
 * and sleeps (to be killed). The "annotate:" comments mark the lines that `sonde annotate` must
 * find the accesses on (check_annotate_record.py). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define N (1 << 20)

static int a[N] __attribute__((aligned(64)));

__attribute__((noinline)) static void fill(int *p, int n) {
    for (int i = 0; i < n; ++i) p[i] = i; /* annotate: fill's store */
}

__attribute__((noinline)) static long sum(const int *p, int n) {
    long s = 0;
    for (int i = 0; i < n; ++i) s += p[i]; /* annotate: sum's load */
    return s;
}

int main(int argc, char **argv) {
    fill(a, N);
    if (argc > 1 && strcmp(argv[1], "crash") == 0) {
        fflush(stdout);
        raise(SIGSEGV); /* a fault after the fill */
    }
    if (argc > 1 && strcmp(argv[1], "wait") == 0) {
        printf("%d\n", (int)getpid());
        fflush(stdout);
        sleep(60);
    }
    printf("%ld\n", sum(a, N));
    return 0;
}
