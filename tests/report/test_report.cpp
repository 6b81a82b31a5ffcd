// Tests of src/report against synthetic event streams whose every number is computed by hand
// (the comments show how): recursion, two threads, a virtual-call-like pattern, unmatched and
// unwound events, calls open at the end of a thread, equal and backward timestamps, a method
// missing from the table, and a thread with no events. Each output (profile, text report,
// call tree, JSON, chrome, folded, csv, HTML) is checked exactly, and the outputs are checked
// against each other: the same calls in report and chrome, chrome's outermost durations equal
// the total times, folded weights sum to the self times.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
#include <cmocka.h>
}
#include <nlohmann/json.hpp>

#include "report/export.h"
#include "report/format.h"
#include "report/html.h"
#include "report/profile.h"
#include "report/report.h"
#include "report/text_source.h"
#include "report/walker.h"
#include "synthetic.h"

namespace {

using nlohmann::json;
using namespace sonde::report;

enum : uint32_t { MAIN, FIBO, RUN, CIRCLE, SQUARE, MAP, A, B, C, X, Y };
const char *const kMapName = "std::map<int, std::string>::operator[](int const&)";

// The five threads of the scenario.
void build(synthetic::VectorSource &s) {
    s.method(MAIN, "main", "main.c", 10);
    s.method(FIBO, "fibo", "fibo.c", 3);
    s.method(RUN, "run");
    s.method(CIRCLE, "Circle::area() const");
    s.method(SQUARE, "Square::area() const");
    s.method(MAP, kMapName);
    s.method(A, "A");
    s.method(B, "B");
    s.method(C, "C");
    s.method(X, "X");
    s.method(Y, "Y");
    // Thread 1, recursion: main 0..100 calls fibo(3) 10..70, which calls fibo(2) 20..50
    // (fibo(1) 30..40, fibo(0) 40..45, entered at the timestamp its sibling left) and fibo(1)
    // 55..60. main: total 100, self 100 - 60 = 40. fibo: 5 calls; total 60 (only the outermost
    // call counts); self 25 + 15 + 10 + 5 + 5 = 60.
    s.thread(1, 100, "main")
        .start(0)
        .enter(0, MAIN)
        .enter(10, FIBO)
        .enter(20, FIBO)
        .enter(30, FIBO)
        .leave(40, FIBO)
        .enter(40, FIBO)
        .leave(45, FIBO)
        .leave(50, FIBO)
        .enter(55, FIBO)
        .leave(60, FIBO)
        .leave(70, FIBO)
        .leave(100, MAIN)
        .end(110);
    // Thread 2, one call site dispatching to several targets: run 1000..1100 calls Circle
    // 1010..1030, Square 1030..1035, Circle 1040..1050 and the map operator 1060..1070.
    // run: self 100 - 20 - 5 - 10 - 10 = 55; Circle: 2 calls, 30; Square 5; map 10.
    s.thread(2, 101, "worker <2>")
        .enter(1000, RUN)
        .enter(1010, CIRCLE)
        .mark(1020, "phase <2> & more")
        .leave(1030, CIRCLE)
        .enter(1030, SQUARE)
        .leave(1035, SQUARE)
        .enter(1040, CIRCLE)
        .leave(1050, CIRCLE)
        .enter(1060, MAP)
        .leave(1070, MAP)
        .leave(1100, RUN);
    // Thread 3, a damaged stream: a LEAVE before anything (ignored); A 10 > B 20 > C 30 left
    // by a LEAVE of A at 40 (C and B closed at 40: C 10, B 20 - 10, A 30 - 20); a LEAVE of B
    // that is not on the stack (ignored); A 50 > B 60 > C entered at 68 after a mark at 70
    // (taken as 70), all still open at the thread's end at 80: C 10, B 20 - 10, A 30 - 20.
    // A: 2 calls, total 60, self 20; B: 2, 40, 20; C: 2, 20, 20.
    s.thread(3, 102, "broken")
        .leave(5, B)
        .enter(10, A)
        .enter(20, B)
        .enter(30, C)
        .leave(40, A)
        .leave(45, B)
        .enter(50, A)
        .enter(60, B)
        .mark(70, "m")
        .enter(68, C)
        .end(80);
    // Thread 4, equal timestamps: X and Y last 0 ns; method 99 is not in the table (1 ns).
    s.thread(4, 103, "zero")
        .enter(500, X)
        .enter(500, Y)
        .leave(500, Y)
        .leave(500, X)
        .enter(500, 99)
        .leave(501, 99);
    // Thread 5 has no events.
    s.thread(5, 104, "");
}

struct Expected {
    const char *name;
    uint64_t calls, total, self;
};

// All threads, sorted by self time (ties by name).
const Expected kBySelf[] = {
    {"fibo", 5, 60, 60},
    {"run", 1, 100, 55},
    {"main", 1, 100, 40},
    {"Circle::area() const", 2, 30, 30},
    {"A", 2, 60, 20},
    {"B", 2, 40, 20},
    {"C", 2, 20, 20},
    {kMapName, 1, 10, 10},
    {"Square::area() const", 1, 5, 5},
    {"method#99", 1, 1, 1},
    {"X", 1, 0, 0},
    {"Y", 1, 0, 0},
};

const char *const kWarnings[] = {
    "thread 3 (tid 102, broken): 2 LEAVE event(s) without a matching ENTER ignored (the first at 5 ns)",
    ("thread 3 (tid 102, broken): 1 LEAVE event(s) of a method below the top of the stack (longjmp or "
     "exception); 2 frame(s) above it closed at its timestamp"),
    ("thread 3 (tid 102, broken): 3 call(s) still open at the end of the thread (innermost: C) closed at "
     "its last timestamp, 80 ns"),
    ("thread 3 (tid 102, broken): 1 timestamp(s) earlier than the previous event (by up to 2 ns) taken as "
     "equal to it"),
    "1 method index(es) missing from the method table, named method#INDEX",
};

// One walk of the scenario into a profile (with trees) and the three exports.
struct Run {
    synthetic::VectorSource source;
    Walker walker{source};
    Profile profile{walker.functions(), true};
    std::ostringstream chrome_out, folded_out, csv_out;
    ChromeWriter chrome{walker.functions(), chrome_out, source.pid(), "test-version"};
    FoldedWriter folded{walker.functions(), folded_out};
    CsvWriter csv{walker.functions(), csv_out};

