// Benchmarks that time a child program (bench/callgraph, bench/apitrace): run it with its
// standard output captured and its standard error discarded, and wait for it.
#pragma once

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

extern char **environ;

namespace sonde_bench {

struct ChildOutput {
    bool ran = false;  // started, and exited with status 0
    std::string out;   // everything it wrote on stdout
};

// Runs argv[0] (searched in PATH) with `envp` (nullptr: this process's environment).
inline ChildOutput run_child(const std::vector<std::string> &args, char *const *envp = nullptr) {
    ChildOutput r;
    int pipefd[2];
    if (pipe(pipefd) != 0) return r;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_addclose(&fa, pipefd[0]);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 0 /* O_RDONLY */, 0);
    std::vector<char *> argv;
    for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid;
    const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), envp != nullptr ? envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    char buf[4096];
    ssize_t n;
    while ((n = read(pipefd[0], buf, sizeof buf)) > 0) r.out.append(buf, static_cast<size_t>(n));
    close(pipefd[0]);
    if (rc != 0) return r;
    int status = 0;
    waitpid(pid, &status, 0);
    r.ran = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return r;
}

}  // namespace sonde_bench
