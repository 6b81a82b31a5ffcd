/* The drmemtrace reader through the public API (sonde/trace.h) on DynamoRIO's own test traces
 * (tests/data/drmemtrace): a directory of thread files, a version-1 plain file and a version-4
 * zip; the same records from every container (plain, gzip, lz4, zstd, zip of several chunks);
 * AUTO detection; and every format error with its file and offset. The variants are written
 * here with the container libraries from the zip's chunk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <lz4frame.h>
#include <zip.h>
#include <zlib.h>
#include <zstd.h>

#include <sonde/trace.h>

static char g_dir[256];
static char g_data[512];

static const char *tmp_path(const char *name) {
    static char buf[8][512];
    static int slot;
    char *p = buf[slot++ & 7];
    snprintf(p, 512, "%s/%s", g_dir, name);
    return p;
}

static const char *data_path(const char *name) {
    static char buf[4][768];
    static int slot;
    char *p = buf[slot++ & 3];
    snprintf(p, 768, "%s/drmemtrace/%s", g_data, name);
    return p;
}

#define SIMPLE_APP "drcacheoff.cpu/drmemtrace.simple_app.trace.zip"
#define SMALL "reuse_offline/drmemtrace.small.x64.trace"
#define THREADSIG "core_serial/drmemtrace.threadsig.x64.tracedir"

static void spit(const char *path, const void *d, size_t size) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, size, f), size);
    fclose(f);
}

/* Every record of every shard, in shard order, read in batches of `batch`. */
typedef struct stream_t {
    sonde_memref_t *m;
    size_t n;
    uint32_t shards;
    uint32_t format;
} stream_t;

static sonde_status_t read_stream(const char *path, uint32_t format, size_t batch, stream_t *s, char *err,
                                  size_t err_size) {
    memset(s, 0, sizeof *s);
    sonde_trace_reader_t *r = NULL;
    sonde_status_t st = sonde_trace_reader_open(path, format, err, err_size, &r);
    if (st != SONDE_STATUS_SUCCESS) return st;
    sonde_trace_reader_num_shards(r, &s->shards);
    sonde_trace_reader_format(r, &s->format);
    size_t cap = 1 << 16;
    s->m = malloc(cap * sizeof *s->m);
    for (uint32_t shard = 0; shard < s->shards; ++shard) {
        for (;;) {
            if (s->n + batch > cap) {
                cap *= 2;
                s->m = realloc(s->m, cap * sizeof *s->m);
            }
            size_t n = 0;
            st = sonde_trace_reader_read_shard(r, shard, s->m + s->n, batch, &n);
            if (st != SONDE_STATUS_SUCCESS) {
                snprintf(err, err_size, "%s", sonde_trace_reader_error(r));
                sonde_trace_reader_close(r);
                return st;
            }
            if (n == 0) break;
            for (size_t i = 0; i < n; ++i) assert_int_equal(s->m[s->n + i].shard, shard);
            s->n += n;
        }
    }
    sonde_trace_reader_close(r);
    return SONDE_STATUS_SUCCESS;
}

static void must_read(const char *path, uint32_t format, size_t batch, stream_t *s) {
    char err[1024];
    const sonde_status_t st = read_stream(path, format, batch, s, err, sizeof err);
    if (st != SONDE_STATUS_SUCCESS) fail_msg("%s: %s", sonde_status_name(st), err);
    assert_int_equal(s->format, SONDE_TRACE_FORMAT_DRMEMTRACE);
}

static void same_stream(const stream_t *a, const stream_t *b) {
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; ++i)
        if (memcmp(&a->m[i], &b->m[i], sizeof a->m[i]) != 0) fail_msg("record %zu differs", i);
}

