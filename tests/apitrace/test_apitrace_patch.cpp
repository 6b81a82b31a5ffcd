// API tracing through import slots: this program links libapitrace_a and libapitrace_b and
// traces their functions (a double and a struct-pointer argument, errno, recursion between the
// two libraries, two threads), loads libapitrace_c with dlopen after tracing started (its
// calls are traced from then on), closes it, and stops (every slot back). Also the errors: a
// malformed spec, a missing function, a missing signature, a prototype file with an error, a
// library never loaded; the table of traced functions read by one thread while dlopen adds
// to it in another. Linked with src/apitrace directly: these are internals of the library.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

extern "C" {
#include <cmocka.h>

#include "at_libs.h"
}

#include "apitrace/tracer.h"

using sonde::apitrace::CallRecord;
using sonde::apitrace::Sink;
using sonde::apitrace::TracerOptions;

namespace {

std::mutex g_mu;
std::vector<CallRecord> g_records;

void keep(void *, const CallRecord &r) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_records.push_back(r);
}

Sink sink() {
    Sink s;
    s.call = &keep;
    return s;
}

std::vector<CallRecord> take() {
    std::lock_guard<std::mutex> lock(g_mu);
    std::vector<CallRecord> out;
    out.swap(g_records);
    return out;
}

std::atomic<bool> g_stop_reading{false};

// Reads every published traced function until told to stop; returns a non-null value when an
// entry is missing or does not carry its own id.
void *read_functions(void *) {
    uint64_t reads = 0;
    while (!g_stop_reading.load() || reads == 0) {
        const uint32_t n = sonde::apitrace::traced_function_count();
        for (uint32_t i = 0; i < n; ++i) {
            const sonde::apitrace::TracedFunction *f = sonde::apitrace::traced_function(i);
            if (f == nullptr || f->id != i || f->signature.name.empty()) return reinterpret_cast<void *>(1);
            ++reads;
        }
    }
    return nullptr;
}

std::string name_of(uint32_t id) {
    for (const auto &f : sonde::apitrace::traced_functions())
        if (f.id == id) return f.signature.name;
    return "?";
}

// A prototype file in a temporary directory; removed at exit of the test.
std::string write_file(const char *text) {
    char path[] = "/tmp/sonde-apitrace-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) abort();
    const ssize_t n = write(fd, text, std::strlen(text));
    close(fd);
    if (n != static_cast<ssize_t>(std::strlen(text))) abort();
    return path;
}

const char kGoodPrototypes[] =
    "int at_ping(int n);\n"
    "int at_pong(int n);\n"
    "double at_scale(double k, const struct at_point *p);\n"
    "int at_set_errno(int code);\n"
    "int at_late(int n);\n";

uint64_t bits(double d) {
    uint64_t b;
    std::memcpy(&b, &d, sizeof b);
    return b;
}

bool start(const char *spec, const std::string &prototypes, std::string &error) {
    TracerOptions o;
    o.spec = spec;
    o.prototypes_path = prototypes;
    return sonde::apitrace::start_tracing(o, sink(), error);
}

}  // namespace

