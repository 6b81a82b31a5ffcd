// `sonde annotate FILE`: the accesses and cache misses of a memory trace per function and per
// source line, as cachegrind's cg_annotate shows them (docs/memory-traces.md, "Annotating").
//
// One serial run of the analyzer (the interleaved view `sonde analyze --serial` reads) with two
// tools: cache_sim with per_pc=1, the same simulator and the same --cache levels as `sonde
// analyze --tool cache_sim`, which counts each pc's reads, writes and instruction fetches and
// their misses at each level; and this command's own tool, which gives each data access its
// gem5-model reuse distance through the stack-distance calculator of sonde/stackdist.h and
// keeps a histogram per pc. Then the pcs are named: by the trace's method and line tables
// (`sonde record --memory` stores them), else from the files of its module table (a trace
// recorded by setting SONDE_MEMTRACE by hand), else not at all (a lackey trace, an older
// trace): each pc is then its own row. Per-pc counts are summed per function and per line; the
// totals are cache_sim's. Text on stdout (annotate_text.cpp), JSON with --json.
//
// Threads: the progress line reads the tool's record counter from its own thread; everything
// else runs on the main thread.
#include "cli/annotate.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <sonde/analysis.h>
#include <sonde/stackdist.h>
#include <sonde/trace.h>
#include <sonde/trace_events.h>

#include "cli/instrumented.h"
#include "cli/launch.h"
#include "cli/metadata.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/symbolize.h"

namespace {

namespace cli = sonde::cli;
using namespace sonde::cli::annotate;

constexpr const char *kCommand = "sonde annotate";

// ---- the reuse-distance tool: a histogram of distances per pc ----

struct PcReuse {
    uint64_t accesses = 0, cold = 0;
    std::unordered_map<uint64_t, uint64_t> distances;
};

struct ReuseTool {
    sonde_stackdist_t *sd = nullptr;
    unsigned line_bits = 6;
    std::unordered_map<uint64_t, PcReuse> by_pc;
    std::atomic<uint64_t> records{0};
    bool sampled = false;  // the trace was sampled at the source
    std::string error;
};

// Hot path: one stack-distance update and one hash lookup per data access.
bool reuse_batch(void *tool, const sonde_memref_t *m, size_t n) {
    auto *t = static_cast<ReuseTool *>(tool);
    t->records.fetch_add(n, std::memory_order_relaxed);
    PcReuse *last = nullptr;
    uint64_t last_pc = 0;
    for (size_t i = 0; i < n; ++i) {
        const uint16_t type = m[i].type;
        if (type == SONDE_MEMREF_MARKER && m[i].size == SONDE_MARKER_SAMPLE_THRESHOLD) t->sampled = true;
        if (type != SONDE_MEMREF_READ && type != SONDE_MEMREF_WRITE && type != SONDE_MEMREF_MODIFY) continue;
        uint64_t distance = 0;
        const sonde_status_t st =
            sonde_stackdist_calc_and_update(t->sd, m[i].address >> t->line_bits, true, &distance, nullptr);
        if (st != SONDE_STATUS_SUCCESS) {
            t->error = std::string("stack distance: ") + sonde_status_string(st);
            return false;
        }
        if (last == nullptr || last_pc != m[i].pc) {
            last = &t->by_pc[m[i].pc];
            last_pc = m[i].pc;
        }
        ++last->accesses;
        if (distance == SONDE_STACKDIST_INFINITY)
            ++last->cold;
        else
            ++last->distances[distance];
    }
    return true;
}
bool reuse_one(void *tool, const sonde_memref_t *m) { return reuse_batch(tool, m, 1); }
uint32_t reuse_model(void *) { return SONDE_MEMREF_MODEL_1_2; }  // sees the sampling markers
const char *reuse_error(void *tool) { return static_cast<ReuseTool *>(tool)->error.c_str(); }

sonde_tool_ops_t reuse_ops() {
    sonde_tool_ops_t o = {};
    o.struct_size = sizeof(o);
    o.name = "sonde-annotate-reuse";
    o.process_memref = reuse_one;
    o.process_memrefs = reuse_batch;
    o.get_error_string = reuse_error;
    o.memref_model = reuse_model;
    return o;
}

// ---- naming pcs ----

// The function and line of pcs, from whichever source the trace allows.
class Names {
public:
    // Functions and lines from the trace's tables, else from the files of its modules (pcs
    // needed then), else none (by raw pc).
    void load(const sonde_trace_reader_t *reader, const std::vector<uint64_t> &pcs,
              std::vector<std::string> *notes) {
        read_tables(reader);
        if (!functions_.empty() || !lines_.empty()) {
            naming_ = Naming::kTables;
            return;
        }
        if (load_modules(
                cli::trace_modules(reader), pcs, notes,
                "the trace holds no function or line table: its pcs were named from the files of its "
                "modules as they are now"))
            return;
        naming_ = Naming::kRawPc;
        notes->push_back(
            "the trace has no function or line table (not recorded by `sonde record --memory`, or "
            "recorded before they were stored): accesses are shown by raw pc");
    }
    // Functions and lines from the files of `modules` (a live run's, or a trace's module table);
    // false when none is named. `how` is the note that says so (nullptr: none).
    bool load_modules(const std::vector<cli::TraceModule> &modules, const std::vector<uint64_t> &pcs,
                      std::vector<std::string> *notes, const char *how) {
        if (!modules.empty()) {
            cli::Symbolized named = cli::symbolize(modules, pcs);
            for (const std::string &n : named.notes) notes->push_back(n);
            if (!named.functions.empty() || !named.lines.empty()) {
                if (how != nullptr) notes->push_back(how);
                for (cli::NamedFunction &f : named.functions)
                    functions_.push_back(
                        Function{f.address, f.size, std::move(f.full_name), std::move(f.file), f.line});
                for (cli::NamedLine &l : named.lines)
                    lines_.push_back(Line{l.address, l.size, std::move(l.file), l.line});
                naming_ = Naming::kModuleFiles;
                return true;
            }
        }
        return false;
    }
    Naming naming() const { return naming_; }

