/* Writes a small memory trace whose every count is known, for the tests of `sonde annotate`
 * (check_annotate.py): two threads, a module, two functions and their lines in the tables, and
 * pcs outside them.
 *
 *   annotate_trace OUT [tables|modules|bare] [SOURCE]
 *
 * tables (the default): the module, method and line tables, as `sonde record --memory` stores
 * them; modules: the module table only (its file does not exist); bare: no table. SOURCE is
 * the path recorded for walk's lines (default /src/project/walk.c).
 *
 * Shard 0 (thread 1) runs walk(): 4096 reads at pc 0x401010 (line 12), strided by 64 bytes over
 * 256 KiB, and after each a write of the same line at pc 0x401020 (line 13); 64 instruction
 * fetches at pc 0x401040; 100 reads at pc 0x401030 (in walk, no line). Shard 1 (thread 2) runs
 * ns::Table::get(int) const: 2048 reads at pc 0x402010 (table.h line 7) over 8 KiB, then 50
 * writes at pc 0x500000, outside every function. Timestamps interleave the two shards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/trace_events.h>

static void put(sonde_trace_writer_t *w, uint32_t shard, uint64_t address, uint64_t pc, uint16_t type,
                uint64_t ts) {
    sonde_memref_t m;
    memset(&m, 0, sizeof m);
    m.address = address;
    m.pc = pc;
    m.timestamp = ts;
    m.type = type;
    m.size = type == SONDE_MEMREF_IFETCH ? 4 : 8;
    if (sonde_trace_writer_write(w, shard, &m, 1) != SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "write: %s\n", sonde_trace_writer_error(w));
        exit(1);
    }
}

static void method(sonde_trace_writer_t *w, uint32_t index, const char *name, const char *full,
                   uint64_t address, uint64_t size, const char *file, uint32_t line) {
    sonde_trace_method_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.index = index;
    m.name = name;
    m.full_name = full;
    m.mangled_name = full;
    m.source_file = file;
    m.source_line = line;
    m.module = 0;
    m.address = address;
    m.size = size;
    if (sonde_trace_writer_add_method(w, &m) != SONDE_STATUS_SUCCESS) exit(1);
}

static void line(sonde_trace_writer_t *w, uint64_t pc, const char *file, uint32_t number) {
    sonde_trace_line_t l;
    memset(&l, 0, sizeof l);
    l.struct_size = sizeof l;
    l.module = 0;
    l.address = pc;
    l.size = 1;
    l.file = file;
    l.line = number;
    if (sonde_trace_writer_add_line(w, &l) != SONDE_STATUS_SUCCESS) exit(1);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: annotate_trace OUT [tables|modules|bare] [SOURCE]\n");
        return 2;
    }
    const char *mode = argc > 2 ? argv[2] : "tables";
    const char *source = argc > 3 ? argv[3] : "/src/project/walk.c";
    sonde_trace_writer_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    props.chunk_records = 1000;
    sonde_trace_writer_t *w = NULL;
    if (sonde_trace_writer_create(argv[1], &props, &w) != SONDE_STATUS_SUCCESS) return 1;
    uint64_t ts = 1000;
    for (uint64_t i = 0; i < 4096; ++i) {
        put(w, 0, 0x10000000 + 64 * i, 0x401010, SONDE_MEMREF_READ, ts);
        put(w, 0, 0x10000000 + 64 * i + 8, 0x401020, SONDE_MEMREF_WRITE, ts);
        if (i < 2048) put(w, 1, 0x20000000 + 8 * (i * 37 % 1024), 0x402010, SONDE_MEMREF_READ, ts + 1);
        ts += 2;
    }
    for (uint64_t i = 0; i < 64; ++i) put(w, 0, 0x401040, 0x401040, SONDE_MEMREF_IFETCH, ts + i);
    for (uint64_t i = 0; i < 100; ++i) put(w, 0, 0x30000000 + 64 * i, 0x401030, SONDE_MEMREF_READ, ts + i);
    for (uint64_t i = 0; i < 50; ++i) put(w, 1, 0x20000000 + 8 * i, 0x500000, SONDE_MEMREF_WRITE, ts + i);
    if (strcmp(mode, "bare") != 0) {
        sonde_trace_module_t m;
        memset(&m, 0, sizeof m);
        m.struct_size = sizeof m;
        m.path = "/nonexistent/annotate/prog";
        m.name = "prog";
        m.address = 0x400000;
        m.size = 0x10000;
        if (sonde_trace_writer_add_module(w, &m) != SONDE_STATUS_SUCCESS) return 1;
    }
    if (strcmp(mode, "tables") == 0) {
        method(w, 0, "walk", "walk(int*)", 0x401000, 0x100, source, 10);
        method(w, 1, "get", "ns::Table::get(int) const", 0x402000, 0x80, "/src/project/table.h", 5);
        line(w, 0x401010, source, 12);
        line(w, 0x401020, source, 13);
        line(w, 0x402010, "/src/project/table.h", 7);
    }
    return sonde_trace_writer_close(w) == SONDE_STATUS_SUCCESS ? 0 : 1;
}
