/* reuse_mrc: computes the LRU miss-ratio curve of this program's own memory accesses.
 *
 * The program sums a 256 x 256 matrix of doubles twice, once row by row and once column by
 * column. Instead of reading a hardware counter, it hands the 64-byte line address of every
 * element it touches to Sonde's stack-distance calculator (in batches), then prints the reuse
 * histogram in log2 bins and the miss ratio of fully associative LRU caches of several sizes.
 * Build: cc reuse_mrc.c -lsonde */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <sonde/stackdist.h>

#define N 256
#define BATCH 4096

static double matrix[N][N];

struct recorder {
    sonde_stackdist_t *sd;
    sonde_histogram_t *hist;
    uint64_t lines[BATCH];
    size_t n;
};

static int flush(struct recorder *r) {
    sonde_status_t st = sonde_stackdist_batch(r->sd, r->lines, NULL, r->n, r->hist);
    r->n = 0;
    return st == SONDE_STATUS_SUCCESS ? 0 : -1;
}

/* Records one access: its line address is the byte address divided by the line size. */
static int touch(struct recorder *r, const void *p) {
    r->lines[r->n++] = (uint64_t)(uintptr_t)p / 64;
    return r->n == BATCH ? flush(r) : 0;
}

int main(void) {
    struct recorder r = {0};
    if (sonde_stackdist_create(NULL, &r.sd) != SONDE_STATUS_SUCCESS ||
        sonde_histogram_create(&r.hist) != SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "reuse_mrc: cannot create the calculator\n");
        return 1;
    }
    double sum = 0;
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
            matrix[i][j] = i + j;
            if (touch(&r, &matrix[i][j])) return 1;
        }
    for (int i = 0; i < N; ++i) /* row order: 8 consecutive elements share a line */
        for (int j = 0; j < N; ++j) {
            sum += matrix[i][j];
            if (touch(&r, &matrix[i][j])) return 1;
        }
    for (int j = 0; j < N; ++j) /* column order: every access a different line */
        for (int i = 0; i < N; ++i) {
            sum += matrix[i][j];
            if (touch(&r, &matrix[i][j])) return 1;
        }
    if (flush(&r)) return 1;

    sonde_histogram_summary_t s = {0};
    s.struct_size = sizeof s;
    sonde_histogram_get_summary(r.hist, &s);
    printf("sum %.0f; %llu accesses, %llu cold (distinct lines)\n", sum, (unsigned long long)s.accesses,
           (unsigned long long)s.infinite);

    /* Array protocol: ask for the size first, then fetch. */
    uint32_t nbins = 0;
    sonde_histogram_get_bins(r.hist, SONDE_HISTOGRAM_BINS_LOG2, 0, NULL, 0, &nbins);
    sonde_histogram_bin_t *bins = calloc(nbins ? nbins : 1, sizeof *bins);
    if (!bins || sonde_histogram_get_bins(r.hist, SONDE_HISTOGRAM_BINS_LOG2, 0, bins, nbins, &nbins) !=
                     SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "reuse_mrc: cannot read the histogram\n");
        return 1;
    }
    printf("stack distance      accesses\n");
    for (uint32_t i = 0; i < nbins; ++i)
        printf("%6llu..%-8llu %10llu\n", (unsigned long long)bins[i].first, (unsigned long long)bins[i].last,
               (unsigned long long)bins[i].count);
    free(bins);

    printf("cache lines   miss ratio\n");
    for (uint64_t lines = 16; lines <= 16384; lines *= 4) {
        double mr = 0;
        sonde_histogram_miss_ratio(r.hist, lines, &mr);
        printf("%11llu   %.4f\n", (unsigned long long)lines, mr);
    }
    /* The column pass misses in every cache smaller than the matrix (8192 lines). */
    double small = 0, big = 0;
    sonde_histogram_miss_ratio(r.hist, 1024, &small);
    sonde_histogram_miss_ratio(r.hist, 16384, &big);
    sonde_histogram_destroy(r.hist);
    sonde_stackdist_destroy(r.sd);
    return small > big ? 0 : 1;
}
