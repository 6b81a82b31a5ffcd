// API tracing, step by step below the preload: the declaration parser (prototype files, their
// errors with line numbers, the built-in libc table) and the libffi wrappers (a double and a
// struct-pointer argument, strings, narrow signed types, errno, recursion through wrappers, a
// sink that calls a traced function, a signal handler's traced call, two threads, variadic
// functions refused). Linked with src/apitrace directly: these are internals of the library.
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#include "apitrace/signature.h"
#include "apitrace/wrapper.h"

using sonde::apitrace::CallRecord;
using sonde::apitrace::kReturnIndex;
using sonde::apitrace::kStringBound;
using sonde::apitrace::Prototypes;
using sonde::apitrace::Signature;
using sonde::apitrace::Sink;
using sonde::apitrace::Type;
using sonde::apitrace::Wrapper;

namespace {

// A sink that keeps every record, under a lock (these tests do not run it in signal handlers
// except where noted, where the lock is not held by the interrupted code).
struct Kept {
    std::mutex mu;
    std::vector<CallRecord> records;
    static void call(void *ctx, const CallRecord &r) {
        Kept *k = static_cast<Kept *>(ctx);
        std::lock_guard<std::mutex> lock(k->mu);
        k->records.push_back(r);
    }
    Sink sink() {
        Sink s;
        s.call = &Kept::call;
        s.ctx = this;
        return s;
    }
};

Signature parse_one(const char *decl) {
    Prototypes p;
    std::string error;
    if (!p.parse_line(decl, error)) fail_msg("%s: %s", decl, error.c_str());
    const std::string text(decl);
    const size_t open = text.find('(');
    size_t start = open;
    while (start > 0 && (std::isalnum(static_cast<unsigned char>(text[start - 1])) || text[start - 1] == '_'))
        --start;
    const Signature *s = p.find(text.substr(start, open - start));
    assert_non_null(s);
    return *s;
}

uint64_t bits(double d) {
    uint64_t b;
    std::memcpy(&b, &d, sizeof b);
    return b;
}

}  // namespace

// ---- the parser --------------------------------------------------------------------------

static void test_parse_zlib_crc32(void **) {
    Prototypes p;
    std::string error;
    const char *text =
        "# zlib\n"
        "typedef unsigned long uLong;\n"
        "typedef unsigned int uInt;\n"
        "typedef unsigned char Bytef;\n"
        "\n"
        "uLong crc32(uLong crc, const Bytef *buf, uInt len);\n"
        "// compress2\n"
        "int compress2(Bytef *dest, uLong *destLen, const Bytef *source, uLong sourceLen, int level);\n";
    assert_true(p.parse(text, "zlib.h", error));
    const Signature *crc = p.find("crc32");
    assert_non_null(crc);
    assert_int_equal(static_cast<int>(crc->ret), static_cast<int>(Type::U64));
    assert_int_equal(crc->args.size(), 3);
    assert_int_equal(static_cast<int>(crc->args[0]), static_cast<int>(Type::U64));
    assert_int_equal(static_cast<int>(crc->args[1]), static_cast<int>(Type::Pointer));
    assert_int_equal(static_cast<int>(crc->args[2]), static_cast<int>(Type::U32));
    assert_string_equal(crc->arg_names[1].c_str(), "buf");
    assert_false(crc->variadic);
    const Signature *c2 = p.find("compress2");
    assert_non_null(c2);
    assert_int_equal(c2->args.size(), 5);
    assert_int_equal(static_cast<int>(c2->args[4]), static_cast<int>(Type::S32));
    assert_int_equal(p.size(), 2);
}

