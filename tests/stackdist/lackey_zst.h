/* Test-local reader of zstd-compressed valgrind lackey text for the stackdist tests and
 * bench: collects the L, S and M lines (one access each; S and M count as writes) as line
 * addresses (address >> line_shift). Header-only; needs libzstd. */
#ifndef SONDE_TESTS_STACKDIST_LACKEY_ZST_H
#define SONDE_TESTS_STACKDIST_LACKEY_ZST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

typedef struct lackey_trace_t {
    uint64_t *lines;
    uint8_t *is_write;
    size_t n;
    size_t cap;
} lackey_trace_t;

static inline int lackey_push(lackey_trace_t *t, uint64_t line, uint8_t w) {
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1 << 16;
        uint64_t *l = (uint64_t *)realloc(t->lines, cap * sizeof *l);
        if (!l) return -1;
        t->lines = l;
        uint8_t *iw = (uint8_t *)realloc(t->is_write, cap);
        if (!iw) return -1;
        t->is_write = iw;
        t->cap = cap;
    }
    t->lines[t->n] = line;
    t->is_write[t->n] = w;
    t->n++;
    return 0;
}

/* One text line (without the newline). Returns -1 on a malformed data line or no memory. */
static inline int lackey_line(lackey_trace_t *t, const char *s, size_t len, unsigned shift) {
    if (len < 4 || s[0] != ' ' || (s[1] != 'L' && s[1] != 'S' && s[1] != 'M') || s[2] != ' ')
        return 0; /* instruction fetches, valgrind log lines */
    uint64_t a = 0;
    size_t i = 3;
    int digits = 0;
    for (; i < len && s[i] != ','; ++i, ++digits) {
        char c = s[i];
        unsigned v;
        if (c >= '0' && c <= '9')
            v = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v = (unsigned)(c - 'A' + 10);
        else
            return -1;
        a = a << 4 | v;
    }
    if (digits == 0 || i == len) return -1;
    return lackey_push(t, a >> shift, s[1] != 'L');
}

/* Reads the whole file; 0 on success. Free with lackey_free. */
static inline int lackey_load(const char *path, unsigned shift, lackey_trace_t *t) {
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    size_t in_cap = ZSTD_DStreamInSize(), out_cap = ZSTD_DStreamOutSize();
    char *in = (char *)malloc(in_cap);
    char *out = (char *)malloc(out_cap);
    char *carry = (char *)malloc(4096);
    size_t carry_n = 0;
    int rc = (dctx && in && out && carry) ? 0 : -1;
    size_t got;
    while (rc == 0 && (got = fread(in, 1, in_cap, f)) > 0) {
        ZSTD_inBuffer ib = {in, got, 0};
        while (rc == 0 && ib.pos < ib.size) {
            ZSTD_outBuffer ob = {out, out_cap, 0};
            size_t r = ZSTD_decompressStream(dctx, &ob, &ib);
            if (ZSTD_isError(r)) {
                rc = -1;
                break;
            }
            for (size_t k = 0; k < ob.pos && rc == 0; ++k) {
                if (out[k] == '\n') {
                    rc = lackey_line(t, carry, carry_n, shift);
                    carry_n = 0;
                } else if (carry_n < 4095) {
                    carry[carry_n++] = out[k];
                } else {
                    rc = -1;
                }
            }
        }
    }
    if (rc == 0 && carry_n > 0) rc = lackey_line(t, carry, carry_n, shift);
    free(in);
    free(out);
    free(carry);
    ZSTD_freeDCtx(dctx);
    fclose(f);
    return rc;
}

static inline void lackey_free(lackey_trace_t *t) {
    free(t->lines);
    free(t->is_write);
    memset(t, 0, sizeof *t);
}

#endif /* SONDE_TESTS_STACKDIST_LACKEY_ZST_H */
