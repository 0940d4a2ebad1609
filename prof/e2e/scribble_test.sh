#!/bin/sh
# SPDX-License-Identifier: MIT
#
# prof/e2e/scribble_test.sh - `profring-prof record` on a program that
# writes over the profiler's shared memory (prof/e2e/scribble.c):
#
#	sh prof/e2e/scribble_test.sh [BUILD [LABEL]]
#
# Whatever the program writes there (every byte 0xff, random words for
# 1.5 s, the ring's geometry, the reader's state, the memfd truncated,
# dead writers forged all over the ring, the counters), the launcher
# must: pass on the program's output and exit status (7), finish in
# bounded time (timeout(1) fails a run that hangs), write a profile `go
# tool pprof` reads with the samples read before the scribbles, say on
# stderr what was corrupted instead of printing forged counts, and never
# die.  Under LABEL asan or tsan the launcher is the sanitized one and
# the program's agent the plain build's library (build/), since an
# uninstrumented program cannot load a sanitized one; skipped if that
# library is not built.
BUILD=${1:-build}
LABEL=${2:-check}
PROF=$(cd "$BUILD/tools" && pwd)/profring-prof
S=$(cd "$BUILD/e2e" 2>/dev/null && pwd)/scribble
CHECK_PREFIX=scribble_
if [ "$LABEL" = tsan ] || [ "$LABEL" = asan ]; then
	if [ ! -f build/libprofring-prof.so ] || [ ! -x build/e2e/scribble ]; then
		echo "SKIP scribble under $LABEL (build/ has no plain agent)"
		exit 0
	fi
	PROFRING_PROF_LIB=$(pwd)/build/libprofring-prof.so
	export PROFRING_PROF_LIB
	S=$(pwd)/build/e2e/scribble
fi
. "$(dirname "$0")/../../testing/testlib.sh"

# run NAME MODE [SEED]: the launcher, bounded; status in $st.
run() {
	name=$1
	shift
	timeout -k 5 60 "$PROF" record -o "$TMP/$name.pb.gz" -- "$S" "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err"
	st=$?
}

kept() { # NAME MODE: the program's line and status, a profile
	[ "$st" -eq 7 ] && grep -qx "scribble $2: done" "$TMP/$1.out" &&
		[ -s "$TMP/$1.pb.gz" ] && go_reads "$1"
}

says() { grep -q "$2" "$TMP/$1.err"; }

# No number in the summary line longer than 12 digits: nothing forged.
no_forged_counts() {
	! grep '^profring-prof: wrote' "$TMP/$1.err" | grep -q '[0-9]\{13\}'
}

for mode in ff dataoff dead; do
	run "$mode" "$mode"
	check "${mode}_program_and_profile_kept" kept "$mode" "$mode"
	check "${mode}_said_corrupted" says "$mode" 'ring was found corrupted'
	check "${mode}_no_forged_counts" no_forged_counts "$mode"
done

# The reader's state is the launcher's own: every sample is read.
run state state
check state_program_and_profile_kept kept state state
check state_all_read says state 'signals \([0-9]*\) = read \1 + lost 0'

# The memfd's size is sealed: the program cannot truncate it.
run truncate truncate
check truncate_program_and_profile_kept kept truncate truncate
check truncate_refused sh -c "! grep -q truncated '$TMP/truncate.out'"

run counters counters
check counters_program_and_profile_kept kept counters counters
check counters_not_shown says counters 'counters are not shown'
check counters_no_forged_counts no_forged_counts counters

for seed in 1 2 3; do
	run "random$seed" random "$seed"
	check "random${seed}_program_and_profile_kept" kept "random$seed" random
	check "random${seed}_no_forged_counts" no_forged_counts "random$seed"
done

checks_done