/* The raw bytes of the simple_app zip's single chunk. */
static unsigned char *simple_app_chunk(size_t *size) {
    int code = 0;
    zip_t *z = zip_open(data_path(SIMPLE_APP), ZIP_RDONLY, &code);
    assert_non_null(z);
    assert_int_equal(zip_get_num_entries(z, 0), 1);
    assert_string_equal(zip_get_name(z, 0, 0), "chunk.0000");
    zip_stat_t st;
    assert_int_equal(zip_stat_index(z, 0, 0, &st), 0);
    unsigned char *d = malloc(st.size);
    zip_file_t *f = zip_fopen_index(z, 0, 0);
    assert_non_null(f);
    assert_int_equal(zip_fread(f, d, st.size), (zip_int64_t)st.size);
    zip_fclose(f);
    zip_discard(z);
    *size = st.size;
    return d;
}

/* Writes a zip whose members are the given buffers, named chunk.0000, chunk.0001, ... (or
 * `names` when given). */
static void write_zip(const char *path, const unsigned char *const *parts, const size_t *sizes, size_t count,
                      const char *const *names) {
    int code = 0;
    zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &code);
    assert_non_null(z);
    for (size_t i = 0; i < count; ++i) {
        zip_source_t *src = zip_source_buffer(z, parts[i], sizes[i], 0);
        assert_non_null(src);
        char name[32];
        snprintf(name, sizeof name, "chunk.%04zu", i);
        assert_true(zip_file_add(z, names != NULL ? names[i] : name, src, ZIP_FL_OVERWRITE) >= 0);
    }
    assert_int_equal(zip_close(z), 0);
}

static void put_record(unsigned char *p, uint16_t type, uint16_t size, uint64_t addr) {
    memcpy(p, &type, 2);
    memcpy(p + 2, &size, 2);
    memcpy(p + 4, &addr, 8);
}

static uint16_t rec_type(const unsigned char *p) {
    uint16_t t;
    memcpy(&t, p, 2);
    return t;
}

static uint64_t rec_addr(const unsigned char *p) {
    uint64_t a;
    memcpy(&a, p + 4, 8);
    return a;
}

/* ---- the three traces ---- */

static void test_directory(void **state) {
    (void)state;
    stream_t s;
    must_read(data_path(THREADSIG), SONDE_TRACE_FORMAT_AUTO, 4096, &s);
    assert_int_equal(s.shards, 9);
    uint64_t fetched = 0, no_fetch = 0, loads = 0, stores = 0, encodings = 0, tids = 0, exits = 0;
    uint64_t last_ts = 0;
    uint32_t shard = UINT32_MAX;
    uint64_t tid = 0;
    for (size_t i = 0; i < s.n; ++i) {
        const sonde_memref_t *m = &s.m[i];
        if (m->shard != shard) { /* each shard starts with its thread and process ids */
            shard = m->shard;
            assert_int_equal(m->type, SONDE_MEMREF_MARKER);
            assert_int_equal(m->size, SONDE_MARKER_THREAD_ID);
            assert_int_equal(s.m[i + 1].size, SONDE_MARKER_PROCESS_ID);
            assert_int_equal(s.m[i + 1].address, 872805);
            assert_int_equal(s.m[i + 2].size, SONDE_MARKER_VERSION);
            assert_int_equal(s.m[i + 2].address, 7);
            assert_int_equal(s.m[i + 3].size, SONDE_MARKER_FILETYPE);
            assert_int_equal(s.m[i + 3].address, 0xe40);
            tid = m->address;
            last_ts = 0;
        }
        assert_true(m->timestamp >= last_ts);
        last_ts = m->timestamp;
        if (sonde_memref_type_is_instr(m->type)) {
            ++fetched;
            assert_int_equal(m->pc, m->address);
        }
        no_fetch += m->type == SONDE_MEMREF_INSTR_NO_FETCH;
        loads += m->type == SONDE_MEMREF_READ;
        stores += m->type == SONDE_MEMREF_WRITE;
        if (m->type == SONDE_MEMREF_INSTR_ENCODING) {
            ++encodings;
            assert_true(sonde_memref_type_is_instr(s.m[i + 1].type) ||
                        s.m[i + 1].type == SONDE_MEMREF_INSTR_NO_FETCH);
            assert_int_equal(m->size, s.m[i + 1].size);
        }
        if (m->type == SONDE_MEMREF_MARKER && m->size == SONDE_MARKER_THREAD_ID) ++tids;
        if (m->type == SONDE_MEMREF_MARKER && m->size == SONDE_MARKER_THREAD_EXIT) {
            ++exits;
            assert_int_equal(m->address, tid);
        }
        assert_true(m->type != SONDE_MEMREF_MARKER || m->size != SONDE_MARKER_DRMEMTRACE + 22); /* ordinal */
    }
    assert_int_equal(fetched, 650576);
    assert_int_equal(no_fetch, 126);
    assert_int_equal(loads, 172208);
    assert_int_equal(stores, 100150);
    assert_int_equal(encodings, 21842);
    assert_int_equal(tids, 9);
    assert_int_equal(exits, 9);
    free(s.m);
}

