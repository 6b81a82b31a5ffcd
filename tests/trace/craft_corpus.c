/* Writes the crafted seeds of the fuzz corpora (tests/trace/corpus/), or checks that the
 * checked-in files still are what it writes:
 *     craft_corpus write CORPUS_DIR
 *     craft_corpus check CORPUS_DIR
 * The Sonde traces have valid checksums (craft.h) and hold what a writer never produces: 8,192
 * declared shards (65,536 take seconds of JSON per run, which tests/analysis covers), index entries that repeat, overlap, nest or leave a shard's file order,
 * record values outside the format, addresses at the top of the address space with sizes up
 * to 65535, chunks of a quarter million records, a file cut inside a chunk. The other seeds
 * start the raw64, zstd, drmemtrace, tool-option and cache-geometry targets at their edges (the
 * drmemtrace seed is a version-7 thread file with every kind of record the reader decodes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "craft.h"

static const char *g_dir;
static int g_check;
static int g_failed;

/* Writes or compares one seed. */
static void emit(const char *name, const void *data, size_t size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    if (!g_check) {
        FILE *f = fopen(path, "wb");
        if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
            fprintf(stderr, "%s: cannot write\n", path);
            g_failed = 1;
        }
        return;
    }
    FILE *f = fopen(path, "rb");
    unsigned char *have = malloc(size + 1);
    const size_t got = f != NULL && have != NULL ? fread(have, 1, size + 1, f) : 0;
    if (f == NULL || got != size || memcmp(have, data, size) != 0) {
        fprintf(stderr, "%s: differs from what craft_corpus writes (run: craft_corpus write %s)\n", path,
                g_dir);
        g_failed = 1;
    }
    if (f != NULL) fclose(f);
    free(have);
}

static void emit_buf(const char *name, const craft_buf *b) { emit(name, b->data, b->size); }

static sonde_memref_t ref(uint64_t address, uint16_t type, uint16_t size, uint64_t ts) {
    sonde_memref_t m;
    memset(&m, 0, sizeof m);
    m.address = address;
    m.pc = 0x400000 + (address & 0xff);
    m.timestamp = ts;
    m.type = type;
    m.size = size;
    return m;
}

