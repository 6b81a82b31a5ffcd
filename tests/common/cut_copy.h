/* Test helper: a copy of a file cut short, as an interrupted copy or download leaves it. */
#ifndef SONDE_TEST_CUT_COPY_H
#define SONDE_TEST_CUT_COPY_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Writes the first `keep` bytes of the file at `path` (at most 1 MiB is read) to a new file
 * named by mkstemp from `tmpl`, which it fills in. keep == 0: half of the file. Returns the
 * bytes written, or 0 when the file cannot be read or the copy cannot be written. */
static inline size_t cut_copy(const char *path, size_t keep, char *tmpl) {
    static unsigned char image[1 << 20];
    FILE *f = fopen(path, "rb");
    if (f == NULL) return 0;
    const size_t size = fread(image, 1, sizeof image, f);
    fclose(f);
    if (keep == 0) keep = size / 2;
    if (keep == 0 || keep > size) return 0;
    const int fd = mkstemp(tmpl);
    if (fd < 0) return 0;
    const ssize_t wrote = write(fd, image, keep);
    close(fd);
    return wrote == (ssize_t)keep ? keep : 0;
}

#endif