    Run() {
        build(source);
        walker.add(&profile);
        walker.add(&chrome);
        walker.add(&folded);
        walker.add(&csv);
        walker.run();
    }
};

std::map<std::string, FunctionStats> by_name(const Profile &p, const std::vector<FunctionStats> &list) {
    std::map<std::string, FunctionStats> m;
    for (const FunctionStats &s : list) m[p.functions().name(s.function)] = s;
    return m;
}

void test_profile_numbers(void **) {
    Run r;
    std::vector<FunctionStats> all = r.profile.totals();
    r.profile.sort(all, SortKey::self);
    assert_int_equal(all.size(), sizeof kBySelf / sizeof kBySelf[0]);
    for (size_t i = 0; i < all.size(); ++i) {
        assert_string_equal(r.profile.functions().name(all[i].function).c_str(), kBySelf[i].name);
        assert_int_equal(all[i].calls, kBySelf[i].calls);
        assert_int_equal(all[i].total_ns, kBySelf[i].total);
        assert_int_equal(all[i].self_ns, kBySelf[i].self);
    }
    // Threads: spans, calls, marks.
    const auto &t = r.profile.threads();
    assert_int_equal(t.size(), 5);
    const uint64_t spans[5][5] = {
        {0, 110, 6, 0, 1}, {1000, 1100, 5, 1, 1}, {5, 80, 6, 1, 1}, {500, 501, 3, 0, 1}, {0, 0, 0, 0, 0}};
    for (size_t i = 0; i < 5; ++i) {
        assert_int_equal(t[i].summary.info.id, i + 1);
        assert_int_equal(t[i].summary.begin, spans[i][0]);
        assert_int_equal(t[i].summary.end, spans[i][1]);
        assert_int_equal(t[i].summary.calls, spans[i][2]);
        assert_int_equal(t[i].summary.marks, spans[i][3]);
        assert_int_equal(t[i].summary.has_events, spans[i][4] != 0);
    }
    // Per thread: thread 1 has main and fibo only, with the figures of the whole run.
    auto t1 = by_name(r.profile, t[0].functions);
    assert_int_equal(t1.size(), 2);
    assert_int_equal(t1["fibo"].calls, 5);
    assert_int_equal(t1["fibo"].total_ns, 60);
    assert_int_equal(t1["main"].self_ns, 40);
    auto t3 = by_name(r.profile, t[2].functions);
    assert_int_equal(t3.size(), 3);
    assert_int_equal(t3["A"].total_ns, 60);
    assert_int_equal(t3["B"].self_ns, 20);
    assert_int_equal(t3["C"].calls, 2);
    assert_int_equal(t[4].functions.size(), 0);
    // Warnings, word for word.
    const auto &w = r.profile.warnings();
    assert_int_equal(w.size(), sizeof kWarnings / sizeof kWarnings[0]);
    for (size_t i = 0; i < w.size(); ++i) assert_string_equal(w[i].c_str(), kWarnings[i]);
}

void test_sort_keys(void **) {
    Run r;
    auto order = [&](SortKey k) {
        std::vector<FunctionStats> all = r.profile.totals();
        r.profile.sort(all, k);
        std::string s;
        for (const FunctionStats &f : all) s += r.profile.functions().name(f.function) + "|";
        return s;
    };
    const std::string map = kMapName;
    assert_string_equal(
        order(SortKey::calls).c_str(),
        ("fibo|A|B|C|Circle::area() const|Square::area() const|X|Y|main|method#99|run|" + map + "|").c_str());
    assert_string_equal(
        order(SortKey::total).c_str(),
        ("main|run|A|fibo|B|Circle::area() const|C|" + map + "|Square::area() const|method#99|X|Y|").c_str());
    assert_string_equal(
        order(SortKey::name).c_str(),
        ("A|B|C|Circle::area() const|Square::area() const|X|Y|fibo|main|method#99|run|" + map + "|").c_str());
    SortKey k;
    assert_true(parse_sort_key("calls", &k) && k == SortKey::calls);
    assert_false(parse_sort_key("speed", &k));
}

void test_text_report_and_tree(void **) {
    Run r;
    ReportOptions o;
    std::ostringstream text;
    write_text_report(r.profile, o, text);
    const std::string t = text.str();
    assert_non_null(strstr(t.c_str(),
                           "  Total time   Self time       Calls  Function\n"
                           "  ==========  ==========  ==========  ====================\n"
                           "       60 ns       60 ns           5  fibo\n"
                           "      100 ns       55 ns           1  run\n"));
    assert_non_null(strstr(t.c_str(), "       2         101           5      100 ns  worker <2>\n"));
    assert_non_null(strstr(t.c_str(), "       5         104           0        0 ns  \n"));

    std::ostringstream tree;
    write_text_tree(r.profile, o, tree);
    const std::string g = tree.str();
    assert_non_null(strstr(g.c_str(),
                           "thread 1 (tid 100, main)\n"
                           "  TOTAL TIME   FUNCTION\n"
                           "      100 ns : (1) main\n"
                           "       60 ns :    (1) fibo\n"
                           "       35 ns :      (2) fibo\n"
                           "       15 ns :        (2) fibo\n\n"));
    assert_non_null(strstr(g.c_str(),
                           "      100 ns : (1) run\n"
                           "       30 ns :  +-(2) Circle::area() const\n"
                           "        5 ns :  +-(1) Square::area() const\n"
                           "       10 ns :  +-(1) std::map<int, std::string>::operator[](int const&)\n"));
    assert_non_null(strstr(g.c_str(),
                           "       60 ns : (2) A\n"
                           "       40 ns :    (2) B\n"
                           "       20 ns :      (2) C\n"));
    assert_non_null(strstr(g.c_str(),
                           "        0 ns : (1) X\n"
                           "        0 ns :    (1) Y\n"
                           "        1 ns : (1) method#99\n"));
    // --depth 1: outermost calls only.
    o.max_depth = 1;
    std::ostringstream shallow;
    write_text_tree(r.profile, o, shallow);
    assert_null(strstr(shallow.str().c_str(), "(2) fibo"));
    assert_non_null(strstr(shallow.str().c_str(), "(1) main\n"));
}

void test_json_report(void **) {
    Run r;
    ReportOptions o;
    o.version = "9.8.7";
    o.tree = true;
    const json j = json::parse(report_json(r.profile, o));
    assert_string_equal(j["sonde_version"].get<std::string>().c_str(), "9.8.7");
    assert_int_equal(j["functions"].size(), sizeof kBySelf / sizeof kBySelf[0]);
    for (size_t i = 0; i < j["functions"].size(); ++i) {
        const json &f = j["functions"][i];
        assert_string_equal(f["name"].get<std::string>().c_str(), kBySelf[i].name);
        assert_int_equal(f["calls"].get<uint64_t>(), kBySelf[i].calls);
        assert_int_equal(f["total_ns"].get<uint64_t>(), kBySelf[i].total);
        assert_int_equal(f["self_ns"].get<uint64_t>(), kBySelf[i].self);
    }
    assert_string_equal(j["functions"][0]["file"].get<std::string>().c_str(), "fibo.c");
    assert_int_equal(j["functions"][0]["line"].get<int>(), 3);
    assert_int_equal(j["threads"].size(), 5);
    const json &t2 = j["threads"][1];
    assert_int_equal(t2["id"].get<int>(), 2);
    assert_int_equal(t2["tid"].get<int>(), 101);
    assert_string_equal(t2["name"].get<std::string>().c_str(), "worker <2>");
    assert_int_equal(t2["begin_ns"].get<int>(), 1000);
    assert_int_equal(t2["end_ns"].get<int>(), 1100);
    assert_int_equal(t2["marks"].get<int>(), 1);
    assert_string_equal(t2["functions"][0]["name"].get<std::string>().c_str(), "run");
    assert_int_equal(t2["functions"][0]["self_ns"].get<int>(), 55);
    const json expected_tree = json::parse(R"([
        {"parent": -1, "name": "main", "calls": 1, "total_ns": 100, "self_ns": 40},
        {"parent": 0, "name": "fibo", "calls": 1, "total_ns": 60, "self_ns": 25},
        {"parent": 1, "name": "fibo", "calls": 2, "total_ns": 35, "self_ns": 20},
        {"parent": 2, "name": "fibo", "calls": 2, "total_ns": 15, "self_ns": 15}])");
    assert_true(j["threads"][0]["tree"] == expected_tree);
    assert_int_equal(j["warnings"].size(), sizeof kWarnings / sizeof kWarnings[0]);
    assert_string_equal(j["warnings"][4].get<std::string>().c_str(), kWarnings[4]);
    // Without --tree, no "tree" key.
    o.tree = false;
    assert_false(json::parse(report_json(r.profile, o))["threads"][0].contains("tree"));
}