static void traces(void) {
    const sonde_memref_t three[3] = {ref(0x1000, SONDE_MEMREF_READ, 8, 1),
                                     ref(0x1040, SONDE_MEMREF_WRITE, 8, 2),
                                     ref(0x1080, SONDE_MEMREF_READ, 4, 3)};
    craft_buf f = {NULL, 0, 0};

    /* 8,192 declared shards, three records in the last. */
    craft_header(&f);
    craft_entry e1 = {craft_chunk_of(&f, 8191, three, 3), 8191, 3};
    craft_index(&f, &e1, 1, 8192);
    emit_buf("trace/crafted_many_shards.sonde", &f);

    /* One chunk listed eight times. */
    f.size = 0;
    craft_header(&f);
    const uint64_t one = craft_chunk_of(&f, 0, three, 3);
    craft_entry dup[8];
    for (int i = 0; i < 8; ++i) dup[i] = (craft_entry){one, 0, 3};
    craft_index(&f, dup, 8, 1);
    emit_buf("trace/crafted_dup_index.sonde", &f);

    /* Two chunks of shard 0, listed overlapping, against file order, and past the chunks. */
    f.size = 0;
    craft_header(&f);
    const uint64_t a = craft_chunk_of(&f, 0, three, 3), b = craft_chunk_of(&f, 0, three, 2);
    const size_t body = f.size;
    craft_entry overlap[2] = {{a, 0, 3}, {a + 20, 0, 2}};
    craft_index(&f, overlap, 2, 1);
    emit_buf("trace/crafted_overlap_index.sonde", &f);
    f.size = body;
    craft_entry order[2] = {{b, 0, 2}, {a, 0, 3}};
    craft_index(&f, order, 2, 1);
    emit_buf("trace/crafted_out_of_order.sonde", &f);
    f.size = body;
    craft_entry outside[2] = {{a, 0, 3}, {body, 0, 2}};
    craft_index(&f, outside, 2, 1);
    emit_buf("trace/crafted_outside.sonde", &f);

    /* A chunk whose payload holds another complete chunk, both listed. */
    craft_buf inner = {NULL, 0, 0};
    craft_chunk_of(&inner, 1, three, 2);
    while (inner.size % 28 != 0) craft_u8(&inner, 0);
    craft_run run = {inner.data, 0, inner.size};
    craft_buf z = {NULL, 0, 0};
    craft_zstd(&z, &run, 1);
    f.size = 0;
    craft_header(&f);
    const uint64_t outer = craft_chunk(&f, 0, (uint32_t)(inner.size / 28), &z);
    craft_entry nested[2] = {{outer, 0, (uint32_t)(inner.size / 28)}, {outer + 61, 1, 2}};
    craft_index(&f, nested, 2, 2);
    emit_buf("trace/crafted_nested_chunk.sonde", &f);
    craft_free(&z);
    craft_free(&inner);

    /* Extreme values: addresses at the top, sizes 0 and 65535, every marker, two shards whose
     * timestamps interleave, records without timestamps. */
    const sonde_memref_t s0[8] = {ref(0xfffffffffffffff8ull, SONDE_MEMREF_READ, 16, 5),
                                  ref(0xffffffffffffffffull, SONDE_MEMREF_IFETCH, 2, 0),
                                  ref(0xffffffffffffff9cull, SONDE_MEMREF_WRITE, 65535, 9),
                                  ref(0, SONDE_MEMREF_MODIFY, 0, 9),
                                  ref(0, SONDE_MEMREF_READ, 65535, 20),
                                  ref(7, SONDE_MEMREF_MARKER, SONDE_MARKER_CPU_ID, 0),
                                  ref(1, SONDE_MEMREF_MARKER, SONDE_MARKER_THREAD_SWITCH, 21),
                                  ref(30, SONDE_MEMREF_MARKER, SONDE_MARKER_TIMESTAMP, 30)};
    const sonde_memref_t s1[4] = {ref(0x8000000000000000ull, SONDE_MEMREF_READ, 65535, 6),
                                  ref(0x7fffffffffffffffull, SONDE_MEMREF_WRITE, 1, 9),
                                  ref(0xffffffffffffffc0ull, SONDE_MEMREF_IFETCH, 64, 0),
                                  ref(0x40, SONDE_MEMREF_MODIFY, 128, 25)};
    f.size = 0;
    craft_header(&f);
    craft_entry ext[2] = {{craft_chunk_of(&f, 1, s1, 4), 1, 4}, {craft_chunk_of(&f, 0, s0, 8), 0, 8}};
    craft_index(&f, ext, 2, 2);
    emit_buf("trace/crafted_extreme.sonde", &f);

    /* Values outside the format: a memref type 5, a marker type 9. */
    sonde_memref_t bad0[3] = {three[0], three[1], three[2]}, bad1[2] = {three[0], three[1]};
    bad0[1].type = 5;
    bad1[1].type = SONDE_MEMREF_MARKER;
    bad1[1].size = 9;
    f.size = 0;
    craft_header(&f);
    craft_entry bad[2] = {{craft_chunk_of(&f, 0, bad0, 3), 0, 3}, {craft_chunk_of(&f, 1, bad1, 2), 1, 2}};
    craft_index(&f, bad, 2, 2);
    emit_buf("trace/crafted_bad_values.sonde", &f);

    /* A writer that stopped inside its third chunk, and one that stopped after the header. */
    f.size = 0;
    craft_header(&f);
    craft_chunk_of(&f, 0, three, 3);
    craft_chunk_of(&f, 1, three, 3);
    const size_t before = f.size;
    craft_chunk_of(&f, 0, three, 3);
    f.size = before + 60;
    emit_buf("trace/crafted_truncated.sonde", &f);
    f.size = 64;
    emit_buf("trace/crafted_header_only.sonde", &f);

    /* 2048 reads of 65535 bytes counting down from the top of the address space. */
    f.size = 0;
    craft_header(&f);
    craft_entry wide = {craft_chunk_fill(&f, 0, 2048, 0xFF, 0, 0xFF), 0, 2048};
    craft_index(&f, &wide, 1, 1);
    emit_buf("trace/crafted_wide.sonde", &f);

    /* Four shards of one chunk of 2^18 records each (7 MiB decoded per shard). */
    f.size = 0;
    craft_header(&f);
    craft_entry large[4];
    for (uint32_t s = 0; s < 4; ++s)
        large[s] = (craft_entry){craft_chunk_fill(&f, s, 1u << 18, 0, 0, 0), s, 1u << 18};
    craft_index(&f, large, 4, 4);
    emit_buf("trace/crafted_large_chunks.sonde", &f);

    /* Eight shards whose records interleave one by one in time. */
    f.size = 0;
    craft_header(&f);
    craft_entry inter[8];
    sonde_memref_t recs[64];
    for (uint32_t s = 0; s < 8; ++s) {
        for (uint32_t i = 0; i < 64; ++i)
            recs[i] = ref(0x10000 * (s + 1) + 8 * i, (uint16_t)(i % 4), 8, 1 + 8 * i + s);
        inter[s] = (craft_entry){craft_chunk_of(&f, s, recs, 64), s, 64};
    }
    craft_index(&f, inter, 8, 8);
    emit_buf("trace/crafted_interleaved.sonde", &f);

    /* One shard in four chunks, which the analyzer decodes on several threads, with
     * reuse_distance's tap on each piece of 4096 records (src/trace/source.h): 64 records
     * sampled at the source (the sampling markers first), 5000 reads, three records with a
     * SAMPLE_SKIPPED marker, 9000 reads. */
    f.size = 0;
    craft_header_minor(&f, 2); /* the markers of version 1.2 */
    sonde_memref_t head[64], skipped[3] = {three[0], three[1], three[2]};
    static const uint64_t values[3] = {1ull << 30, 5, 64}; /* rate 1/4, seed 5, 64-byte lines */
    for (uint32_t i = 0; i < 64; ++i)
        head[i] = i < 3
                      ? ref(values[i], SONDE_MEMREF_MARKER, (uint16_t)(SONDE_MARKER_SAMPLE_THRESHOLD + i), 0)
                      : ref(0x200000 + 64 * (i % 7), (uint16_t)(i % 3 == 2), 8, 0);
    skipped[1] = ref(250, SONDE_MEMREF_MARKER, SONDE_MARKER_SAMPLE_SKIPPED, 0);
    craft_entry chunked[4] = {{craft_chunk_of(&f, 0, head, 64), 0, 64},
                              {craft_chunk_fill(&f, 0, 5000, 0x00, 0, 8), 0, 5000},
                              {craft_chunk_of(&f, 0, skipped, 3), 0, 3},
                              {craft_chunk_fill(&f, 0, 9000, 0x00, 0, 8), 0, 9000}};
    craft_index(&f, chunked, 4, 1);
    emit_buf("trace/crafted_chunked.sonde", &f);
    craft_free(&f);
}

