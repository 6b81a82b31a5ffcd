/* LTTng-UST tracepoint provider for the emit benchmark: the same 16-byte payload that the
 * Sonde timestamped record carries (LTTng adds its own timestamp). */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER sonde_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./tp.h"

#if !defined(SONDE_BENCH_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define SONDE_BENCH_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(sonde_bench, record, LTTNG_UST_TP_ARGS(uint64_t, a, uint64_t, b),
                           LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, a, a)
                                                   lttng_ust_field_integer(uint64_t, b, b)))

#endif

#include <lttng/tracepoint-event.h>
