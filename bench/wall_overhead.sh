#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/wall_overhead.sh - what wall-clock mode (--mode wall, prof/agent/wall.c)
# costs and does to programs.
#
# usage: sh bench/wall_overhead.sh [BUILD [REPS [THREADS [MITERS]]]]
#        (defaults: build, 5 repetitions, 100 threads, 3000 million)
#
# 1. Overhead: bench/work/wall_sleepers (THREADS threads asleep, the main
#    thread computing MITERS million iterations), plain and in-process
#    with PROFRING_PROF_MODE=wall (50 Hz), alternating, REPS times each:
#    the compute loop's wall time and the process's CPU time (user + sys:
#    the program, the ticker and the collector), medians.  Then the same
#    process idle for 5 s (no compute), its threads waking every 200 ms
#    and then never: the CPU the profiler itself takes, which a loaded
#    machine's noise does not hide.
# 2. EINTR: bench/work/wall_eintr (three 1 s waits, each one call not
#    retried) with poll, select, epoll_wait and nanosleep, plain and under
#    `record --mode wall`; `sh -c 'for i in 1 2 3; do sleep 1; done'` and
#    python3.11's time.sleep(2), plain and under `record --mode wall`
#    (--children for the shell's sleeps): wall time and exit status.
set -eu
BUILD=${1:-build}
REPS=${2:-5}
THREADS=${3:-100}
MITERS=${4:-3000}
PROF=$BUILD/tools/profring-prof
LIB=$(cd "$BUILD" && pwd)/libprofring-prof.so
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# run1 MODE [IDLE_S [NAP_MS]]: "compute_s cpu_s" of one run
run1() {
	idle=${2:-0}
	nap=${3:-200}
	if [ "$1" = wall ]; then
		PROFRING_PROF="$TMP/w.pb.gz" PROFRING_PROF_MODE=wall \
			/usr/bin/time -f "%U %S" -o "$TMP/t" \
			env LD_PRELOAD="$LIB" "$BUILD/bench/wall_sleepers" \
			"$THREADS" "$miters" "$idle" "$nap" >"$TMP/o" 2>/dev/null
	else
		/usr/bin/time -f "%U %S" -o "$TMP/t" \
			"$BUILD/bench/wall_sleepers" "$THREADS" "$miters" "$idle" \
			"$nap" >"$TMP/o"
	fi
	echo "$(awk '{ print $2 }' "$TMP/o") $(awk '{ print $1 + $2 }' "$TMP/t")"
}

miters=$MITERS
: >"$TMP/plain"
: >"$TMP/wall"
i=0
while [ $i -lt "$REPS" ]; do
	run1 plain >>"$TMP/plain"
	run1 wall >>"$TMP/wall"
	i=$((i + 1))
done
for m in plain wall; do
	echo "overhead $m: $THREADS sleeping threads, compute median" \
		"$(awk '{ print $1 }' "$TMP/$m" | median) s, process CPU median" \
		"$(awk '{ print $2 }' "$TMP/$m" | median) s ($REPS runs)"
done
miters=0
for nap in 200 100000; do
	for m in plain wall; do
		echo "idle $m: $THREADS threads waking every $nap ms, 5 s," \
			"process CPU $(run1 $m 5 $nap | awk '{ print $2 }') s"
	done
done

for how in poll select epoll nanosleep; do
	echo "eintr plain: $("$BUILD/bench/wall_eintr" $how)"
	echo "eintr wall:  $("$PROF" record -q --mode wall -o "$TMP/e.pb.gz" -- \
		"$BUILD/bench/wall_eintr" $how)"
done
for m in plain wall; do
	set -- sh -c 'for i in 1 2 3; do sleep 1; done'
	[ $m = wall ] && set -- "$PROF" record -q --mode wall --children \
		-o "$TMP/s.pb.gz" -- "$@"
	/usr/bin/time -f "sleep loop $m: %e s, status %x" "$@"
done
if PY=$(command -v python3.11); then
	PY=$(pyenv which python3.11 2>/dev/null || echo "$PY")
	for m in plain wall; do
		set -- "$PY" -c 'import time; time.sleep(2)'
		[ $m = wall ] && set -- "$PROF" record -q --mode wall \
			-o "$TMP/p.pb.gz" -- "$@"
		/usr/bin/time -f "python3.11 sleep(2) $m: %e s, status %x" "$@"
	done
fi