static void test_parse_types(void **) {
    Signature s = parse_one("const char *name_of(const char *s, char *buf, unsigned u, long long ll);");
    assert_int_equal(static_cast<int>(s.ret), static_cast<int>(Type::String));
    assert_int_equal(static_cast<int>(s.args[0]), static_cast<int>(Type::String));
    assert_int_equal(static_cast<int>(s.args[1]), static_cast<int>(Type::Pointer));
    assert_int_equal(static_cast<int>(s.args[2]), static_cast<int>(Type::U32));
    assert_string_equal(s.arg_names[2].c_str(), "u");
    assert_int_equal(static_cast<int>(s.args[3]), static_cast<int>(Type::S64));

    s = parse_one("double f(float, double, size_t, ssize_t, struct point *p, enum color c, _Bool b);");
    assert_int_equal(static_cast<int>(s.ret), static_cast<int>(Type::Double));
    assert_int_equal(s.args.size(), 7);
    assert_int_equal(static_cast<int>(s.args[0]), static_cast<int>(Type::Float));
    assert_string_equal(s.arg_names[0].c_str(), "arg1");
    assert_int_equal(static_cast<int>(s.args[2]), static_cast<int>(Type::U64));
    assert_int_equal(static_cast<int>(s.args[3]), static_cast<int>(Type::S64));
    assert_int_equal(static_cast<int>(s.args[4]), static_cast<int>(Type::Pointer));
    assert_int_equal(static_cast<int>(s.args[5]), static_cast<int>(Type::S32));
    assert_int_equal(static_cast<int>(s.args[6]), static_cast<int>(Type::U8));

    s = parse_one("void sort(void *base, int (*cmp)(const void *, const void *), char const *v[]);");
    assert_int_equal(static_cast<int>(s.ret), static_cast<int>(Type::Void));
    assert_int_equal(static_cast<int>(s.args[1]), static_cast<int>(Type::Pointer));
    assert_string_equal(s.arg_names[1].c_str(), "cmp");
    assert_int_equal(static_cast<int>(s.args[2]), static_cast<int>(Type::Pointer));

    s = parse_one("int getpid_like(void);");
    assert_int_equal(s.args.size(), 0);
    s = parse_one("int logf_like(const char *fmt, ...);");
    assert_true(s.variadic);
    assert_int_equal(s.args.size(), 1);
    s = parse_one("extern unsigned short int hs(signed char c, unsigned char u, short h);");
    assert_int_equal(static_cast<int>(s.ret), static_cast<int>(Type::U16));
    assert_int_equal(static_cast<int>(s.args[0]), static_cast<int>(Type::S8));
    assert_int_equal(static_cast<int>(s.args[1]), static_cast<int>(Type::U8));
    assert_int_equal(static_cast<int>(s.args[2]), static_cast<int>(Type::S16));
}

// Each error names the origin and the line, and says what is wrong.
static void test_parse_errors(void **) {
    struct Case {
        const char *text;
        const char *message;
    } cases[] = {
        {"int ok(int a);\n\nint f(struct point p);\n",
         "protos.h:3: f: argument 1: 'struct point p': a struct passed by value is not supported"},
        {"int g(widget w);\n",
         "protos.h:1: g: argument 1: unknown type 'widget' (declare it with a typedef line)"},
        {"int h(int a)\n", "protos.h:1: a declaration must end with ';'"},
        {"int x;\n", "protos.h:1: not a function declaration: expected 'TYPE NAME(ARGUMENTS);'"},
        {"int v(..., int a);\n", "protos.h:1: v: '...' must follow the fixed arguments"},
        {"// fine\nint w(int a, void);\n", "protos.h:2: w: argument 2 has type void"},
        {"long double q(int a);\n", "protos.h:1: 'long double q': not a valid type"},
        {"int r(int a @ b);\n", "protos.h:1: r: argument 1: 'int a @ b': unexpected character '@'"},
        {"typedef unsigned long;\n", "protos.h:1: 'unsigned long': a name is missing"},
    };
    for (const Case &c : cases) {
        Prototypes p;
        std::string error;
        assert_false(p.parse(c.text, "protos.h", error));
        assert_string_equal(error.c_str(), c.message);
    }
    // What came before the error is kept.
    Prototypes p;
    std::string error;
    assert_false(p.parse(cases[0].text, "protos.h", error));
    assert_non_null(p.find("ok"));
    assert_null(p.find("f"));
}

static void test_builtin_table(void **) {
    const Prototypes &b = sonde::apitrace::builtin_prototypes();
    const Signature *s = b.find("strlen");
    assert_non_null(s);
    assert_int_equal(static_cast<int>(s->ret), static_cast<int>(Type::U64));
    assert_int_equal(static_cast<int>(s->args[0]), static_cast<int>(Type::String));
    s = b.find("fopen");
    assert_non_null(s);
    assert_int_equal(static_cast<int>(s->ret), static_cast<int>(Type::Pointer));
    s = b.find("printf");
    assert_non_null(s);
    assert_true(s->variadic);
    s = b.find("qsort");
    assert_non_null(s);
    assert_int_equal(s->args.size(), 4);
    // The last line parsed: the whole table is read.
    assert_non_null(b.find("cosf"));
    assert_null(b.find("no_such_function"));
}

// ---- the wrappers -------------------------------------------------------------------------

