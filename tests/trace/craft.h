/* Builds Sonde trace files byte by byte (docs/trace-format.md), with valid checksums, for the
 * tests and the fuzz seed corpus: any header, chunk and index, including ones a writer would
 * never produce (duplicate index entries, 65,536 shards, chunks of a million records).
 *
 * Chunk payloads are zstd frames built here from raw and RLE blocks (RFC 8878), so the bytes
 * do not depend on the zstd version and a chunk of a million equal records takes a few
 * hundred bytes. The sonde64 checksum is written out again from the format description, which
 * also checks the description. Header-only, C99; every function aborts on out of memory. */
#ifndef SONDE_TEST_CRAFT_H
#define SONDE_TEST_CRAFT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/trace.h>

/* A growable byte string. */
typedef struct craft_buf {
    unsigned char *data;
    size_t size;
    size_t cap;
} craft_buf;

static inline void craft_reserve(craft_buf *b, size_t more) {
    if (b->size + more <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->size + more) cap *= 2;
    b->data = (unsigned char *)realloc(b->data, cap);
    if (b->data == NULL) abort();
    b->cap = cap;
}

static inline void craft_put(craft_buf *b, const void *p, size_t n) {
    craft_reserve(b, n);
    if (n) memcpy(b->data + b->size, p, n);
    b->size += n;
}

static inline void craft_u8(craft_buf *b, unsigned v) {
    unsigned char c = (unsigned char)v;
    craft_put(b, &c, 1);
}