    struct Function {
        uint64_t address, size;
        std::string name, file;
        uint32_t line;
    };
    struct Line {
        uint64_t address, size;
        std::string file;
        uint32_t line;
    };
    // The function whose range holds pc, or nullptr.
    const Function *function_of(uint64_t pc) const { return find(functions_, pc); }
    const Line *line_of(uint64_t pc) const { return find(lines_, pc); }

private:
    template <typename T>
    static const T *find(const std::vector<T> &v, uint64_t pc) {
        auto it =
            std::upper_bound(v.begin(), v.end(), pc, [](uint64_t p, const T &e) { return p < e.address; });
        if (it == v.begin()) return nullptr;
        --it;
        return pc - it->address < std::max<uint64_t>(it->size, 1) ? &*it : nullptr;
    }
    void read_tables(const sonde_trace_reader_t *reader) {
        sonde_trace_event_info_t info{};
        info.struct_size = sizeof info;
        if (sonde_trace_reader_event_info(reader, &info) == SONDE_STATUS_SUCCESS)
            for (uint32_t i = 0; i < info.num_methods; ++i) {
                sonde_trace_method_t m{};
                m.struct_size = sizeof m;
                if (sonde_trace_reader_get_method(reader, i, &m) != SONDE_STATUS_SUCCESS) continue;
                const char *name = *m.full_name != '\0' ? m.full_name : m.mangled_name;
                functions_.push_back(Function{m.address, m.size, name, m.source_file, m.source_line});
            }
        std::sort(functions_.begin(), functions_.end(),
                  [](const Function &a, const Function &b) { return a.address < b.address; });
        uint32_t count = 0;
        sonde_trace_reader_num_lines(reader, &count);
        for (uint32_t i = 0; i < count; ++i) {
            sonde_trace_line_t l{};
            l.struct_size = sizeof l;
            if (sonde_trace_reader_get_line(reader, i, &l) == SONDE_STATUS_SUCCESS)
                lines_.push_back(Line{l.address, l.size, l.file, l.line});
        }
    }