static void test_small_version1(void **state) {
    (void)state;
    stream_t s, one;
    must_read(data_path(SMALL), SONDE_TRACE_FORMAT_AUTO, 4096, &s);
    must_read(data_path(SMALL), SONDE_TRACE_FORMAT_DRMEMTRACE, 1, &one); /* one record per call */
    same_stream(&s, &one);
    assert_int_equal(s.shards, 1);
    /* 251 records: HEADER, 16 THREAD, PID and FOOTER are hidden; thread and process id markers added. */
    assert_int_equal(s.n, 251 - 19 + 2);
    assert_int_equal(s.m[0].size, SONDE_MARKER_THREAD_ID);
    assert_int_equal(s.m[0].address, 21548);
    assert_int_equal(s.m[1].size, SONDE_MARKER_PROCESS_ID);
    assert_int_equal(s.m[2].size, SONDE_MARKER_TIMESTAMP);
    assert_int_equal(s.m[2].address, 0x2ed91330171e15ull * 1000);
    assert_int_equal(s.m[2].timestamp, s.m[2].address);
    assert_int_equal(s.m[3].size, SONDE_MARKER_CPU_ID);
    assert_int_equal(s.m[3].address, 2);
    assert_int_equal(s.m[4].type, SONDE_MEMREF_IFETCH);
    assert_int_equal(s.m[4].address, 0x400110);
    assert_int_equal(s.m[4].size, 4);
    assert_int_equal(s.m[4].timestamp, s.m[2].timestamp);
    size_t ifetch = 0, cond = 0, reads = 0, writes = 0;
    for (size_t i = 0; i < s.n; ++i) {
        ifetch += s.m[i].type == SONDE_MEMREF_IFETCH;
        cond += s.m[i].type == SONDE_MEMREF_INSTR_CONDITIONAL_JUMP;
        if (s.m[i].type == SONDE_MEMREF_READ || s.m[i].type == SONDE_MEMREF_WRITE) {
            reads += s.m[i].type == SONDE_MEMREF_READ;
            writes += s.m[i].type == SONDE_MEMREF_WRITE;
            /* a data record's pc is the instruction before it */
            size_t j = i;
            while (!sonde_memref_type_is_instr(s.m[j].type)) --j;
            assert_int_equal(s.m[i].pc, s.m[j].address);
        }
    }
    assert_int_equal(ifetch, 159);
    assert_int_equal(cond, 14);
    assert_int_equal(reads, 42);
    assert_int_equal(writes, 14);
    assert_int_equal(s.m[s.n - 1].size, SONDE_MARKER_THREAD_EXIT);
    free(s.m);
    free(one.m);
}

