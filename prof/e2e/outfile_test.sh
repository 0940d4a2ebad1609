#!/bin/sh
# SPDX-License-Identifier: MIT
#
# prof/e2e/outfile_test.sh - output files and other users' symlinks
# (issue 35, item 3; pprof/outfile.c), as root with links that user
# nobody planted in a sticky world-writable directory:
#
#	sh prof/e2e/outfile_test.sh [BUILD [LABEL]]
#
# Checks:
# - `record -o S/cpu.pb.gz --heap S/heap.pb.gz` where nobody's links
#   point at VICTIM/passwd and VICTIM/cron-evil: refused before the
#   program runs (status 2, one line naming -o and fs.protected_symlinks),
#   passwd unchanged, cron-evil not created;
# - nobody's link S/x -> VICTIM in the directory part: `-o S/x/cpu.pb.gz`
#   and `--trace S/x/out.trace` refused before the program runs (status
#   2, one line naming the link), nothing created in VICTIM; a --trace
#   file of root's own still written;
# - a dangling link of root's own: refused before the program runs;
# - the link planted while the program runs (after the options were
#   checked): the heap profile is refused when written (status 125, one
#   line naming it and why), passwd unchanged, and the CPU profile still
#   written;
# - what worked still works: a link of root's own in the sticky
#   directory (its target written, the link kept), -o /dev/null (still a
#   device), -o /dev/stdout into a file (appended after the program's
#   output).
# Skipped when not root (two users are needed) or when nobody cannot
# reach the scratch directory.  About 2 s.  Under LABEL tsan or asan the
# launcher is the sanitized one and the program's agent the plain
# build's library (build/): an uninstrumented program cannot load a
# sanitized one; skipped if that library is not built.
BUILD=${1:-build}
LABEL=${2:-check}
if [ "$LABEL" = tsan ] || [ "$LABEL" = asan ]; then
	if [ ! -f build/libprofring-prof.so ]; then
		echo "SKIP outfile e2e under $LABEL (build/ has no plain agent)"
		exit 0
	fi
	PROFRING_PROF_LIB=$(pwd)/build/libprofring-prof.so
	export PROFRING_PROF_LIB
fi
if [ "$(id -u)" != 0 ]; then
	echo "SKIP outfile e2e (needs root, to be root and nobody)"
	exit 0
fi
CHECK_PREFIX=outfile_
. "$(dirname "$0")/../../testing/testlib.sh"

PROF=$(cd "$BUILD/tools" && pwd)/profring-prof
S=$TMP/sticky
V=$TMP/victim
chmod 755 "$TMP"
mkdir "$S" "$V" && chmod 1777 "$S"
printf 'secret\n' >"$V/passwd"

# as_nobody CMD...: run CMD as user nobody.
as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@" 2>/dev/null ||
		setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

if ! as_nobody ln -s "$V/passwd" "$S/cpu.pb.gz" 2>"$TMP/nobody.err"; then
	echo "SKIP outfile e2e (nobody cannot make a link in $S:" \
		"$(head -1 "$TMP/nobody.err"))"
	exit 0
fi
as_nobody ln -s "$V/cron-evil" "$S/heap.pb.gz"

# unchanged: passwd holds what it held.
unchanged() {
	[ "$(cat "$V/passwd")" = secret ]
}

"$PROF" record -o "$S/cpu.pb.gz" --heap "$S/heap.pb.gz" -- \
	sh -c "touch '$TMP/ran'" >"$TMP/planted.out" 2>"$TMP/planted.err"
rc=$?
check planted_refused [ $rc = 2 ]
check planted_one_line [ "$(wc -l <"$TMP/planted.err")" = 1 ]
check planted_says_why grep -q -- "-o $S/cpu.pb.gz: .*fs.protected_symlinks" \
	"$TMP/planted.err"
check planted_not_run [ ! -e "$TMP/ran" ]
check planted_passwd_unchanged unchanged
check planted_nothing_created [ ! -e "$V/cron-evil" ]

# nobody's link in the directory part (S/x -> V): refused before the
# program runs, for -o and for --trace; nothing created in V.
as_nobody ln -s "$V" "$S/x"
"$PROF" record -o "$S/x/cpu.pb.gz" -- sh -c "touch '$TMP/ran'" \
	>"$TMP/dir.out" 2>"$TMP/dir.err"
rc=$?
check dir_link_refused [ $rc = 2 ]
check dir_link_one_line [ "$(wc -l <"$TMP/dir.err")" = 1 ]
check dir_link_says_why grep -q -- \
	"-o $S/x/cpu.pb.gz: .*$S/x, a symlink .*fs.protected_symlinks" \
	"$TMP/dir.err"
check dir_link_not_run [ ! -e "$TMP/ran" ]
check dir_link_nothing_created [ ! -e "$V/cpu.pb.gz" ]
"$PROF" record -q -o "$TMP/t.pb.gz" --trace "$S/x/out.trace" -- true \
	2>"$TMP/dirtrace.err"
rc=$?
check dir_link_trace_refused [ $rc = 2 ]
check dir_link_trace_says_why grep -q -- "--trace .*fs.protected_symlinks" \
	"$TMP/dirtrace.err"
check dir_link_trace_nothing_created [ ! -e "$V/out.trace" ]
"$PROF" record -q -o "$TMP/t.pb.gz" --trace "$TMP/out.trace" -- true \
	2>"$TMP/trace.err"
check trace_written [ -s "$TMP/out.trace" ]

ln -s "$V/nothing" "$S/dangling"
"$PROF" record -o "$S/dangling" -- true 2>"$TMP/dangling.err"
rc=$?
check dangling_refused [ $rc = 2 ]
check dangling_says_why grep -q "dangling symlink" "$TMP/dangling.err"
check dangling_nothing_created [ ! -e "$V/nothing" ]

# The link appears while the program runs: refused when the heap profile
# is written; the CPU profile is written all the same.
"$PROF" record -q -o "$S/cpu2.pb.gz" --heap "$S/heap2.pb.gz" -- \
	setpriv --reuid=65534 --regid=65534 --clear-groups \
	ln -s "$V/passwd" "$S/heap2.pb.gz" 2>"$TMP/late.err"
rc=$?
check late_status_125 [ $rc = 125 ]
check late_one_line [ "$(wc -l <"$TMP/late.err")" = 1 ]
check late_says_why grep -q \
	"cannot write $S/heap2.pb.gz: .*fs.protected_symlinks" "$TMP/late.err"
check late_passwd_unchanged unchanged
check late_cpu_written gzip -t "$S/cpu2.pb.gz"

printf 'old\n' >"$V/own"
ln -s "$V/own" "$S/mine"
"$PROF" record -q -o "$S/mine" -- true 2>"$TMP/own.err"
check own_link_written gzip -t "$V/own"
check own_link_kept [ -L "$S/mine" ]

"$PROF" record -q -o /dev/null -- true 2>"$TMP/null.err"
check dev_null_written [ $? = 0 ]
check dev_null_stays [ -c /dev/null ]

"$PROF" record -q -o /dev/stdout -- echo program >"$TMP/stdout" \
	2>"$TMP/stdout.err"
check stdout_appended [ "$(head -c 8 "$TMP/stdout")" = program ]
check stdout_profile sh -c "tail -c +9 '$TMP/stdout' | gzip -t"
checks_done
