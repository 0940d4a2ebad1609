#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/threads_accuracy.sh - how much of a thread-per-task program's CPU
# the profile shows (issue 16: every thread's CPU counted).
#
#	sh bench/threads_accuracy.sh [BUILD]
#
# Records prof/e2e/shortthreads (threads of 0.1, 1 and 5 ms of CPU each
# in thread_work(), two at a time, about 1 s of it in all, beside
# main_work() on the main thread) at 99 and 999 Hz, and prints for each
# run thread_work's share by the workload's clocks (truth) and in the
# profile, and the profile's total against the process's CPU time
# (prof/e2e/threads_share.sh says how).  The goal: shares within 5
# points, totals within 5%.  About 20 s on a 2-core machine.  TIMER=posix
# in the environment records with --timer posix (per-thread CPU timers)
# instead of the default perf_event counters.
BUILD=${1:-build}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/threads_accuracy.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
for hz in 99 999; do
	for us in 100 1000 5000; do
		sh "$(dirname "$0")/../prof/e2e/threads_share.sh" "$BUILD" "$TMP" \
			"$hz" $((1000000 / us)) "$us" || exit 1
	done
done