void test_chrome_export(void **) {
    Run r;
    const std::string text = r.chrome_out.str();
    // Exact event text: fibo(1) is the first call to return; ts and dur are exact microseconds.
    assert_non_null(strstr(text.c_str(),
                           "{\"name\":\"fibo\",\"ph\":\"X\",\"ts\":0.030,\"dur\":0.010,\"pid\":4242,"
                           "\"tid\":100}"));
    assert_non_null(strstr(text.c_str(),
                           "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":4242,\"tid\":101,\"args\":{"
                           "\"name\":\"worker \\u003c2\\u003e\"}}"));
    assert_non_null(strstr(text.c_str(),
                           "{\"name\":\"phase \\u003c2\\u003e \\u0026 more\",\"ph\":\"i\",\"s\":\"t\","
                           "\"ts\":1.020,\"pid\":4242,\"tid\":101}"));
    assert_null(strstr(text.c_str(), "std::map<"));
    const json j = json::parse(text);
    assert_string_equal(j["otherData"]["sonde_version"].get<std::string>().c_str(), "test-version");
    assert_int_equal(j["otherData"]["warnings"].size(), sizeof kWarnings / sizeof kWarnings[0]);
    assert_string_equal(j["displayTimeUnit"].get<std::string>().c_str(), "ns");
    // Per name: X events equal calls; per thread and name, the calls not inside another call of
    // the same name (intervals not contained in another) add up to the total time.
    std::map<std::string, uint64_t> calls, total;
    std::map<std::pair<uint64_t, std::string>, std::vector<std::pair<uint64_t, uint64_t>>> spans;
    std::map<uint64_t, std::string> thread_names;
    size_t metadata = 0, instants = 0;
    for (const json &e : j["traceEvents"]) {
        const std::string ph = e["ph"].get<std::string>();
        assert_int_equal(e["pid"].get<uint64_t>(), 4242);
        if (ph == "M") {
            ++metadata;
            if (e["name"] == "thread_name")
                thread_names[e["tid"].get<uint64_t>()] = e["args"]["name"].get<std::string>();
            continue;
        }
        if (ph == "i") {
            ++instants;
            continue;
        }
        assert_string_equal(ph.c_str(), "X");
        const std::string name = e["name"].get<std::string>();
        const uint64_t b = static_cast<uint64_t>(e["ts"].get<double>() * 1000 + 0.5);
        const uint64_t d = static_cast<uint64_t>(e["dur"].get<double>() * 1000 + 0.5);
        ++calls[name];
        spans[{e["tid"].get<uint64_t>(), name}].push_back({b, b + d});
    }
    assert_int_equal(metadata, 10);
    assert_int_equal(instants, 2);
    assert_string_equal(thread_names[104].c_str(), "thread 5");
    for (auto &s : spans) {
        auto &v = s.second;
        std::sort(v.begin(), v.end(), [](auto &a, auto &b) {
            return a.first != b.first ? a.first < b.first : a.second > b.second;
        });
        uint64_t covered_to = 0;
        bool any = false;
        for (auto &iv : v) {
            if (!any || iv.first >= covered_to) {
                total[s.first.second] += iv.second - iv.first;
                covered_to = iv.second;
                any = true;
            } else {
                covered_to = std::max(covered_to, iv.second);
            }
        }
    }
    for (const Expected &e : kBySelf) {
        assert_int_equal(calls[e.name], e.calls);
        assert_int_equal(total[e.name], e.total);
    }
}

