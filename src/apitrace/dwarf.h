// API tracing: signatures read from a library's DWARF debug information (libdw), the second
// source of signatures after an --api-prototypes file and before the built-in libc table
// (docs/api-tracing.md). The debug information is the library's own .debug_info, or a separate
// file found the way debuggers find it: by build id under /usr/lib/debug/.build-id (Debian's
// -dbgsym packages) or by .gnu_debuglink.
//
// Types are followed through typedefs and qualifiers to what a wrapper can pass on: integers
// of 1, 2, 4 and 8 bytes (signed or not, _Bool, enums by their size), float, double, pointers of
// any kind, and `const char *` (and typedefs of it) as strings. A struct or union passed or
// returned by value, long double, complex and 128-bit integers cannot be, and make the
// function's signature an error naming the parameter. A function declared with `...` is marked
// variadic (the tracer refuses it).
//
// Runs on the thread that starts tracing; one object per library; not thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "apitrace/signature.h"

namespace sonde::apitrace {

class DwarfSignatures {
public:
    DwarfSignatures();
    ~DwarfSignatures();
    DwarfSignatures(const DwarfSignatures &) = delete;
    DwarfSignatures &operator=(const DwarfSignatures &) = delete;

    // Opens the ELF file `path` and its debug information. False, with `error` set, only when
    // the file cannot be opened as ELF; a library without debug information opens and has
    // none (has_debug_info() false, find() always nullptr).
    bool open(const std::string &path, std::string &error);
    bool has_debug_info() const { return dwarf_ != nullptr; }
    // Where the debug information was found: `path` itself or the separate file ("" when none).
    const std::string &debug_file() const { return debug_file_; }

    // The signature of the function `name` as the library defines it (a definition is
    // preferred to a declaration), or nullptr when the debug information does not know it, or
    // when its types cannot be passed on: then `error` says why ("crc32: parameter 2 'buf':
    // ..."), else it is left empty. The signature lives as long as this object.
    const Signature *find(std::string_view name, std::string &error);

    // Number of functions the debug information names (for tests and messages).
    size_t size() const { return index_.size(); }

private:
    struct Entry {
        unsigned long long offset = 0;  // of the DIE in .debug_info
        bool definition = false;
    };

    void index();

    void *dwfl_ = nullptr;   // Dwfl *
    void *dwarf_ = nullptr;  // Dwarf *, owned by dwfl_
    std::string debug_file_;
    std::map<std::string, Entry, std::less<>> index_;
    std::map<std::string, Signature, std::less<>> made_;
    std::map<std::string, std::string, std::less<>> refused_;
};

}  // namespace sonde::apitrace