static void test_errors(void **) {
    std::string error;
    assert_false(start("libapitrace_a", "", error));
    assert_string_equal(
        error.c_str(),
        "--api 'libapitrace_a': 'libapitrace_a' has no ':' between the library and its functions");
    assert_false(start("libapitrace_a:at_ping,", "", error));
    assert_string_equal(error.c_str(),
                        "--api 'libapitrace_a:at_ping,': an empty function name for 'libapitrace_a'");

    const std::string protos = write_file(kGoodPrototypes);
    assert_false(start("libapitrace_a:at_nope", protos, error));
    assert_true(error.rfind("libapitrace_a.so: no function 'at_nope' (", 0) == 0);
    assert_false(start("apitrace_a:zz_*", protos, error));
    assert_string_equal(error.c_str(), "libapitrace_a.so: no function matches 'zz_*'");
    // No prototype file: libapitrace_b has no debug information and at_pong is not a libc
    // function; libapitrace_a's debug information refuses a struct passed by value.
    assert_false(start("libapitrace_b:at_pong", "", error));
    assert_string_equal(error.c_str(),
                        "libapitrace_b.so: at_pong: no signature known (no debug information declares it; "
                        "declare it in an --api-prototypes file)");
    assert_false(start("libapitrace_a:at_sum_point", "", error));
    assert_string_equal(
        error.c_str(),
        "libapitrace_a.so: at_sum_point: parameter 1 'p': 'at_point', a struct or union passed by "
        "value, cannot be passed on (its debug information says so; declare it otherwise in an "
        "--api-prototypes file)");

    const std::string bad = write_file("int at_ping(int n);\nint at_pong(struct at_point p);\n");
    assert_false(start("libapitrace_a:at_ping", bad, error));
    assert_string_equal(
        error.c_str(),
        (bad + ":2: at_pong: argument 1: 'struct at_point p': a struct passed by value is not supported")
            .c_str());
    assert_false(start("libapitrace_a:at_ping", "/nonexistent/protos.h", error));
    assert_string_equal(error.c_str(), "/nonexistent/protos.h: cannot read: No such file or directory");
    // A file that never ends is refused at its limit, not read into memory for ever.
    assert_false(start("libapitrace_a:at_ping", "/dev/zero", error));
    assert_string_equal(error.c_str(), "/dev/zero: more than 16 MiB: not a prototype file");
    assert_int_equal(sonde::apitrace::patched_slot_count(), 0);

    // A library that is never loaded: tracing starts, and says so at the end.
    assert_true(start("libapitrace_nope:f", protos, error));
    sonde::apitrace::stop_tracing();
    const auto warnings = sonde::apitrace::tracing_warnings();
    assert_int_equal(warnings.size(), 1);
    assert_string_equal(warnings[0].c_str(), "libapitrace_nope: never loaded; nothing of it was traced");
    unlink(protos.c_str());
    unlink(bad.c_str());
}

static void *pinger(void *) {
    for (int i = 0; i < 1000; ++i) {
        if (at_ping(1) != 1) abort();
    }
    return nullptr;
}

static void test_trace_libraries(void **) {
    const std::string protos = write_file(kGoodPrototypes);
    std::string error;
    if (!start("apitrace_a:at_p*,at_sc*,at_set_*;libapitrace_b:at_pong;libapitrace_c:at_late", protos, error))
        fail_msg("%s", error.c_str());
    assert_true(sonde::apitrace::patched_slot_count() >= 3);
    take();

    // Recursion between the two libraries: every level, innermost first.
    assert_int_equal(at_ping(3), 3);
    std::vector<CallRecord> r = take();
    assert_int_equal(r.size(), 4);
    const char *names[] = {"at_pong", "at_ping", "at_pong", "at_ping"};
    for (size_t i = 0; i < 4; ++i) {
        assert_string_equal(name_of(r[i].function).c_str(), names[i]);
        assert_int_equal(r[i].args[0], i);
        assert_int_equal(r[i].ret, i);
        assert_int_equal(r[i].depth, 3 - i);
        if (i > 0) assert_true(r[i].begin <= r[i - 1].begin && r[i - 1].end <= r[i].end);
    }

    // A double and a struct pointer.
    const at_point pt = {1.5, 2.5};
    assert_true(at_scale(2.0, &pt) == 8.0);
    r = take();
    assert_int_equal(r.size(), 1);
    assert_string_equal(name_of(r[0].function).c_str(), "at_scale");
    assert_true(r[0].args[0] == bits(2.0));
    assert_true(r[0].args[1] == reinterpret_cast<uintptr_t>(&pt));
    assert_true(r[0].ret == bits(8.0));

    // errno crosses the wrapper both ways.
    errno = ERANGE;
    assert_int_equal(at_set_errno(EINTR), ERANGE);
    assert_int_equal(errno, EINTR);
    assert_int_equal(take().size(), 1);

    // Two threads.
    pthread_t a, b;
    assert_int_equal(pthread_create(&a, nullptr, pinger, nullptr), 0);
    assert_int_equal(pthread_create(&b, nullptr, pinger, nullptr), 0);
    pthread_join(a, nullptr);
    pthread_join(b, nullptr);
    assert_int_equal(take().size(), 4000);

    // A library loaded after tracing started: its calls into libapitrace_a are traced, and its
    // own function is resolved (it is reached here through dlsym, which no slot sees).
    void *h = dlopen(AT_LIB_C, RTLD_NOW);
    assert_non_null(h);
    bool late = false;
    for (const auto &f : sonde::apitrace::traced_functions()) late = late || f.signature.name == "at_late";
    assert_true(late);
    auto at_late_fn = reinterpret_cast<int (*)(int)>(dlsym(h, "at_late"));
    assert_non_null(at_late_fn);
    assert_int_equal(at_late_fn(1), 101);
    r = take();
    assert_int_equal(r.size(), 2);
    assert_string_equal(name_of(r[1].function).c_str(), "at_ping");
    assert_int_equal(dlclose(h), 0);
    assert_int_equal(at_ping(0), 0);
    assert_int_equal(take().size(), 1);

    // The lock-free table of traced functions (what the recorder names functions from) is read
    // by another thread while loads and unloads of libapitrace_c add entries to it.
    const uint32_t before = sonde::apitrace::traced_function_count();
    assert_true(before > 0);
    g_stop_reading.store(false);
    pthread_t reader;
    assert_int_equal(pthread_create(&reader, nullptr, read_functions, nullptr), 0);
    for (int i = 0; i < 20; ++i) {
        void *again = dlopen(AT_LIB_C, RTLD_NOW);
        assert_non_null(again);
        assert_int_equal(dlclose(again), 0);
    }
    g_stop_reading.store(true);
    void *bad = nullptr;
    pthread_join(reader, &bad);
    assert_null(bad);
    assert_int_equal(sonde::apitrace::traced_function_count(), before + 20);
    const sonde::apitrace::TracedFunction *last = sonde::apitrace::traced_function(before + 19);
    assert_non_null(last);
    assert_string_equal(last->signature.name.c_str(), "at_late");
    assert_null(sonde::apitrace::traced_function(before + 20));
    take();

    // Stop: every slot back, nothing recorded any more.
    sonde::apitrace::stop_tracing();
    assert_int_equal(sonde::apitrace::patched_slot_count(), 0);
    assert_int_equal(at_ping(2), 2);
    assert_int_equal(take().size(), 0);
    assert_int_equal(sonde::apitrace::tracing_warnings().size(), 0);
    unlink(protos.c_str());
}

