/* SPDX-License-Identifier: MIT */
/*
 * bench/work/lttng_tp.h - the LTTng-UST tracepoint provider of
 * bench/lttng_bench.sh: one event, profring_bench:ev2, with two 64-bit
 * integer fields, the peer of a 2-argument tracebuf_emit().  Included
 * twice by lttng-ust's machinery (hence the unusual guard), as its
 * documentation asks of a provider header.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER profring_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(PROFRING_LTTNG_TP_H) || \
	defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define PROFRING_LTTNG_TP_H

#include <stdint.h>

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(
	profring_bench, ev2, LTTNG_UST_TP_ARGS(uint64_t, a, uint64_t, b),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, a, a)
				    lttng_ust_field_integer(uint64_t, b, b)))

#endif /* PROFRING_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
