/* Shared by the fuzz targets: hands the fuzzer's bytes to a reader through a memfd (a regular,
 * seekable file), reads every shard, the serial view, every event shard and every table entry to
 * the end, and, for the targets that need to get past the Sonde format's checksums, recomputes
 * them. Any status is fine; a crash, a hang or a huge allocation is the failure. */
#ifndef SONDE_FUZZ_TRACE_COMMON_H
#define SONDE_FUZZ_TRACE_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sonde/trace.h>
#include <sonde/trace_events.h>

#include "craft.h"

/* A memfd holding the bytes, and its path (/proc/self/fd/N); -1 when it cannot be made. */
static inline int fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t path_size) {
    int fd = memfd_create("sonde-fuzz", MFD_CLOEXEC);
    if (fd < 0) return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) break;
        done += (size_t)n;
    }
    snprintf(path, path_size, "/proc/self/fd/%d", fd);
    return fd;
}

/* Reads every shard and the serial view of the bytes opened as `format`; returns the records
 * of the shards (0 when the open failed). */
static inline uint64_t fuzz_read_all(const uint8_t *data, size_t size, uint32_t format) {
    char path[64];
    int fd = fuzz_memfd(data, size, path, sizeof path);
    if (fd < 0) return 0;
    uint64_t total = 0;
    sonde_trace_reader_t *r = NULL;
    char err[256];
    if (sonde_trace_reader_open(path, format, err, sizeof err, &r) == SONDE_STATUS_SUCCESS) {
        static sonde_memref_t buf[1024];
        uint32_t shards = 0;
        size_t n = 0;
        sonde_trace_reader_num_shards(r, &shards);
        for (uint32_t s = 0; s < shards; ++s)
            while (sonde_trace_reader_read_shard(r, s, buf, 1024, &n) == SONDE_STATUS_SUCCESS && n > 0)
                total += n;
        while (sonde_trace_reader_read(r, buf, 1024, &n) == SONDE_STATUS_SUCCESS && n > 0) {
        }
        sonde_trace_event_info_t info = {0};
        info.struct_size = sizeof info;
        if (sonde_trace_reader_event_info(r, &info) == SONDE_STATUS_SUCCESS) {
            static sonde_trace_event_t events[1024];
            for (uint32_t s = 0; s < info.num_shards; ++s)
                while (sonde_trace_reader_read_events(r, s, events, 1024, &n) == SONDE_STATUS_SUCCESS &&
                       n > 0) {
                }
            sonde_trace_method_t m = {0};
            m.struct_size = sizeof m;
            for (uint32_t i = 0; i < info.num_methods; ++i) sonde_trace_reader_get_method(r, i, &m);
            sonde_trace_module_t mod = {0};
            mod.struct_size = sizeof mod;
            for (uint32_t i = 0; i < info.num_modules; ++i) sonde_trace_reader_get_module(r, i, &mod);
            sonde_trace_thread_t th = {0};
            th.struct_size = sizeof th;
            for (uint32_t i = 0; i < info.num_threads; ++i) sonde_trace_reader_get_thread(r, i, &th);
            const char *text = NULL;
            for (uint32_t i = 0; i < info.num_strings; ++i) sonde_trace_reader_get_string(r, i, &text);
        }
        (void)sonde_trace_reader_error(r);
        (void)sonde_trace_reader_warnings(r);
        sonde_trace_reader_close(r);
    }
    close(fd);
    return total;
}

/* Recomputes, in place, every checksum of a Sonde trace that the bytes have room for: the
 * header's, each chunk's (walking the chunks from offset 64 while their sizes fit), the
 * footer's and, when the footer points inside the file, the index's. */
static inline void fuzz_fix_checksums(unsigned char *d, size_t size) {
    if (size < 64 || memcmp(d, "SONDETRC", 8) != 0) return;
    craft_le(d + 56, craft_sum64(d, 56), 8);
    size_t off = 64;
    while (off + 48 <= size && craft_get_le(d + off, 4) == 0x4B4E4843u) {
        const uint64_t csize = craft_get_le(d + off + 12, 4);
        if (csize > size - off - 48) break;
        craft_le(d + off + 32, craft_sum64(d + off + 48, (size_t)csize), 8);
        craft_le(d + off + 40, craft_sum64(d + off, 40), 8);
        off += 48 + (size_t)csize;
    }
    if (size < 64 + 32 || memcmp(d + size - 32, "SONDEEND", 8) != 0) return;
    unsigned char *foot = d + size - 32;
    craft_le(foot + 24, craft_sum64(foot, 24), 8);
    const uint64_t ioff = craft_get_le(foot + 8, 8), isize = craft_get_le(foot + 16, 8);
    if (ioff >= 64 && isize >= 32 && isize <= size - 32 && ioff == size - 32 - isize)
        craft_le(d + ioff + isize - 8, craft_sum64(d + ioff, (size_t)isize - 8), 8);
}

#endif
