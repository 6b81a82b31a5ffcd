// API tracing: the tracer. Given `LIB:FUNC[,FUNC...][;LIB:...]` (glob patterns in FUNC), it
// finds each named function in the loaded libraries, makes a Wrapper for it from its signature
// (a --api-prototypes file first, then the library's DWARF debug information, then the built-in
// libc table; none known: refused by name),
// and points the import slots (GOT entries: JUMP_SLOT and GLOB_DAT) through which every other
// loaded module calls it at the wrapper. It also takes over the dlopen and dlclose slots, so
// that modules loaded later are patched (and libraries named in the spec that were not loaded
// yet are traced from their load on), and a dlclose first puts every slot back, then patches
// what is still loaded. stop() puts every slot back.
//
// Not seen (docs/api-tracing.md): calls inside the traced library itself (they do not go
// through an import slot), calls through function pointers taken before patching (dlsym
// results, addresses stored earlier), and calls from libsonde, libffi and the dynamic loader,
// which are never patched.
//
// Threads: start, stop and the dlopen/dlclose hooks serialise on one lock (taken before the
// client registry's lock when the sink's `added` asks client filters, never after); traced
// calls take none. Wrappers live until the process ends: a thread may still run inside one after stop().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apitrace/signature.h"
#include "apitrace/wrapper.h"

namespace sonde::apitrace {

struct Target {
    std::string library;                 // a library_matches() pattern
    std::vector<std::string> functions;  // names or fnmatch(3) patterns
};

// Parses an --api spec; false with `error` set when it is malformed.
bool parse_spec(const std::string &spec, std::vector<Target> &out, std::string &error);

struct TracedFunction {
    uint32_t id;          // CallRecord::function
    std::string library;  // the file name of the library that defines it
    Signature signature;
    std::string path;  // that library's path as loaded
};

struct TracerOptions {
    std::string spec;
    std::string prototypes_path;  // may be empty
};

// Starts tracing. False with `error` set (nothing patched) when the spec or the prototype file
// is malformed, a loaded library named by the spec lacks a named function (or a pattern
// matches none), or a function has no known signature or is variadic. Libraries not loaded
// yet are traced when they are. Only one tracer runs per process.
bool start_tracing(const TracerOptions &options, Sink sink, std::string &error);

// Puts back every patched slot. Idempotent.
void stop_tracing();

// The traced function of id `id` once its wrapper exists (before any slot points at it), or
// nullptr. Lock-free (an append-only table published with release stores), so that a recorder
// may name functions under its own locks; the entry lives until the process ends.
const TracedFunction *traced_function(uint32_t id);
// How many traced_function() entries exist (ids below it). Lock-free.
uint32_t traced_function_count();

// The functions traced so far (ids are indices), and what went wrong after start (a library
// loaded later that lacks a named function) or never happened (a library never loaded).
std::vector<TracedFunction> traced_functions();
std::vector<std::string> tracing_warnings();

// The number of import slots currently patched.
size_t patched_slot_count();

}  // namespace sonde::apitrace
