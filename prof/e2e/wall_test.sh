#!/bin/sh
# SPDX-License-Identifier: MIT
#
# prof/e2e/wall_test.sh - wall-clock mode (prof/agent/wall.c): prof/e2e/wallwork's
# worker thread computes 22 ms (compute_part) and sleeps 51 ms
# (sleep_part) in a loop for 4 s; profiled at 100 Hz with `record --mode
# wall` and in-process (PROFRING_PROF_MODE=wall); and at the default 50
# Hz under the launcher with a 30 + 70 ms cycle on a fixed grid, a
# multiple of the 20 ms period (aliasing, were the ticks not jittered):
#
#	sh prof/e2e/wall_test.sh [BUILD [LABEL]]
#
# Checks: the program's stdout and exit status are unchanged; the profile
# is a wall profile (period type wall/nanoseconds); of the worker's wall
# time in the profile (go tool pprof -raw), sleep_part has 60-80%, within
# 7 points of its share by the program's own clock (about 70%), and
# compute_part 20-40%; the "state" label says sleeping for at least 90% of
# sleep_part's time and running for at least 80% of compute_part's; the
# worker's total is within 15% of the time it ran; a bad --mode is one
# line and status 2.  And: `sleep 1` (coreutils, no frame pointers) has
# no frame outside every mapping (the walk's junk through its frame
# pointer register, dropped by the writer); sleeps that do not retry
# (`wallwork sleeps`: usleep, nanosleep, clock_nanosleep) never return
# EINTR for our signal and still do for the program's own; a daemon()
# child still running at the end is said on stderr.  About 20 s.
# Skipped under LABEL tsan or asan (an uninstrumented program, as
# e2e_test.sh) and without go.
BUILD=${1:-build}
LABEL=${2:-check}
if [ "$LABEL" = tsan ] || [ "$LABEL" = asan ]; then
	echo "SKIP wall e2e under $LABEL (uninstrumented program)"
	exit 0
fi
if ! command -v go >/dev/null 2>&1; then
	echo "SKIP wall e2e (no go tool pprof)"
	exit 0
fi
CHECK_PREFIX=wall_
. "$(dirname "$0")/../../testing/testlib.sh"

PROF=$BUILD/tools/profring-prof
LIB=$(cd "$BUILD" && pwd)/libprofring-prof.so
PROG=$BUILD/e2e/wallwork
# 100 Hz for 4 s: about 400 samples of the worker, so that a share's
# sampling noise (the ticks are jittered: about 2 points) stays well
# inside the 7 points allowed.
HZ=100
SECS=4

# shares FILE: "total sleep compute sleep_sleeping compute_running" for
# the worker thread, in wall nanoseconds.
shares() {
	go tool pprof -raw "$1" 2>/dev/null | awk '
	/^Samples:/ { sec = "s"; next }
	/^Locations/ { sec = "l"; next }
	/^Mappings/ { sec = "" ; next }
	sec == "s" && /^ *[0-9]+ +[0-9]+: / {
		n++; v[n] = $2 + 0; locs[n] = ""
		for (i = 3; i <= NF; i++) locs[n] = locs[n] " " $i
		next
	}
	sec == "s" && /thread:\[/ {
		if (match($0, /thread:\[[^]]*\]/))
			thr[n] = substr($0, RSTART + 8, RLENGTH - 9)
		if (match($0, /state:\[[^]]*\]/))
			st[n] = substr($0, RSTART + 7, RLENGTH - 8)
		next
	}
	sec == "l" && /^ *[0-9]+: 0x/ { id = $1 + 0; fn[id] = " " $4 " "; next }
	sec == "l" && /^  +[^ ]/ { fn[id] = fn[id] $1 " "; next }
	END {
		for (k = 1; k <= n; k++) {
			if (thr[k] != "worker") continue
			tot += v[k]
			split(locs[k], ids, " ")
			s = 0; c = 0
			for (j in ids) {
				if (index(fn[ids[j]], " sleep_part ")) s = 1
				if (index(fn[ids[j]], " compute_part ")) c = 1
			}
			if (s) { sl += v[k]; if (st[k] == "sleeping") sls += v[k] }
			if (c) { co += v[k]; if (st[k] == "running") cor += v[k] }
		}
		printf "%d %d %d %d %d\n", tot, sl, co, sls, cor
	}'
}

between() { # X LO HI
	awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'
}

# truth ERRFILE: sleep_part's share (%) of the worker's time by its clock
truth() {
	awk '/^wallwork: sleep_part/ { print 100 * $3 / ($3 + $6) }' "$1"
}