void test_folded_export(void **) {
    Run r;
    const std::string expected = std::string(
                                     "A 20\n"
                                     "A;B 20\n"
                                     "A;B;C 20\n"
                                     "main 40\n"
                                     "main;fibo 25\n"
                                     "main;fibo;fibo 20\n"
                                     "main;fibo;fibo;fibo 15\n"
                                     "method#99 1\n"
                                     "run 55\n"
                                     "run;Circle::area() const 30\n"
                                     "run;Square::area() const 5\n"
                                     "run;") +
                                 kMapName + " 10\n";
    assert_string_equal(r.folded_out.str().c_str(), expected.c_str());
    // The weights of the stacks that end in a function add up to its self time.
    std::map<std::string, uint64_t> self;
    std::istringstream in(r.folded_out.str());
    std::string line;
    while (std::getline(in, line)) {
        const size_t sp = line.rfind(' '), semi = line.rfind(';', sp);
        const std::string leaf = line.substr(semi == std::string::npos ? 0 : semi + 1,
                                             sp - (semi == std::string::npos ? 0 : semi + 1));
        self[leaf] += std::stoull(line.substr(sp + 1));
    }
    for (const Expected &e : kBySelf) assert_int_equal(self[e.name], e.self);
    assert_string_equal(folded_frame("a;b\nc").c_str(), "a:b c");
}

