/* A program for the recording tests, built with -finstrument-functions and linked with
 * libsonde (for marks and ranges):
 *   record_prog marks     marks and ranges around a few calls, then exits normally;
 *   record_prog segv N    N calls of step(), then a write through a null pointer;
 *   record_prog abort N   N calls of step(), then abort();
 *   record_prog _exit N   N calls of step(), then _exit(4) (no destructors run);
 *   record_prog spin      calls step() until killed. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sonde/instrument.h>

static volatile long g_sum;

__attribute__((noinline)) static void step(long i) { g_sum += i; }

__attribute__((noinline)) static void crash(void) {
    volatile int *volatile p = NULL;
    *p = 1;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "marks";
    const long n = argc > 2 ? atol(argv[2]) : 1000;
    if (strcmp(mode, "marks") == 0) {
        sonde_user_mark("start", NULL, 0);
        sonde_user_range_push("outer");
        sonde_user_range_push("inner");
        for (long i = 0; i < 10; ++i) step(i);
        sonde_user_range_pop();
        sonde_user_range_pop();
        sonde_user_mark("done", NULL, 0);
        printf("sum %ld\n", g_sum);
        return 3; /* the recording tests check that sonde record exits with the program's status */
    }
    if (strcmp(mode, "segv") == 0 || strcmp(mode, "abort") == 0) {
        for (long i = 0; i < n; ++i) step(i);
        fflush(stdout);
        if (mode[0] == 's') crash();
        abort();
    }
    if (strcmp(mode, "_exit") == 0) {
        for (long i = 0; i < n; ++i) step(i);
        _exit(4);
    }
    if (strcmp(mode, "spin") == 0) {
        printf("spinning\n");
        fflush(stdout);
        for (long i = 0;; ++i) step(i);
    }
    return 2;
}
