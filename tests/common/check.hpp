// For the C++ tests of internal interfaces that run without cmocka: check() prints what failed
// and counts it, and finish() turns the count into the exit status.
#pragma once

#include <cstdio>

namespace sonde_test {

inline int failures = 0;

// On failure prints `what` and the value found, and counts it; the test goes on.
inline void check(bool ok, const char *what, unsigned long long got) {
    if (ok) return;
    std::fprintf(stderr, "FAIL: %s (got %llu)\n", what, got);
    ++failures;
}

// main()'s status: 1 if any check failed, else 0 after printing that `name` passed.
inline int finish(const char *name) {
    if (failures != 0) return 1;
    std::printf("%s: all checks passed\n", name);
    return 0;
}

}  // namespace sonde_test