    Naming naming_ = Naming::kRawPc;
    std::vector<Function> functions_;  // by address
    std::vector<Line> lines_;          // by address
};

// ---- the run ----

struct Options {
    std::string input, format = "auto", cache, json_path, source_dir, sort = "misses";
    size_t limit = 10;
    uint32_t line_size = 64;
    char **program = nullptr;  // --live: the program and its arguments (NULL-terminated)
};

int fail(const std::string &what) {
    std::fprintf(stderr, "%s: %s\n", kCommand, what.c_str());
    return cli::kExitFailure;
}

std::string hex(uint64_t v) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
    return text;
}

// The per-pc counts of cache_sim's JSON row.
Counts counts_of(const nlohmann::json &row, size_t nlevels) {
    Counts c(nlevels);
    c.accesses[kIfetch] = row.at("ifetches").get<uint64_t>();
    c.accesses[kRead] = row.at("reads").get<uint64_t>();
    c.accesses[kWrite] = row.at("writes").get<uint64_t>();
    const char *keys[kKinds] = {"ifetch_misses", "read_misses", "write_misses"};
    for (unsigned k = 0; k < kKinds; ++k) {
        const nlohmann::json &m = row.at(keys[k]);
        for (size_t l = 0; l < nlevels && l < m.size(); ++l) c.misses[k][l] = m[l].get<uint64_t>();
    }
    return c;
}

// Sums cache_sim's per-pc rows and the reuse tool's histograms per function and per line.
void aggregate(const nlohmann::json &cache, const ReuseTool &reuse, const Names &names, Annotation *a) {
    const size_t nl = a->levels.size();
    a->total = Counts(nl);
    std::vector<FunctionRow> functions;
    std::unordered_map<std::string, size_t> function_index;  // by name and address
    std::map<LineKey, LineRow> lines;
    for (const nlohmann::json &row : cache.at("per_pc")) {
        const uint64_t pc = row.at("pc").get<uint64_t>();
        const Counts c = counts_of(row, nl);
        a->total.add(c);
        FunctionRow proto;
        if (names.naming() == Naming::kRawPc) {
            proto.name = hex(pc);
            proto.address = pc;
        } else if (const Names::Function *f = names.function_of(pc)) {
            proto.name = f->name.empty() ? hex(f->address) : f->name;
            proto.file = f->file;
            proto.line = f->line;
            proto.address = f->address;
        } else {
            proto.name = "???";
            proto.known = false;
            a->unattributed += c.total();
        }
        const std::string key = proto.name + '\0' + std::to_string(proto.address);
        auto it = function_index.find(key);
        if (it == function_index.end()) {
            it = function_index.emplace(key, functions.size()).first;
            proto.counts = Counts(nl);
            functions.push_back(std::move(proto));
        }
        FunctionRow &fn = functions[it->second];
        fn.counts.add(c);
        auto r = reuse.by_pc.find(pc);
        if (r != reuse.by_pc.end()) {
            fn.reuse.accesses += r->second.accesses;
            fn.reuse.cold += r->second.cold;
            for (const auto &d : r->second.distances) fn.reuse.distances[d.first] += d.second;
        }
        if (names.naming() == Naming::kRawPc) continue;
        LineKey lk{"???", 0};
        if (const Names::Line *l = names.line_of(pc))
            lk = LineKey{l->file, l->line};
        else
            a->unlined += c.total();
        auto ins = lines.emplace(lk, LineRow{});
        LineRow &lr = ins.first->second;
        if (ins.second) {
            lr.key = lk;
            lr.function = fn.name;
            lr.counts = Counts(nl);
        }
        lr.counts.add(c);
        fn.lines.insert(lk);
    }
    a->functions = std::move(functions);
    for (auto &kv : lines) a->lines.push_back(std::move(kv.second));
}

nlohmann::ordered_json misses_json(const std::vector<uint64_t> &misses, const std::vector<Level> &levels) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (size_t l = 0; l < levels.size(); ++l) j[levels[l].name] = misses[l];
    return j;
}

