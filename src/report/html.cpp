// The HTML report (see html.h): the page's structure, its tables and the analysis section are
// written here; the flame graph and the table's thread selector and sorting are drawn by the
// page's script (html_assets.cpp) from a JSON object embedded in the page.
#include "report/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/format.h"

namespace sonde::report {

extern const char *const kHtmlStyle;
extern const char *const kHtmlScript;

namespace {

using nlohmann::json;

// JSON that is safe inside <script>: `<`, `>` and `&` only occur inside strings, where their
// \u escapes mean the same characters.
std::string script_json(const json &j) {
    const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
    std::string out;
    out.reserve(text.size() + 64);
    for (char c : text) {
        if (c == '<')
            out.append("\\u003c");
        else if (c == '>')
            out.append("\\u003e");
        else if (c == '&')
            out.append("\\u0026");
        else
            out.push_back(c);
    }
    return out;
}

std::string grouped(uint64_t v) {
    std::string digits = std::to_string(v), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

std::string percent(double part, double whole) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
    return buf;
}

std::string human_bytes(double bytes) {
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (bytes >= 1024 && u < 5) {
        bytes /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, bytes == std::floor(bytes) ? "%.0f %s" : "%.1f %s", bytes, units[u]);
    return buf;
}

std::string thread_title(const ThreadInfo &t) {
    return t.name.empty() ? "thread " + std::to_string(t.id)
                          : t.name + " (thread " + std::to_string(t.id) + ")";
}

// "file:line", the module, or "".
std::string source_location(const MethodInfo &m) {
    if (m.file.empty()) return m.module;
    return m.line != 0 ? m.file + ":" + std::to_string(m.line) : m.file;
}

// The embedded data: names, threads, per-function lists and the flame graph's nodes.
json page_data(const Profile &p, const HtmlOptions &o) {
    const FunctionTable &f = p.functions();
    json names = json::array(), where = json::array();
    for (size_t i = 0; i < f.size(); ++i) {
        names.push_back(f.name(static_cast<uint32_t>(i)));
        where.push_back(source_location(f.info(static_cast<uint32_t>(i))));
    }
    auto rows = [&](std::vector<FunctionStats> list) {
        p.sort(list, o.sort);
        json a = json::array();
        for (const FunctionStats &s : list) a.push_back({s.function, s.calls, s.total_ns, s.self_ns});
        return a;
    };
    json threads = json::array(), per_thread = json::array();
    for (const ThreadProfile &t : p.threads()) {
        const ThreadSummary &s = t.summary;
        threads.push_back({{"id", s.info.id},
                           {"tid", s.info.tid},
                           {"name", s.info.name},
                           {"begin_ns", s.begin},
                           {"end_ns", s.end},
                           {"calls", s.calls},
                           {"marks", s.marks}});
        per_thread.push_back(rows(t.functions));
    }
    // Flame graph nodes [parent, function, calls, total_ns, self_ns] in depth-first order:
    // node 0 is all threads (function -1), then each thread (function -2 - thread index) and
    // its call tree. A thread's total is the time of its outermost calls.
    json nodes = json::array();
    nodes.push_back({-1, -1, 0, 0, 0});
    uint64_t all_total = 0, all_calls = 0;
    for (size_t ti = 0; ti < p.threads().size(); ++ti) {
        const CallTree &tree = p.threads()[ti].tree;
        const size_t thread_node = nodes.size();
        uint64_t total = 0;
        for (uint32_t c : tree.children(CallTree::root)) total += tree.node(c).total_ns;
        nodes.push_back({0, -2 - static_cast<int64_t>(ti), p.threads()[ti].summary.calls, total, 0});
        all_total += total;
        all_calls += p.threads()[ti].summary.calls;
        struct Item {
            uint32_t node;
            size_t parent;
        };
        std::vector<Item> todo;
        std::vector<uint32_t> kids = tree.children(CallTree::root);
        for (auto it = kids.rbegin(); it != kids.rend(); ++it) todo.push_back(Item{*it, thread_node});
        while (!todo.empty()) {
            const Item item = todo.back();
            todo.pop_back();
            const CallTree::Node &n = tree.node(item.node);
            const size_t index = nodes.size();
            nodes.push_back({item.parent, n.function, n.calls, n.total_ns, n.self_ns});
            kids = tree.children(item.node);
            for (auto it = kids.rbegin(); it != kids.rend(); ++it) todo.push_back(Item{*it, index});
        }
    }
    nodes[0][2] = all_calls;
    nodes[0][3] = all_total;
    static const char *const sort_names[] = {"self", "total", "calls", "name"};
    return json{{"version", o.version},
                {"title", o.title},
                {"sort", sort_names[static_cast<int>(o.sort)]},
                {"names", names},
                {"where", where},
                {"threads", threads},
                {"functions", rows(p.totals())},
                {"thread_functions", per_thread},
                {"nodes", nodes}};
}

// Rows of the functions table; the script writes the same ones when the thread changes.
void function_rows(const Profile &p, std::vector<FunctionStats> list, SortKey key, std::string &out) {
    p.sort(list, key);
    double self_sum = 0;
    for (const FunctionStats &s : list) self_sum += static_cast<double>(s.self_ns);
    for (const FunctionStats &s : list) {
        const MethodInfo &m = p.functions().info(s.function);
        const std::string where = source_location(m);
        out += "<tr><td class=\"name\"";
        if (!where.empty()) out += " title=\"" + html_escape(where) + "\"";
        out += ">" + html_escape(m.name) + "</td>";
        out +=
            "<td class=\"num\" data-value=\"" + std::to_string(s.calls) + "\">" + grouped(s.calls) + "</td>";
        out += "<td class=\"num\" data-value=\"" + std::to_string(s.total_ns) + "\">" +
               html_escape(format_ns(s.total_ns)) + "</td>";
        out += "<td class=\"num\" data-value=\"" + std::to_string(s.self_ns) + "\">" +
               html_escape(format_ns(s.self_ns)) + "</td>";
        out += "<td class=\"num\">" + percent(static_cast<double>(s.self_ns), self_sum) + "</td></tr>\n";
    }
}

void threads_table(const Profile &p, std::string &out) {
    uint64_t first = UINT64_MAX, last = 0;
    for (const ThreadProfile &t : p.threads()) {
        if (!t.summary.has_events) continue;
        first = std::min(first, t.summary.begin);
        last = std::max(last, t.summary.end);
    }
    const double span = last > first ? static_cast<double>(last - first) : 1.0;
    out +=
        "<table id=\"threads\"><thead><tr><th>Thread</th><th>TID</th><th>Name</th><th>Calls</th>"
        "<th>Marks</th><th>Duration</th><th class=\"span\">Span</th></tr></thead><tbody>\n";
    for (const ThreadProfile &t : p.threads()) {
        const ThreadSummary &s = t.summary;
        char bar[160] = "";
        if (s.has_events && last >= first) {
            std::snprintf(bar, sizeof bar,
                          "<div class=\"bar\" style=\"margin-left:%.2f%%;width:%.2f%%\"></div>",
                          100.0 * static_cast<double>(s.begin - first) / span,
                          std::max(0.2, 100.0 * static_cast<double>(s.end - s.begin) / span));
        }
        out += "<tr><td class=\"num\">" + std::to_string(s.info.id) + "</td><td class=\"num\">" +
               std::to_string(s.info.tid) + "</td><td class=\"name\">" + html_escape(s.info.name) +
               "</td><td class=\"num\" data-value=\"" + std::to_string(s.calls) + "\">" + grouped(s.calls) +
               "</td><td class=\"num\">" + grouped(s.marks) + "</td><td class=\"num\" data-value=\"" +
               std::to_string(s.end - s.begin) + "\">" + html_escape(format_ns(s.end - s.begin)) +
               "</td><td class=\"span\">" + bar + "</td></tr>\n";
    }
    out += "</tbody></table>\n";
}

uint64_t u64(const json &j, const char *key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

void cache_sim_section(const json &cs, std::string &out) {
    out +=
        "<h3>cache_sim</h3>\n<table id=\"cache-sim\"><thead><tr><th>Level</th><th>Accesses</th><th>Hits</th>"
        "<th>Misses</th><th>Miss ratio</th><th>Compulsory</th><th>Instruction misses</th>"
        "<th>Data misses</th></tr></thead><tbody>\n";
    const auto levels = cs.find("levels");
    if (levels != cs.end() && levels->is_array()) {
        for (const json &l : *levels) {
            if (!l.is_object()) continue;
            const std::string name =
                l.contains("name") && l["name"].is_string() ? l["name"].get<std::string>() : "";
            const double ratio =
                l.contains("miss_ratio") && l["miss_ratio"].is_number() ? l["miss_ratio"].get<double>() : 0.0;
            char r[32];
            std::snprintf(r, sizeof r, "%.4f%%", 100.0 * ratio);
            out += "<tr><td class=\"name\">" + html_escape(name) + "</td>";
            for (const char *k : {"accesses", "hits", "misses"})
                out += "<td class=\"num\" data-value=\"" + std::to_string(u64(l, k)) + "\">" +
                       grouped(u64(l, k)) + "</td>";
            out += std::string("<td class=\"num\">") + r + "</td>";
            for (const char *k : {"compulsory_misses", "ifetch_misses", "data_misses"})
                out += "<td class=\"num\" data-value=\"" + std::to_string(u64(l, k)) + "\">" +
                       grouped(u64(l, k)) + "</td>";
            out += "</tr>\n";
        }
    }
    out += "</tbody></table>\n";
}

// The miss-ratio curve as an SVG step plot: x is the cache size (log2 scale, in bytes of
// line_size lines), y the miss ratio. A point [lines, ratio] holds from `lines` to the next.
void mrc_plot(const json &rd, std::string &out) {
    const auto mrc = rd.find("mrc");
    if (mrc == rd.end() || !mrc->is_array() || mrc->empty()) return;
    std::vector<std::pair<double, double>> pts;
    for (const json &p : *mrc) {
        if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) continue;
        pts.emplace_back(std::max(1.0, p[0].get<double>()), std::min(1.0, std::max(0.0, p[1].get<double>())));
    }
    if (pts.empty()) return;
    const double line_size = static_cast<double>(u64(rd, "line_size") ? u64(rd, "line_size") : 64);
    const double W = 640, H = 300, L = 56, R = 16, T = 12, B = 40;
    const double xmax = std::max(1.0, std::ceil(std::log2(pts.back().first)) + 1);
    auto X = [&](double lines) { return L + (W - L - R) * std::log2(lines) / xmax; };
    auto Y = [&](double ratio) { return T + (H - T - B) * (1.0 - ratio); };
    char buf[128];
    out +=
        "<svg id=\"mrc-plot\" class=\"plot\" viewBox=\"0 0 640 300\" width=\"640\" height=\"300\" "
        "role=\"img\" "
        "aria-label=\"miss ratio curve\">\n";
    // Axes, grid and labels.
    for (int i = 0; i <= 4; ++i) {
        const double y = Y(i / 4.0);
        std::snprintf(buf, sizeof buf,
                      "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", L, y, W - R,
                      y);
        out += buf;
        std::snprintf(buf, sizeof buf,
                      "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n", L - 6,
                      y + 4, i / 4.0);
        out += buf;
    }
    const int step = std::max(1, static_cast<int>(std::ceil(xmax / 8)));
    for (int e = 0; e <= static_cast<int>(xmax); e += step) {
        const double x = X(std::ldexp(1.0, e));
        std::snprintf(buf, sizeof buf,
                      "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x, T, x,
                      H - B);
        out += buf;
        out += "<text class=\"tick\" x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(H - B + 16) +
               "\" text-anchor=\"middle\">" + human_bytes(std::ldexp(line_size, e)) + "</text>\n";
    }
    std::snprintf(buf, sizeof buf, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                  (L + W - R) / 2, H - 6);
    out += std::string(buf) + "cache size (fully associative LRU, " + human_bytes(line_size) +
           " lines)</text>\n";
    std::snprintf(
        buf, sizeof buf,
        "<text class=\"label\" transform=\"rotate(-90)\" x=\"%.1f\" y=\"14\" text-anchor=\"middle\">"
        "miss ratio</text>\n",
        -(T + H - B) / 2);
    out += buf;
    // The curve.
    std::string d;
    for (size_t i = 0; i < pts.size(); ++i) {
        std::snprintf(buf, sizeof buf, i == 0 ? "M%.2f %.2f" : " V%.2f", X(pts[i].first), Y(pts[i].second));
        if (i != 0) std::snprintf(buf, sizeof buf, " H%.2f V%.2f", X(pts[i].first), Y(pts[i].second));
        d += buf;
    }
    std::snprintf(buf, sizeof buf, " H%.2f", X(std::ldexp(1.0, static_cast<int>(xmax))));
    d += buf;
    out += "<path class=\"mrc-line\" data-points=\"" + std::to_string(pts.size()) + "\" d=\"" + d +
           "\"/>\n</svg>\n";
}

void reuse_section(const json &rd, std::string &out) {
    out += "<h3>reuse_distance</h3>\n<p>" + grouped(u64(rd, "accesses")) + " accesses, " +
           grouped(u64(rd, "infinite")) + " cold (infinite distance), line size " +
           std::to_string(u64(rd, "line_size")) + " bytes";
    if (rd.contains("sample_rate") && rd["sample_rate"].is_number()) {
        char r[64];
        std::snprintf(r, sizeof r, ", SHARDS sampling at rate %g", rd["sample_rate"].get<double>());
        out += r;
    }
    out += ".</p>\n";
    mrc_plot(rd, out);
}

void counts_section(const std::string &name, const json &j, std::string &out) {
    out += "<h3>" + html_escape(name) + "</h3>\n<table class=\"counts\"><tbody>\n";
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (!it.value().is_number()) continue;
        out += "<tr><td class=\"name\">" + html_escape(it.key()) + "</td><td class=\"num\">" +
               html_escape(it.value().is_number_unsigned() ? grouped(it.value().get<uint64_t>())
                                                           : it.value().dump()) +
               "</td></tr>\n";
    }
    out += "</tbody></table>\n";
}

void analysis_section(const json &a, std::string &out) {
    out += "<section id=\"analysis-section\"><h2>Analysis</h2>\n";
    for (auto it = a.begin(); it != a.end(); ++it) {
        const json &v = it.value();
        if (it.key() == "cache_sim" && v.is_object())
            cache_sim_section(v, out);
        else if (it.key() == "reuse_distance" && v.is_object())
            reuse_section(v, out);
        else if (it.key() == "basic_counts" && v.is_object())
            counts_section(it.key(), v, out);
        else
            out += "<h3>" + html_escape(it.key()) + "</h3>\n<pre>" +
                   html_escape(v.dump(2, ' ', false, json::error_handler_t::replace)) + "</pre>\n";
    }
    out += "</section>\n";
}

json parse_analysis(const std::string &text) {
    json a = json::parse(text, nullptr, false);
    if (a.is_discarded() || !a.is_object())
        throw Error("analysis results: not a JSON object (expected the output of sonde analyze --json)");
    return a;
}

}  // namespace

