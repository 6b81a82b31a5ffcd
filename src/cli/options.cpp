// Option parsing and validation shared by every `sonde` command (see options.h).
#include "cli/options.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include <sonde/defs.h>
#include <sonde/trace.h>

namespace sonde::cli {

namespace {

bool all_digits(const std::string &s) {
    if (s.empty()) return false;
    for (const char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

// Decimal digits to a uint64_t; false on overflow.
bool to_u64(const std::string &digits, uint64_t *out) {
    uint64_t v = 0;
    for (const char c : digits) {
        const uint64_t d = static_cast<uint64_t>(c - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

constexpr uint64_t kMaxCacheSize = uint64_t{4} << 30;

bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::string in_quotes(const std::string &s) { return "'" + s + "'"; }

// One cache level, NAME:SIZE:WAYS:LINE[:POLICY]; "" or what is wrong.
std::string check_cache_level(const std::string &item) {
    std::vector<std::string> f;
    size_t p = 0;
    for (;;) {
        const size_t q = item.find(':', p);
        f.push_back(item.substr(p, q == std::string::npos ? std::string::npos : q - p));
        if (q == std::string::npos) break;
        p = q + 1;
    }
    if (f.size() < 4 || f.size() > 5) return in_quotes(item) + " is not NAME:SIZE:WAYS:LINE[:POLICY]";
    const std::string where = in_quotes(item) + ": ";
    if (f[0].empty()) return where + "the level has no name";
    // SIZE: digits with an optional K, M or G (powers of 1024).
    std::string digits = f[1];
    uint64_t scale = 1;
    if (!digits.empty()) {
        const char c = digits.back();
        scale = (c == 'K' || c == 'k')   ? uint64_t{1} << 10
                : (c == 'M' || c == 'm') ? uint64_t{1} << 20
                : (c == 'G' || c == 'g') ? uint64_t{1} << 30
                                         : 1;
        if (scale != 1) digits.pop_back();
    }
    uint64_t size = 0;
    if (!all_digits(digits))
        return where + "size " + in_quotes(f[1]) + " is not a number of bytes (digits, then K, M or G)";
    if (!to_u64(digits, &size) || size > UINT64_MAX / scale)
        return where + "size " + in_quotes(f[1]) + " is too large";
    size *= scale;
    if (size == 0) return where + "size is 0";
    // The simulator keeps a tag per line of each level (per shard in parallel runs).
    if (size > kMaxCacheSize) return where + "size " + f[1] + " is larger than 4G";
    uint64_t ways = 0, line = 0;
    std::string e = check_unsigned(f[2], 1, 1024, &ways);
    if (!e.empty()) return where + "ways: " + e;
    e = check_unsigned(f[3], 1, 65536, &line);
    if (!e.empty()) return where + "line size: " + e;
    if (!is_pow2(line)) return where + "line size " + f[3] + " is not a power of two";
    if (f.size() == 5 && f[4] != "lru" && f[4] != "fifo" && f[4] != "random")
        return where + "unknown policy " + in_quotes(f[4]) + " (lru, fifo, random)";
    if (size % line != 0) return where + "size is not a whole number of " + f[3] + "-byte lines";
    const uint64_t lines = size / line;
    if (ways > lines)
        return where + std::to_string(ways) + " ways exceed the " + std::to_string(lines) +
               " lines of the level";
    if (lines % ways != 0 || !is_pow2(lines / ways))
        return where + std::to_string(lines) + " lines / " + std::to_string(ways) +
               " ways is not a power-of-two number of sets";
    return "";
}

}  // namespace

std::string version_number() {
    uint32_t major = 0, minor = 0, patch = 0;
    sonde_get_version(&major, &minor, &patch);
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string version_string() { return "sonde " + version_number(); }

namespace {
class UsageFormatter : public CLI::Formatter {
public:
    explicit UsageFormatter(std::string usage) : usage_(std::move(usage)) {}
    std::string make_usage(const CLI::App *, std::string) const override { return "Usage: " + usage_ + "\n"; }

private:
    std::string usage_;
};
}  // namespace

void set_usage(CLI::App &app, const std::string &usage) {
    app.formatter(std::make_shared<UsageFormatter>(usage));
}

CLI::Option *add_format_option(CLI::App &app, std::string *format, const std::string &help) {
    return app.add_option("--format", *format, help)
        ->check(CLI::IsMember({"auto", "sonde", "lackey", "raw64", "drmemtrace"}));
}

uint32_t trace_format_value(const std::string &name) {
    if (name == "sonde") return SONDE_TRACE_FORMAT_SONDE;
    if (name == "lackey") return SONDE_TRACE_FORMAT_LACKEY;
    if (name == "raw64") return SONDE_TRACE_FORMAT_RAW64;
    if (name == "drmemtrace") return SONDE_TRACE_FORMAT_DRMEMTRACE;
    return SONDE_TRACE_FORMAT_AUTO;
}

void add_api_options(CLI::App &app, std::string *api, std::string *prototypes, const std::string &purpose) {
    app.add_option(
        "--api", *api,
        purpose + ": 'LIB:FUNC[,FUNC...][;LIB:...]' (fnmatch patterns in FUNC), e.g. 'libz:crc32,compress2'");
    app.add_option("--api-prototypes", *prototypes,
                   "C declarations of the traced functions, one per line (typedef lines allowed)")
        ->check(CLI::ExistingFile);
}

void add_version(CLI::App &app) {
    app.set_version_flag("--version", version_string(), "Print the version and exit");
}

int live_split(int argc, char **argv) {
    int split = argc;
    for (int i = 1; i < argc && split == argc; ++i)
        if (std::strcmp(argv[i], "--") == 0) split = i;
    for (int i = 1; i < split; ++i)
        if (std::strcmp(argv[i], "--live") == 0) return split;
    return argc;
}

int parse(CLI::App &app, int argc, char **argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
        return usage_error(app.get_name(), e.what());
    }
    return -1;
}

int usage_error(const std::string &command, const std::string &message) {
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for more information.\n", command.c_str(), message.c_str(),
                 command.c_str());
    return kExitUsage;
}

std::string check_unsigned(const std::string &text, uint64_t lo, uint64_t hi, uint64_t *value) {
    uint64_t v = 0;
    if (!all_digits(text))
        return in_quotes(text) + " is not a whole number in " + std::to_string(lo) + ".." +
               std::to_string(hi);
    if (!to_u64(text, &v) || v < lo || v > hi)
        return text + " is not in " + std::to_string(lo) + ".." + std::to_string(hi);
    if (value != nullptr) *value = v;
    return "";
}

CLI::Validator unsigned_range(uint64_t lo, uint64_t hi) {
    return CLI::Validator([lo, hi](std::string &s) { return check_unsigned(s, lo, hi, nullptr); },
                          std::to_string(lo) + ".." + std::to_string(hi));
}

CLI::Validator real_range(double lo, double hi) {
    char desc[64];
    std::snprintf(desc, sizeof desc, "%g..%g", lo, hi);
    const std::string range = desc;
    return CLI::Validator(
        [lo, hi, range](std::string &s) -> std::string {
            const char *b = s.c_str();
            char *end = nullptr;
            errno = 0;
            const double v = std::strtod(b, &end);
            if (s.empty() || end != b + s.size() || std::isspace(static_cast<unsigned char>(s[0])))
                return in_quotes(s) + " is not a number";
            if (!std::isfinite(v)) return in_quotes(s) + " is not a finite number";
            if (v < lo || v > hi) return s + " is not in " + range;
            return "";
        },
        range);
}

CLI::Validator power_of_two(uint64_t lo, uint64_t hi) {
    return CLI::Validator(
        [lo, hi](std::string &s) -> std::string {
            uint64_t v = 0;
            const std::string e = check_unsigned(s, lo, hi, &v);
            if (!e.empty()) return e;
            if (!is_pow2(v)) return s + " is not a power of two";
            return "";
        },
        "power of two, " + std::to_string(lo) + ".." + std::to_string(hi));
}

CLI::Validator list_items() {
    return CLI::Validator(
        [](std::string &s) -> std::string {
            std::set<std::string> seen;
            for (const std::string &item : split_list(s)) {
                if (item.empty()) return in_quotes(s) + " has an empty item";
                if (!seen.insert(item).second) return in_quotes(item) + " is given twice";
            }
            return "";
        },
        "");
}

std::string check_cache_levels(const std::string &spec) {
    if (spec.empty()) return "no cache level given";
    const std::vector<std::string> items = split_list(spec);
    if (items.size() > 16) return "at most 16 cache levels";
    for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].empty())
            return "level " + std::to_string(i + 1) + " of " + in_quotes(spec) + " is empty";
        const std::string e = check_cache_level(items[i]);
        if (!e.empty()) return e;
    }
    return "";
}

CLI::Validator cache_levels() {
    return CLI::Validator([](std::string &s) { return check_cache_levels(s); }, "");
}

std::string check_input_file(const std::string &path, bool allow_stdin) {
    if (allow_stdin && path == "-") return "";
    if (path.empty()) return "an empty file name";
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return path + ": " + std::strerror(errno);
    if (S_ISDIR(st.st_mode)) return path + ": is a directory";
    if (access(path.c_str(), R_OK) != 0) return path + ": " + std::strerror(errno);
    return "";
}

CLI::Validator input_file(bool allow_stdin) {
    return CLI::Validator([allow_stdin](std::string &s) { return check_input_file(s, allow_stdin); }, "");
}

std::string check_input_path(const std::string &path, bool allow_stdin) {
    struct stat st;
    if (!path.empty() && stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        if (access(path.c_str(), R_OK | X_OK) != 0) return path + ": " + std::strerror(errno);
        return "";
    }
    return check_input_file(path, allow_stdin);
}

CLI::Validator input_path(bool allow_stdin) {
    return CLI::Validator([allow_stdin](std::string &s) { return check_input_path(s, allow_stdin); }, "");
}

std::string check_output_file(const std::string &path) {
    if (path.empty()) return "an empty file name";
    if (path.back() == '/') return path + ": names a directory";
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return path + ": is a directory";
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    if (stat(dir.c_str(), &st) != 0) return path + ": directory " + dir + ": " + std::strerror(errno);
    if (!S_ISDIR(st.st_mode)) return path + ": " + dir + " is not a directory";
    if (access(dir.c_str(), W_OK | X_OK) != 0)
        return path + ": directory " + dir + ": " + std::strerror(errno);
    return "";
}

CLI::Validator output_file() {
    return CLI::Validator([](std::string &s) { return check_output_file(s); }, "");
}

std::vector<std::string> split_list(const std::string &text) {
    std::vector<std::string> items;
    size_t start = 0;
    for (;;) {
        const size_t comma = text.find(',', start);
        items.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) return items;
        start = comma + 1;
    }
}

bool same_file(const std::string &a, const std::string &b) {
    struct stat sa, sb;
    return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

}  // namespace sonde::cli
