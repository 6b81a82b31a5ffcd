/* The program whose memory references bench/scale records for its reuse-distance cases: a
 * top-down merge sort of N pseudo-random ints (N from argv[1], default 524288) into a scratch
 * array, then a check that the result is sorted. Built with clang's sanitizer coverage, each
 * load and store of the sort is a reference: about 2 N log2 N of them plus the set-up and the
 * check (about 22 M at the default N). Prints a checksum so that the work is kept. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void merge_sort(int *a, int *tmp, size_t n) {
    if (n < 2) return;
    const size_t half = n / 2;
    merge_sort(a, tmp, half);
    merge_sort(a + half, tmp, n - half);
    size_t i = 0, j = half, k = 0;
    while (i < half && j < n) tmp[k++] = a[i] <= a[j] ? a[i++] : a[j++];
    while (i < half) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    for (k = 0; k < n; ++k) a[k] = tmp[k];
}

int main(int argc, char **argv) {
    const long n = argc > 1 ? atol(argv[1]) : 524288;
    if (n <= 0) return 2;
    int *a = malloc(sizeof(int) * (size_t)n);
    int *tmp = malloc(sizeof(int) * (size_t)n);
    if (a == NULL || tmp == NULL) return 1;
    unsigned x = 12345;
    for (long i = 0; i < n; ++i) {
        x = x * 1103515245u + 12345u;
        a[i] = (int)(x >> 1);
    }
    merge_sort(a, tmp, (size_t)n);
    unsigned long sum = 0;
    for (long i = 1; i < n; ++i) {
        if (a[i - 1] > a[i]) return 3;
        sum += (unsigned long)a[i] * (unsigned long)i;
    }
    printf("%lu\n", sum);
    free(a);
    free(tmp);
    return 0;
}