struct point {
    long x, y;
};

extern "C" {
__attribute__((noinline)) double scale(double x, int k) { return x * k + 0.25; }
__attribute__((noinline)) long manhattan(const struct point *p) { return std::labs(p->x) + std::labs(p->y); }
__attribute__((noinline)) short negate(short h, signed char c) { return static_cast<short>(-h + c); }
__attribute__((noinline)) float halve(float f) { return f / 2; }
__attribute__((noinline)) int count_char(const char *s, int c) {
    int n = 0;
    for (; *s; ++s) n += *s == c;
    return n;
}
__attribute__((noinline)) const char *suffix(const char *s, int skip) { return s + skip; }
}

static void test_wrap_double(void **) {
    Kept kept;
    std::string error;
    auto w = Wrapper::create(parse_one("double scale(double x, int k);"), reinterpret_cast<void *>(&scale), 7,
                             kept.sink(), error);
    assert_non_null(w.get());
    auto fn = reinterpret_cast<double (*)(double, int)>(w->entry());
    assert_true(fn(1.5, 3) == 4.75);
    assert_true(fn(-2.0, -1) == 2.25);
    assert_int_equal(kept.records.size(), 2);
    const CallRecord &r = kept.records[0];
    assert_int_equal(r.function, 7);
    assert_int_equal(r.nargs, 2);
    assert_true(r.args[0] == bits(1.5));
    assert_int_equal(r.args[1], 3);
    assert_true(r.ret == bits(4.75));
    assert_true(r.begin <= r.end);
    assert_true(kept.records[1].args[1] == UINT64_MAX);  // -1 sign-extended
    assert_true(kept.records[1].correlation > r.correlation);
    assert_int_equal(r.depth, 0);
}

static void test_wrap_struct_pointer(void **) {
    Kept kept;
    std::string error;
    auto w = Wrapper::create(parse_one("long manhattan(const struct point *p);"),
                             reinterpret_cast<void *>(&manhattan), 1, kept.sink(), error);
    assert_non_null(w.get());
    auto fn = reinterpret_cast<long (*)(const struct point *)>(w->entry());
    point pt{-3, 4};
    assert_int_equal(fn(&pt), 7);
    assert_int_equal(kept.records.size(), 1);
    assert_true(kept.records[0].args[0] == reinterpret_cast<uintptr_t>(&pt));
    assert_int_equal(kept.records[0].ret, 7);
}

static void test_wrap_narrow_and_float(void **) {
    Kept kept;
    std::string error;
    auto w = Wrapper::create(parse_one("short negate(short h, signed char c);"),
                             reinterpret_cast<void *>(&negate), 2, kept.sink(), error);
    assert_non_null(w.get());
    auto fn = reinterpret_cast<short (*)(short, signed char)>(w->entry());
    assert_int_equal(fn(300, -5), -305);
    assert_true(kept.records[0].args[0] == 300);
    assert_true(kept.records[0].args[1] == static_cast<uint64_t>(-5));
    assert_true(kept.records[0].ret == static_cast<uint64_t>(-305));

    auto h = Wrapper::create(parse_one("float halve(float f);"), reinterpret_cast<void *>(&halve), 3,
                             kept.sink(), error);
    assert_non_null(h.get());
    auto hf = reinterpret_cast<float (*)(float)>(h->entry());
    assert_true(hf(3.0f) == 1.5f);
    assert_true(kept.records[1].args[0] == bits(3.0));
    assert_true(kept.records[1].ret == bits(1.5));
}

static void test_wrap_strings(void **) {
    Kept kept;
    std::string error;
    auto w = Wrapper::create(parse_one("int count_char(const char *s, int c);"),
                             reinterpret_cast<void *>(&count_char), 4, kept.sink(), error);
    assert_non_null(w.get());
    auto fn = reinterpret_cast<int (*)(const char *, int)>(w->entry());
    assert_int_equal(fn("banana", 'a'), 3);
    const std::string longer(100, 'x');
    assert_int_equal(fn(longer.c_str(), 'x'), 100);
    assert_int_equal(kept.records.size(), 2);
    const CallRecord &a = kept.records[0];
    assert_int_equal(a.nstrings, 1);
    assert_int_equal(a.strings[0].arg, 0);
    assert_int_equal(a.strings[0].length, 6);
    assert_int_equal(a.strings[0].truncated, 0);
    assert_memory_equal(a.text[0], "banana", 6);
    const CallRecord &b = kept.records[1];
    assert_int_equal(b.strings[0].length, kStringBound);
    assert_int_equal(b.strings[0].truncated, 1);

    auto s = Wrapper::create(parse_one("const char *suffix(const char *s, int skip);"),
                             reinterpret_cast<void *>(&suffix), 5, kept.sink(), error);
    assert_non_null(s.get());
    auto sf = reinterpret_cast<const char *(*)(const char *, int)>(s->entry());
    assert_string_equal(sf("prefix.tail", 7), "tail");
    const CallRecord &c = kept.records[2];
    assert_int_equal(c.nstrings, 2);
    assert_int_equal(c.strings[1].arg, kReturnIndex);
    assert_int_equal(c.strings[1].length, 4);
    assert_memory_equal(c.text[1], "tail", 4);
}

