// The names of a memory trace's pcs: the functions and source lines they come from, read from
// the files of the modules the recorded process had mapped (the trace's module table) with
// src/symbols, and stored into the trace as its method and line tables (docs/trace-format.md)
// so that it stays readable after the program is rebuilt or deleted. `sonde record --memory`
// stores them once the program has exited; `sonde annotate` reads them back, or names the pcs
// itself from the module files when the trace has a module table and nothing more.
// Runs on the calling thread; uses the public API and src/symbols only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <sonde/trace.h>
#include <sonde/trace_events.h>

namespace sonde::cli {

// A module of the recorded process (the trace's module table).
struct TraceModule {
    uint32_t index = 0;
    std::string path, name;
    uint64_t address = 0, size = 0;  // lowest mapped address and span
};

// A function that holds pcs of the trace; addresses are those of the recorded process.
struct NamedFunction {
    uint32_t module = SONDE_TRACE_NO_MODULE;
    uint64_t address = 0, size = 0;
    std::string mangled, full_name, name, scope;  // full_name: demangled, with parameters
    std::string file;                             // source of its first instruction ("" unknown)
    uint32_t line = 0;
    uint32_t visibility = 0;  // a sonde_visibility value
};

// The source line of one range of pcs (as the trace's records carry them).
struct NamedLine {
    uint32_t module = SONDE_TRACE_NO_MODULE;
    uint64_t address = 0, size = 1;
    std::string file;
    uint32_t line = 0, column = 0;
};

struct Symbolized {
    std::vector<NamedFunction> functions;  // by address
    std::vector<NamedLine> lines;          // by address
    std::vector<std::string> notes;        // modules that could not be read, or have no DWARF
};

// The module table of an open trace (empty for a trace without one).
std::vector<TraceModule> trace_modules(const sonde_trace_reader_t *reader);

// Names `pcs` (sorted, distinct; each the return address of a call to a memory callback, so
// that the call is at pc - 1) from the files of `modules`: for each pc inside a module whose
// file is readable and still has the mapped layout, the function symbol holding it and the
// DWARF line of its call. pcs outside every module, or in a module without a readable file,
// stay unnamed.
Symbolized symbolize(const std::vector<TraceModule> &modules, const std::vector<uint64_t> &pcs);

// Adds the functions and lines to the trace at `path` (sonde_trace_writer_reopen), as method
// and line table entries. "" on success, else why not.
std::string store_symbols(const std::string &path, const Symbolized &symbols);

}  // namespace sonde::cli