static void test_version4_zip(void **state) {
    (void)state;
    stream_t s;
    must_read(data_path(SIMPLE_APP), SONDE_TRACE_FORMAT_AUTO, 4096, &s);
    size_t fetched = 0, cond = 0, taken = 0, no_fetch = 0, cpu = 0;
    for (size_t i = 0; i < s.n; ++i) {
        fetched += sonde_memref_type_is_instr(s.m[i].type);
        cond += s.m[i].type == SONDE_MEMREF_INSTR_CONDITIONAL_JUMP;
        taken += s.m[i].type == SONDE_MEMREF_INSTR_TAKEN_JUMP;
        no_fetch += s.m[i].type == SONDE_MEMREF_INSTR_NO_FETCH;
        cpu += s.m[i].type == SONDE_MEMREF_MARKER && s.m[i].size == SONDE_MARKER_CPU_ID;
    }
    assert_int_equal(fetched, 136051);
    assert_int_equal(cond, 26297); /* version 4: conditional branches without their outcome */
    assert_int_equal(taken, 0);
    assert_int_equal(no_fetch, 361);
    assert_int_equal(cpu, 42);
    /* The first instruction has its encoding (48 89 e7, mov %rsp,%rdi) just before it. */
    size_t i = 0;
    while (s.m[i].type != SONDE_MEMREF_INSTR_ENCODING) ++i;
    assert_int_equal(s.m[i].size, 3);
    assert_int_equal(s.m[i].address, 0xe78948);
    assert_int_equal(s.m[i].pc, 0);
    assert_int_equal(s.m[i + 1].type, SONDE_MEMREF_IFETCH);
    assert_int_equal(s.m[i + 1].address, 0x7fbbbede5940ull);
    free(s.m);
}

/* ---- containers ---- */

static void test_containers(void **state) {
    (void)state;
    stream_t ref;
    must_read(data_path(SIMPLE_APP), SONDE_TRACE_FORMAT_AUTO, 4096, &ref);
    size_t size = 0;
    unsigned char *raw = simple_app_chunk(&size);

    spit(tmp_path("t.trace"), raw, size);
    spit(tmp_path("noext"), raw, size); /* found by its header record */

    gzFile gz = gzopen(tmp_path("t.trace.gz"), "wb");
    assert_non_null(gz);
    assert_int_equal(gzwrite(gz, raw, (unsigned)size), (int)size);
    gzclose(gz);

    size_t bound = LZ4F_compressFrameBound(size, NULL);
    unsigned char *lz = malloc(bound);
    size_t lzn = LZ4F_compressFrame(lz, bound, raw, size, NULL);
    assert_false(LZ4F_isError(lzn));
    spit(tmp_path("t.trace.lz4"), lz, lzn);

    bound = ZSTD_compressBound(size);
    unsigned char *zs = malloc(bound);
    size_t zsn = ZSTD_compress(zs, bound, raw, size, 3);
    assert_false(ZSTD_isError(zsn));
    spit(tmp_path("t.trace.zst"), zs, zsn);

    const char *names[] = {"t.trace", "noext", "t.trace.gz", "t.trace.lz4", "t.trace.zst"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        stream_t s;
        must_read(tmp_path(names[i]), SONDE_TRACE_FORMAT_AUTO, 1000, &s);
        same_stream(&ref, &s);
        free(s.m);
    }
    /* A directory of one thread file, and a run directory whose thread files are in trace/. */
    assert_int_equal(mkdir(tmp_path("run"), 0755), 0);
    assert_int_equal(mkdir(tmp_path("run/trace"), 0755), 0);
    spit(tmp_path("run/trace/drmemtrace.app.1.0000.trace.lz4"), lz, lzn);
    spit(tmp_path("run/trace/modules.log"), "x", 1); /* skipped like DynamoRIO skips it */
    stream_t s;
    must_read(tmp_path("run"), SONDE_TRACE_FORMAT_AUTO, 4096, &s);
    assert_int_equal(s.shards, 1);
    same_stream(&ref, &s);
    free(s.m);
    free(lz);
    free(zs);
    free(raw);
    free(ref.m);
}

/* Splits the simple_app chunk into three zip members as raw2trace does: every member but the
 * last ends with a chunk footer; every member but the first starts with a record ordinal and
 * copies of the last timestamp and cpu id. Tools see the same records plus the two footers. */