void check_analysis_json(const std::string &text) { parse_analysis(text); }

void write_html(const Profile &p, const HtmlOptions &o, std::ostream &os) {
    const json analysis = o.analysis.empty() ? json() : parse_analysis(o.analysis);
    const std::vector<FunctionStats> totals = p.totals();
    uint64_t calls = 0, first = UINT64_MAX, last = 0;
    for (const ThreadProfile &t : p.threads()) {
        calls += t.summary.calls;
        if (!t.summary.has_events) continue;
        first = std::min(first, t.summary.begin);
        last = std::max(last, t.summary.end);
    }
    std::string out;
    out +=
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<title>Sonde report: " +
        html_escape(o.title) + "</title>\n<style>\n" + kHtmlStyle + "</style>\n</head>\n<body>\n";
    out += "<header><h1>Sonde report <span class=\"title\">" + html_escape(o.title) +
           "</span></h1>\n<p class=\"summary\">" + std::to_string(p.threads().size()) + " thread(s), " +
           std::to_string(totals.size()) + " function(s), " + grouped(calls) + " call(s)";
    if (last >= first && first != UINT64_MAX)
        out += ", " + html_escape(format_ns(last - first)) + " from first to last event";
    out += "</p></header>\n";
    if (!p.warnings().empty()) {
        out += "<section id=\"warnings-section\"><h2>Warnings</h2><ul id=\"warnings\">\n";
        for (const std::string &w : p.warnings()) out += "<li>" + html_escape(w) + "</li>\n";
        out += "</ul></section>\n";
    }
    out +=
        "<section id=\"flame-section\"><h2>Flame graph</h2>\n"
        "<div class=\"controls\"><button id=\"flame-reset\" type=\"button\">Reset zoom</button>"
        "<span id=\"flame-details\">Hover over a frame for its time; click to zoom into it.</span></div>\n"
        "<div id=\"flame\"><svg id=\"flame-svg\" xmlns=\"http://www.w3.org/2000/svg\"></svg></div>\n"
        "<div id=\"flame-tooltip\" hidden></div>\n"
        "<noscript><p>The flame graph is drawn by the page's script.</p></noscript>\n</section>\n";
    out +=
        "<section id=\"functions-section\"><h2>Top functions</h2>\n"
        "<p><label>Threads <select id=\"thread-select\"><option value=\"all\">All threads</option>";
    for (size_t i = 0; i < p.threads().size(); ++i)
        out += "<option value=\"" + std::to_string(i) + "\">" +
               html_escape(thread_title(p.threads()[i].summary.info)) + "</option>";
    out +=
        "</select></label> <span class=\"hint\">Click a column heading to sort.</span></p>\n"
        "<table id=\"functions\"><thead><tr><th data-key=\"name\">Function</th><th "
        "data-key=\"calls\">Calls</th>"
        "<th data-key=\"total\">Total time</th><th data-key=\"self\">Self time</th><th>Self "
        "%</th></tr></thead>"
        "<tbody>\n";
    function_rows(p, totals, o.sort, out);
    out += "</tbody></table>\n</section>\n<section id=\"threads-section\"><h2>Threads</h2>\n";
    threads_table(p, out);
    out += "</section>\n";
    if (!analysis.is_null()) analysis_section(analysis, out);
    out += "<footer>Written by Sonde " + html_escape(o.version) +
           ". Times are inclusive (total) and exclusive (self); a recursive function's total counts "
           "its outermost calls only.</footer>\n";
    out +=
        "<script type=\"application/json\" id=\"sonde-data\">" + script_json(page_data(p, o)) + "</script>\n";
    out += std::string("<script>\n") + kHtmlScript + "</script>\n</body>\n</html>\n";
    os.write(out.data(), static_cast<std::streamsize>(out.size()));
    os.flush();
    if (!os) throw Error("write error");
}

}  // namespace sonde::report