void test_csv_export(void **) {
    Run r;
    const std::string text = r.csv_out.str();
    const std::string head =
        "thread,depth,name,begin_ns,duration_ns\n"
        "1,3,fibo,30,10\n"
        "1,3,fibo,40,5\n"
        "1,2,fibo,20,30\n"
        "1,2,fibo,55,5\n"
        "1,1,fibo,10,60\n"
        "1,0,main,0,100\n"
        "2,1,Circle::area() const,1010,20\n"
        "2,1,Square::area() const,1030,5\n"
        "2,1,Circle::area() const,1040,10\n"
        "2,1,\"std::map<int, std::string>::operator[](int const&)\",1060,10\n"
        "2,0,run,1000,100\n"
        "3,2,C,30,10\n"
        "3,1,B,20,20\n"
        "3,0,A,10,30\n"
        "3,2,C,70,10\n"
        "3,1,B,60,20\n"
        "3,0,A,50,30\n"
        "4,1,Y,500,0\n"
        "4,0,X,500,0\n"
        "4,0,method#99,500,1\n";
    assert_string_equal(text.c_str(), head.c_str());
}

void test_html(void **) {
    Run r;
    HtmlOptions o;
    o.title = "run <1>.txt";
    o.version = "1.2.3";
    o.analysis = R"({"cache_sim": {"levels": [{"name": "L1<x>", "accesses": 1000, "hits": 900, "misses": 100,
        "miss_ratio": 0.1, "compulsory_misses": 50, "ifetch_misses": 0, "data_misses": 100}]},
        "reuse_distance": {"accesses": 6, "infinite": 3, "histogram": [[1, 1], [2, 2]],
                           "mrc": [[0, 1.0], [2, 0.8333], [3, 0.5]], "line_size": 64},
        "basic_counts": {"reads": 1234567, "writes": 2},
        "custom<tool>": {"note": "<script>alert(1)</script>"}})";
    std::ostringstream out;
    write_html(r.profile, o, out);
    const std::string h = out.str();
    auto count = [&](const std::string &needle) {
        size_t n = 0;
        for (size_t p = h.find(needle); p != std::string::npos; p = h.find(needle, p + 1)) ++n;
        return n;
    };
    // Names only ever appear escaped.
    assert_int_equal(count("std::map<"), 0);
    assert_int_equal(count("worker <2>"), 0);
    assert_int_equal(count("<script"), 2);  // the data and the code, nothing from a name
    assert_non_null(strstr(
        h.c_str(),
        "<td class=\"name\" title=\"prog\">std::map&lt;int, std::string&gt;::operator[](int const&amp;)"
        "</td><td class=\"num\" data-value=\"1\">1</td>"));
    assert_non_null(
        strstr(h.c_str(), "std::map\\u003cint, std::string\\u003e::operator[](int const\\u0026)"));
    assert_non_null(strstr(h.c_str(), "<title>Sonde report: run &lt;1&gt;.txt</title>"));
    assert_non_null(strstr(h.c_str(), "worker &lt;2&gt;"));
    // The table's first row is the JSON report's first function.
    assert_non_null(strstr(h.c_str(),
                           "<tr><td class=\"name\" title=\"fibo.c:3\">fibo</td><td class=\"num\" "
                           "data-value=\"5\">5</td><td class=\"num\" data-value=\"60\">60 ns</td><td "
                           "class=\"num\" data-value=\"60\">60 ns</td><td class=\"num\">23.0%</td></tr>"));
    // Analysis: the cache_sim table, the curve with its three points, counts, the other tool.
    assert_non_null(strstr(h.c_str(), "<table id=\"cache-sim\">"));
    assert_non_null(strstr(
        h.c_str(), "<td class=\"name\">L1&lt;x&gt;</td><td class=\"num\" data-value=\"1000\">1,000</td>"));
    assert_non_null(strstr(h.c_str(), "<td class=\"num\">10.0000%</td>"));
    assert_non_null(strstr(h.c_str(), "class=\"mrc-line\" data-points=\"3\""));
    assert_non_null(strstr(h.c_str(), "<td class=\"name\">reads</td><td class=\"num\">1,234,567</td>"));
    assert_non_null(strstr(h.c_str(), "<h3>custom&lt;tool&gt;</h3>"));
    assert_non_null(strstr(h.c_str(), "&lt;script&gt;alert(1)&lt;/script&gt;"));
    // Warnings are listed; no network resource is referenced.
    assert_non_null(strstr(h.c_str(), "<li>thread 3 (tid 102, broken): 2 LEAVE event(s)"));
    assert_int_equal(count("src="), 0);
    assert_int_equal(count("href="), 0);
    // The embedded data parses and holds the flame graph's nodes: all threads (261 ns of
    // outermost calls: 100 + 100 + 60 + 0 + 1), then thread 1 and its tree.
    const size_t start = h.find("<script type=\"application/json\" id=\"sonde-data\">") + 48;
    const json d = json::parse(h.substr(start, h.find("</script>", start) - start));
    assert_true(d["nodes"][0] == json::parse("[-1, -1, 20, 261, 0]"));
    assert_true(d["nodes"][1] == json::parse("[0, -2, 6, 100, 0]"));
    assert_int_equal(d["names"][d["nodes"][2][1].get<size_t>()].get<std::string>() == "main", 1);
    assert_string_equal(d["sort"].get<std::string>().c_str(), "self");
    // A bad analysis object is refused.
    o.analysis = "[1, 2]";
    std::ostringstream bad;
    bool thrown = false;
    try {
        write_html(r.profile, o, bad);
    } catch (const Error &) {
        thrown = true;
    }
    assert_true(thrown);
}

