// The text of `sonde annotate` (annotate.h): the summary (accesses, each level's accesses and
// misses, what was not attributed), the table of functions in the --sort order, and the source
// lines of the first --limit functions with their counts beside them. Columns follow
// cg_annotate: Ir and each level's instruction-fetch misses (XXmi), Dr and its read misses
// (XXmr), Dw and its write misses (XXmw); a column is shown when its kind reaches that level.
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <memory>

#include "cli/annotate.h"

namespace sonde::cli::annotate {

namespace {

std::string grouped(uint64_t v) {
    std::string s = std::to_string(v);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
    return s;
}

std::string percent(uint64_t part, uint64_t whole) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f%%", whole != 0 ? 100.0 * double(part) / double(whole) : 0.0);
    return text;
}

// A column of the tables: its title and its value in a row's counts.
struct Column {
    std::string title;
    std::function<uint64_t(const Counts &)> value;
};

// The columns cg_annotate would show for these levels and totals.
std::vector<Column> columns_of(const Annotation &a) {
    static const char *const kAccess[kKinds] = {"Ir", "Dr", "Dw"};
    static const char *const kMiss[kKinds] = {"mi", "mr", "mw"};
    const bool fetches = a.total.accesses[kIfetch] != 0;
    const bool data = a.total.accesses[kRead] + a.total.accesses[kWrite] != 0 || !fetches;
    std::vector<Column> cols;
    for (unsigned k = 0; k < kKinds; ++k) {
        if (k == kIfetch ? !fetches : !data) continue;
        cols.push_back(Column{kAccess[k], [k](const Counts &c) { return c.accesses[k]; }});
        for (size_t l = 0; l < a.levels.size(); ++l)
            if (a.levels[l].accesses[k] != 0)
                cols.push_back(Column{a.levels[l].name + kMiss[k], [k, l](const Counts &c) {
                                          return l < c.misses[k].size() ? c.misses[k][l] : 0;
                                      }});
    }
    return cols;
}

// The cells of one row (blank ones for a null `c`), each right-aligned to its width.
std::string cells(const std::vector<Column> &cols, const Counts *c, std::vector<size_t> &widths) {
    std::string out;
    for (size_t i = 0; i < cols.size(); ++i) {
        const std::string v = c != nullptr ? grouped(cols[i].value(*c)) : std::string();
        out += std::string(widths[i] > v.size() ? widths[i] - v.size() : 0, ' ') + v + "  ";
    }
    return out;
}

std::vector<size_t> widths_of(const std::vector<Column> &cols, const std::vector<const Counts *> &rows) {
    std::vector<size_t> w(cols.size());
    for (size_t i = 0; i < cols.size(); ++i) {
        w[i] = cols[i].title.size();
        for (const Counts *c : rows) w[i] = std::max(w[i], grouped(cols[i].value(*c)).size());
    }
    return w;
}

std::string titles(const std::vector<Column> &cols, const std::vector<size_t> &widths) {
    std::string out;
    for (size_t i = 0; i < cols.size(); ++i)
        out += std::string(widths[i] - cols[i].title.size(), ' ') + cols[i].title + "  ";
    return out;
}

std::string base_name(const std::string &path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool readable_file(const std::string &path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Where the source file recorded as `path` is now: below --source-dir by the whole recorded
// path, then by fewer and fewer of its leading components, then at the recorded path.
std::string find_source(const std::string &path, const std::string &source_dir) {
    if (!source_dir.empty()) {
        std::string rest = path;
        while (!rest.empty()) {
            while (!rest.empty() && rest[0] == '/') rest.erase(0, 1);
            if (rest.empty()) break;
            const std::string candidate = source_dir + "/" + rest;
            if (readable_file(candidate)) return candidate;
            const size_t slash = rest.find('/');
            if (slash == std::string::npos) break;
            rest.erase(0, slash);
        }
    }
    return readable_file(path) ? path : std::string();
}

// The source of the function `f`, each of its lines that has counts shown with them, and the
// lines around them.
void print_source(const FunctionRow &f, const Annotation &a, const std::vector<Column> &cols,
                  const std::string &source_dir, FILE *out) {
    constexpr uint32_t kContext = 2;
    std::map<std::string, std::vector<uint32_t>> by_file;
    for (const LineKey &k : f.lines)
        if (k.second != 0) by_file[k.first].push_back(k.second);
    for (const auto &file : by_file) {
        std::fprintf(out, "\n-- %s: %s\n", f.name.c_str(), file.first.c_str());
        const std::string found = find_source(file.first, source_dir);
        std::vector<std::string> text;
        if (!found.empty()) {
            std::ifstream in(found);
            for (std::string line; std::getline(in, line);) text.push_back(line);
        }
        if (found.empty() || text.empty()) {
            std::fprintf(
                out, "   (source not found%s)\n",
                source_dir.empty() ? "; --source-dir DIR says where to look" : " below --source-dir");
        }
        std::vector<const Counts *> rows;
        std::map<uint32_t, const Counts *> counted;
        for (uint32_t n : file.second) {
            auto it = std::lower_bound(a.lines.begin(), a.lines.end(), LineKey{file.first, n},
                                       [](const LineRow &r, const LineKey &k) { return r.key < k; });
            if (it != a.lines.end() && it->key == LineKey{file.first, n}) {
                counted[n] = &it->counts;
                rows.push_back(&it->counts);
            }
        }
        std::vector<size_t> widths = widths_of(cols, rows);
        std::fprintf(out, "%s line\n", titles(cols, widths).c_str());
        const uint32_t nlines = static_cast<uint32_t>(text.size());
        uint32_t shown = 0;  // the last line printed
        for (const auto &c : counted) {
            const uint32_t from = c.first > kContext ? c.first - kContext : 1;
            const uint32_t to = c.first + kContext;
            if (shown != 0 && from > shown + 1)
                std::fprintf(out, "%s  ...\n", cells(cols, nullptr, widths).c_str());
            for (uint32_t n = std::max(from, shown + 1); n <= to; ++n) {
                auto it = counted.find(n);
                const bool has_text = n <= nlines;
                if (!has_text && it == counted.end()) continue;
                char number[16];
                std::snprintf(number, sizeof number, "%5u", n);
                std::string row = cells(cols, it != counted.end() ? it->second : nullptr, widths) + number;
                if (has_text && !text[n - 1].empty()) row += "  " + text[n - 1];
                std::fprintf(out, "%s\n", row.c_str());
                shown = n;
            }
        }
        if (!text.empty() && !counted.empty() && counted.rbegin()->first > nlines)
            std::fprintf(out, "   (%s has %u lines: it changed since the recording)\n", found.c_str(),
                         nlines);
    }
}

// Misses at level l over every kind.
uint64_t misses_at(const FunctionRow &f, size_t l) { return f.counts.level_misses(l); }

}  // namespace

bool valid_sort_key(const std::string &key, const std::vector<std::string> &level_names) {
    for (const char *k : {"misses", "accesses", "reads", "writes", "ifetches", "name"})
        if (key == k) return true;
    return std::find(level_names.begin(), level_names.end(), key) != level_names.end();
}

void sort_functions(std::vector<FunctionRow> *functions, const std::string &key,
                    const std::vector<Level> &levels) {
    // The key's value for a row: larger first, then the name.
    std::function<std::vector<uint64_t>(const FunctionRow &)> value;
    if (key == "accesses") {
        value = [](const FunctionRow &f) { return std::vector<uint64_t>{f.counts.total()}; };
    } else if (key == "reads" || key == "writes" || key == "ifetches") {
        const unsigned k = key == "reads" ? kRead : key == "writes" ? kWrite : kIfetch;
        value = [k](const FunctionRow &f) {
            return std::vector<uint64_t>{f.counts.accesses[k], f.counts.total()};
        };
    } else if (key == "misses") {
        const size_t last = levels.empty() ? 0 : levels.size() - 1;
        value = [last](const FunctionRow &f) {
            return std::vector<uint64_t>{misses_at(f, last), misses_at(f, 0), f.counts.total()};
        };
    } else if (key != "name") {
        size_t l = 0;
        while (l < levels.size() && levels[l].name != key) ++l;
        value = [l](const FunctionRow &f) {
            return std::vector<uint64_t>{misses_at(f, l), f.counts.total()};
        };
    }
    std::stable_sort(functions->begin(), functions->end(), [&](const FunctionRow &a, const FunctionRow &b) {
        if (value) {
            const std::vector<uint64_t> va = value(a), vb = value(b);
            if (va != vb) return va > vb;
        }
        return a.name != b.name ? a.name < b.name : a.address < b.address;
    });
}

void print_text(const Annotation &a, const TextOptions &options, FILE *out) {
    const Counts &t = a.total;
    std::fprintf(out, "sonde annotate: %s: %s accesses (%s reads, %s writes, %s instruction fetches)\n",
                 a.input.c_str(), grouped(t.total()).c_str(), grouped(t.accesses[kRead]).c_str(),
                 grouped(t.accesses[kWrite]).c_str(), grouped(t.accesses[kIfetch]).c_str());
    for (const Level &l : a.levels) {
        const uint64_t acc = l.accesses[kIfetch] + l.accesses[kRead] + l.accesses[kWrite];
        const uint64_t mis = l.misses[kIfetch] + l.misses[kRead] + l.misses[kWrite];
        std::fprintf(out, "  %-4s accesses %s, misses %s (%s; reads %s, writes %s, fetches %s)\n",
                     l.name.c_str(), grouped(acc).c_str(), grouped(mis).c_str(), percent(mis, acc).c_str(),
                     grouped(l.misses[kRead]).c_str(), grouped(l.misses[kWrite]).c_str(),
                     grouped(l.misses[kIfetch]).c_str());
    }
    if (a.naming != Naming::kRawPc)
        std::fprintf(
            out,
            "  unattributed: %s accesses (%s) in no known function (\"???\"), %s without a source line\n",
            grouped(a.unattributed).c_str(), percent(a.unattributed, t.total()).c_str(),
            grouped(a.unlined).c_str());
    for (const std::string &n : a.notes) std::fprintf(out, "  note: %s\n", n.c_str());

    const std::vector<Column> cols = columns_of(a);
    const size_t shown = std::min(options.limit, a.functions.size());
    std::vector<const Counts *> rows{&a.total};
    for (size_t i = 0; i < shown; ++i) rows.push_back(&a.functions[i].counts);
    std::vector<size_t> widths = widths_of(cols, rows);
    std::fprintf(out, "\nFunctions by %s (%zu of %zu):\n", options.sort.c_str(), shown, a.functions.size());
    std::fprintf(out, "%s reuse(median)  function\n", titles(cols, widths).c_str());
    std::fprintf(out, "%s %13s  (total)\n", cells(cols, &a.total, widths).c_str(), "");
    for (size_t i = 0; i < shown; ++i) {
        const FunctionRow &f = a.functions[i];
        const std::string reuse = f.reuse.finite() != 0   ? grouped(f.reuse.quantile(0.5))
                                  : f.reuse.accesses != 0 ? "cold"
                                                          : "-";
        std::string where;
        if (!f.file.empty())
            where = "  " + base_name(f.file) + (f.line != 0 ? ":" + std::to_string(f.line) : "");
        std::fprintf(out, "%s %13s  %s%s\n", cells(cols, &f.counts, widths).c_str(), reuse.c_str(),
                     f.name.c_str(), where.c_str());
    }
    if (a.naming == Naming::kRawPc) return;
    for (size_t i = 0; i < shown; ++i)
        if (a.functions[i].known) print_source(a.functions[i], a, cols, options.source_dir, out);
}

}  // namespace sonde::cli::annotate
