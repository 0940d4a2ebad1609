// SPDX-License-Identifier: MIT
/*
 * bench/work/lttng_tp.c - the probes of the provider in lttng_tp.h,
 * compiled into bench/lttng_bench.sh's driver (build/bench/lttng_emit).
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"
