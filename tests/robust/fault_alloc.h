/* Allocation fault injection for the robustness tests: the test executable defines malloc,
 * calloc, realloc, free and every operator new/delete (fault_alloc.c, fault_new.cpp), so
 * that every allocation of the process (libsonde, libstdc++, libc, zstd) goes through a
 * counter. Armed with N, the Nth allocation from then on fails (NULL, or std::bad_alloc from
 * operator new) and no later one does. The real allocator is the next definition in the
 * lookup order, libc's.
 *
 * In AddressSanitizer builds only operator new is counted and failed: the sanitizer runtime
 * calls malloc itself (e.g. through pthread_getattr_np when a thread starts) and stops the
 * process if that fails, so the malloc family is left to it. Every allocation of libsonde's
 * own code is an operator new. */
#ifndef SONDE_TEST_FAULT_ALLOC_H
#define SONDE_TEST_FAULT_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Counts allocations from now on and fails the `fail_at`-th (1-based; 0 = count only). */
void fault_arm(uint64_t fail_at);
/* Stops counting; returns how many allocations were counted while armed. */
uint64_t fault_disarm(void);
/* Whether the armed failure has happened. */
bool fault_fired(void);
/* The allocation counter's decision for one allocation (used by fault_new.cpp): true = fail. */
bool fault_should_fail(void);
/* The real allocator, not counted (used by fault_new.cpp). */
void *fault_raw_malloc(size_t size);

#ifdef __cplusplus
}
#endif

#endif
