/* Shared by the fuzz targets: hands the fuzzer's bytes to a reader through a memfd and reads
 * every shard, the serial view, every event shard and every table entry to the end. Any status
 * is fine; a crash is the failure. */
#ifndef SONDE_FUZZ_TRACE_COMMON_H
#define SONDE_FUZZ_TRACE_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sonde/trace.h>
#include <sonde/trace_events.h>

static void fuzz_read_all(const uint8_t *data, size_t size, uint32_t format) {
    int fd = memfd_create("sonde-fuzz", MFD_CLOEXEC);
    if (fd < 0) return;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) break;
        done += (size_t)n;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    sonde_trace_reader_t *r = NULL;
    char err[256];
    if (sonde_trace_reader_open(path, format, err, sizeof err, &r) == SONDE_STATUS_SUCCESS) {
        static sonde_memref_t buf[1024];
        uint32_t shards = 0;
        size_t n = 0;
        sonde_trace_reader_num_shards(r, &shards);
        for (uint32_t s = 0; s < shards; ++s)
            while (sonde_trace_reader_read_shard(r, s, buf, 1024, &n) == SONDE_STATUS_SUCCESS && n > 0) {
            }
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
}

#endif
