// API tracing: the signatures of traced functions and where they come from. A signature is a
// return type and up to kMaxArgs argument types, each a scalar that fits 64 bits, a pointer, or
// a `const char *` string; it comes from C declarations (a --api-prototypes file, or the
// built-in table of common libc functions below). Everything here runs on the thread that
// starts tracing, never on the traced calls' path.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sonde::apitrace {

// The value types a wrapper can pass on and record. Signed types are recorded sign-extended
// to 64 bits, float as the bits of the double it converts to exactly, pointers as addresses.
enum class Type : uint8_t {
    Void,
    S8,
    U8,
    S16,
    U16,
    S32,
    U32,
    S64,
    U64,
    Float,
    Double,
    Pointer,
    String,  // const char *: recorded as its address and a bounded copy of its text
};

constexpr uint32_t kMaxArgs = 16;

// The C spelling of a type as the report shows it ("int", "unsigned long", "const char *").
const char *type_name(Type t);

struct Signature {
    std::string name;
    Type ret = Type::Void;
    std::vector<Type> args;
    std::vector<std::string> arg_names;  // one per argument: the declared name or "argN"
    bool variadic = false;               // declared with `...`: refused by the tracer
};

// Declarations of one source: typedefs seen so far and functions by name. A later declaration
// of the same function replaces an earlier one.
class Prototypes {
public:
    Prototypes();

    // Parses a text of declarations, one per line: function prototypes and `typedef T NAME;`
    // lines; blank lines and lines starting with `#` or `//` are skipped. On the first error
    // returns false with `error` = "ORIGIN:LINE: what is wrong" and keeps what came before it.
    bool parse(std::string_view text, const std::string &origin, std::string &error);

    // Parses one declaration (a prototype or a typedef); false with `error` set when it is not
    // one this parser accepts.
    bool parse_line(std::string_view line, std::string &error);

    // The function's signature, or nullptr when none was declared.
    const Signature *find(std::string_view name) const;

    size_t size() const { return functions_.size(); }
    // Every function declared so far, by name.
    const std::map<std::string, Signature, std::less<>> &functions() const { return functions_; }

private:
    bool parse_type(std::string_view text, bool want_name, Type &type, std::string &name,
                    std::string &error) const;

    std::map<std::string, Type, std::less<>> typedefs_;
    std::map<std::string, Signature, std::less<>> functions_;
};

// The built-in table of common libc (and libm) functions. Parsed once; thread-safe.
const Prototypes &builtin_prototypes();

}  // namespace sonde::apitrace
