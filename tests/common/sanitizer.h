/* Whether this test program is built with ThreadSanitizer (gcc: __SANITIZE_THREAD__; clang:
 * __has_feature). TSan makes every memory access several times dearer, so the concurrency tests
 * that also run in that build (suite 'stress') take fewer worker counts or smaller inputs there:
 * what TSan checks is the threads' interplay, which the smaller runs exercise as much; the
 * other builds keep the full sizes and every count. */
#pragma once

#if defined(__SANITIZE_THREAD__)
#define SONDE_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SONDE_TEST_TSAN 1
#endif
#endif
#ifndef SONDE_TEST_TSAN
#define SONDE_TEST_TSAN 0
#endif
