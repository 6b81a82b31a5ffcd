/* libFuzzer target: the raw64 reader, plain (the size check at open, every address value). */
#include "fuzz_trace_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_read_all(data, size, SONDE_TRACE_FORMAT_RAW64);
    return 0;
}
