/* libFuzzer target: the lackey text parser (plain and zstd input), and AUTO detection. Plain
 * text is also held to the reference reading (lackey_ref.h): the same records, and an error at
 * the same line; a difference aborts. */
#include <stdlib.h>

#include "fuzz_trace_common.h"
#include "lackey_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_read_all(data, size, SONDE_TRACE_FORMAT_LACKEY);
    if (size > 0 && (data[0] & 1)) fuzz_read_all(data, size, SONDE_TRACE_FORMAT_AUTO);
    /* A zstd frame is read as the text it holds; lines longer than the parser's limit get their
     * own error, which the reference does not model. */
    static const uint8_t zstd_magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
    if (size >= 4 && memcmp(data, zstd_magic, 4) == 0) return 0;
    lackey_ref_t ref;
    if (lackey_ref_read(data, size, &ref) != 0) return 0;
    if (ref.longest < 4000) {
        char path[64];
        const int fd = fuzz_memfd(data, size, path, sizeof path);
        if (fd >= 0) {
            const char *why = lackey_ref_compare(path, &ref, 1 + size % 977);
            if (why != NULL) {
                fprintf(stderr, "lackey parser and reference differ: %s\n", why);
                abort();
            }
            close(fd);
        }
    }
    free(ref.recs);
    return 0;
}