static void raw64(void) {
    const uint64_t extreme[6] = {
        0, UINT64_MAX, 0x8000000000000000ull, 1, 0xfffffffffffffff8ull, 0x7fffffffffffffffull};
    unsigned char bytes[48];
    for (int i = 0; i < 6; ++i) craft_le(bytes + 8 * i, extreme[i], 8);
    emit("raw64/extreme.raw64", bytes, sizeof bytes);
    emit("raw64/odd_size.raw64", bytes, 13);
    craft_buf b = {NULL, 0, 0};
    for (uint64_t i = 0; i < 512; ++i) craft_u64(&b, 0x601000 + 8 * i);
    emit_buf("raw64/strided.raw64", &b);
    craft_free(&b);
}

static void zstd(void) {
    /* First byte: the target's mode (two frames, a cut, the level); then the content. */
    static const char kText[] =
        "\x00==1== Lackey\nI  0401ab70,3\n S 1fff0005e8,8\n L 04022f00,4\n M 7ff000398,16\n"
        "I  ffffffffffffffff,2\n L fffffffffffffff8,16\n S 0,65535\n";
    emit("zstd/lackey_one_frame", kText, sizeof kText - 1);
    char two[sizeof kText];
    memcpy(two, kText, sizeof kText);
    two[0] = 1;
    emit("zstd/lackey_two_frames", two, sizeof kText - 1);
    two[0] = 0x12;
    emit("zstd/lackey_cut", two, sizeof kText - 1);
    unsigned char raw[1 + 64];
    raw[0] = 0x21;
    for (int i = 0; i < 8; ++i) craft_le(raw + 1 + 8 * i, UINT64_MAX - (uint64_t)i * 0x1000, 8);
    emit("zstd/raw64_two_frames", raw, sizeof raw);
}