static void test_chunks(void **state) {
    (void)state;
    stream_t ref;
    must_read(data_path(SIMPLE_APP), SONDE_TRACE_FORMAT_AUTO, 4096, &ref);
    size_t size = 0;
    unsigned char *raw = simple_app_chunk(&size);
    const size_t nrec = size / 12;
    size_t cut[2];
    int found = 0;
    uint64_t last_ts[2] = {0, 0}, last_cpu[2] = {0, 0}, ts = 0, cpu = 0;
    for (size_t i = 1; i < nrec && found < 2; ++i) {
        const unsigned char *p = raw + 12 * i;
        if (rec_type(p) == 28) {
            uint16_t kind;
            memcpy(&kind, p + 2, 2);
            if (kind == 2) ts = rec_addr(p);
            if (kind == 3) cpu = rec_addr(p);
        }
        /* cut after a load, at a third and two thirds of the file */
        if (rec_type(p) == 0 && i >= (size_t)(found + 1) * nrec / 3) {
            cut[found] = i + 1;
            last_ts[found] = ts;
            last_cpu[found] = cpu;
            ++found;
        }
    }
    assert_int_equal(found, 2);
    const size_t starts[3] = {0, cut[0], cut[1]};
    const size_t ends[3] = {cut[0], cut[1], nrec};
    unsigned char *parts[3];
    size_t sizes[3];
    for (int k = 0; k < 3; ++k) {
        const size_t body = ends[k] - starts[k];
        parts[k] = malloc(12 * (body + 4));
        unsigned char *q = parts[k];
        if (k > 0) {
            put_record(q, 28, 22, starts[k]); /* record ordinal */
            put_record(q + 12, 28, 2, last_ts[k - 1]);
            put_record(q + 24, 28, 3, last_cpu[k - 1]);
            q += 36;
        }
        memcpy(q, raw + 12 * starts[k], 12 * body);
        q += 12 * body;
        if (k < 2) {
            put_record(q, 28, 21, (uint64_t)k); /* chunk footer */
            q += 12;
        }
        sizes[k] = (size_t)(q - parts[k]);
    }
    write_zip(tmp_path("chunks.trace.zip"), (const unsigned char *const *)parts, sizes, 3, NULL);
    stream_t s;
    must_read(tmp_path("chunks.trace.zip"), SONDE_TRACE_FORMAT_AUTO, 777, &s);
    assert_int_equal(s.n, ref.n + 2);
    size_t j = 0, footers = 0;
    for (size_t i = 0; i < s.n; ++i) {
        if (s.m[i].type == SONDE_MEMREF_MARKER && s.m[i].size == SONDE_MARKER_CHUNK_FOOTER) {
            assert_int_equal(s.m[i].address, footers);
            ++footers;
            continue;
        }
        if (memcmp(&s.m[i], &ref.m[j], sizeof s.m[i]) != 0) fail_msg("record %zu differs", i);
        ++j;
    }
    assert_int_equal(footers, 2);

    /* The middle chunk without its footer is a truncated chunk. */
    sizes[1] -= 12;
    write_zip(tmp_path("nofooter.trace.zip"), (const unsigned char *const *)parts, sizes, 3, NULL);
    char err[1024];
    stream_t bad;
    assert_int_equal(
        read_stream(tmp_path("nofooter.trace.zip"), SONDE_TRACE_FORMAT_AUTO, 4096, &bad, err, sizeof err),
        SONDE_STATUS_ERROR_FORMAT);
    assert_non_null(strstr(err, "nofooter.trace.zip: member chunk.0001: offset "));
    assert_non_null(strstr(err, "without a chunk footer"));
    free(bad.m);
    for (int k = 0; k < 3; ++k) free(parts[k]);
    free(raw);
    free(s.m);
    free(ref.m);
}

/* ---- errors ---- */

static void expect_open_error(const char *path, uint32_t format, sonde_status_t want, const char *what1,
                              const char *what2) {
    char err[1024];
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(sonde_trace_reader_open(path, format, err, sizeof err, &r), want);
    assert_null(r);
    if (strstr(err, what1) == NULL || (what2 != NULL && strstr(err, what2) == NULL))
        fail_msg("message \"%s\" lacks \"%s\" / \"%s\"", err, what1, what2 != NULL ? what2 : "");
}

