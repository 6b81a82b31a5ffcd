// Stable per-thread index for profile-array buckets: the only per-thread state of the profile
// concept. Each thread owns its own slot; the global counter is the only shared datum.
#include <atomic>
#include <cstdint>

#include "profile/profile.h"

namespace sonde::profile {

namespace {

std::atomic<uint32_t> g_next_index{0};

// index + 1, or 0 while the thread has none. Initial-exec TLS: a %fs-relative load with no
// __tls_get_addr call. A dlopen'ed libsonde still gets it because the variable is 4 bytes and
// glibc reserves a static TLS surplus for initial-exec variables of libraries loaded later.
thread_local uint32_t t_index_plus_one __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace

// Cost: one TLS load and a predictable branch after the thread's first call.
uint32_t thread_index() {
    uint32_t v = t_index_plus_one;
    if (__builtin_expect(v == 0, 0)) {
        v = g_next_index.fetch_add(1, std::memory_order_relaxed) + 1;
        if (v == 0) v = g_next_index.fetch_add(1, std::memory_order_relaxed) + 1;  // wrapped
        t_index_plus_one = v;
    }
    return v - 1;
}

void set_thread_index(uint32_t index) { t_index_plus_one = index + 1; }

}  // namespace sonde::profile
