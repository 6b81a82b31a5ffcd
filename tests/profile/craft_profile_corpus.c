/* Writes the seeds of the shared profile buffer fuzz corpus (tests/profile/corpus/), or checks
 * that the checked-in files still are what it writes:
 *     craft_profile_corpus write CORPUS_DIR
 *     craft_profile_corpus check CORPUS_DIR
 * The valid seeds are regions made by sonde_profile_buffer_create_shared (in a memfd) with
 * arrays allocated and counters written through the public API, copied byte for byte with
 * creator_pid set to 0 so that every run writes the same bytes. The crafted seeds patch a valid
 * one the way a damaged or hostile file would (sonde/profile_shared.h has the layout): a bad
 * magic, another layout version, a size field that is not the file's, a directory count past
 * its capacity or past the entries written, entries outside the region, inside the header,
 * misaligned, overflowing or whose geometry disagrees, overlapping arrays, a file cut inside
 * the header or inside an array. Both modes also open every seed (through a memfd) and check
 * that it is taken or refused as it was made to be: sonde_profile_buffer_open_shared's status,
 * then sonde_profile_array_open's for each directory entry. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <unistd.h>

#include <sonde/profile.h>

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
        fprintf(stderr,
                "%s: differs from what craft_profile_corpus writes (run: craft_profile_corpus write %s)\n",
                path, g_dir);
        g_failed = 1;
    }
    if (f != NULL) fclose(f);
    free(have);
}

/* Opens `data` as a shared buffer through a memfd and checks the outcome: open_status, then,
 * when it opens, one character per published directory entry: 'o' opens, 'f' is refused with
 * FORMAT. */
static void expect(const char *name, const void *data, size_t size, sonde_status_t open_status,
                   const char *entries) {
    const int fd = memfd_create("craft_profile_corpus", MFD_CLOEXEC);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
        fprintf(stderr, "%s: cannot make a memfd\n", name);
        g_failed = 1;
        if (fd >= 0) close(fd);
        return;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    sonde_profile_buffer_t *pb = NULL;
    const sonde_status_t st = sonde_profile_buffer_open_shared(path, &pb);
    if (st != open_status) {
        fprintf(stderr, "%s: open_shared answers %s, not %s\n", name, sonde_status_name(st),
                sonde_status_name(open_status));
        g_failed = 1;
    }
    if (st == SONDE_STATUS_SUCCESS) {
        uint32_t count = 0;
        sonde_profile_buffer_num_arrays(pb, &count);
        if (count != strlen(entries)) {
            fprintf(stderr, "%s: %u directory entries, not %zu\n", name, count, strlen(entries));
            g_failed = 1;
        }
        for (uint32_t i = 0; i < count && i < strlen(entries); ++i) {
            sonde_profile_array_t *arr = NULL;
            const sonde_status_t ast = sonde_profile_array_open(pb, i, &arr);
            const sonde_status_t want = entries[i] == 'o' ? SONDE_STATUS_SUCCESS : SONDE_STATUS_ERROR_FORMAT;
            if (ast != want) {
                fprintf(stderr, "%s: array_open(%u) answers %s, not %s\n", name, i, sonde_status_name(ast),
                        sonde_status_name(want));
                g_failed = 1;
            }
            sonde_profile_array_destroy(arr);
        }
        sonde_profile_buffer_destroy(pb);
    }
    close(fd);
}

/* A seed: written or compared, then checked as expect() does. */
static void seed(const char *name, const void *data, size_t size, sonde_status_t open_status,
                 const char *entries) {
    emit(name, data, size);
    expect(name, data, size, open_status, entries);
}

/* A region made by the library: its bytes (owned by the caller) and size. */
typedef struct region_t {
    unsigned char *data;
    size_t size;
} region_t;

/* An array to allocate: geometry, then counters set to value(bucket, record, word). */
typedef struct geometry_t {
    uint32_t record_size, num_records, buckets, alignment;
} geometry_t;

static void fail(const char *what, sonde_status_t st) {
    fprintf(stderr, "craft_profile_corpus: %s: %s\n", what, sonde_status_name(st));
    exit(1);
}

/* Creates a memfd buffer of `size` bytes for arrays, allocates `n` arrays and fills their
 * records with a pattern (bytes of record r in bucket b of array a: a + 3b + 5r + byte index),
 * then copies the region with creator_pid 0. */
