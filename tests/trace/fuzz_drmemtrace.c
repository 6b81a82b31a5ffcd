/* libFuzzer target: the drmemtrace reader on one thread file. The bytes are taken by their magic
 * as the reader takes them, so the same target reaches plain records, zip archives (libzip),
 * gzip (zlib), lz4 frames and zstd frames: headers, versions, every record and marker type,
 * encodings, bundles, flushes, chunk boundaries and footers. */
#include "fuzz_trace_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_read_all(data, size, SONDE_TRACE_FORMAT_DRMEMTRACE);
    return 0;
}
