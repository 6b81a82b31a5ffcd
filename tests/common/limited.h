/* Test helper: runs a function in a child process under a time limit (alarm) and an
 * address-space limit (RLIMIT_AS), so that a hang or a huge allocation fails the test instead
 * of hanging or exhausting the machine.
 *
 * The address-space limit is the child's current size plus `extra_mb`: a sanitizer build
 * has reserved terabytes of shadow memory before main(), so only the growth can be limited.
 * Glibc gives each thread an arena of up to 64 MiB of address space, which the extra must
 * cover for the threads the function starts. */
#ifndef SONDE_TEST_LIMITED_H
#define SONDE_TEST_LIMITED_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Bytes of address space the calling process uses now (/proc/self/statm), 0 if unknown. */
static inline uint64_t limited_vm_size(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long pages = 0;
    if (f == NULL) return 0;
    if (fscanf(f, "%llu", &pages) != 1) pages = 0;
    fclose(f);
    return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Outcome of limited_run(). */
enum { LIMITED_TIMEOUT = -1000, LIMITED_CRASH = -1001, LIMITED_FORK_FAILED = -1002 };

/* Runs fn(arg) in a child with `seconds` of wall-clock time and `extra_mb` MiB of address
 * space beyond what it has at the start. Returns fn's result (0..255, the child's exit status),
 * LIMITED_TIMEOUT when the alarm fired, LIMITED_CRASH when the child died of another signal
 * (abort, a failed allocation in a sanitizer build), or LIMITED_FORK_FAILED. */
static inline int limited_run(int (*fn)(void *), void *arg, unsigned seconds, uint64_t extra_mb) {
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) return LIMITED_FORK_FAILED;
    if (pid == 0) {
        const uint64_t now = limited_vm_size();
        if (now != 0 && extra_mb != 0) {
            struct rlimit rl;
            rl.rlim_cur = rl.rlim_max = (rlim_t)(now + extra_mb * 1024 * 1024);
            setrlimit(RLIMIT_AS, &rl);
        }
        alarm(seconds);
        const int r = fn(arg);
        fflush(NULL);
        _exit(r & 0xFF);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return LIMITED_CRASH;
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) return LIMITED_TIMEOUT;
    return LIMITED_CRASH;
}

#endif