// The counts of a function or a line, with their pinned keys first.
void put_counts(nlohmann::ordered_json &j, const Counts &c, const std::vector<Level> &levels) {
    j["accesses"] = c.total();
    j["reads"] = c.accesses[kRead];
    j["writes"] = c.accesses[kWrite];
    std::vector<uint64_t> all(levels.size());
    for (size_t l = 0; l < levels.size(); ++l) all[l] = c.level_misses(l);
    j["misses"] = misses_json(all, levels);
    j["ifetches"] = c.accesses[kIfetch];
    j["read_misses"] = misses_json(c.misses[kRead], levels);
    j["write_misses"] = misses_json(c.misses[kWrite], levels);
    j["ifetch_misses"] = misses_json(c.misses[kIfetch], levels);
}

nlohmann::ordered_json reuse_json(const Reuse &r) {
    nlohmann::ordered_json j;
    j["accesses"] = r.accesses;
    j["cold"] = r.cold;
    if (r.finite() == 0) {
        j["mean"] = nullptr;
        j["median"] = nullptr;
        j["p90"] = nullptr;
        j["max"] = nullptr;
    } else {
        j["mean"] = r.mean();
        j["median"] = r.quantile(0.5);
        j["p90"] = r.quantile(0.9);
        j["max"] = r.distances.rbegin()->first;
    }
    return j;
}

const char *naming_name(Naming n) {
    return n == Naming::kTables ? "trace" : n == Naming::kModuleFiles ? "module_files" : "raw_pc";
}

