/* The program of bench_memtrace: C = A x B for N x N doubles (N from argv[1], default 230), the
 * naive i-k-j loop at -O1: two loads per inner iteration plus a store, about 3 N^3 data
 * references. Prints a checksum so that the work is kept. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void matmul(const double *a, const double *b, double *c, int n) {
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < n; ++k) {
            const double aik = a[i * n + k];
            for (int j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
        }
}

int main(int argc, char **argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 230;
    if (n <= 0) return 2;
    double *a = malloc(sizeof(double) * (size_t)n * (size_t)n);
    double *b = malloc(sizeof(double) * (size_t)n * (size_t)n);
    double *c = calloc((size_t)n * (size_t)n, sizeof(double));
    if (a == NULL || b == NULL || c == NULL) return 1;
    for (int i = 0; i < n * n; ++i) {
        a[i] = (double)(i % 7);
        b[i] = (double)(i % 5);
    }
    matmul(a, b, c, n);
    double sum = 0;
    for (int i = 0; i < n * n; ++i) sum += c[i];
    printf("%.0f\n", sum);
    free(a);
    free(b);
    free(c);
    return 0;
}
