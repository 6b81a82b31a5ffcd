/* libFuzzer target: lackey text and raw64 addresses inside zstd streams. The fuzzer's bytes
 * (after the first, which chooses) are compressed here, so the readers get valid frames of
 * arbitrary content: one frame, two frames back to back, or a stream cut inside its last
 * frame; each is read as lackey, as raw64, and by AUTO detection. */
#include <stdlib.h>
#include <zstd.h>

#include "fuzz_trace_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const unsigned mode = data[0];
    ++data;
    --size;
    const size_t bound = ZSTD_compressBound(size) * 2 + 64;
    unsigned char *z = malloc(bound);
    if (z == NULL) return 0;
    const int level = 1 + (int)(mode >> 4) % 5;
    size_t n = 0;
    if (mode & 1) { /* two frames */
        const size_t half = size / 2;
        size_t a = ZSTD_compress(z, bound, data, half, level);
        size_t b = ZSTD_isError(a) ? a : ZSTD_compress(z + a, bound - a, data + half, size - half, level);
        n = ZSTD_isError(a) || ZSTD_isError(b) ? 0 : a + b;
    } else {
        const size_t a = ZSTD_compress(z, bound, data, size, level);
        n = ZSTD_isError(a) ? 0 : a;
    }
    if (n != 0) {
        if ((mode & 2) && n > 4) n -= 1 + (size_t)(mode >> 2) % (n - 4); /* cut inside the last frame */
        fuzz_read_all(z, n, SONDE_TRACE_FORMAT_LACKEY);
        fuzz_read_all(z, n, SONDE_TRACE_FORMAT_RAW64);
        fuzz_read_all(z, n, SONDE_TRACE_FORMAT_AUTO);
    }
    free(z);
    return 0;
}
