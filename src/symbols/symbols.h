// Symbols concept: names and source positions of code addresses, from a module's ELF file and
// its DWARF. It owns the reading of function symbols (.symtab, else .dynsym), the demangling
// and splitting of C++ names, the DWARF line lookup, and an ELF file opened for both
// (ElfFile). Two users share it: the client concept inside libsonde, which names the methods of
// the running process, and the `sonde` program, which names the pcs of a memory trace once the
// recorded program has exited (`sonde record --memory`, `sonde annotate`). Pure functions and
// objects owned by their caller: any thread, one thread per ElfFile. May include: nothing of
// Sonde.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <elfutils/libdw.h>
#include <libelf.h>

namespace sonde::symbols {

// A function symbol of an ELF file: its value (the file address, st_value), size, name as
// stored, and binding (STB_GLOBAL, STB_WEAK, STB_LOCAL).
struct FunctionSymbol {
    uint64_t value = 0;
    uint64_t size = 0;
    std::string mangled;
    uint8_t binding = 0;
};

// The defined function symbols of `elf` (.symtab, which names static functions, else .dynsym),
// sorted by value, one per value (a global name before a weak one before a local one, then the
// smallest name). Cost: one pass over the symbol table and a sort.
std::vector<FunctionSymbol> function_symbols(Elf *elf);

// The symbol of `symbols` (sorted as function_symbols() returns them) whose range holds file
// address `value`: the last one at or below it, when `value` is below its end (or equals its
// value, for a symbol of size 0). nullptr when none does.
const FunctionSymbol *function_at(const std::vector<FunctionSymbol> &symbols, uint64_t value);

// The demangled C++ name of `mangled` ("_ZN2ns1fEi" -> "ns::f(int)"), or `mangled` itself when
// it is not a C++ name (a C function) or does not demangle.
std::string demangle(const std::string &mangled);

// Splits a demangled name into its scope and short name: "void ns::A<int>::f(int) const" gives
// "ns::A<int>" and "f"; a name without scope gives "" and the name. Operators keep their
// brackets ("operator()").
void split_name(const std::string &full, std::string *scope, std::string *name);

// A source position from DWARF line information.
struct SourcePosition {
    std::string file;  // as the line table names it, usually absolute (the compilation directory joined)
    uint32_t line = 0;
    uint32_t column = 0;
};

// The line-table row that holds file address `address`: the compilation unit that covers it
// (through .debug_aranges, else by walking the units), then its row at or before the address.
// false when no unit covers it or the row has no file or line.
bool source_position(Dwarf *dwarf, uint64_t address, SourcePosition *out);

// An ELF file opened for its symbols and DWARF, read-only. The handles are released with it.
class ElfFile {
public:
    // Opens `path`; ok() says whether it is a readable ELF file, error() why not.
    explicit ElfFile(const std::string &path);
    ~ElfFile();
    ElfFile(const ElfFile &) = delete;
    ElfFile &operator=(const ElfFile &) = delete;

    bool ok() const { return elf_ != nullptr; }
    const std::string &error() const { return error_; }
    // The smallest virtual address of its PT_LOAD segments: a module mapped at A (its lowest
    // mapped address) has load bias A minus this.
    uint64_t first_load_address() const { return first_load_; }
    // Bytes from the start of its first PT_LOAD segment to the end of its last, as mapped: a
    // module of another span was mapped from another file.
    uint64_t load_span() const { return load_end_ - first_load_; }
    // Its function symbols (function_symbols()), read on first use.
    const std::vector<FunctionSymbol> &functions();
    // Its DWARF, opened on first use; nullptr when it has none (built without -g, stripped).
    Dwarf *dwarf();

private:
    int fd_ = -1;
    Elf *elf_ = nullptr;
    Dwarf *dwarf_ = nullptr;
    bool dwarf_tried_ = false;
    bool functions_read_ = false;
    uint64_t first_load_ = 0, load_end_ = 0;
    std::vector<FunctionSymbol> functions_;
    std::string error_;
};

}  // namespace sonde::symbols