static region_t make_region(uint64_t size, const geometry_t *arrays, size_t n) {
    sonde_profile_buffer_t *pb = NULL;
    sonde_status_t st = sonde_profile_buffer_create_shared(NULL, size, &pb);
    if (st != SONDE_STATUS_SUCCESS) fail("create_shared", st);
    for (size_t a = 0; a < n; ++a) {
        const geometry_t *g = &arrays[a];
        sonde_profile_array_t *arr = NULL;
        st = sonde_profile_array_create(g->record_size, g->num_records, g->buckets, g->alignment, &arr);
        if (st != SONDE_STATUS_SUCCESS) fail("array_create", st);
        st = sonde_profile_array_allocate(arr, pb);
        if (st != SONDE_STATUS_SUCCESS) fail("array_allocate", st);
        unsigned char *record = malloc(g->record_size);
        if (record == NULL) fail("malloc", SONDE_STATUS_ERROR_OUT_OF_MEMORY);
        for (uint32_t b = 0; b < sonde_profile_array_num_thread_buckets(arr); ++b) {
            for (uint32_t r = 0; r < g->num_records; ++r) {
                for (uint32_t i = 0; i < g->record_size; ++i)
                    record[i] = (unsigned char)(a + 3 * b + 5 * r + i);
                st = sonde_profile_array_write(arr, pb, record, r, 1, b);
                if (st != SONDE_STATUS_SUCCESS) fail("array_write", st);
            }
        }
        free(record);
        sonde_profile_array_destroy(arr);
    }
    region_t out;
    out.size = (size_t)(SONDE_PROFILE_SHARED_HEADER_SIZE + size);
    out.data = malloc(out.size);
    if (out.data == NULL) fail("malloc", SONDE_STATUS_ERROR_OUT_OF_MEMORY);
    memcpy(out.data, sonde_profile_buffer_data(pb), out.size);
    sonde_profile_buffer_destroy(pb);
    memset(out.data + offsetof(sonde_profile_shared_header_t, creator_pid), 0, 8);
    return out;
}

static region_t copy(const region_t *r) {
    region_t c;
    c.size = r->size;
    c.data = malloc(r->size);
    if (c.data == NULL) fail("malloc", SONDE_STATUS_ERROR_OUT_OF_MEMORY);
    memcpy(c.data, r->data, r->size);
    return c;
}

static void put32(region_t *r, size_t at, uint32_t v) { memcpy(r->data + at, &v, 4); }
static void put64(region_t *r, size_t at, uint64_t v) { memcpy(r->data + at, &v, 8); }

/* Offset of field `field` of directory entry i. */
#define ENTRY(i, field)                                               \
    ((size_t)sizeof(sonde_profile_shared_header_t) + (size_t)(i)*64 + \
     offsetof(sonde_profile_shared_array_t, field))
#define HEADER(field) offsetof(sonde_profile_shared_header_t, field)

/* Emits a patched copy of `base`, checks it and frees it. */
static void seed_patched(const char *name, region_t *patched, sonde_status_t open_status,
                         const char *entries) {
    seed(name, patched->data, patched->size, open_status, entries);
    free(patched->data);
}