# judge NAME FILE ERRFILE [SECONDS]
judge() {
	real=$(truth "$3")
	secs=${4:-$SECS}
	set -- "$1" $(shares "$2")
	jn=$1
	echo "# $jn: worker total $2 ns, sleep_part $3, compute_part $4," \
		"sleeping in sleep_part $5, running in compute_part $6"
	if [ "${2:-0}" -le 0 ]; then
		check "${jn}_samples" false
		return
	fi
	share=$(awk -v a="$3" -v t="$2" 'BEGIN { print 100 * a / t }')
	echo "# $jn: sleep_part $share% of the worker's wall time in the" \
		"profile, $real% by its own clock"
	check "${jn}_sleep_share" between "$share" 60 80
	check "${jn}_sleep_true" between "$share" \
		"$(awk -v r="${real:-0}" 'BEGIN { print r - 7 }')" \
		"$(awk -v r="${real:-0}" 'BEGIN { print r + 7 }')"
	check "${jn}_compute_share" between "$(awk -v a="$4" -v t="$2" 'BEGIN { print 100 * a / t }')" 20 40
	check "${jn}_state_sleeping" between "$(awk -v a="$5" -v t="$3" 'BEGIN { print t ? 100 * a / t : 0 }')" 90 100
	check "${jn}_state_running" between "$(awk -v a="$6" -v t="$4" 'BEGIN { print t ? 100 * a / t : 0 }')" 80 100
	check "${jn}_total" between "$2" $((secs * 850000000)) \
		$((secs * 1150000000))
}

# Under the launcher.
out=$(timeout -k 5 30 "$PROF" record -q --mode wall -F $HZ \
	-o "$TMP/rec.pb.gz" -- "$PROG" $SECS 2>"$TMP/rec.err")
rc=$?
check record_status [ "$rc" = 0 ]
check record_stdout [ "$out" = "wallwork done" ]
check record_wall_type sh -c "go tool pprof -raw '$TMP/rec.pb.gz' 2>/dev/null | grep -q '^PeriodType: wall nanoseconds'"
judge record "$TMP/rec.pb.gz" "$TMP/rec.err"

# A 100 ms cycle on a fixed grid (clock_nanosleep TIMER_ABSTIME) at the
# default 50 Hz: without the ticks' jitter (wall.c) they land on the
# same phases of every cycle, and show 60% or 80% asleep.  6 s: 300
# samples at 50 Hz.
out=$(timeout -k 5 30 "$PROF" record -q --mode wall \
	-o "$TMP/alias.pb.gz" -- "$PROG" 6 30 70 abs 2>"$TMP/alias.err")
check alias_status [ "$?" = 0 ]
judge alias "$TMP/alias.pb.gz" "$TMP/alias.err" 6

# In-process.
out=$(PROFRING_PROF="$TMP/inproc.pb.gz" PROFRING_PROF_MODE=wall \
	PROFRING_PROF_HZ=$HZ timeout -k 5 30 env LD_PRELOAD="$LIB" "$PROG" \
	$SECS 2>"$TMP/inproc.err")
rc=$?
check inproc_status [ "$rc" = 0 ]
check inproc_stdout [ "$out" = "wallwork done" ]
judge inproc "$TMP/inproc.pb.gz" "$TMP/inproc.err"

# coreutils sleep (no frame pointers): its caller frames are whatever its
# frame pointer register held; none may lie outside every mapping.
timeout -k 5 30 "$PROF" record -q --mode wall -o "$TMP/sleep.pb.gz" -- \
	sleep 1 2>"$TMP/sleep.err"
check sleep_status [ "$?" = 0 ]
unmapped() {
	go tool pprof -raw "$1" 2>/dev/null | awk '
	/^Locations/ { l = 1; next }
	/^Mappings/ { l = 0 }
	l && /^ *[0-9]+: 0x/ && !/ M=/ { n++; print "  no mapping: " $0 }
	END { exit n > 0 }'
}
check sleep_no_unmapped_frame unmapped "$TMP/sleep.pb.gz"

# Sleeps that do not retry: our signal never cuts them short (resumed
# with the time left), the program's own still does.
out=$(timeout -k 5 30 "$PROF" record -q --mode wall \
	-o "$TMP/sleeps.pb.gz" -- "$PROG" sleeps 5 2>"$TMP/sleeps.err")
check sleeps_status [ "$?" = 0 ]
check sleeps_stdout [ "$out" = "wallwork done" ]
sed -n 's/^wallwork: /# /p' "$TMP/sleeps.err"
check sleeps_no_eintr grep -q 'EINTR usleep 0 nanosleep 0 clock_nanosleep 0 abs 0;' "$TMP/sleeps.err"
check sleeps_own_signal_eintr grep -q 'own signal: EINTR' "$TMP/sleeps.err"

# A daemon() child outlives the program: said, not silently dropped.
timeout -k 5 30 "$PROF" record -q --mode wall -o "$TMP/daemon.pb.gz" -- \
	"$PROG" daemon >/dev/null 2>"$TMP/daemon.err"
check daemon_status [ "$?" = 0 ]
check daemon_said grep -q 'still ran when it ended' "$TMP/daemon.err"

# A bad mode: one line, status 2.
timeout -k 5 10 "$PROF" record --mode nap -- true 2>"$TMP/bad.err"
rc=$?
check bad_mode_status [ "$rc" = 2 ]
check bad_mode_line sh -c "[ \$(wc -l <'$TMP/bad.err') = 1 ] && grep -q 'want cpu or wall' '$TMP/bad.err'"
checks_done
