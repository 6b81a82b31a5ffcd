// The tables of a Sonde trace with program events (docs/trace-format.md, "Tables"): strings,
// modules, methods and threads, their entries, and their coding into TABL block payloads.
// Entries carry their own index, so a table is written in pieces as it grows and a later entry
// of an index replaces an earlier one. Pure data; the writer and the reader own the locking.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sonde::trace {

struct StringEntry {
    uint32_t id = 0;
    std::string text;
};

struct ModuleEntry {
    uint32_t index = 0;
    uint64_t address = 0;
    uint64_t size = 0;
    std::string path, name;
};

struct MethodEntry {
    uint32_t index = 0;
    uint32_t module = 0xFFFFFFFFu;
    uint64_t address = 0;
    uint64_t size = 0;
    uint32_t source_line = 0;
    uint32_t visibility = 0;
    std::string name, class_name, full_name, mangled_name, source_file;
    bool present = false;  // reader: an entry was read for this index
};

struct ThreadEntry {
    uint32_t shard = 0;
    uint64_t os_tid = 0;
    std::string name;
    bool present = false;  // reader: an entry was read for this shard
};

// An API function traced through libffi (version 1.3 of the format): the library that defines
// it, its name and its signature (types as C spells them, value classes as
// sonde_trace_api_value_class). The reader points the *_ptrs at the strings once the tables are
// loaded (link()).
struct ApiFunctionEntry {
    uint32_t index = 0;
    uint32_t return_class = 0;
    std::string library, name, return_type;
    std::vector<uint32_t> arg_classes;
    std::vector<std::string> arg_types, arg_names;
    std::vector<const char *> arg_type_ptrs, arg_name_ptrs;
    bool present = false;  // reader: an entry was read for this index
};

// A line table entry (version 1.4 of the format): the pcs [address, address + size) of the
// trace's records come from source line `line` (and `column`, 0 when unknown) of the file whose
// string id is `file`, in module `module` (0xFFFFFFFF: none). The reader resolves `file` to its
// text (file_text) once the tables are loaded (link()).
struct LineEntry {
    uint32_t module = 0xFFFFFFFFu;
    uint32_t line = 0;
    uint64_t address = 0;
    uint64_t size = 0;
    uint32_t file = 0;
    uint32_t column = 0;
    const char *file_text = "";
};

// Encoders: append the entries' bytes to `out` (one table type per call).
void encode_strings(const std::vector<StringEntry> &entries, std::vector<unsigned char> *out);
void encode_modules(const std::vector<ModuleEntry> &entries, std::vector<unsigned char> *out);
void encode_methods(const std::vector<MethodEntry> &entries, std::vector<unsigned char> *out);
void encode_threads(const std::vector<ThreadEntry> &entries, std::vector<unsigned char> *out);
void encode_api_functions(const std::vector<ApiFunctionEntry> &entries, std::vector<unsigned char> *out);
void encode_lines(const std::vector<LineEntry> &entries, std::vector<unsigned char> *out);

// Everything the tables of one trace say, indexed by id, index and shard.
struct Tables {
    std::vector<std::string> strings{std::string()};  // id 0 is ""
    std::vector<ModuleEntry> modules;
    std::vector<MethodEntry> methods;
    std::vector<ThreadEntry> threads;
    std::vector<ApiFunctionEntry> api_functions;
    std::vector<LineEntry> lines;  // after link(): sorted by address, then size

    // Decodes a table payload of `count` entries of type `type` and applies them (later
    // entries replace earlier ones). Returns "" or what is wrong (the entries decoded before
    // the fault are kept). Unknown types are ignored.
    std::string apply(uint32_t type, uint32_t count, const unsigned char *data, size_t size);
    // After the last apply(): numbers the entries by their position, points each API
    // function's argument arrays at its strings, and sorts the lines by address and points
    // each at its file's text ("" for a string id the string table lacks).
    void link();
};

}  // namespace sonde::trace
