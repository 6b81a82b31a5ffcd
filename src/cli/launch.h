// Starting the program of `sonde record` and `sonde analyze --live` (launch.cpp): fork, the
// child's environment and inherited descriptors, exec with PATH searched, the report of an exec
// that failed, and the wait for the program's end as system() does it (an interrupt from the
// terminal goes to the program; this process waits and reports).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sonde::cli {

// Variables the child sets before exec (NAME, VALUE).
using Environment = std::vector<std::pair<std::string, std::string>>;

// The variables that make libsonde-instrument.so's runtime sample and record blocks as
// `sonde record --memory` asks (docs/memory-traces.md): SONDE_MEMTRACE_BLOCKS=1 with `blocks`;
// with a rate below 1, SONDE_MEMTRACE_SAMPLE_RATE, _SAMPLE_SEED and _LINE_SIZE.
Environment memtrace_sampling(bool blocks, double sample_rate, uint64_t sample_seed, uint64_t line_size);

// Ignores SIGINT and SIGQUIT in this process while it lives (the program, in the same process
// group, still gets them from the terminal), as system() does; restores them after. Made after
// the program started, which keeps the dispositions it had.
class IgnoreInterrupts {
public:
    IgnoreInterrupts();
    ~IgnoreInterrupts();
    IgnoreInterrupts(const IgnoreInterrupts &) = delete;
    IgnoreInterrupts &operator=(const IgnoreInterrupts &) = delete;

private:
    struct sigaction old_int_ {};
    struct sigaction old_quit_ {};
};

// Forks and execs argv[0] (PATH searched) with argv, `env` set and the descriptors `keep` left
// open (blocking) across exec; every other descriptor of this process that is close-on-exec
// stays closed in the program. Returns the child's pid once exec succeeded; -1 when it did not
// start: *why says why ("cannot run 'X': No such file or directory", or the fork or pipe that
// failed) and the child, if any, has been reaped.
pid_t start_program(char **argv, const Environment &env, const std::vector<int> &keep, std::string *why);

// Waits for the program to end; its wait status.
int wait_program(pid_t pid);

// The exit status a command reports for a program's wait status: its exit code, or 128 + N
// when signal N ended it (then "COMMAND: PROGRAM was killed by signal N (NAME)" on stderr,
// followed by `after` when it is not empty).
int program_exit_status(const char *command, const std::string &program, int status,
                        const std::string &after);

}  // namespace sonde::cli
