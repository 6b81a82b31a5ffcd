// The 1.0 view of a memref stream (the rule in sonde/trace.h, sonde_memref_kind_value): what
// the analyzer hands a tool that did not ask for the 1.2 memref model. Fetched instructions of
// every kind become SONDE_MEMREF_IFETCH; the other 1.2 kinds and markers other than TIMESTAMP,
// THREAD_SWITCH and CPU_ID are left out; the rest passes unchanged.
//
// Threads: a LegacyView belongs to one thread (one per worker in parallel mode).
#pragma once

#include <cstddef>
#include <vector>

#include <sonde/trace.h>

namespace sonde::analysis {

class LegacyView {
public:
    // The records of [p, p + n) in the 1.0 view: `p` itself when every record is a 1.0 record
    // (the common case for Sonde, lackey and raw64 inputs: one scan, no copy), else a copy
    // owned by this object, valid until the next call. *count receives the number of records.
    // Cost: one pass over the span; a copy of each kept record when some record changes.
    const sonde_memref_t *view(const sonde_memref_t *p, size_t n, size_t *count);

private:
    std::vector<sonde_memref_t> copy_;
};

}  // namespace sonde::analysis
