/* Replay driver for the fuzz targets when libFuzzer is not available (gcc builds): runs
 * LLVMFuzzerTestOneInput once on every file named on the command line or found in a named
 * directory, and reports how many inputs ran. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
        data = realloc(data, cap);
    }
    fclose(f);
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    return 0;
}

int main(int argc, char **argv) {
    int ran = 0;
    for (int i = 1; i < argc; ++i) {
        if (argv[i][0] == '-') continue; /* libFuzzer options are ignored */
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "%s: not found\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) != 0) return 1;
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
            if (run_file(path) != 0) {
                closedir(d);
                return 1;
            }
            ++ran;
        }
        closedir(d);
    }
    printf("replayed %d inputs\n", ran);
    return ran > 0 ? 0 : 1;
}
