/* Test helper: a scratch directory for the files of one test program, made under $TMPDIR (else
 * /tmp) by the group setup and removed with everything in it by the group teardown, and paths
 * inside it. Single-threaded use: the path buffers rotate, four at a time. */
#ifndef SONDE_TEST_SCRATCH_H
#define SONDE_TEST_SCRATCH_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char g_scratch_dir[256];

/* Makes the directory, named PREFIX-XXXXXX; 0, or -1 when it cannot be made. */
static inline int scratch_setup(const char *prefix) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_scratch_dir, sizeof g_scratch_dir, "%s/%s-XXXXXX", tmp ? tmp : "/tmp", prefix);
    return mkdtemp(g_scratch_dir) == NULL ? -1 : 0;
}

/* Removes the directory and what it holds; 0, or -1 on failure. */
static inline int scratch_teardown(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_scratch_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* DIR/NAME, valid until four more calls. */
static inline const char *scratch_path(const char *name) {
    static char buf[4][512];
    static int slot;
    char *p = buf[slot++ & 3];
    snprintf(p, 512, "%s/%s", g_scratch_dir, name);
    return p;
}

#endif /* SONDE_TEST_SCRATCH_H */
