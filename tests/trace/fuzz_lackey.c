/* libFuzzer target: the lackey text parser (plain and zstd input), and AUTO detection. */
#include "fuzz_trace_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_read_all(data, size, SONDE_TRACE_FORMAT_LACKEY);
    if (size > 0 && (data[0] & 1)) fuzz_read_all(data, size, SONDE_TRACE_FORMAT_AUTO);
    return 0;
}
