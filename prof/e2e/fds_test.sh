#!/bin/sh
# SPDX-License-Identifier: MIT
#
# prof/e2e/fds_test.sh - the profiler never touches the program's file
# descriptors (issue 37 items 1 and 3, issue 30's "Descriptors"):
# `profring-prof record -F 999` on prof/e2e/fds:
#
#	sh prof/e2e/fds_test.sh [BUILD [LABEL]]
#
#   exit_close	a thread closes 3..255, opens 8 files (3..10) and exits:
#		the program's writes to them still work (status 0).
#   exit_dup2	a thread dup2()s /dev/null over every descriptor above 2
#		and exits: every one is still open afterwards.
#   start_close, start_dup2: the main thread does the same at start and
#		then burns 0.4 s of CPU: it is sampled (by timers, once the
#		counter is gone: at least 25 samples, and no warning that
#		the samples account for less than half the CPU), and the
#		profile's comment says the program closed a counter's
#		descriptor.
#   threads	with `ulimit -n 256`, 400 live threads, then the program
#		opens 100 files: every open succeeds, and the comment says
#		the counters stopped at half the descriptor limit.
#
# Each run is bounded by timeout(1); about 2 s of CPU in all.  Skipped where the
# kernel refuses perf counters (perf_event_paranoid above 2, a seccomp
# filter: the profile then names no perf_event counter, and the program's
# descriptors hold nothing of ours), and under LABEL tsan or asan (an
# uninstrumented program, as e2e_test.sh).
BUILD=${1:-build}
LABEL=${2:-check}
if [ "$LABEL" = tsan ] || [ "$LABEL" = asan ]; then
	echo "SKIP fds e2e under $LABEL (uninstrumented program)"
	exit 0
fi
PROF=$(cd "$BUILD/tools" && pwd)/profring-prof
F=$(cd "$BUILD/e2e" && pwd)/fds
CHECK_PREFIX=fds_
. "$(dirname "$0")/../../testing/testlib.sh"

# run NAME NOFILE ARG...: the launcher under `ulimit -n NOFILE`; status
# in $st.
run() {
	name=$1
	nofile=$2
	shift 2
	(
		ulimit -n "$nofile" || exit 99
		exec timeout -k 5 60 "$PROF" record -F 999 \
			-o "$TMP/$name.pb.gz" -- "$F" "$@"
	) >"$TMP/$name.out" 2>"$TMP/$name.err"
	st=$?
}

done_ok() { # NAME MODE: status 0 and the program's last line
	[ "$st" -eq 0 ] && grep -qx "fds $2: done" "$TMP/$1.out"
}

comment_says() { # NAME TEXT: the profile's strings hold TEXT
	gzip -dc "$TMP/$1.pb.gz" 2>/dev/null | grep -aq "$2"
}

sampled() { # NAME MIN: the summary's sample count is at least MIN
	n=$(sed -n 's/.*wrote .*: \([0-9]*\) samples.*/\1/p' "$TMP/$1.err")
	echo "# $1: ${n:-no} samples"
	[ -n "$n" ] && [ "$n" -ge "$2" ]
}

run exit_close 1024 exit-close
if [ "$st" -eq 0 ] && ! comment_says exit_close perf_event; then
	paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null)
	echo "SKIP fds e2e (no perf_event counter could be opened:" \
		"perf_event_paranoid ${paranoid:-unknown}; timers hold no" \
		"descriptor)"
	exit 0
fi
check exit_close done_ok exit_close exit-close

run exit_dup2 256 exit-dup2
check exit_dup2 done_ok exit_dup2 exit-dup2

no_warning() { # NAME: the samples account for the CPU (record.c's warn)
	! grep -q "samples account for" "$TMP/$1.err"
}

# 0.4 s of CPU: about 100 samples of tick-bound timers (250 Hz), and the
# watch takes 20 ms to see the counter gone.
for m in close dup2; do
	run start_$m 1024 start-$m
	check start_$m done_ok start_$m start-$m
	check start_${m}_sampled sampled start_$m 25
	check start_${m}_no_warning no_warning start_$m
	check start_${m}_said comment_says start_$m \
		"where the program closed a counter's descriptor"
done

run threads 256 threads 400 100
check threads done_ok threads threads
check threads_said comment_says threads "up to half the descriptor limit"
checks_done
