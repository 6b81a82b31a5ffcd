/* Reuse at several distances, for sampling at the source: sums over a 8 KiB, a 256 KiB and a
 * 2 MiB array (128, 4096 and 32768 lines of 64 bytes) repeated at different rates, and a
 * pseudo-random walk over the largest. About 3.6 M 4-byte loads, deterministic in number (the
 * addresses move with the program's load address). Prints a checksum. */
#include <stdint.h>
#include <stdio.h>

#define SMALL (8 << 10) / 4
#define MEDIUM (256 << 10) / 4
#define LARGE (2 << 20) / 4

static int small_a[SMALL] __attribute__((aligned(64)));
static int medium_a[MEDIUM] __attribute__((aligned(64)));
static int large_a[LARGE] __attribute__((aligned(64)));

__attribute__((noinline)) static long sum(const int *p, int n) {
    long s = 0;
    for (int i = 0; i < n; ++i) s += p[i];
    return s;
}

__attribute__((noinline)) static long walk(const int *p, int n, uint32_t *state) {
    long s = 0;
    uint32_t x = *state;
    for (int i = 0; i < n; ++i) {
        x = x * 1664525u + 1013904223u;
        s += p[(x >> 8) % LARGE];
    }
    *state = x;
    return s;
}

int main(void) {
    long total = 0;
    uint32_t state = 12345;
    for (int round = 0; round < 4; ++round) {
        for (int k = 0; k < 16; ++k) total += sum(small_a, SMALL);
        for (int k = 0; k < 2; ++k) total += sum(medium_a, MEDIUM);
        total += sum(large_a, LARGE);
        total += walk(large_a, 200000, &state);
    }
    printf("%ld\n", total);
    return 0;
}