// errno: the original sees the caller's value and the caller sees the original's, whatever the
// sink does with errno in between.
extern "C" __attribute__((noinline)) int fail_with(int code) {
    const int seen = errno;
    errno = code;
    return seen;
}

static void clobbering_sink(void *ctx, const CallRecord &r) {
    errno = EBADF;
    Kept::call(ctx, r);
}

static void test_errno_preserved(void **) {
    Kept kept;
    std::string error;
    Sink sink;
    sink.call = &clobbering_sink;
    sink.ctx = &kept;
    auto w = Wrapper::create(parse_one("int fail_with(int code);"), reinterpret_cast<void *>(&fail_with), 6,
                             sink, error);
    assert_non_null(w.get());
    auto fn = reinterpret_cast<int (*)(int)>(w->entry());
    errno = ERANGE;
    const int seen = fn(EINTR);
    assert_int_equal(errno, EINTR);
    assert_int_equal(seen, ERANGE);
    errno = 0;
    assert_int_equal(fn(0), 0);
    assert_int_equal(errno, 0);
    assert_int_equal(kept.records.size(), 2);
}

// Recursion through a wrapper: each level is its own record, inner ones first, nested in time.
static int (*g_fact_entry)(int);
extern "C" __attribute__((noinline)) int fact(int n) { return n <= 1 ? 1 : n * g_fact_entry(n - 1); }

static void test_recursion(void **) {
    Kept kept;
    std::string error;
    auto w = Wrapper::create(parse_one("int fact(int n);"), reinterpret_cast<void *>(&fact), 8, kept.sink(),
                             error);
    assert_non_null(w.get());
    g_fact_entry = reinterpret_cast<int (*)(int)>(w->entry());
    assert_int_equal(g_fact_entry(5), 120);
    assert_int_equal(kept.records.size(), 5);
    std::set<uint64_t> ids;
    for (size_t i = 0; i < 5; ++i) {
        const CallRecord &r = kept.records[i];
        assert_int_equal(r.args[0], i + 1);  // fact(1) returns first
        assert_int_equal(r.depth, 4 - i);
        ids.insert(r.correlation);
        if (i > 0) {
            const CallRecord &inner = kept.records[i - 1];
            assert_true(r.begin <= inner.begin && inner.end <= r.end);
            assert_true(r.correlation < inner.correlation);  // the outer call started first
        }
    }
    assert_int_equal(ids.size(), 5);
}

// A sink that itself calls a traced function: the inner call goes through unrecorded.
static int (*g_inner_entry)(int);
static void calling_sink(void *ctx, const CallRecord &r) {
    Kept::call(ctx, r);
    if (g_inner_entry(4) != 24) abort();
}

static void test_sink_calls_traced_function(void **) {
    Kept kept;
    std::string error;
    Sink sink;
    sink.call = &calling_sink;
    sink.ctx = &kept;
    auto w = Wrapper::create(parse_one("int fact(int n);"), reinterpret_cast<void *>(&fact), 9, sink, error);
    assert_non_null(w.get());
    g_fact_entry = reinterpret_cast<int (*)(int)>(w->entry());
    g_inner_entry = g_fact_entry;
    assert_int_equal(g_fact_entry(3), 6);
    assert_int_equal(kept.records.size(), 3);  // 3 levels; none of the sink's own calls
}

// Signals: a handler's traced call made while the thread is inside the traced function is
// recorded (nested); one made while the thread is in the sink passes through.
static int (*g_sig_entry)(int);
static volatile sig_atomic_t g_handler_result;
static void on_signal(int) { g_handler_result = g_sig_entry(3); }

