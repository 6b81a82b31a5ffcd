// `sonde annotate` (annotate.cpp): called by main() as sonde_cli_annotate(argc - 1, argv + 1),
// so argv[0] is "annotate". Returns the process exit status: 0 success, 1 the input cannot be
// read or the run fails, 2 bad usage.
//
// What it computes, and what annotate_text.cpp prints: the accesses and cache misses of a
// memory trace per function and per source line, split by kind as cachegrind's cg_annotate
// splits them (Ir, Dr and Dw, and each level's misses of each), with reuse distances per
// function.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

int sonde_cli_annotate(int argc, char **argv);

namespace sonde::cli::annotate {

// Access kinds, in cg_annotate's column order.
enum Kind : unsigned { kIfetch = 0, kRead = 1, kWrite = 2, kKinds = 3 };

// Accesses of each kind and their misses at each cache level.
struct Counts {
    uint64_t accesses[kKinds] = {};
    std::vector<uint64_t> misses[kKinds];  // by level

    Counts() = default;
    explicit Counts(size_t levels) {
        for (auto &m : misses) m.assign(levels, 0);
    }
    void add(const Counts &o);
    uint64_t total() const { return accesses[kIfetch] + accesses[kRead] + accesses[kWrite]; }
    uint64_t level_misses(size_t level) const;  // every kind
};

// Gem5-model reuse distances of a function's data accesses (distance: distinct lines touched
// since the last access to the same line; cold: the line's first access).
struct Reuse {
    uint64_t accesses = 0;
    uint64_t cold = 0;
    std::map<uint64_t, uint64_t> distances;  // finite distance -> accesses

    double mean() const;                // of the finite distances, 0 without any
    uint64_t quantile(double q) const;  // of the finite distances, 0 without any
    uint64_t finite() const { return accesses - cold; }
};

// A source line: its file and number ("???" and 0 when unknown).
using LineKey = std::pair<std::string, uint32_t>;

struct FunctionRow {
    std::string name;  // demangled, "???" for pcs outside every known function, "0x..." by raw pc
    std::string file;  // where it starts ("" when unknown)
    uint32_t line = 0;
    uint64_t address = 0;
    bool known = true;
    Counts counts;
    Reuse reuse;
    std::set<LineKey> lines;  // its source lines that have accesses
};

struct LineRow {
    LineKey key;
    std::string function;  // the function of its first pc
    Counts counts;
};

// A cache level: its name and its accesses and misses of each kind over the whole trace.
struct Level {
    std::string name;
    uint64_t accesses[kKinds] = {};
    uint64_t misses[kKinds] = {};
};

// How pcs were named.
enum class Naming { kTables, kModuleFiles, kRawPc };

struct Annotation {
    std::string input;
    std::vector<Level> levels;
    Counts total;
    uint64_t unattributed = 0;  // accesses whose pc is in no known function
    uint64_t unlined = 0;       // accesses whose pc has no source line
    Naming naming = Naming::kTables;
    std::vector<std::string> notes;      // said before the tables (how pcs were named, sampling...)
    std::vector<FunctionRow> functions;  // sorted by the --sort key
    std::vector<LineRow> lines;          // by file, then line
};

// The orders of --sort: misses (the last level's, then the first's), accesses, reads, writes,
// ifetches, name, or a level's name (its misses).
bool valid_sort_key(const std::string &key, const std::vector<std::string> &level_names);
void sort_functions(std::vector<FunctionRow> *functions, const std::string &key,
                    const std::vector<Level> &levels);

struct TextOptions {
    size_t limit = 10;       // functions in the table, and whose source is shown
    std::string source_dir;  // "": the recorded paths only
    std::string sort = "misses";
};

// The text report on `out`: the summary, the table of functions, and the source of the first
// functions with their lines' counts beside them.
void print_text(const Annotation &a, const TextOptions &options, FILE *out);

}  // namespace sonde::cli::annotate
