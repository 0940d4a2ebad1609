#!/bin/sh
# SPDX-License-Identifier: MIT
#
# prof/e2e/sigmask_test.sh - a program that blocks and collects every
# signal itself never reads ours, and is still sampled (issue 37 item 2,
# issue 30's "Signal masks"): `profring-prof record` on prof/e2e/sigmask.c
# (built here, with frame pointers):
#
#	sh prof/e2e/sigmask_test.sh [BUILD [LABEL]]
#
# drain: the main thread blocks every signal with sigprocmask() and burns
# 0.5 s of CPU in burn(), draining every signal with a signalfd and
# sigtimedwait(); a second thread blocks every signal with
# pthread_sigmask() and sleeps in sigwaitinfo().  The program exits 1 if
# it reads any signal it did not send, if a wait returns early (EINTR),
# or if a mask reads back other than as it set it.  Under record (per-
# thread timers, the process timer, wall mode) it must exit 0 as it does
# alone, and the profile must hold samples of burn() (the main thread's).
# own: the program takes the highest real-time signal for itself (blocks
# it, sends it, waits for it with no handler): it must get its own, and
# the launcher say that sampling stopped.  late: the program blocks every
# signal, then installs a handler for the highest real-time signal (a
# takeover) and sends it to itself: it stays pending until the program
# unblocks it, as the program set.  About 4 s.  Under LABEL tsan or
# asan it is skipped (an uninstrumented program, as e2e_test.sh).
BUILD=${1:-build}
LABEL=${2:-check}
if [ "$LABEL" = tsan ] || [ "$LABEL" = asan ]; then
	echo "SKIP sigmask e2e under $LABEL (uninstrumented program)"
	exit 0
fi
PROF=$(cd "$BUILD/tools" && pwd)/profring-prof
CHECK_PREFIX=sigmask_
. "$(dirname "$0")/../../testing/testlib.sh"

P=$TMP/sigmask
if ! ${CC:-cc} -D_GNU_SOURCE -std=c11 -O2 -g -fno-omit-frame-pointer \
	-o "$P" "$(dirname "$0")/sigmask.c" -lpthread 2>"$TMP/cc.err"; then
	check built false
	checks_done
fi

# run NAME OPTS... -- ARGS...: the launcher, bounded; status in $st.
run() {
	name=$1
	shift
	timeout -k 5 60 "$PROF" record -o "$TMP/$name.pb.gz" \
		-f "$TMP/$name.folded" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	st=$?
}

# burned NAME: the folded profile has samples in burn().
burned() {
	awk '/burn/ { n += $NF } END { exit !(n > 0) }' "$TMP/$1.folded"
}

# clean NAME WORD: exit 0, WORD printed, nothing foreign read.
clean() {
	[ "$st" -eq 0 ] && grep -qx "$2" "$TMP/$1.out" &&
		! grep -q '^sigmask:' "$TMP/$1.err"
}

timeout -k 5 60 "$P" >"$TMP/plain.out" 2>"$TMP/plain.err"
st=$?
check plain_exits_0 clean plain drained

for mode in thread process wall; do
	case $mode in
	thread) opts= ;;
	process) opts="--timer process" ;;
	wall) opts="--mode wall" ;;
	esac
	run "$mode" $opts -- "$P"
	check "${mode}_reads_nothing_of_ours" clean "$mode" drained
	check "${mode}_main_thread_sampled" burned "$mode"
done

run own -- "$P" own
check own_gets_its_signal clean own own
check own_said grep -q 'signal [0-9]*.*sampling stopped' "$TMP/own.err"

run late -- "$P" late
check late_handler_waits_for_unblock clean late late
check late_said grep -q 'signal [0-9]*.*sampling stopped' "$TMP/late.err"

checks_done
