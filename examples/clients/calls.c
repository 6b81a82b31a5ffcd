/*
 * A call-heavy program to run under a Sonde client: build it with -finstrument-functions and
 * run it with `sonde run --client ... -- ./calls [N]`. Static and global functions, recursion,
 * and a function called through a pointer.
 */
#include <stdio.h>
#include <stdlib.h>

static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int less(int a, int b) { return a < b; }

static void sort(int *v, int n, int (*cmp)(int, int)) {
    for (int i = 0; i < n; ++i)
        for (int j = n - 1; j > i; --j)
            if (cmp(v[j], v[j - 1])) {
                const int t = v[j];
                v[j] = v[j - 1];
                v[j - 1] = t;
            }
}

int checksum(const int *v, int n) {
    int s = 0;
    for (int i = 0; i < n; ++i) s = s * 31 + v[i];
    return s;
}

int main(int argc, char **argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 20;
    int v[64];
    for (int i = 0; i < 64; ++i) v[i] = (i * 37) % 64;
    sort(v, 64, less);
    printf("fib(%d) = %d, checksum %d\n", n, fib(n), checksum(v, 64));
    return 0;
}
