/* A test's private temporary directory: made under $TMPDIR (else /tmp) by the cmocka group
 * setup, removed with everything in it by the group teardown. Paths in it come from
 * tmpdir_path(), four at a time (each call reuses the oldest of four buffers). */
#pragma once

#include <stdio.h>
#include <stdlib.h>

static char g_tmpdir[256];

/* `tag` names the directory: $TMPDIR/sonde-TAG-XXXXXX. 0 on success. */
static inline int tmpdir_make(const char *tag) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_tmpdir, sizeof g_tmpdir, "%s/sonde-%s-XXXXXX", tmp ? tmp : "/tmp", tag);
    return mkdtemp(g_tmpdir) == NULL ? -1 : 0;
}

static inline int tmpdir_remove(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static inline const char *tmpdir_path(const char *name) {
    static char buf[4][512];
    static int slot;
    char *p = buf[slot++ & 3];
    snprintf(p, 512, "%s/%s", g_tmpdir, name);
    return p;
}
