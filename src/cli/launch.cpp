// Starting and waiting for a program (launch.h).
#include "cli/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace sonde::cli {

Environment memtrace_sampling(bool blocks, double sample_rate, uint64_t sample_seed, uint64_t line_size) {
    Environment env;
    if (blocks) env.emplace_back("SONDE_MEMTRACE_BLOCKS", "1");
    if (sample_rate < 1) {
        char rate[64];
        std::snprintf(rate, sizeof rate, "%.17g", sample_rate);
        env.emplace_back("SONDE_MEMTRACE_SAMPLE_RATE", rate);
        env.emplace_back("SONDE_MEMTRACE_SAMPLE_SEED", std::to_string(sample_seed));
        env.emplace_back("SONDE_MEMTRACE_LINE_SIZE", std::to_string(line_size));
    }
    return env;
}

IgnoreInterrupts::IgnoreInterrupts() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ignore, &old_int_);
    sigaction(SIGQUIT, &ignore, &old_quit_);
}

IgnoreInterrupts::~IgnoreInterrupts() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGQUIT, &old_quit_, nullptr);
}

pid_t start_program(char **argv, const Environment &env, const std::vector<int> &keep, std::string *why) {
    // The child reports a failed exec through a close-on-exec pipe: nothing read means it ran.
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        *why = std::string("pipe: ") + std::strerror(errno);
        return -1;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        *why = std::string("fork: ") + std::strerror(errno);
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    if (pid == 0) {
        close(pipefd[0]);
        for (const auto &e : env) setenv(e.first.c_str(), e.second.c_str(), 1);
        for (int fd : keep) {
            fcntl(fd, F_SETFD, 0);
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        }
        execvp(argv[0], argv);
        const int err = errno;
        if (write(pipefd[1], &err, sizeof err) != static_cast<ssize_t>(sizeof err)) _exit(127);
        _exit(127);
    }
    close(pipefd[1]);
    int exec_errno = 0;
    ssize_t got;
    do {
        got = read(pipefd[0], &exec_errno, sizeof exec_errno);
    } while (got < 0 && errno == EINTR);
    close(pipefd[0]);
    if (got != static_cast<ssize_t>(sizeof exec_errno)) return pid;
    wait_program(pid);
    *why = std::string("cannot run '") + argv[0] + "': " + std::strerror(exec_errno);
    return -1;
}

int wait_program(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

int program_exit_status(const char *command, const std::string &program, int status,
                        const std::string &after) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        std::fprintf(stderr, "%s: %s was killed by signal %d (%s)%s\n", command, program.c_str(),
                     WTERMSIG(status), strsignal(WTERMSIG(status)), after.c_str());
        return 128 + WTERMSIG(status);
    }
    return 1;
}

}  // namespace sonde::cli