std::string json_text(const Annotation &a, const Options &o, const std::string &start_time) {
    nlohmann::ordered_json options;
    options["format"] = o.format;
    options["cache"] = o.cache;
    options["line_size"] = o.line_size;
    options["sort"] = o.sort;
    options["limit"] = o.limit;
    options["source_dir"] = o.source_dir;
    options["live"] = o.program != nullptr;
    nlohmann::ordered_json j;
    j["sonde_version"] = cli::version_number();
    j["metadata"] = cli::metadata("annotate", {a.input}, options, start_time);
    nlohmann::ordered_json functions = nlohmann::ordered_json::array();
    for (const FunctionRow &f : a.functions) {
        nlohmann::ordered_json fj;
        fj["name"] = f.name;
        put_counts(fj, f.counts, a.levels);
        fj["file"] = f.file;
        fj["line"] = f.line;
        fj["address"] = f.address;
        fj["reuse"] = reuse_json(f.reuse);
        functions.push_back(std::move(fj));
    }
    j["functions"] = std::move(functions);
    nlohmann::ordered_json lines = nlohmann::ordered_json::array();
    for (const LineRow &l : a.lines) {
        nlohmann::ordered_json lj;
        lj["file"] = l.key.first;
        lj["line"] = l.key.second;
        put_counts(lj, l.counts, a.levels);
        lj["function"] = l.function;
        lines.push_back(std::move(lj));
    }
    j["lines"] = std::move(lines);
    nlohmann::ordered_json totals;
    put_counts(totals, a.total, a.levels);
    j["totals"] = std::move(totals);
    nlohmann::ordered_json levels = nlohmann::ordered_json::array();
    for (const Level &l : a.levels) {
        uint64_t misses = 0, accesses = 0;
        for (unsigned k = 0; k < kKinds; ++k) {
            misses += l.misses[k];
            accesses += l.accesses[k];
        }
        levels.push_back({{"name", l.name}, {"accesses", accesses}, {"misses", misses}});
    }
    j["levels"] = std::move(levels);
    j["unattributed_accesses"] = a.unattributed;
    j["accesses_without_line"] = a.unlined;
    j["naming"] = naming_name(a.naming);
    j["notes"] = a.notes;
    return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

// The level names of a --cache value (already checked): each item's first field.
std::vector<std::string> level_names(const std::string &cache) {
    if (cache.empty()) return {"I1", "D1", "LL"};
    std::vector<std::string> names;
    for (const std::string &item : cli::split_list(cache)) names.push_back(item.substr(0, item.find(':')));
    return names;
}

// The module table a live program's runtime wrote to `path` (lines "ADDRESS SIZE PATH", see
// src/memtrace/memtrace.c); lines it cannot read are left out.
std::vector<cli::TraceModule> read_module_file(const std::string &path) {
    std::vector<cli::TraceModule> modules;
    FILE *f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return modules;
    char line[8192];
    while (std::fgets(line, sizeof line, f) != nullptr) {
        unsigned long long address = 0, size = 0;
        int used = 0;
        if (std::sscanf(line, "%llx %llx %n", &address, &size, &used) != 2) continue;
        std::string file(line + used);
        while (!file.empty() && (file.back() == '\n' || file.back() == '\r')) file.pop_back();
        cli::TraceModule m;
        m.index = static_cast<uint32_t>(modules.size());
        m.path = file;
        m.name = file.substr(file.rfind('/') == std::string::npos ? 0 : file.rfind('/') + 1);
        m.address = address;
        m.size = size;
        modules.push_back(std::move(m));
    }
    std::fclose(f);
    return modules;
}

// A temporary file that is removed with this object ("" when none could be made).
struct TempFile {
    std::string path;
    TempFile() {
        const char *dir = std::getenv("TMPDIR");
        std::string pattern =
            std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/sonde-modules-XXXXXX";
        const int fd = mkstemp(&pattern[0]);
        if (fd < 0) return;
        close(fd);
        path = pattern;
    }
    ~TempFile() {
        if (!path.empty()) unlink(path.c_str());
    }
    TempFile(const TempFile &) = delete;
    TempFile &operator=(const TempFile &) = delete;
};

// The run over FILE, or with --live over the program as it runs (o.program): the analyzer's
// serial run with both tools, then the naming and the output. A live run's program is started
// with the live stream (SONDE_MEMTRACE_LIVE, as `sonde analyze --live` does) and a file for its
// module table (SONDE_MEMTRACE_MODULES), whose modules' files name the pcs; its exit status
// is the command's, as for `sonde analyze --live`.
int run(const Options &o, const std::string &start_time) {
    char error[1024];
    const bool live = o.program != nullptr;
    sonde_trace_reader_t *reader = nullptr;
    const std::string &path = o.input;
    sonde_status_t st = SONDE_STATUS_SUCCESS;
    if (!live) {
        st = sonde_trace_reader_open(path.c_str(), cli::trace_format_value(o.format), error, sizeof error,
                                     &reader);
        if (st != SONDE_STATUS_SUCCESS) return fail(error);
    }
    struct ReaderGuard {
        sonde_trace_reader_t *r;
        ~ReaderGuard() {
            if (r != nullptr) sonde_trace_reader_close(r);
        }
    } guard{reader};
    uint32_t format = 0;
    if (reader != nullptr) sonde_trace_reader_format(reader, &format);
    sonde_analyzer_t *an = nullptr;
    if ((st = sonde_analyzer_create(&an)) != SONDE_STATUS_SUCCESS) return fail(sonde_status_string(st));
    std::unique_ptr<sonde_analyzer_t, sonde_status_t (*)(sonde_analyzer_t *)> analyzer(
        an, sonde_analyzer_destroy);
    const std::string cache_options = (o.cache.empty() ? std::string() : o.cache + ",") + "per_pc=1";
    st = sonde_analyzer_add_tool(an, "cache_sim", cache_options.c_str());
    if (st != SONDE_STATUS_SUCCESS) {
        if (st == SONDE_STATUS_ERROR_OUT_OF_MEMORY) return fail(sonde_analyzer_error(an));
        return cli::usage_error(kCommand, std::string("--cache: ") + sonde_analyzer_error(an));
    }
    ReuseTool reuse;
    while ((1u << reuse.line_bits) < o.line_size) ++reuse.line_bits;
    while ((1u << reuse.line_bits) > o.line_size) --reuse.line_bits;
    if ((st = sonde_stackdist_create(nullptr, &reuse.sd)) != SONDE_STATUS_SUCCESS)
        return fail(sonde_status_string(st));
    std::unique_ptr<sonde_stackdist_t, void (*)(sonde_stackdist_t *)> sd(reuse.sd, sonde_stackdist_destroy);
    const sonde_tool_ops_t ops = reuse_ops();
    if ((st = sonde_analyzer_add_tool_ops(an, &ops, &reuse)) != SONDE_STATUS_SUCCESS)
        return fail(sonde_analyzer_error(an));
    sonde_analyzer_set_parallel(an, false);
    auto run_tools = [an, &reuse] {
        cli::ProgressLine line(kCommand, [an, &reuse] {
            cli::ProgressSample s;
            sonde_analyzer_progress(an, &s.done, &s.total);
            s.records = reuse.records.load(std::memory_order_relaxed);
            return s;
        });
        return sonde_analyzer_run(an);
    };
    bool complete = true;
    const char *warnings = "";
    int program_status = 0;
    TempFile module_file;
    if (!live) {
        if ((st = sonde_analyzer_add_input(an, path.c_str(), format)) != SONDE_STATUS_SUCCESS)
            return fail(sonde_analyzer_error(an));
        sonde_analyzer_input_warnings(an, 0, &complete, &warnings);
        if (*warnings != '\0') std::fprintf(stderr, "%s: warning: %s\n", kCommand, warnings);
        st = run_tools();
    } else {
        if (module_file.path.empty())
            return fail(std::string("cannot make a temporary file: ") + std::strerror(errno));
        int fds[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
            return fail(std::string("socketpair: ") + std::strerror(errno));
        if ((st = sonde_analyzer_add_live_input(an, fds[0], o.program[0])) != SONDE_STATUS_SUCCESS) {
            close(fds[0]);
            close(fds[1]);
            return fail(sonde_analyzer_error(an));
        }
        cli::Environment env = cli::memtrace_sampling(false, 1, 0, 64);
        env.emplace_back("SONDE_MEMTRACE_LIVE", std::to_string(fds[1]));
        env.emplace_back("SONDE_MEMTRACE_MODULES", module_file.path);
        std::string why;
        const pid_t pid = cli::start_program(o.program, env, {fds[1]}, &why);
        close(fds[1]);  // the program's end: EOF comes when the program (and only it) is gone
        if (pid < 0) {
            close(fds[0]);
            std::fprintf(stderr, "%s: %s\n", kCommand, why.c_str());
            return 127;
        }
        {
            const cli::IgnoreInterrupts interrupts;
            st = run_tools();
            close(fds[0]);  // after a failed run the program goes on unanalysed
            program_status = cli::wait_program(pid);
        }
        if (st != SONDE_STATUS_SUCCESS) {
            const int rc = fail(std::string(sonde_analyzer_error(an)) + " (" + sonde_status_name(st) + ")");
            cli::program_exit_status(kCommand, o.program[0], program_status, "");
            return rc;
        }
        sonde_analyzer_input_warnings(an, 0, &complete, &warnings);
        if (*warnings != '\0') std::fprintf(stderr, "%s: warning: %s\n", kCommand, warnings);
    }
    if (st != SONDE_STATUS_SUCCESS)
        return fail(std::string(sonde_analyzer_error(an)) + " (" + sonde_status_name(st) + ")");
    size_t need = 0;
    sonde_analyzer_results_json(an, nullptr, 0, &need);
    std::string text(need, '\0');
    if ((st = sonde_analyzer_results_json(an, &text[0], text.size(), &need)) != SONDE_STATUS_SUCCESS)
        return fail(std::string("results: ") + sonde_analyzer_error(an));
    text.resize(need - 1);

    Annotation a;
    a.input = live ? o.program[0] : o.input;
    try {
        const nlohmann::json results = nlohmann::json::parse(text);
        const nlohmann::json &cache = results.at("cache_sim");
        for (const nlohmann::json &l : cache.at("levels")) {
            Level level;
            level.name = l.at("name").get<std::string>();
            const char *kinds[kKinds] = {"ifetch", "read", "write"};
            for (unsigned k = 0; k < kKinds; ++k) {
                level.accesses[k] = l.at(std::string(kinds[k]) + "_accesses").get<uint64_t>();
                level.misses[k] = l.at(std::string(kinds[k]) + "_misses").get<uint64_t>();
            }
            a.levels.push_back(level);
        }
        for (const nlohmann::json &w : results.value("warnings", nlohmann::json::array()))
            if (std::strstr(warnings, w.get<std::string>().c_str()) == nullptr)
                std::fprintf(stderr, "%s: warning: %s\n", kCommand, w.get<std::string>().c_str());
        std::vector<uint64_t> pcs;
        for (const nlohmann::json &row : cache.at("per_pc")) pcs.push_back(row.at("pc").get<uint64_t>());
        Names names;
        if (!live) {
            names.load(reader, pcs, &a.notes);
        } else if (!names.load_modules(read_module_file(module_file.path), pcs, &a.notes, nullptr)) {
            a.notes.push_back(
                "the program's modules could not be read (a program that ended before its runtime started, "
                "or files without symbols): accesses are shown by raw pc");
        }
        a.naming = names.naming();
        if (reuse.sampled)
            a.notes.push_back(
                "the trace was sampled at the source (--sample-rate): the counts are of the recorded "
                "references only, and reuse distances are among the sampled lines");
        if (!complete)
            a.notes.push_back(live ? "the stream is incomplete: the counts are of the references that arrived"
                                   : "the trace is incomplete: the counts are of the chunks recovered");
        aggregate(cache, reuse, names, &a);
    } catch (const nlohmann::json::exception &e) {
        return fail(std::string("cache_sim's results cannot be read: ") + e.what());
    }
    sort_functions(&a.functions, o.sort, a.levels);
    TextOptions to;
    to.limit = o.limit;
    to.source_dir = o.source_dir;
    to.sort = o.sort;
    print_text(a, to, stdout);
    if (std::fflush(stdout) != 0) return fail("cannot write standard output");
    if (!o.json_path.empty()) {
        const std::string json = json_text(a, o, start_time);
        FILE *f = std::fopen(o.json_path.c_str(), "w");
        if (f == nullptr || std::fputs(json.c_str(), f) < 0 || std::fclose(f) != 0)
            return fail("cannot write " + o.json_path);
    }
    if (live)
        return cli::program_exit_status(kCommand, o.program[0], program_status,
                                        "; the counts above cover the references made before it");
    return cli::kExitOk;
}

}  // namespace

namespace sonde::cli::annotate {

void Counts::add(const Counts &o) {
    for (unsigned k = 0; k < kKinds; ++k) {
        accesses[k] += o.accesses[k];
        if (misses[k].size() < o.misses[k].size()) misses[k].resize(o.misses[k].size(), 0);
        for (size_t l = 0; l < o.misses[k].size(); ++l) misses[k][l] += o.misses[k][l];
    }
}

uint64_t Counts::level_misses(size_t level) const {
    uint64_t n = 0;
    for (unsigned k = 0; k < kKinds; ++k)
        if (level < misses[k].size()) n += misses[k][level];
    return n;
}

double Reuse::mean() const {
    if (finite() == 0) return 0;
    double sum = 0;
    for (const auto &d : distances) sum += static_cast<double>(d.first) * static_cast<double>(d.second);
    return sum / static_cast<double>(finite());
}

uint64_t Reuse::quantile(double q) const {
    const uint64_t n = finite();
    if (n == 0) return 0;
    // The smallest distance d such that at least q of the finite distances are at most d.
    const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(n))));
    uint64_t seen = 0;
    for (const auto &d : distances) {
        seen += d.second;
        if (seen >= rank) return d.first;
    }
    return distances.rbegin()->first;
}

}  // namespace sonde::cli::annotate