static void expect_read_error(const char *path, const char *what1, const char *what2) {
    char err[1024];
    stream_t s;
    assert_int_equal(read_stream(path, SONDE_TRACE_FORMAT_DRMEMTRACE, 4096, &s, err, sizeof err),
                     SONDE_STATUS_ERROR_FORMAT);
    if (strstr(err, what1) == NULL || (what2 != NULL && strstr(err, what2) == NULL))
        fail_msg("message \"%s\" lacks \"%s\" / \"%s\"", err, what1, what2 != NULL ? what2 : "");
    free(s.m);
}

static void test_schedule_files(void **state) {
    (void)state;
    const char *files[] = {THREADSIG "/cpu_schedule.bin.zip", THREADSIG "/serial_schedule.bin.gz"};
    for (int i = 0; i < 2; ++i) {
        for (uint32_t f = SONDE_TRACE_FORMAT_AUTO; f <= SONDE_TRACE_FORMAT_DRMEMTRACE;
             f += SONDE_TRACE_FORMAT_DRMEMTRACE) {
            char want[768];
            snprintf(want, sizeof want, "%s: offset 0: a drmemtrace schedule file", data_path(files[i]));
            expect_open_error(data_path(files[i]), f, SONDE_STATUS_ERROR_FORMAT, want, "not a thread trace");
        }
    }
    /* Renamed, the cpu schedule zip is still refused: its members are not chunks. */
    FILE *in = fopen(data_path(THREADSIG "/cpu_schedule.bin.zip"), "rb");
    assert_non_null(in);
    unsigned char buf[4096];
    const size_t n = fread(buf, 1, sizeof buf, in);
    fclose(in);
    spit(tmp_path("renamed.zip"), buf, n);
    expect_open_error(tmp_path("renamed.zip"), SONDE_TRACE_FORMAT_AUTO, SONDE_STATUS_ERROR_FORMAT,
                      "renamed.zip: member 2: offset 0: not a chunk member",
                      NULL); /* members 2, 10, 11, ... */
}

static void test_zip_without_chunks(void **state) {
    (void)state;
    /* An empty archive: just the end-of-central-directory record. */
    unsigned char eocd[22] = {'P', 'K', 5, 6};
    spit(tmp_path("empty.trace.zip"), eocd, sizeof eocd);
    expect_open_error(tmp_path("empty.trace.zip"), SONDE_TRACE_FORMAT_AUTO, SONDE_STATUS_ERROR_FORMAT,
                      "empty.trace.zip: offset 0: zip archive has no chunk members", NULL);
    const unsigned char text[] = "hello";
    const unsigned char *parts[1] = {text};
    const size_t sizes[1] = {5};
    const char *names[1] = {"README"};
    write_zip(tmp_path("readme.trace.zip"), parts, sizes, 1, names);
    expect_open_error(tmp_path("readme.trace.zip"), SONDE_TRACE_FORMAT_DRMEMTRACE, SONDE_STATUS_ERROR_FORMAT,
                      "readme.trace.zip: member README: offset 0: not a chunk member", NULL);
}

static void test_cut_record(void **state) {
    (void)state;
    size_t size = 0;
    unsigned char *raw = simple_app_chunk(&size);
    const unsigned char *parts[1] = {raw};
    const size_t sizes[1] = {12 * 1000 + 5};
    write_zip(tmp_path("cut.trace.zip"), parts, sizes, 1, NULL);
    expect_read_error(tmp_path("cut.trace.zip"), "cut.trace.zip: member chunk.0000: offset 12000: ",
                      "ends inside a record (5 of 12 bytes)");
    /* A plain file cut at a record boundary has no footer. */
    spit(tmp_path("short.trace"), raw, 12 * 1000);
    expect_read_error(tmp_path("short.trace"), "short.trace: offset 12000: ", "without a footer");
    /* A gzip stream cut short. */
    gzFile gz = gzopen(tmp_path("whole.trace.gz"), "wb");
    gzwrite(gz, raw, (unsigned)size);
    gzclose(gz);
    FILE *in = fopen(tmp_path("whole.trace.gz"), "rb");
    unsigned char *comp = malloc(size);
    const size_t n = fread(comp, 1, size, in);
    fclose(in);
    spit(tmp_path("cut.trace.gz"), comp, n / 2);
    expect_read_error(tmp_path("cut.trace.gz"), "cut.trace.gz: offset ", "truncated gzip stream");
    free(comp);
    free(raw);
}

