/* Helpers shared by the stackdist tests: a naive LRU stack with gem5 marks, a deterministic
 * PRNG, histogram extraction and the MRC error of two histograms through the public API. */
#ifndef SONDE_TESTS_STACKDIST_UTIL_H
#define SONDE_TESTS_STACKDIST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/stackdist.h>

/* xorshift64*: deterministic, seedable. */
static inline uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Naive stack: entries[n-1] is the most recent. */
typedef struct naive_t {
    uint64_t *addr;
    bool *mark;
    size_t n, cap;
} naive_t;

static inline void naive_init(naive_t *s, size_t cap) {
    s->addr = (uint64_t *)calloc(cap, sizeof(uint64_t));
    s->mark = (bool *)calloc(cap, sizeof(bool));
    s->n = 0;
    s->cap = cap;
}

static inline void naive_free(naive_t *s) {
    free(s->addr);
    free(s->mark);
}

/* update: gem5 calcStackDistAndUpdate(addr, add); otherwise calcStackDist(addr, new_mark). */
static inline uint64_t naive_op(naive_t *s, uint64_t addr, bool update, bool arg, bool *marked) {
    for (size_t i = s->n; i-- > 0;) {
        if (s->addr[i] != addr) continue;
        uint64_t d = (uint64_t)(s->n - 1 - i);
        *marked = s->mark[i];
        if (!update) {
            s->mark[i] = arg;
            return d;
        }
        memmove(&s->addr[i], &s->addr[i + 1], (s->n - 1 - i) * sizeof(uint64_t));
        memmove(&s->mark[i], &s->mark[i + 1], (s->n - 1 - i) * sizeof(bool));
        s->n--;
        if (arg) {
            s->addr[s->n] = addr;
            s->mark[s->n] = false;
            s->n++;
        }
        return d;
    }
    *marked = false;
    if (update && arg) {
        s->addr[s->n] = addr;
        s->mark[s->n] = false;
        s->n++;
    }
    return SONDE_STACKDIST_INFINITY;
}

/* Exact bins of a histogram (malloc'ed; *n set). */
static inline sonde_histogram_bin_t *get_exact_bins(const sonde_histogram_t *h, uint32_t *n) {
    uint32_t actual = 0;
    sonde_status_t st = sonde_histogram_get_bins(h, SONDE_HISTOGRAM_BINS_EXACT, 0, NULL, 0, &actual);
    if (st != SONDE_STATUS_SUCCESS && st != SONDE_STATUS_ERROR_BUFFER_TOO_SHORT) return NULL;
    sonde_histogram_bin_t *b = (sonde_histogram_bin_t *)calloc(actual + 1, sizeof *b);
    uint32_t again = 0;
    if (sonde_histogram_get_bins(h, SONDE_HISTOGRAM_BINS_EXACT, 0, b, actual, &again) !=
            SONDE_STATUS_SUCCESS ||
        again != actual) {
        free(b);
        return NULL;
    }
    *n = actual;
    return b;
}

/* Mean absolute difference of the two MRCs over cache sizes 1..max_lines. */
static inline double mrc_error(const sonde_histogram_t *approx, const sonde_histogram_t *exact,
                               uint64_t max_lines) {
    uint32_t na = 0, ne = 0;
    sonde_histogram_bin_t *a = get_exact_bins(approx, &na);
    sonde_histogram_bin_t *e = get_exact_bins(exact, &ne);
    sonde_histogram_summary_t sa, se;
    memset(&sa, 0, sizeof sa);
    memset(&se, 0, sizeof se);
    sa.struct_size = se.struct_size = sizeof sa;
    sonde_histogram_get_summary(approx, &sa);
    sonde_histogram_get_summary(exact, &se);
    double ta = (double)(sa.reads + sa.writes), te = (double)(se.reads + se.writes);
    double ha = 0, he = 0, sum = 0;
    uint32_t ia = 0, ie = 0;
    for (uint64_t c = 1; c <= max_lines; ++c) {
        while (ia < na && a[ia].first < c) ha += (double)a[ia++].count;
        while (ie < ne && e[ie].first < c) he += (double)e[ie++].count;
        sum += fabs(ha / ta - he / te);
    }
    free(a);
    free(e);
    return max_lines ? sum / (double)max_lines : 0.0;
}

/* SHARDS error is a property of the method, not of one hash seed: tests and the bench quote the
 * median over seeds 0..SHARDS_SEEDS-1. */
#define SHARDS_SEEDS 9

/* Median of v[0..n) (sorts v in place; n >= 1). */
static inline double median_double(double *v, size_t n) {
    for (size_t i = 1; i < n; ++i)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; --j) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[n / 2];
}

#endif /* SONDE_TESTS_STACKDIST_UTIL_H */
