// Test-only hook of the stackdist tests: reaches the calculator's hidden fault injector, which
// libsonde never exports. Linked into test_stackdist_verify together with the stackdist
// sources themselves.
#include <cstdint>

#include "stackdist/handle.h"

extern "C" void stackdist_test_inject_fault(sonde_stackdist_t *sd, uint64_t nth_call) {
    sd->reuse.stack().inject_fault(nth_call);
}
