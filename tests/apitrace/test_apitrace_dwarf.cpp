// API tracing's DWARF signatures (src/apitrace/dwarf.h) read from dw_lib.c built with debug
// information (DW_LIB) and without it (DW_LIB_NODEBUG): every scalar width, typedefs and
// qualifiers followed, strings told from other pointers, parameter names, variadic functions
// marked, the types that cannot be passed on refused with the parameter named, and files that
// cannot be read.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#include "apitrace/dwarf.h"

using sonde::apitrace::DwarfSignatures;
using sonde::apitrace::Signature;
using sonde::apitrace::Type;

namespace {

void expect_signature(DwarfSignatures &d, const char *name, Type ret, const std::vector<Type> &args,
                      const std::vector<std::string> &names, bool variadic = false) {
    std::string error;
    const Signature *s = d.find(name, error);
    if (s == nullptr) fail_msg("%s: no signature (%s)", name, error.c_str());
    assert_string_equal(error.c_str(), "");
    assert_string_equal(s->name.c_str(), name);
    assert_int_equal(static_cast<int>(s->ret), static_cast<int>(ret));
    assert_int_equal(s->args.size(), args.size());
    for (size_t i = 0; i < args.size(); ++i) {
        if (s->args[i] != args[i])
            fail_msg("%s: argument %zu is type %d, expected %d", name, i + 1, static_cast<int>(s->args[i]),
                     static_cast<int>(args[i]));
        assert_string_equal(s->arg_names[i].c_str(), names[i].c_str());
    }
    assert_int_equal(s->variadic, variadic);
}

void expect_refused(DwarfSignatures &d, const char *name, const char *why) {
    std::string error;
    assert_null(d.find(name, error));
    if (error.find(why) == std::string::npos) fail_msg("%s: '%s' not in '%s'", name, why, error.c_str());
    std::string again;
    assert_null(d.find(name, again));  // the same answer, from the cache
    assert_string_equal(again.c_str(), error.c_str());
}

void test_signatures(void **) {
    DwarfSignatures d;
    std::string error;
    assert_true(d.open(DW_LIB, error));
    assert_true(d.has_debug_info());
    assert_string_equal(d.debug_file().c_str(), DW_LIB);
    assert_true(d.size() >= 9);
    expect_signature(d, "dw_crc", Type::U64, {Type::U64, Type::Pointer, Type::U32}, {"crc", "buf", "len"});
    expect_signature(d, "dw_name", Type::String, {Type::String, Type::Pointer}, {"s", "p"});
    expect_signature(d, "dw_scale", Type::Double,
                     {Type::Float, Type::Double, Type::U8, Type::S8, Type::S16, Type::U16, Type::S64},
                     {"f", "d", "neg", "c", "s", "us", "ll"});
    expect_signature(d, "dw_void", Type::Void, {}, {});
    // enum color is unsigned int in gcc's DWARF (its underlying type), a typedef of const char *
    // is a string, a pointer to volatile const int is a pointer.
    std::string e;
    const Signature *en = d.find("dw_enum", e);
    assert_non_null(en);
    assert_true(en->args[0] == Type::U32 || en->args[0] == Type::S32);
    assert_int_equal(static_cast<int>(en->args[1]), static_cast<int>(Type::String));
    assert_int_equal(static_cast<int>(en->args[2]), static_cast<int>(Type::Pointer));
    assert_string_equal(en->arg_names[1].c_str(), "label");
    expect_signature(d, "dw_sum", Type::S32, {Type::S32}, {"n"}, true);
    expect_refused(d, "dw_by_value",
                   "dw_by_value: parameter 1 'p': 'point', a struct or union passed by value");
    expect_refused(d, "dw_ret_struct", "dw_ret_struct: return type: 'point', a struct or union");
    expect_refused(d, "dw_long_double", "dw_long_double: return type: 'long double'");
    // Not in the debug information: no signature and no error.
    assert_null(d.find("no_such_function", error));
    assert_string_equal(error.c_str(), "");
}

void test_without_debug_info(void **) {
    DwarfSignatures d;
    std::string error;
    assert_true(d.open(DW_LIB_NODEBUG, error));
    assert_false(d.has_debug_info());
    assert_int_equal(d.size(), 0);
    assert_null(d.find("dw_crc", error));
    assert_string_equal(error.c_str(), "");
}

// Debug information in a separate file, found by the library's .gnu_debuglink (as Debian's
// -dbgsym packages are found by build id): the library itself carries none.
void test_separate_debug_file(void **) {
    char dir[] = "/tmp/sonde-dwarf-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const std::string lib = std::string(dir) + "/libdw.so", debug = lib + ".debug";
    const std::string cmd = "cp '" + std::string(DW_LIB) + "' '" + lib + "' && objcopy --only-keep-debug '" +
                            lib + "' '" + debug + "' && objcopy --strip-debug --add-gnu-debuglink='" + debug +
                            "' '" + lib + "'";
    if (system(cmd.c_str()) != 0) {
        std::printf("skipped: objcopy is not available\n");
        return;
    }
    DwarfSignatures d;
    std::string error;
    assert_true(d.open(lib, error));
    assert_true(d.has_debug_info());
    assert_string_equal(d.debug_file().c_str(), debug.c_str());
    expect_signature(d, "dw_crc", Type::U64, {Type::U64, Type::Pointer, Type::U32}, {"crc", "buf", "len"});
    remove(lib.c_str());
    remove(debug.c_str());
    rmdir(dir);
}

void test_unreadable(void **) {
    DwarfSignatures missing;
    std::string error;
    assert_false(missing.open("/nonexistent/libnone.so", error));
    assert_true(error.find("/nonexistent/libnone.so") != std::string::npos);
    char path[] = "/tmp/sonde-dwarf-XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
    close(fd);
    DwarfSignatures text;
    error.clear();
    assert_false(text.open(path, error));
    assert_true(error.find(path) != std::string::npos);
    remove(path);
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signatures),
        cmocka_unit_test(test_without_debug_info),
        cmocka_unit_test(test_separate_debug_file),
        cmocka_unit_test(test_unreadable),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
