// Fuzz target: the declaration parser of --api-prototypes files (src/apitrace/signature.cpp).
// Such a file is the user's input, so whatever its text: parse() returns (no crash, hang or
// undefined behaviour); when it fails, its message is "ORIGIN:LINE: what" and LINE is one of the
// text's lines; and every signature it accepted is read back the same from its canonical
// spelling (the type names the report prints), so that what the tracer records and the report
// shows is what the file declared. Any other outcome aborts, which the fuzzer reports.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "apitrace/signature.h"

namespace {

using sonde::apitrace::kMaxArgs;
using sonde::apitrace::Prototypes;
using sonde::apitrace::Signature;
using sonde::apitrace::Type;
using sonde::apitrace::type_name;

constexpr const char *kOrigin = "f.h";

[[noreturn]] void fail(const std::string &what) {
    std::fprintf(stderr, "fuzz_prototypes: %s\n", what.c_str());
    std::abort();
}

// "RET NAME(T1 N1, T2 N2, ...);", "(void)" without arguments.
std::string spell(const Signature &s) {
    std::string t = std::string(type_name(s.ret)) + " " + s.name + "(";
    for (size_t i = 0; i < s.args.size(); ++i) {
        if (i != 0) t += ", ";
        t += std::string(type_name(s.args[i])) + " " + s.arg_names[i];
    }
    if (s.variadic) t += ", ...";
    if (s.args.empty()) t += "void";
    return t + ");";
}

bool same(const Signature &a, const Signature &b) {
    return a.name == b.name && a.ret == b.ret && a.args == b.args && a.arg_names == b.arg_names &&
           a.variadic == b.variadic;
}

void check_error(std::string_view text, const std::string &error) {
    const std::string prefix = std::string(kOrigin) + ":";
    if (error.compare(0, prefix.size(), prefix) != 0) fail("an error without its origin: " + error);
    size_t i = prefix.size();
    uint64_t line = 0;
    while (i < error.size() && std::isdigit(static_cast<unsigned char>(error[i])) && line < UINT32_MAX)
        line = line * 10 + static_cast<uint64_t>(error[i++] - '0');
    if (i == prefix.size() || error.compare(i, 2, ": ") != 0 || i + 2 == error.size())
        fail("an error not of the form ORIGIN:LINE: what: " + error);
    uint64_t lines = 1;
    for (char c : text) lines += c == '\n';
    if (line == 0 || line > lines)
        fail("an error on line " + std::to_string(line) + " of " + std::to_string(lines) + ": " + error);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    Prototypes p;
    std::string error;
    if (!p.parse(text, kOrigin, error)) check_error(text, error);
    // What was accepted before an error stays, and must be sound too.
    if (p.size() != p.functions().size()) fail("size() and functions() disagree");
    for (const auto &entry : p.functions()) {
        const Signature &s = entry.second;
        if (s.name.empty() || s.name != entry.first) fail("a function filed under '" + entry.first + "'");
        if (s.args.size() > kMaxArgs) fail(s.name + ": more arguments than a wrapper takes");
        if (s.arg_names.size() != s.args.size()) fail(s.name + ": a name for each argument");
        if (s.variadic && s.args.empty()) fail(s.name + ": '...' without a fixed argument");
        for (const Type t : s.args)
            if (t == Type::Void) fail(s.name + ": an argument of type void");
        const std::string decl = spell(s);
        Prototypes again;
        if (!again.parse_line(decl, error)) fail("the canonical spelling is refused: " + decl + ": " + error);
        const Signature *back = again.find(s.name);
        if (back == nullptr || !same(*back, s)) fail("the canonical spelling reads differently: " + decl);
    }
    return 0;
}
