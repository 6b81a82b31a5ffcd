/* A reference reading of lackey text, written for clarity rather than speed, that the tests and
 * the lackey fuzz target hold the library's parser to: the text is split at its newlines, one
 * trailing '\r' is dropped from each line, and each line is then an empty or "==" line (skipped),
 * a record line ("I  ", " L ", " S " or " M ", 1 to 16 hex digits of either case, a comma, 1 to
 * 6 decimal digits of at most 0xFFFF, nothing else) or a bad line, which ends the reading. A
 * record's pc is the address of the last instruction line at or before it (0 before the first).
 * The last line needs no newline. */
#ifndef SONDE_TEST_LACKEY_REF_H
#define SONDE_TEST_LACKEY_REF_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/trace.h>

typedef struct {
    sonde_memref_t *recs; /* malloc'ed; free() it */
    size_t n;
    uint64_t bad_line; /* 1-based number of the first bad line, 0 when every line is good */
    size_t longest;    /* bytes of the longest line, its newline excluded */
} lackey_ref_t;

static inline int lackey_ref_hex(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One line (without its newline and without the '\r' dropped): 0 skipped, 1 a record (in *m),
 * -1 bad. */
static inline int lackey_ref_line(const unsigned char *s, size_t len, sonde_memref_t *m) {
    if (len == 0 || (len >= 2 && s[0] == '=' && s[1] == '=')) return 0;
    if (len < 3) return -1;
    uint16_t type;
    if (s[0] == 'I' && s[1] == ' ' && s[2] == ' ')
        type = SONDE_MEMREF_IFETCH;
    else if (s[0] == ' ' && s[2] == ' ' && s[1] == 'L')
        type = SONDE_MEMREF_READ;
    else if (s[0] == ' ' && s[2] == ' ' && s[1] == 'S')
        type = SONDE_MEMREF_WRITE;
    else if (s[0] == ' ' && s[2] == ' ' && s[1] == 'M')
        type = SONDE_MEMREF_MODIFY;
    else
        return -1;
    size_t i = 3, digits = 0;
    uint64_t addr = 0;
    while (i < len && lackey_ref_hex(s[i]) >= 0) {
        addr = addr * 16 + (uint64_t)lackey_ref_hex(s[i]);
        ++i;
        ++digits;
    }
    if (digits < 1 || digits > 16 || i >= len || s[i] != ',') return -1;
    ++i;
    size_t sdigits = 0;
    uint64_t size = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        size = size * 10 + (uint64_t)(s[i] - '0');
        ++i;
        if (++sdigits > 6) return -1;
    }
    if (sdigits < 1 || i != len || size > 0xFFFF) return -1;
    memset(m, 0, sizeof *m);
    m->address = addr;
    m->type = type;
    m->size = (uint16_t)size;
    return 1;
}

/* Reads `len` bytes of text into *out; returns 0, or -1 when out of memory. */
static inline int lackey_ref_read(const unsigned char *text, size_t len, lackey_ref_t *out) {
    memset(out, 0, sizeof *out);
    size_t cap = 0;
    uint64_t pc = 0, line_no = 0;
    for (size_t at = 0; at < len;) {
        const unsigned char *nl = (const unsigned char *)memchr(text + at, '\n', len - at);
        const size_t stop = nl != NULL ? (size_t)(nl - text) : len;
        size_t l = stop - at;
        if (l > out->longest) out->longest = l;
        if (l > 0 && text[at + l - 1] == '\r') --l;
        ++line_no;
        sonde_memref_t m;
        const int kind = lackey_ref_line(text + at, l, &m);
        if (kind < 0) {
            if (out->bad_line == 0) out->bad_line = line_no;
        } else if (kind > 0 && out->bad_line == 0) {
            if (m.type == SONDE_MEMREF_IFETCH) pc = m.address;
            m.pc = pc;
            if (out->n == cap) {
                cap = cap != 0 ? cap * 2 : 1024;
                sonde_memref_t *grown = (sonde_memref_t *)realloc(out->recs, cap * sizeof *grown);
                if (grown == NULL) return -1;
                out->recs = grown;
            }
            out->recs[out->n++] = m;
        }
        at = stop + 1; /* past the newline (or the end) */
    }
    return 0;
}

/* Reads `path` as lackey text through the library (shard 0, `chunk` records a call) and holds
 * it to `ref`: the same records (every field), then SUCCESS when every line is good, else
 * ERROR_FORMAT with a message naming the bad line. Returns NULL when they agree, else what
 * differs (a static string). */
static inline const char *lackey_ref_compare(const char *path, const lackey_ref_t *ref, size_t chunk) {
    static char why[256];
    sonde_trace_reader_t *r = NULL;
    if (sonde_trace_reader_open(path, SONDE_TRACE_FORMAT_LACKEY, NULL, 0, &r) != SONDE_STATUS_SUCCESS)
        return "the reader did not open";
    sonde_memref_t *buf = (sonde_memref_t *)malloc(chunk * sizeof *buf);
    if (buf == NULL) {
        sonde_trace_reader_close(r);
        return "out of memory";
    }
    size_t got = 0, n = 0;
    sonde_status_t s;
    const char *bad = NULL;
    while (bad == NULL && (s = sonde_trace_reader_read_shard(r, 0, buf, chunk, &n)) == SONDE_STATUS_SUCCESS &&
           n > 0) {
        for (size_t i = 0; i < n && bad == NULL; ++i, ++got) {
            if (got >= ref->n) {
                snprintf(why, sizeof why, "record %zu beyond the reference's %zu", got, ref->n);
                bad = why;
            } else if (memcmp(&buf[i], &ref->recs[got], sizeof buf[i]) != 0) {
                const sonde_memref_t *a = &buf[i], *e = &ref->recs[got];
                snprintf(why, sizeof why,
                         "record %zu: address %llx pc %llx type %u size %u, the reference: %llx %llx %u %u",
                         got, (unsigned long long)a->address, (unsigned long long)a->pc, a->type, a->size,
                         (unsigned long long)e->address, (unsigned long long)e->pc, e->type, e->size);
                bad = why;
            }
        }
    }
    if (bad == NULL && got != ref->n) {
        snprintf(why, sizeof why, "%zu records, the reference %zu", got, ref->n);
        bad = why;
    }
    if (bad == NULL && ref->bad_line == 0 && s != SONDE_STATUS_SUCCESS) {
        snprintf(why, sizeof why, "status %d on good text: %s", (int)s, sonde_trace_reader_error(r));
        bad = why;
    }
    if (bad == NULL && ref->bad_line != 0) {
        char needle[64];
        snprintf(needle, sizeof needle, "bad lackey line %llu:", (unsigned long long)ref->bad_line);
        const char *err = sonde_trace_reader_error(r);
        if (s != SONDE_STATUS_ERROR_FORMAT || err == NULL || strstr(err, needle) == NULL) {
            snprintf(why, sizeof why, "status %d, \"%s\", where line %llu is bad", (int)s, err ? err : "",
                     (unsigned long long)ref->bad_line);
            bad = why;
        }
    }
    free(buf);
    sonde_trace_reader_close(r);
    return bad;
}

#endif