static void options(void) {
    /* First byte: tool (0 basic_counts, 1 cache_sim, 2 reuse_distance) and mode (4: parallel). */
    static const char *const kSeeds[][2] = {
        {"basic_line64", "\x00line_size=64"},
        {"basic_line1_parallel", "\x04line_size=1"},
        {"basic_bad", "\x00line_size=0x10"},
        {"cache_default", "\x01I1:32K:8:64,D1:32K:8:64,LL:1M:16:64"},
        {"cache_policies_parallel", "\x05L1:1K:1:1:fifo,L2:64K:1024:64:random"},
        {"cache_huge_line",
         "\x01"
         "D1:64K:1:65536"},
        {"cache_overflow", "\x01LL:18446744073709551615G:1:64"},
        {"reuse_rate", "\x02line_size=64,sample_rate=0.01"},
        {"reuse_size_per_shard", "\x02sample_size=4,per_shard=1"},
        {"reuse_jobs", "\x02jobs=2,line_size=1"},
    };
    for (size_t i = 0; i < sizeof kSeeds / sizeof kSeeds[0]; ++i) {
        char name[64];
        snprintf(name, sizeof name, "options/%s", kSeeds[i][0]);
        emit(name, kSeeds[i][1], 1 + strlen(kSeeds[i][1] + 1));
    }
}

static void cache(void) {
    /* levels byte, 4 bytes per level (name+policy, log2 size, ways, log2 line), accesses of 12
     * bytes (address, size, type, timestamp): I0:32K:8:64, D1:1M:16:64:lru, L2:4M:256:64:fifo. */
    craft_buf b = {NULL, 0, 0};
    const unsigned char geometry[] = {2, 0x00, 15, 0x87, 6, 0x41, 20, 0x88, 6, 0x82, 22, 0x8C, 6};
    craft_put(&b, geometry, sizeof geometry);
    const uint64_t addrs[6] = {0x1000, UINT64_MAX, 0xfffffffffffffff8ull, 0, 0x8000000000000000ull, 0x1040};
    const uint16_t sizes[6] = {8, 2, 16, 65535, 0, 64};
    for (int i = 0; i < 6; ++i) {
        unsigned char r[12];
        craft_le(r, addrs[i], 8);
        craft_le(r + 8, sizes[i], 2);
        r[10] = (unsigned char)i;
        r[11] = (unsigned char)(10 + i);
        craft_put(&b, r, 12);
    }
    emit_buf("cache/three_levels", &b);
    b.data[0] = 0;
    b.data[3] = 0x00; /* one way */
    b.data[4] = 0;    /* 1-byte lines */
    emit_buf("cache/line1", &b);
    craft_free(&b);
}

/* One 12-byte drmemtrace record (trace_entry_t of a 64-bit trace). */
static void dr(craft_buf *b, uint16_t type, uint16_t size, uint64_t value) {
    unsigned char r[12];
    craft_le(r, type, 2);
    craft_le(r + 2, size, 2);
    craft_le(r + 4, value, 8);
    craft_put(b, r, sizeof r);
}