// No prototype file: libapitrace_a's signatures come from its debug information, with the
// parameter names the source gives them.
static void test_signatures_from_debug_information(void **) {
    std::string error;
    if (!start("libapitrace_a:at_ping,at_scale", "", error)) fail_msg("%s", error.c_str());
    bool ping = false, scale = false;
    for (const auto &f : sonde::apitrace::traced_functions()) {
        if (f.signature.name == "at_ping") {
            ping = f.signature.args.size() == 1 && f.signature.args[0] == sonde::apitrace::Type::S32 &&
                   f.signature.arg_names[0] == "n" && f.signature.ret == sonde::apitrace::Type::S32;
        }
        if (f.signature.name == "at_scale") {
            scale = f.signature.args.size() == 2 && f.signature.args[0] == sonde::apitrace::Type::Double &&
                    f.signature.args[1] == sonde::apitrace::Type::Pointer &&
                    f.signature.arg_names[1] == "p" && f.signature.ret == sonde::apitrace::Type::Double;
        }
    }
    assert_true(ping && scale);
    take();
    const at_point pt = {1.0, 2.0};
    assert_true(at_scale(3.0, &pt) == 9.0);
    assert_int_equal(at_ping(1), 1);
    std::vector<CallRecord> r = take();
    assert_int_equal(r.size(), 2);  // at_pong is not traced (an earlier run traced it)
    assert_string_equal(name_of(r[0].function).c_str(), "at_scale");
    assert_true(r[0].args[0] == bits(3.0) && r[0].ret == bits(9.0));
    assert_string_equal(name_of(r[1].function).c_str(), "at_ping");
    assert_int_equal(r[1].args[0], 1);
    sonde::apitrace::stop_tracing();
    assert_int_equal(sonde::apitrace::patched_slot_count(), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_trace_libraries),
        // After a run that traced at_pong: a new run must not reinstall that run's wrappers.
        cmocka_unit_test(test_signatures_from_debug_information),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
