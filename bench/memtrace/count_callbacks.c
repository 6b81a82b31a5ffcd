/* The anchor of bench_memtrace: sanitizer-coverage callbacks that only count the accesses (the
 * least a runtime can do), printed at exit on stderr. Single-threaded use (the bench's
 * program). */
#include <stdint.h>
#include <stdio.h>

#define API __attribute__((visibility("default")))

static uint64_t g_loads, g_stores;

API void __sanitizer_cov_load1(uint8_t *p) {
    (void)p;
    ++g_loads;
}
API void __sanitizer_cov_load2(uint16_t *p) {
    (void)p;
    ++g_loads;
}
API void __sanitizer_cov_load4(uint32_t *p) {
    (void)p;
    ++g_loads;
}
API void __sanitizer_cov_load8(uint64_t *p) {
    (void)p;
    ++g_loads;
}
API void __sanitizer_cov_load16(void *p) {
    (void)p;
    ++g_loads;
}
API void __sanitizer_cov_store1(uint8_t *p) {
    (void)p;
    ++g_stores;
}
API void __sanitizer_cov_store2(uint16_t *p) {
    (void)p;
    ++g_stores;
}
API void __sanitizer_cov_store4(uint32_t *p) {
    (void)p;
    ++g_stores;
}
API void __sanitizer_cov_store8(uint64_t *p) {
    (void)p;
    ++g_stores;
}
API void __sanitizer_cov_store16(void *p) {
    (void)p;
    ++g_stores;
}
API void __sanitizer_cov_trace_pc_guard_init(uint32_t *start, uint32_t *stop) {
    (void)start;
    (void)stop;
}
API void __sanitizer_cov_trace_pc_guard(uint32_t *guard) { (void)guard; }

__attribute__((destructor)) static void report(void) {
    fprintf(stderr, "loads %llu stores %llu\n", (unsigned long long)g_loads, (unsigned long long)g_stores);
}