static void test_bad_version_and_type(void **state) {
    (void)state;
    size_t size = 0;
    unsigned char *raw = simple_app_chunk(&size);
    put_record(raw, 25, 0, 9);
    spit(tmp_path("v9.trace"), raw, size);
    expect_open_error(tmp_path("v9.trace"), SONDE_TRACE_FORMAT_AUTO, SONDE_STATUS_ERROR_FORMAT,
                      "v9.trace: offset 0: unsupported drmemtrace version 9", "versions 1 to 7");
    put_record(raw, 25, 0, 0x000c001c00000004ull); /* an 8-byte-record (32-bit) trace */
    spit(tmp_path("x86.trace"), raw, size);
    expect_open_error(tmp_path("x86.trace"), SONDE_TRACE_FORMAT_DRMEMTRACE, SONDE_STATUS_ERROR_FORMAT,
                      "x86.trace: offset 0: 8-byte records", NULL);
    put_record(raw, 25, 0, 4);
    put_record(raw + 12 * 500, 77, 0, 0);
    spit(tmp_path("t77.trace"), raw, size);
    expect_read_error(tmp_path("t77.trace"), "t77.trace: offset 6000: unknown record type 77", NULL);
    free(raw);
    /* Not a drmemtrace trace at all. */
    spit(tmp_path("text.trace"), "hello, world\n", 13);
    expect_open_error(tmp_path("text.trace"), SONDE_TRACE_FORMAT_AUTO, SONDE_STATUS_ERROR_FORMAT,
                      "text.trace: offset 0: not a drmemtrace trace", NULL);
    spit(tmp_path("tiny.trace"), "hi", 2);
    expect_open_error(tmp_path("tiny.trace"), SONDE_TRACE_FORMAT_DRMEMTRACE, SONDE_STATUS_ERROR_FORMAT,
                      "tiny.trace: offset 0: too short", NULL);
    /* Directories: empty, and with something that is not a thread file. */
    assert_int_equal(mkdir(tmp_path("emptydir"), 0755), 0);
    expect_open_error(tmp_path("emptydir"), SONDE_TRACE_FORMAT_AUTO, SONDE_STATUS_ERROR_FORMAT,
                      "no drmemtrace thread files", NULL);
    assert_int_equal(mkdir(tmp_path("mixed"), 0755), 0);
    spit(tmp_path("mixed/notes.txt"), "notes on the run\n", 17);
    expect_open_error(tmp_path("mixed"), SONDE_TRACE_FORMAT_AUTO, SONDE_STATUS_ERROR_FORMAT,
                      "mixed/notes.txt: offset 0: not a drmemtrace trace", NULL);
    expect_open_error(tmp_path("missing.trace"), SONDE_TRACE_FORMAT_DRMEMTRACE, SONDE_STATUS_ERROR_IO,
                      "missing.trace: cannot open", NULL);
    sonde_trace_reader_t *r = NULL;
    assert_int_equal(
        sonde_trace_reader_open(tmp_path("t.trace"), SONDE_TRACE_FORMAT_DRMEMTRACE + 1, NULL, 0, &r),
        SONDE_STATUS_ERROR_INVALID_ARGUMENT);
}

static int setup(void **state) {
    (void)state;
    const char *data = getenv("SONDE_SHARED_DATA");
    if (data == NULL) return -1;
    snprintf(g_data, sizeof g_data, "%s", data);
    snprintf(g_dir, sizeof g_dir, "/tmp/sonde-drmemtrace-XXXXXX");
    return mkdtemp(g_dir) == NULL ? -1 : 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directory),
        cmocka_unit_test(test_small_version1),
        cmocka_unit_test(test_version4_zip),
        cmocka_unit_test(test_containers),
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_schedule_files),
        cmocka_unit_test(test_zip_without_chunks),
        cmocka_unit_test(test_cut_record),
        cmocka_unit_test(test_bad_version_and_type),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
