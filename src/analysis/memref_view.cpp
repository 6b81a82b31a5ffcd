// The 1.0 view of a memref stream (see memref_view.h).
#include "analysis/memref_view.h"

namespace sonde::analysis {

namespace {

// True when a 1.0 tool sees the record exactly as it is.
inline bool is_1_0(const sonde_memref_t &m) {
    return m.type <= SONDE_MEMREF_IFETCH ||
           (m.type == SONDE_MEMREF_MARKER && m.size >= SONDE_MARKER_TIMESTAMP &&
            m.size <= SONDE_MARKER_CPU_ID);
}

}  // namespace

const sonde_memref_t *LegacyView::view(const sonde_memref_t *p, size_t n, size_t *count) {
    size_t first = 0;
    while (first < n && is_1_0(p[first])) ++first;
    if (first == n) {
        *count = n;
        return p;
    }
    if (copy_.size() < n) copy_.resize(n);
    sonde_memref_t *out = copy_.data();
    size_t k = 0;
    for (size_t i = 0; i < first; ++i) out[k++] = p[i];
    for (size_t i = first; i < n; ++i) {
        const sonde_memref_t &m = p[i];
        if (is_1_0(m)) {
            out[k++] = m;
        } else if (sonde_memref_type_is_instr(m.type)) {
            out[k] = m;
            out[k++].type = SONDE_MEMREF_IFETCH;
        }
    }
    *count = k;
    return out;
}

}  // namespace sonde::analysis