static inline void craft_le(unsigned char *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t craft_get_le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

static inline void craft_u32(craft_buf *b, uint32_t v) {
    unsigned char t[4];
    craft_le(t, v, 4);
    craft_put(b, t, 4);
}

static inline void craft_u64(craft_buf *b, uint64_t v) {
    unsigned char t[8];
    craft_le(t, v, 8);
    craft_put(b, t, 8);
}

static inline void craft_free(craft_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* sonde64, as docs/trace-format.md writes it. */
static inline uint64_t craft_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t craft_sum64(const void *data, size_t n) {
    const unsigned char *d = (const unsigned char *)data;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (size_t i = 0; i < n; i += 8) {
        unsigned char w[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        memcpy(w, d + i, n - i < 8 ? n - i : 8);
        h ^= craft_get_le(w, 8) * 0x87C37B91114253D5ull;
        h = craft_rotl(h, 27) * 0x4CF5AD432745937Full + 1;
    }
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    return h;
}

/* ---- zstd frames of raw and RLE blocks ---- */

/* Frame header: no single segment, a 128 KiB window (the largest block), a 4-byte content size. */
static inline void craft_zstd_begin(craft_buf *z, uint32_t content_size) {
    const unsigned char magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
    craft_put(z, magic, 4);
    craft_u8(z, 0x80); /* Frame_Content_Size_flag 2 (4 bytes), no checksum, no dictionary */
    craft_u8(z, 0x38); /* Window_Descriptor: exponent 7, mantissa 0: 2^17 bytes */
    craft_u32(z, content_size);
}

static inline void craft_zstd_block(craft_buf *z, int last, int type, uint32_t size) {
    unsigned char h[3];
    craft_le(h, (uint64_t)(last ? 1 : 0) | (uint64_t)type << 1 | (uint64_t)size << 3, 3);
    craft_put(z, h, 3);
}

/* A run of the content: `count` bytes, either copies of `byte` (data == NULL) or `data`. */
typedef struct craft_run {
    const unsigned char *data;
    unsigned char byte;
    size_t count;
} craft_run;

/* One zstd frame whose content is the runs one after the other. */
static inline void craft_zstd(craft_buf *z, const craft_run *runs, size_t nruns) {
    const uint32_t kBlock = 1u << 17;
    uint64_t total = 0;
    for (size_t i = 0; i < nruns; ++i) total += runs[i].count;
    craft_zstd_begin(z, (uint32_t)total);
    if (total == 0) {
        craft_zstd_block(z, 1, 0, 0);
        return;
    }
    uint64_t done = 0;
    for (size_t i = 0; i < nruns; ++i) {
        for (size_t pos = 0; pos < runs[i].count;) {
            const uint32_t n = runs[i].count - pos < kBlock ? (uint32_t)(runs[i].count - pos) : kBlock;
            done += n;
            if (runs[i].data != NULL) {
                craft_zstd_block(z, done == total, 0, n);
                craft_put(z, runs[i].data + pos, n);
            } else {
                craft_zstd_block(z, done == total, 1, n);
                craft_u8(z, runs[i].byte);
            }
            pos += n;
        }
    }
}

/* The column payload of `n` records (docs/trace-format.md, "Chunk payload"). */
static inline unsigned char *craft_columns(const sonde_memref_t *m, size_t n) {
    unsigned char *p = (unsigned char *)calloc(n ? n : 1, 28);
    if (p == NULL) abort();
    uint64_t pa = 0, pp = 0, pt = 0;
    for (size_t i = 0; i < n; ++i) {
        craft_le(p + 8 * i, m[i].address - pa, 8);
        craft_le(p + 8 * n + 8 * i, m[i].pc - pp, 8);
        craft_le(p + 16 * n + 8 * i, m[i].timestamp - pt, 8);
        craft_le(p + 24 * n + 2 * i, m[i].type, 2);
        craft_le(p + 26 * n + 2 * i, m[i].size, 2);
        pa = m[i].address;
        pp = m[i].pc;
        pt = m[i].timestamp;
    }
    return p;
}

/* ---- the file ---- */

/* The 64-byte header of minor version `minor` (offset 28). */
static inline void craft_header_minor(craft_buf *f, uint32_t minor) {
    unsigned char h[64];
    memset(h, 0, sizeof h);
    memcpy(h, "SONDETRC", 8);
    craft_le(h + 8, 1, 4);
    craft_le(h + 12, 64, 4);
    craft_le(h + 16, 28, 4);
    craft_le(h + 24, 65536, 4);
    craft_le(h + 28, minor, 4);
    craft_le(h + 56, craft_sum64(h, 56), 8);
    craft_put(f, h, sizeof h);
}

/* The 64-byte header of a version 1.0 file (minor version 0). */
static inline void craft_header(craft_buf *f) { craft_header_minor(f, 0); }

/* Appends a chunk (header + the zstd frame `z`); returns its offset. */
static inline uint64_t craft_chunk(craft_buf *f, uint32_t shard, uint32_t records, const craft_buf *z) {
    const uint64_t off = f->size;
    unsigned char h[48];
    craft_le(h + 0, 0x4B4E4843u, 4);
    craft_le(h + 4, shard, 4);
    craft_le(h + 8, records, 4);
    craft_le(h + 12, z->size, 4);
    craft_le(h + 16, 0, 8);
    craft_le(h + 24, 0, 8);
    craft_le(h + 32, craft_sum64(z->data, z->size), 8);
    craft_le(h + 40, craft_sum64(h, 40), 8);
    craft_put(f, h, sizeof h);
    craft_put(f, z->data, z->size);
    return off;
}

/* Appends a chunk of records given as memrefs (payload in raw blocks); returns its offset. */
static inline uint64_t craft_chunk_of(craft_buf *f, uint32_t shard, const sonde_memref_t *m, size_t n) {
    unsigned char *cols = craft_columns(m, n);
    craft_run run = {cols, 0, 28 * n};
    craft_buf z = {NULL, 0, 0};
    craft_zstd(&z, &run, 1);
    const uint64_t off = craft_chunk(f, shard, (uint32_t)n, &z);
    craft_free(&z);
    free(cols);
    return off;
}

/* Appends a chunk of `n` records whose columns each repeat one byte: every byte of the address
 * deltas is `addr_byte` (0xFF: addresses count down from 2^64 - 1), pc and timestamp deltas
 * are 0, every byte of the types `type_byte` (0: reads; 1: type 257) and of the sizes
 * `size_byte` (0xFF: 65535). A few hundred bytes for a million records. Returns its offset. */
static inline uint64_t craft_chunk_fill(craft_buf *f, uint32_t shard, uint32_t n, unsigned char addr_byte,
                                        unsigned char type_byte, unsigned char size_byte) {
    const size_t cols = n;
    const craft_run runs[4] = {{NULL, addr_byte, 8 * cols},
                               {NULL, 0, 16 * cols},
                               {NULL, type_byte, 2 * cols},
                               {NULL, size_byte, 2 * cols}};
    craft_buf z = {NULL, 0, 0};
    craft_zstd(&z, runs, 4);
    const uint64_t off = craft_chunk(f, shard, n, &z);
    craft_free(&z);
    return off;
}

/* One index entry. */
typedef struct craft_entry {
    uint64_t offset;
    uint32_t shard;
    uint32_t records;
} craft_entry;

/* Appends the index (any entries, any shard count) and the footer. */
static inline void craft_index(craft_buf *f, const craft_entry *e, size_t n, uint32_t num_shards) {
    const uint64_t ioff = f->size;
    craft_buf idx = {NULL, 0, 0};
    craft_put(&idx, "SONDEIDX", 8);
    craft_u32(&idx, (uint32_t)n);
    craft_u32(&idx, num_shards);
    craft_u64(&idx, 0);
    for (size_t i = 0; i < n; ++i) {
        craft_u64(&idx, e[i].offset);
        craft_u32(&idx, e[i].shard);
        craft_u32(&idx, e[i].records);
        craft_u64(&idx, 0);
        craft_u64(&idx, 0);
    }
    craft_u64(&idx, craft_sum64(idx.data, idx.size));
    craft_put(f, idx.data, idx.size);
    unsigned char foot[32];
    memcpy(foot, "SONDEEND", 8);
    craft_le(foot + 8, ioff, 8);
    craft_le(foot + 16, idx.size, 8);
    craft_le(foot + 24, craft_sum64(foot, 24), 8);
    craft_put(f, foot, sizeof foot);
    craft_free(&idx);
}

/* Writes the bytes to `path`; 0 on success. */
static inline int craft_save(const craft_buf *f, const char *path) {
    FILE *out = fopen(path, "wb");
    if (out == NULL) return -1;
    const int ok = f->size == 0 || fwrite(f->data, 1, f->size, out) == f->size;
    return (fclose(out) == 0 && ok) ? 0 : -1;
}

#endif
