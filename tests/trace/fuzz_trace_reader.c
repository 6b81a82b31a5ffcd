/* libFuzzer target: the Sonde trace reader (header, footer, index, recovery scan, chunks). */
#include "fuzz_trace_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_read_all(data, size, SONDE_TRACE_FORMAT_SONDE);
    return 0;
}