static void drmemtrace(void) {
    enum { kMarker = 28 };
    craft_buf b = {NULL, 0, 0};
    dr(&b, 25, 0, 7);                   /* header, version 7 */
    dr(&b, kMarker, 12, 7);             /* version marker */
    dr(&b, kMarker, 9, 0xe40);          /* file type: x86-64, encodings, syscall numbers, blocking */
    dr(&b, 22, 4, 1234);                /* thread */
    dr(&b, 24, 4, 1234);                /* pid */
    dr(&b, kMarker, 10, 64);            /* cache line size */
    dr(&b, kMarker, 20, 10000000);      /* chunk instruction count */
    dr(&b, kMarker, 18, 4096);          /* page size */
    dr(&b, kMarker, 2, 13386385969ull); /* timestamp (us) */
    dr(&b, kMarker, 3, 5);              /* cpu id */
    dr(&b, 47, 3, 0x90c031);            /* encoding of a 3-byte instruction */
    dr(&b, 10, 3, 0x401000);            /* instruction */
    dr(&b, 0, 8, 0x7ffd000010);         /* load */
    dr(&b, 1, 4, 0x7ffd000018);         /* store */
    dr(&b, 2, 1, 0x601000);             /* prefetch */
    dr(&b, 27, 64, 0x601040);           /* hardware prefetch */
    dr(&b, 48, 2, 0x401003);            /* taken conditional branch */
    dr(&b, 49, 2, 0x401010);            /* untaken conditional branch */
    dr(&b, 14, 5, 0x401012);            /* direct call */
    dr(&b, 16, 1, 0x402000);            /* return */
    dr(&b, 29, 2, 0x401017);            /* non-fetched instruction */
    unsigned char bundle[12] = {17, 0, 3, 0, 2, 4, 7};
    craft_put(&b, bundle, sizeof bundle); /* bundle of 3 instructions after the last one */
    dr(&b, 18, 0, 0x401000);              /* instruction flush of unknown length ... */
    dr(&b, 19, 0, 0x401040);              /* ... and its end */
    dr(&b, 20, 64, 0x601000);             /* data flush */
    dr(&b, kMarker, 25, 15);              /* system call 15 */
    dr(&b, kMarker, 26, 0);               /* maybe blocking */
    dr(&b, kMarker, 4, 7);                /* function id, return address, argument, return value */
    dr(&b, kMarker, 5, 0x401020);
    dr(&b, kMarker, 6, 42);
    dr(&b, kMarker, 7, 0);
    dr(&b, kMarker, 0, 0x401020); /* kernel event, then the transfer back */
    dr(&b, kMarker, 1, 0x401020);
    dr(&b, 0, 0, UINT64_MAX);         /* a 0-byte load at the top of the address space */
    dr(&b, 1, 65535, UINT64_MAX - 8); /* the largest store, past the top */
    dr(&b, kMarker, 2, 13386385970ull);
    dr(&b, 23, 4, 1234); /* thread exit */
    dr(&b, 26, 0, 0);    /* footer */
    emit_buf("drmemtrace/crafted_v7.trace", &b);
    craft_free(&b);
    /* Version 1, as the oldest tracers wrote it: no version or file type marker, conditional
     * branches of type 13, and the thread record repeated before each buffer's worth. */
    craft_buf v1 = {NULL, 0, 0};
    dr(&v1, 25, 0, 1);
    dr(&v1, 22, 4, 21548);
    dr(&v1, 24, 4, 21548);
    dr(&v1, kMarker, 2, 13152668519ull);
    dr(&v1, kMarker, 3, 2);
    dr(&v1, 10, 4, 0x400100);
    dr(&v1, 0, 8, 0x7fff413f5bc8);
    dr(&v1, 13, 2, 0x400104);
    dr(&v1, 22, 4, 21548);
    dr(&v1, 11, 5, 0x400140);
    dr(&v1, 1, 8, 0x7fff413f5c00);
    dr(&v1, 23, 4, 21548);
    dr(&v1, 26, 0, 0);
    emit_buf("drmemtrace/crafted_v1.trace", &v1);
    craft_free(&v1);
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "check") != 0)) {
        fprintf(stderr, "usage: craft_corpus write|check CORPUS_DIR\n");
        return 2;
    }
    g_check = strcmp(argv[1], "check") == 0;
    g_dir = argv[2];
    traces();
    raw64();
    drmemtrace();
    zstd();
    options();
    cache();
    if (!g_failed) printf("%s: crafted seeds %s\n", g_dir, g_check ? "up to date" : "written");
    return g_failed;
}
