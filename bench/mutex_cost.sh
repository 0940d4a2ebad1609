#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/mutex_cost.sh - what the lock profiler costs a lock, uncontended
# and contended, plain beside profiled, in one run.
#
# usage: bash bench/mutex_cost.sh [--reps R] [--n N] [--threads T]
#                                 [--build DIR]
#        defaults: 5 repetitions, N = 20,000,000 uncontended pairs (N/200
#        per thread contended), T = 2 threads.
#
# The workload is build/bench/mutex_storm (bench/mutex_storm.c): a
# lock/unlock loop on one thread (ns of its CPU time per pair), and T
# threads fighting over one mutex, each yielding the CPU while it holds
# it (ns of all the threads' CPU time per acquire; the mutex-r1 run's
# profile says how many of the acquires waited).  CPU time, not wall
# time: on a shared machine the wall time is the scheduler's.
# Each is run, rep by rep interleaved (noise hits all alike):
#   plain        no profiler;
#   idle         under `record -o` (CPU profile, lock hooks present but
#                no lock session: a jump to libc);
#   mutex        under `record --mutex` at the default rate (10);
#   mutex-r1     under `record --mutex --mutex-rate 1` (every contended
#                wait recorded, stack and all).
# Printed: each one's minimum (the least disturbed by other programs on a
# shared machine) and median, and the minimum's difference from plain's.
set -u

reps=5
n=20000000
threads=2
build=build
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
while [ $# -gt 0 ]; do
	case $1 in
	--reps) reps=$2; shift 2 ;;
	--n) n=$2; shift 2 ;;
	--threads) threads=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	*) echo "usage: $0 [--reps R] [--n N] [--threads T] [--build DIR]" >&2; exit 2 ;;
	esac
done
prof="$root/$build/tools/profring-prof"
storm="$root/$build/bench/mutex_storm"
for f in "$prof" "$storm"; do
	[ -x "$f" ] || { echo "mutex_cost: build $f first (make $f)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cn=$((n / 200))

# run TOOL ARGS...: the storm's figure under TOOL.
run() {
	tool=$1
	shift
	case $tool in
	plain) "$storm" "$@" ;;
	idle) "$prof" record -q -o "$tmp/c.pb.gz" -- "$storm" "$@" ;;
	mutex) "$prof" record -q --mutex "$tmp/m.pb.gz" -- "$storm" "$@" ;;
	mutex-r1) "$prof" record --mutex "$tmp/m.pb.gz" --mutex-rate 1 \
		-- "$storm" "$@" 2>>"$tmp/r1.err" ;;
	esac | awk '{ print $2 }'
}

tools="plain idle mutex mutex-r1"
for r in $(seq "$reps"); do
	for t in $tools; do
		run "$t" uncontended "$n" >>"$tmp/u.$t"
		run "$t" contended "$threads" "$cn" >>"$tmp/c.$t"
	done
done
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
least() { sort -g "$1" | head -n 1; }
echo "mutex_cost: $reps reps, $(nproc) CPUs, $(uname -r)"
for w in u c; do
	if [ $w = u ]; then
		echo "uncontended lock+unlock, 1 thread, $n pairs: CPU ns per pair"
	else
		waits=$(grep -o '[0-9]* contentions' "$tmp/r1.err" | tail -n 1 |
			cut -d' ' -f1)
		echo "contended, $threads threads x $cn acquires ($waits waited, in the last rate-1 run): CPU ns per acquire"
	fi
	base=$(least "$tmp/$w.plain")
	for t in $tools; do
		awk -v t="$t" -v l="$(least "$tmp/$w.$t")" -v b="$base" \
			-v m="$(median "$tmp/$w.$t")" \
			'BEGIN { printf "  %-9s min %8.2f (%+.2f vs plain)  median %8.2f\n", t, l, l - b, m }'
	done
done
