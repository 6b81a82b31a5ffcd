// API tracing: the loaded modules seen as ELF images. Walks dl_iterate_phdr and each module's
// PT_DYNAMIC: its defined functions (dynamic symbol table, sized through DT_GNU_HASH or
// DT_HASH) and its import slots (DT_JMPREL and DT_RELA entries of type R_X86_64_JUMP_SLOT and
// R_X86_64_GLOB_DAT against undefined symbols), and writes a slot under mprotect when it lies
// in the module's RELRO range. Runs on the thread that starts tracing or calls dlopen/dlclose,
// under the tracer's lock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sonde::apitrace {

struct LoadedModule {
    std::string path;  // "" for the main program
    uintptr_t base = 0;
    uintptr_t begin = 0, end = 0;              // the span of its PT_LOAD segments
    uintptr_t relro_begin = 0, relro_end = 0;  // PT_GNU_RELRO, page-rounded; empty if none
    const void *dynamic = nullptr;             // its PT_DYNAMIC, or nullptr
};

// Every loaded module, in load order.
std::vector<LoadedModule> loaded_modules();

// The file name of `path` ("libz.so.1" for "/lib/x86_64-linux-gnu/libz.so.1").
std::string base_name(const std::string &path);

// Whether `pattern` names the module at `path`: the path itself, its file name, its file name
// up to a '.' ("libz", "libz.so"), or that with "lib" in front ("z").
bool library_matches(const std::string &pattern, const std::string &path);

// Calls `fn` with the name of each function `m` defines and exports.
void for_each_defined_function(const LoadedModule &m, const std::function<void(const char *name)> &fn);

// Calls `fn` with the symbol name and the slot address of each import slot of `m`.
void for_each_import_slot(const LoadedModule &m,
                          const std::function<void(const char *name, void **slot)> &fn);

// Stores `value` in the slot of `m`, making a RELRO page writable for the store; false when
// mprotect refuses.
bool write_slot(const LoadedModule &m, void **slot, void *value);

}  // namespace sonde::apitrace
