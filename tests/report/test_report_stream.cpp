// Streaming: about 50 M synthetic events go through the profile and all three exports at once
// (into streams that only count bytes and lines), and the peak resident set, measured with
// getrusage, grows by less than a bound far below what holding the events would take (at
// least 16 bytes each: 800 MB). The numbers are checked exactly too.
//
// Each of the two threads runs main, which repeats R times (one event per nanosecond):
//   enter work, enter fibo, enter fibo, leave fibo, leave fibo, enter leaf, leave leaf, leave work
// so per iteration: work 7 ns (self 7 - 3 - 1 = 3), fibo 2 calls (total 3, self 3), leaf 1 ns;
// main: total 8R + 1, self R + 1. A mark every 2^20 iterations.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/resource.h>

#include <cstdio>
#include <ostream>
#include <string>

extern "C" {
#include <cmocka.h>
}

#include "report/export.h"
#include "report/profile.h"
#include "report/walker.h"
#include "synthetic.h"

namespace {

using namespace sonde::report;

constexpr uint64_t kThreads = 2;
constexpr uint64_t kIterations = 3125000;  // 2 threads x (8 R + 2) events = 50,000,004 events
enum : uint32_t { MAIN, WORK, FIBO, LEAF };

class Generator : public EventSource {
public:
    bool next_thread(ThreadInfo *t) override {
        if (thread_ == kThreads) return false;
        ++thread_;
        *t = ThreadInfo{thread_, 1000 + thread_, "gen" + std::to_string(thread_)};
        pos_ = 0;
        return true;
    }
    size_t read(Event *out, size_t max) override {
        static const EventKind kinds[8] = {EventKind::enter, EventKind::enter, EventKind::enter,
                                           EventKind::leave, EventKind::leave, EventKind::enter,
                                           EventKind::leave, EventKind::leave};
        static const uint32_t methods[8] = {WORK, FIBO, FIBO, FIBO, FIBO, LEAF, LEAF, WORK};
        const uint64_t last = 8 * kIterations + 1;  // ts of the leave of main
        size_t n = 0;
        while (n < max && pos_ <= last) {
            Event e;
            e.ts = pos_;
            if (pos_ == 0 || pos_ == last) {
                e.kind = pos_ == 0 ? EventKind::enter : EventKind::leave;
                e.method = MAIN;
            } else {
                const uint64_t k = (pos_ - 1) % 8, iter = (pos_ - 1) / 8;
                if (k == 0 && iter % (1u << 20) == 0 && !marked_) {
                    e.kind = EventKind::mark;
                    e.text = "iteration";
                    marked_ = true;
                    out[n++] = e;
                    continue;  // the same position again, as an event
                }
                marked_ = false;
                e.kind = kinds[k];
                e.method = methods[k];
            }
            ++pos_;
            out[n++] = e;
            ++events;
        }
        return n;
    }
    const MethodInfo *method(uint32_t index) override { return index < 4 ? &table_[index] : nullptr; }

    uint64_t events = 0;

private:
    MethodInfo table_[4] = {
        {"main", "", "", 0}, {"work", "", "", 0}, {"fibo", "", "", 0}, {"leaf", "", "", 0}};
    uint64_t thread_ = 0, pos_ = 0;
    bool marked_ = false;
};

// Counts bytes and lines.
class LineCounter : public synthetic::CountingBuf {
public:
    uint64_t lines = 0;

protected:
    std::streamsize xsputn(const char *s, std::streamsize n) override {
        for (std::streamsize i = 0; i < n; ++i) lines += s[i] == '\n';
        return CountingBuf::xsputn(s, n);
    }
};

long peak_rss_kb() {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

void test_stream_bounded(void **) {
    Generator source;
    Walker walker(source);
    Profile profile(walker.functions(), true);
    synthetic::CountingBuf chrome_buf;
    LineCounter folded_buf, csv_buf;
    std::ostream chrome_out(&chrome_buf), folded_out(&folded_buf), csv_out(&csv_buf);
    ChromeWriter chrome(walker.functions(), chrome_out, 1, "test");
    FoldedWriter folded(walker.functions(), folded_out);
    CsvWriter csv(walker.functions(), csv_out);
    walker.add(&profile);
    walker.add(&chrome);
    walker.add(&folded);
    walker.add(&csv);

    const long before = peak_rss_kb();
    walker.run();
    const long after = peak_rss_kb();
    std::printf(
        "# %llu events; chrome %llu bytes, csv %llu lines, folded %llu lines; peak RSS %ld KiB -> %ld KiB\n",
        static_cast<unsigned long long>(source.events), static_cast<unsigned long long>(chrome_buf.bytes),
        static_cast<unsigned long long>(csv_buf.lines), static_cast<unsigned long long>(folded_buf.lines),
        before, after);
    assert_int_equal(source.events, kThreads * (8 * kIterations + 2));
    assert_true(after - before < 64 * 1024);

    const uint64_t R = kIterations;
    uint64_t calls = 0;
    for (const FunctionStats &s : profile.totals()) {
        const std::string &name = walker.functions().name(s.function);
        calls += s.calls;
        if (name == "main") {
            assert_int_equal(s.calls, kThreads);
            assert_int_equal(s.total_ns, kThreads * (8 * R + 1));
            assert_int_equal(s.self_ns, kThreads * (R + 1));
        } else if (name == "work") {
            assert_int_equal(s.calls, kThreads * R);
            assert_int_equal(s.total_ns, kThreads * 7 * R);
            assert_int_equal(s.self_ns, kThreads * 3 * R);
        } else if (name == "fibo") {
            assert_int_equal(s.calls, kThreads * 2 * R);
            assert_int_equal(s.total_ns, kThreads * 3 * R);
            assert_int_equal(s.self_ns, kThreads * 3 * R);
        } else {
            assert_string_equal(name.c_str(), "leaf");
            assert_int_equal(s.calls, kThreads * R);
            assert_int_equal(s.total_ns, kThreads * R);
        }
    }
    assert_int_equal(calls, kThreads * (4 * R + 1));
    assert_int_equal(csv_buf.lines, 1 + calls);  // header + one row per call
    assert_int_equal(folded_buf.lines, 5);       // main, main;work, ...;fibo, ...;fibo;fibo, ...;leaf
    assert_int_equal(profile.threads()[0].summary.marks, (R + (1u << 20) - 1) >> 20);
    assert_true(profile.warnings().empty());
    // Every call is one complete event of at least 60 bytes.
    assert_true(chrome_buf.bytes > 60 * calls);
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_stream_bounded)};
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