int sonde_cli_annotate(int argc, char **argv) {
    CLI::App app{
        "Show the accesses and cache misses of a memory trace per function and per source line, as\n"
        "cachegrind's cg_annotate does: cache_sim's hierarchy (the levels of --cache, or I1, D1 and LL)\n"
        "over the trace in the serial order of sonde analyze --serial, each access and miss counted\n"
        "on the function and line of its pc (reads Dr, writes Dw, fetches Ir, and each level's misses\n"
        "of each), with the gem5-model reuse distances of each function's data accesses. Functions\n"
        "and lines come from the tables sonde record --memory stores in the trace, else from the\n"
        "files of its modules, else accesses are shown by raw pc. With --live -- PROGRAM ARGS, the\n"
        "program (built as for sonde record --memory) is annotated as it runs, without a trace file,\n"
        "its pcs named from the files of its modules.\n"
        "Exit status: 0 success, 1 the input cannot be read or the run fails, 2 bad usage. With\n"
        "--live: the program's exit status (128 + N when signal N ended it), 127 when it cannot be\n"
        "started, 1 when the analysis fails, 2 on bad usage or a program that is not instrumented.",
        kCommand};
    Options o;
    cli::add_version(app);
    // --live takes the program after "--": what comes before it are the options.
    const int split = cli::live_split(argc, argv);
    bool live = false;
    app.add_option("FILE", o.input,
                   "The trace: a Sonde trace from sonde record --memory (or any input sonde analyze reads: "
                   "lackey text, raw64, a drmemtrace directory, annotated by raw pc); not with --live")
        ->check(cli::input_path(false));
    app.add_flag("--live", live,
                 "Annotate the program given after -- as it runs (sonde analyze --live's stream): no trace "
                 "file");
    cli::add_format_option(app, &o.format, "Input format: auto, sonde, lackey, raw64, drmemtrace")
        ->capture_default_str();
    app.add_option("--cache", o.cache,
                   "cache_sim levels NAME:SIZE:WAYS:LINE[:POLICY],..., as sonde analyze --cache takes them "
                   "(default I1:32K:8:64,D1:32K:8:64,LL:1M:16:64)");
    app.add_option("--json", o.json_path,
                   "Also write the results as JSON to this file (its directory must exist; not the input)")
        ->check(cli::output_file());
    app.add_option("--source-dir", o.source_dir,
                   "Look for the source files here first (by their recorded path below it, or by its last "
                   "components), then at their recorded paths")
        ->check(CLI::ExistingDirectory);
    auto *sort = app.add_option("--sort", o.sort,
                                "Order of the functions: misses (the last level's, then the first's; the "
                                "default), accesses, reads, writes, ifetches, name, or a level's name (its "
                                "misses)");
    uint64_t limit = o.limit;
    app.add_option("--limit", limit, "Functions in the table, and whose source is shown (default 10)")
        ->check(cli::unsigned_range(1, 1u << 30));
    app.add_option("--line-size", o.line_size, "Line size of the reuse distances (default 64)")
        ->check(cli::power_of_two(1, 1u << 20));
    const std::string start_time = cli::utc_now();
    const int parsed = cli::parse(app, split, argv);
    if (parsed >= 0) return parsed;
    o.limit = static_cast<size_t>(limit);
    if (live) {
        if (!o.input.empty())
            return cli::usage_error(kCommand, "--live takes the program after --, not FILE");
        if (split + 1 >= argc)
            return cli::usage_error(kCommand, "--live: no program given (put it after --)");
        if (app.count("--format") > 0) return cli::usage_error(kCommand, "--format: not with --live");
        const std::string why = memtrace_refusal(argv[split + 1], false);
        if (!why.empty()) return cli::usage_error(kCommand, "--live: " + why);
        o.program = argv + split + 1;
    } else if (o.input.empty()) {
        return cli::usage_error(kCommand, "FILE is required (or --live -- PROGRAM ARGS)");
    }
    if (!o.cache.empty()) {
        const std::string why = cli::check_cache_levels(o.cache);
        if (!why.empty()) return cli::usage_error(kCommand, "--cache: " + why);
    }
    if (sort->count() > 0 && !valid_sort_key(o.sort, level_names(o.cache)))
        return cli::usage_error(kCommand, "--sort: '" + o.sort +
                                              "' is not misses, accesses, reads, writes, ifetches, name or a "
                                              "cache level's name");
    // The trace is opened twice (its tables, then the analyzer's run): a pipe or a FIFO cannot be.
    struct stat st {};
    if (!live && stat(o.input.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        return cli::usage_error(kCommand, "FILE: " + o.input + " is not a regular file (it is read twice)");
    if (!live && !o.json_path.empty() && cli::same_file(o.input, o.json_path))
        return cli::usage_error(kCommand, "--json: " + o.json_path + " is the input");
    return run(o, start_time);
}
