// Option parsing and validation shared by every `sonde` command (options.cpp).
//
// Every command parses with parse() and adds --version with add_version(), so that usage errors
// of all commands look alike and exit with kExitUsage: one line on stderr naming the option
// ("sonde convert: --level: 40 is not in 1..19"), then a pointer to --help. The validators below
// check the text of an option before CLI11 converts it, so that a value is refused with the
// option's name before anything runs: negative numbers given to unsigned options, NaN and
// infinities, out-of-range values, malformed cache levels, empty list items, missing inputs,
// outputs in directories that do not exist.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace sonde::cli {

// Exit statuses shared by the commands: success, a failure of the work itself (an input that
// cannot be read, a write that fails), bad usage (refused before the work starts).
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// "X.Y.Z", the library's version (sonde_get_version), as JSON outputs carry it.
std::string version_number();
// "sonde X.Y.Z", as --version prints it.
std::string version_string();

// Adds --version (prints version_string() on stdout, exit 0) to a command.
void add_version(CLI::App &app);

// Adds --api SPEC (`purpose` begins its help text) and --api-prototypes FILE (an existing file),
// the API tracing options of `sonde record` and `sonde run` (docs/api-tracing.md).
void add_api_options(CLI::App &app, std::string *api, std::string *prototypes, const std::string &purpose);

// Adds --format NAME, the input format of the commands that read traces: auto, sonde, lackey,
// raw64 or drmemtrace (anything else is a usage error).
CLI::Option *add_format_option(CLI::App &app, std::string *format, const std::string &help);
// The sonde_trace_format_value of an add_format_option name (AUTO for "auto").
uint32_t trace_format_value(const std::string &name);

// Replaces the "Usage:" line of --help with "Usage: " + `usage` (for commands whose program
// comes after "--", which the parser does not list).
void set_usage(CLI::App &app, const std::string &usage);

// Parses argv with CLI11. Returns -1 when the command should go on, else the exit status:
// kExitOk after --help or --version, kExitUsage after a usage error (message on stderr).
int parse(CLI::App &app, int argc, char **argv);
// Where the options end for a command that takes a program after "--" with --live: the index of
// that "--" when --live comes before it, else argc (no program: every argument is an option).
int live_split(int argc, char **argv);

// Prints "sonde COMMAND: MESSAGE" and the --help hint on stderr; returns kExitUsage.
int usage_error(const std::string &command, const std::string &message);

// An unsigned decimal integer in [lo, hi]: digits only (no sign, no spaces, no base prefix).
CLI::Validator unsigned_range(uint64_t lo, uint64_t hi);

// A finite real number in [lo, hi] (NaN and infinities refused).
CLI::Validator real_range(double lo, double hi);

// A power of two in [lo, hi], written as an unsigned decimal integer.
CLI::Validator power_of_two(uint64_t lo, uint64_t hi);

// A comma-separated list without empty items; every item distinct.
CLI::Validator list_items();

// cache_sim levels, NAME:SIZE:WAYS:LINE[:POLICY],...: at most 16 non-empty levels; NAME not
// empty; SIZE digits with an optional K, M or G, 1 byte..4G; WAYS 1..1024 and at most the
// level's lines; LINE a power of two 1..65536; SIZE a whole number of lines and SIZE / (WAYS *
// LINE) a power of two (the set count; SIZE itself need not be one: 48K:12:64 is valid);
// POLICY lru, fifo or random.
CLI::Validator cache_levels();

// An input file that exists, is not a directory and is readable; "-" (standard input) is
// accepted when allow_stdin is true.
CLI::Validator input_file(bool allow_stdin);

// An input file as input_file(), or a directory that exists and is readable and searchable
// (a DynamoRIO drmemtrace trace directory).
CLI::Validator input_path(bool allow_stdin);

// An output file whose directory exists (and is writable) and that is not a directory itself.
CLI::Validator output_file();

// The checks behind the validators; each returns "" or what is wrong (without the option name).
std::string check_unsigned(const std::string &text, uint64_t lo, uint64_t hi, uint64_t *value);
std::string check_cache_levels(const std::string &spec);
std::string check_input_file(const std::string &path, bool allow_stdin);
std::string check_input_path(const std::string &path, bool allow_stdin);
std::string check_output_file(const std::string &path);

// The items of a comma-separated list, in order (empty items kept).
std::vector<std::string> split_list(const std::string &text);

// Whether two paths name the same existing file (same st_dev and st_ino, after following
// symbolic links); false when either does not exist.
bool same_file(const std::string &a, const std::string &b);

}  // namespace sonde::cli
