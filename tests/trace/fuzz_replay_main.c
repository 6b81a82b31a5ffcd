/* Replay driver for the fuzz targets when libFuzzer is not available (gcc builds, sanitizer
 * builds): runs LLVMFuzzerTestOneInput once on every file named on the command line or found
 * in a named directory, each in a child process with a time limit (alarm) and an
 * address-space limit (RLIMIT_AS, limited.h), so that a hang or a huge allocation fails like a
 * crash does. Options: -timeout=S (seconds per input, default 30) and -rss_limit_mb=M (address
 * space each input may add, default 1024); other libFuzzer options are ignored. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "limited.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned g_timeout = 30;
static uint64_t g_limit_mb = 1024;

typedef struct input_t {
    const uint8_t *data;
    size_t size;
} input_t;

static int run_input(void *arg) {
    const input_t *in = arg;
    LLVMFuzzerTestOneInput(in->data, in->size);
    return 0;
}

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "%s: cannot open\n", path);
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *data = malloc(cap);
    for (;;) {
        if (data == NULL) {
            fclose(f);
            return -1;
        }
        len += fread(data + len, 1, cap - len, f);
        if (len < cap) break;
        cap *= 2;
        uint8_t *grown = realloc(data, cap);
        if (grown == NULL) free(data);
        data = grown;
    }
    fclose(f);
    input_t in = {data, len};
    const int r = limited_run(run_input, &in, g_timeout, g_limit_mb);
    free(data);
    if (r == 0) return 0;
    if (r == LIMITED_TIMEOUT)
        fprintf(stderr, "%s: still running after %u s (a hang?)\n", path, g_timeout);
    else if (r == LIMITED_CRASH)
        fprintf(stderr, "%s: crashed (or failed to allocate within %llu MiB more address space)\n", path,
                (unsigned long long)g_limit_mb);
    else
        fprintf(stderr, "%s: exit status %d\n", path, r);
    return -1;
}

int main(int argc, char **argv) {
    int ran = 0, failed = 0;
    for (int i = 1; i < argc; ++i) {
        if (strncmp(argv[i], "-timeout=", 9) == 0) g_timeout = (unsigned)atoi(argv[i] + 9);
        if (strncmp(argv[i], "-rss_limit_mb=", 14) == 0) g_limit_mb = (uint64_t)atoll(argv[i] + 14);
    }
    for (int i = 1; i < argc; ++i) {
        if (argv[i][0] == '-') continue; /* options */
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "%s: not found\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            failed += run_file(argv[i]) != 0;
            ++ran;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (d == NULL) return 1;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            failed += run_file(path) != 0;
            ++ran;
        }
        closedir(d);
    }
    printf("replayed %d inputs, %d failed\n", ran, failed);
    return ran > 0 && failed == 0 ? 0 : 1;
}