extern "C" __attribute__((noinline)) int raise_inside(int n) {
    if (n == -1) raise(SIGUSR1);
    return n + 1;
}

static void raising_sink(void *ctx, const CallRecord &r) {
    Kept *k = static_cast<Kept *>(ctx);
    // No lock, and no allocation (room is reserved): the sink runs in the signal handler too.
    k->records.push_back(r);  // the handler's call must not reach here from raise below
    if (r.args[0] == static_cast<uint64_t>(-2)) raise(SIGUSR1);
}

static void test_signal_handler_calls(void **) {
    Kept kept;
    kept.records.reserve(8);
    std::string error;
    Sink sink;
    sink.call = &raising_sink;
    sink.ctx = &kept;
    auto w = Wrapper::create(parse_one("int raise_inside(int n);"), reinterpret_cast<void *>(&raise_inside),
                             10, sink, error);
    assert_non_null(w.get());
    g_sig_entry = reinterpret_cast<int (*)(int)>(w->entry());
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    struct sigaction old;
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    // The signal arrives inside the original: the handler's call is recorded, nested.
    assert_int_equal(g_sig_entry(-1), 0);
    assert_int_equal(g_handler_result, 4);
    assert_int_equal(kept.records.size(), 2);
    assert_int_equal(kept.records[0].args[0], 3);
    assert_int_equal(kept.records[0].depth, 1);
    assert_true(kept.records[1].args[0] == static_cast<uint64_t>(-1));
    // The signal arrives in the sink: the handler's call passes through.
    g_handler_result = 0;
    assert_int_equal(g_sig_entry(-2), -1);
    assert_int_equal(g_handler_result, 4);
    assert_int_equal(kept.records.size(), 3);
    sigaction(SIGUSR1, &old, nullptr);
}

// Two threads: every call recorded once, correlation ids unique across threads.
static int (*g_thread_entry)(int);
static void *thread_calls(void *) {
    for (int i = 0; i < 20000; ++i) {
        if (g_thread_entry(i) != i + 1) abort();
    }
    return nullptr;
}

static void test_two_threads(void **) {
    Kept kept;
    std::string error;
    auto w = Wrapper::create(parse_one("int raise_inside(int n);"), reinterpret_cast<void *>(&raise_inside),
                             11, kept.sink(), error);
    assert_non_null(w.get());
    g_thread_entry = reinterpret_cast<int (*)(int)>(w->entry());
    pthread_t a, b;
    assert_int_equal(pthread_create(&a, nullptr, thread_calls, nullptr), 0);
    assert_int_equal(pthread_create(&b, nullptr, thread_calls, nullptr), 0);
    pthread_join(a, nullptr);
    pthread_join(b, nullptr);
    assert_int_equal(kept.records.size(), 40000);
    std::set<uint64_t> ids;
    for (const CallRecord &r : kept.records) ids.insert(r.correlation);
    assert_int_equal(ids.size(), 40000);
}

static void test_variadic_refused(void **) {
    Kept kept;
    std::string error;
    const Signature *printf_sig = sonde::apitrace::builtin_prototypes().find("printf");
    assert_non_null(printf_sig);
    auto w = Wrapper::create(*printf_sig, reinterpret_cast<void *>(&printf), 1, kept.sink(), error);
    assert_null(w.get());
    assert_string_equal(error.c_str(),
                        "printf: a variadic function is traced only when a prototype file fixes its "
                        "arguments (a declaration without '...')");
    // Fixed by a prototype: printf with one string argument is traced.
    auto fixed = Wrapper::create(parse_one("int printf(const char *format);"),
                                 reinterpret_cast<void *>(&printf), 2, kept.sink(), error);
    assert_non_null(fixed.get());
    auto fn = reinterpret_cast<int (*)(const char *)>(fixed->entry());
    assert_int_equal(fn(""), 0);
    assert_int_equal(kept.records.size(), 1);
    assert_int_equal(kept.records[0].nstrings, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_zlib_crc32),
        cmocka_unit_test(test_parse_types),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_builtin_table),
        cmocka_unit_test(test_wrap_double),
        cmocka_unit_test(test_wrap_struct_pointer),
        cmocka_unit_test(test_wrap_narrow_and_float),
        cmocka_unit_test(test_wrap_strings),
        cmocka_unit_test(test_errno_preserved),
        cmocka_unit_test(test_recursion),
        cmocka_unit_test(test_sink_calls_traced_function),
        cmocka_unit_test(test_signal_handler_calls),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_variadic_refused),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