void test_format(void **) {
    assert_string_equal(format_ns(0).c_str(), "0 ns");
    assert_string_equal(format_ns(999).c_str(), "999 ns");
    assert_string_equal(format_ns(1000).c_str(), "1.000 us");
    assert_string_equal(format_ns(1234567).c_str(), "1.235 ms");
    assert_string_equal(format_ns(2000000000).c_str(), "2.000 s");
    std::string us;
    append_us(us, 1234567);
    us += " ";
    append_us(us, 5);
    assert_string_equal(us.c_str(), "1234.567 0.005");
    std::string js;
    append_json_string(js, "a\"\\\n\x01<&>\xff\xc3\xa9");
    assert_string_equal(js.c_str(), "\"a\\\"\\\\\\n\\u0001\\u003c\\u0026\\u003e\xEF\xBF\xBD\xc3\xa9\"");
    std::string csv;
    append_csv_field(csv, "a,b");
    csv += "|";
    append_csv_field(csv, "q\"x");
    csv += "|";
    append_csv_field(csv, "plain");
    assert_string_equal(csv.c_str(), "\"a,b\"|\"q\"\"x\"|plain");
    assert_string_equal(html_escape("<a href='x'>&\"</a>").c_str(),
                        "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
}

std::string temp_file(const std::string &text) {
    char name[] = "/tmp/sonde-report-test-XXXXXX";
    const int fd = mkstemp(name);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
    return name;
}

std::string source_error(const std::string &text) {
    const std::string path = temp_file(text);
    std::string message;
    try {
        TextEventSource s(path);
        Walker w(s);
        w.run();
    } catch (const Error &e) {
        message = e.what();
    }
    unlink(path.c_str());
    return message.empty() ? "" : message.substr(message.find(':'));  // without the path
}

void test_text_source(void **) {
    // Thread 1 and 2 of the scenario in the text format give the same profile.
    const std::string path = temp_file(
        "sonde-events 1\n# the scenario's threads 1 and 2\npid 77\n"
        "method 0 prog main.c 10 main\nmethod 1 prog fibo.c 3 fibo\nmethod 2 - - 0 run\n"
        "method 3 - - 0 Circle::area() const\nmethod 4 - - 0 Square::area() const\n"
        "method 5 - - 0 std::map<int, std::string>::operator[](int const&)\n\n"
        "thread 1 100 main\nstart 0\nenter 0 0\nenter 10 1\nenter 20 1\nenter 30 1\nleave 40 1\nenter 40 1\n"
        "leave 45 1\nleave 50 1\nenter 55 1\nleave 60 1\nleave 70 1\nleave 100 0\nend 110\n"
        "thread 2 101 worker <2>\r\nenter 1000 2\nenter 1010 3\nmark 1020 phase <2> & more\nleave 1030 3\n"
        "enter 1030 4\nleave 1035 4\nenter 1040 3\nleave 1050 3\nenter 1060 5\nleave 1070 5\nleave 1100 2\n");
    assert_true(TextEventSource::recognizes(path));
    TextEventSource src(path);
    assert_int_equal(src.pid(), 77);
    Walker w(src);
    Profile p(w.functions(), false);
    std::ostringstream chrome;
    ChromeWriter cw(w.functions(), chrome, src.pid(), "v");
    w.add(&p);
    w.add(&cw);
    w.run();
    unlink(path.c_str());
    auto all = by_name(p, p.totals());
    assert_int_equal(all.size(), 6);
    assert_int_equal(all["fibo"].self_ns, 60);
    assert_int_equal(all["run"].self_ns, 55);
    assert_int_equal(all[kMapName].total_ns, 10);
    assert_string_equal(p.threads()[1].summary.info.name.c_str(), "worker <2>");
    assert_int_equal(p.threads()[1].summary.marks, 1);
    assert_non_null(strstr(chrome.str().c_str(), "\"name\":\"phase \\u003c2\\u003e \\u0026 more\""));
    assert_int_equal(p.warnings().size(), 0);
    assert_string_equal(p.functions().info(0).file.c_str(), "main.c");
    assert_string_equal(p.functions().info(2).file.c_str(), "");

    // Bad input names the line.
    assert_string_equal(source_error("sonde-events 2\n").c_str(),
                        ":1: not an event text file (its first line must be \"sonde-events 1\")");
    assert_string_equal(source_error("sonde-events 1\nenter 5 0\n").c_str(),
                        ":2: an event before the first thread line");
    assert_string_equal(source_error("sonde-events 1\nmethod 0 m f 1\n").c_str(),
                        ":2: expected: method INDEX MODULE FILE LINE NAME");
    assert_string_equal(source_error("sonde-events 1\nmethod 0 m f 1 a\nmethod 0 m f 1 b\n").c_str(),
                        ":3: method 0 is defined twice");
    assert_string_equal(source_error("sonde-events 1\nthread 1 1 a\nthread 1 2 b\n").c_str(),
                        ":3: thread 1 appears twice");
    assert_string_equal(source_error("sonde-events 1\nthread 1 1\nenter x 0\n").c_str(),
                        ":3: expected a timestamp after \"enter\"");
    assert_string_equal(source_error("sonde-events 1\nthread 1 1\nenter 5 0 9\n").c_str(),
                        ":3: expected: enter TS METHOD");
    assert_string_equal(source_error("sonde-events 1\nthread 1 1\njump 5\n").c_str(),
                        ":3: unknown line \"jump\"");
    assert_string_equal(source_error("sonde-events 1\nthread 1 1\nmethod 0 m f 1 a\n").c_str(),
                        ":3: \"method\" lines must come before the first thread");
    assert_string_equal(source_error("sonde-events 1\nthread 1 1\nend 5 6\n").c_str(),
                        ":3: expected: end TS");
    assert_string_equal(source_error("sonde-events 1\n# only a header\n").c_str(), "");
    const std::string other = temp_file("SONDETRC");
    assert_false(TextEventSource::recognizes(other));
    unlink(other.c_str());
}

// Random streams of every kind of event, damaged ones included: whatever comes in, the outputs
// stay consistent with each other and with time.
void test_random_streams(void **) {
    uint64_t state = 0x9E3779B97F4A7C15u;
    auto next = [&state](uint64_t n) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state % n;
    };
    for (int round = 0; round < 100; ++round) {
        synthetic::VectorSource s(1 + next(7));
        for (uint32_t m = 0; m < 8; ++m) s.method(m, "f" + std::to_string(m));
        const uint64_t threads = 1 + next(3);
        for (uint64_t t = 0; t < threads; ++t) {
            synthetic::Thread &th = s.thread(t + 1, 100 + t, "t");
            uint64_t ts = next(1000), depth = 0;
            for (int i = 0; i < 400; ++i) {
                ts = next(10) == 0 ? ts - std::min<uint64_t>(ts, next(4)) : ts + next(20);
                const uint64_t r = next(100);
                const uint32_t m = next(30) == 0 ? 50 : static_cast<uint32_t>(next(depth > 6 ? 3 : 8));
                if (r < 45 || depth == 0) {
                    th.enter(ts, m);
                    ++depth;
                } else if (r < 95) {
                    th.leave(ts, m);
                    if (depth > 0) --depth;
                } else if (r < 98) {
                    th.mark(ts, "mark");
                } else {
                    th.end(ts);
                }
            }
        }
        Walker w(s);
        Profile p(w.functions(), true);
        std::ostringstream chrome_out, folded_out, csv_out;
        ChromeWriter chrome(w.functions(), chrome_out, 1, "v");
        FoldedWriter folded(w.functions(), folded_out);
        CsvWriter csv(w.functions(), csv_out);
        w.add(&p);
        w.add(&chrome);
        w.add(&folded);
        w.add(&csv);
        w.run();

        uint64_t calls = 0, self = 0;
        for (const ThreadProfile &t : p.threads()) {
            uint64_t thread_self = 0, outermost = 0;
            for (const FunctionStats &f : t.functions) {
                thread_self += f.self_ns;
                calls += f.calls;
                assert_true(f.total_ns <= t.summary.end - t.summary.begin);
                assert_true(f.self_ns <= f.total_ns);  // its self slices lie inside its outermost calls
            }
            for (uint32_t c : t.tree.children(CallTree::root)) outermost += t.tree.node(c).total_ns;
            assert_int_equal(thread_self, outermost);  // self times tile the time under calls
            for (size_t n = 1; n < t.tree.nodes().size(); ++n) {
                uint64_t children = 0;
                for (uint32_t c : t.tree.children(static_cast<uint32_t>(n)))
                    children += t.tree.node(c).total_ns;
                assert_int_equal(t.tree.node(static_cast<uint32_t>(n)).self_ns,
                                 t.tree.node(static_cast<uint32_t>(n)).total_ns - children);
            }
            self += thread_self;
        }
        uint64_t folded_sum = 0, csv_rows = 0, x_events = 0;
        std::istringstream fin(folded_out.str());
        std::string line;
        while (std::getline(fin, line)) folded_sum += std::stoull(line.substr(line.rfind(' ') + 1));
        assert_int_equal(folded_sum, self);
        std::istringstream cin(csv_out.str());
        while (std::getline(cin, line)) ++csv_rows;
        assert_int_equal(csv_rows, calls + 1);
        const json trace = json::parse(chrome_out.str());
        for (const json &e : trace["traceEvents"]) x_events += e["ph"] == "X";
        assert_int_equal(x_events, calls);
    }
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_numbers),
        cmocka_unit_test(test_sort_keys),
        cmocka_unit_test(test_text_report_and_tree),
        cmocka_unit_test(test_json_report),
        cmocka_unit_test(test_chrome_export),
        cmocka_unit_test(test_folded_export),
        cmocka_unit_test(test_csv_export),
        cmocka_unit_test(test_html),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_text_source),
        cmocka_unit_test(test_random_streams),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