#define OK SONDE_STATUS_SUCCESS
#define FORMAT SONDE_STATUS_ERROR_FORMAT

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "check") != 0)) {
        fprintf(stderr, "usage: craft_profile_corpus write|check CORPUS_DIR\n");
        return 2;
    }
    g_check = strcmp(argv[1], "check") == 0;
    g_dir = argv[2];

    /* Valid regions. */
    region_t empty = make_region(64, NULL, 0);
    seed("valid_empty.prf", empty.data, empty.size, OK, "");
    free(empty.data);

    const geometry_t one[1] = {{16, 4, 4, 64}};
    region_t single = make_region(1024, one, 1);
    seed("valid_one_array.prf", single.data, single.size, OK, "o");
    free(single.data);

    /* Three geometries: 8-byte records in one bucket, 24-byte records in three buckets
     * (rounded up to four), 100-byte records (not a multiple of 8) aligned to 256. */
    const geometry_t three[3] = {{8, 16, 1, 64}, {24, 5, 3, 128}, {100, 3, 2, 256}};
    region_t base = make_region(4096, three, 3);
    seed("valid_three_arrays.prf", base.data, base.size, OK, "ooo");

    geometry_t full[SONDE_PROFILE_SHARED_MAX_ARRAYS];
    for (size_t i = 0; i < SONDE_PROFILE_SHARED_MAX_ARRAYS; ++i) full[i] = (geometry_t){8, 1, 1, 64};
    region_t many = make_region(64 * SONDE_PROFILE_SHARED_MAX_ARRAYS, full, SONDE_PROFILE_SHARED_MAX_ARRAYS);
    char all_open[SONDE_PROFILE_SHARED_MAX_ARRAYS + 1];
    memset(all_open, 'o', SONDE_PROFILE_SHARED_MAX_ARRAYS);
    all_open[SONDE_PROFILE_SHARED_MAX_ARRAYS] = 0;
    seed("valid_full_directory.prf", many.data, many.size, OK, all_open);
    free(many.data);

    /* Crafted from the three-array region. */
    region_t p = copy(&base);
    p.data[0] ^= 0xff;
    seed_patched("crafted_bad_magic.prf", &p, FORMAT, "");

    p = copy(&base);
    put32(&p, HEADER(version), SONDE_PROFILE_SHARED_VERSION + 1);
    seed_patched("crafted_version.prf", &p, SONDE_STATUS_ERROR_INCOMPATIBLE_ABI, "");

    p = copy(&base);
    put64(&p, HEADER(size), base.size + 4096);
    seed_patched("crafted_size_field.prf", &p, FORMAT, "");

    p = copy(&base);
    put32(&p, HEADER(num_arrays), SONDE_PROFILE_SHARED_MAX_ARRAYS + 1);
    seed_patched("crafted_count_past_capacity.prf", &p, FORMAT, "");

    p = copy(&base);
    put32(&p, HEADER(num_arrays), SONDE_PROFILE_SHARED_MAX_ARRAYS); /* entries 3.. are zeros */
    char past_entries[SONDE_PROFILE_SHARED_MAX_ARRAYS + 1];
    memset(past_entries, 'f', SONDE_PROFILE_SHARED_MAX_ARRAYS);
    memcpy(past_entries, "ooo", 3);
    past_entries[SONDE_PROFILE_SHARED_MAX_ARRAYS] = 0;
    seed_patched("crafted_count_past_entries.prf", &p, OK, past_entries);

    p = copy(&base);
    put64(&p, ENTRY(1, offset), base.size); /* at the end: its size runs outside */
    seed_patched("crafted_entry_outside.prf", &p, OK, "ofo");

    p = copy(&base);
    put64(&p, ENTRY(1, offset), UINT64_MAX - 63); /* offset + size wraps */
    seed_patched("crafted_entry_wraps.prf", &p, OK, "ofo");

    p = copy(&base);
    put64(&p, ENTRY(0, offset), 64); /* over the directory */
    seed_patched("crafted_entry_in_header.prf", &p, OK, "foo");

    p = copy(&base);
    put64(&p, ENTRY(2, offset), SONDE_PROFILE_SHARED_HEADER_SIZE + 8); /* not a multiple of 256 */
    seed_patched("crafted_entry_misaligned.prf", &p, OK, "oof");

    p = copy(&base);
    put32(&p, ENTRY(1, chunk_size), 64); /* the records need 128 */
    seed_patched("crafted_entry_chunk_size.prf", &p, OK, "ofo");

    p = copy(&base);
    put32(&p, ENTRY(0, num_thread_buckets), 3); /* not a power of two */
    seed_patched("crafted_entry_buckets.prf", &p, OK, "foo");

    p = copy(&base);
    put32(&p, ENTRY(0, num_thread_buckets), 65536); /* the size field no longer matches */
    put64(&p, ENTRY(0, size), 65536ull * 128);
    seed_patched("crafted_entry_huge_buckets.prf", &p, OK, "foo");

    p = copy(&base);
    put32(&p, ENTRY(0, record_size), 0x10000);
    put32(&p, ENTRY(0, num_records), 0x10000); /* chunk size past 32 bits */
    seed_patched("crafted_entry_chunk_overflow.prf", &p, OK, "foo");

    p = copy(&base);
    put32(&p, ENTRY(0, record_size), 0);
    seed_patched("crafted_entry_zero_record.prf", &p, OK, "foo");

    p = copy(&base);
    put32(&p, ENTRY(2, alignment), 6); /* not a power of two */
    seed_patched("crafted_entry_alignment.prf", &p, OK, "oof");

    /* Entry 1 made a copy of entry 0: two arrays over the same bytes (valid, and reads agree). */
    p = copy(&base);
    memcpy(p.data + ENTRY(1, offset), p.data + ENTRY(0, offset), 64);
    seed_patched("crafted_overlapping.prf", &p, OK, "ooo");

    /* Cut inside the header, and cut inside the last array (the size field keeps the old size). */
    seed("crafted_cut_header.prf", base.data, 1000, FORMAT, "");
    seed("crafted_cut_array.prf", base.data, base.size - 512, FORMAT, "");

    free(base.data);
    if (!g_failed) printf("%s: crafted seeds %s\n", g_dir, g_check ? "up to date" : "written");
    return g_failed;
}
