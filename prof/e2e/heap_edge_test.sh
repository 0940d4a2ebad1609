#!/bin/sh
# SPDX-License-Identifier: MIT
#
# prof/e2e/heap_edge_test.sh - the heap profiler's edge cases, read back
# with `profring-prof report` (prof/e2e/heapedge.c's known counts):
#
#	sh prof/e2e/heap_edge_test.sh [BUILD [LABEL]]
#
# - a realloc that fails leaves the profile unchanged; reallocarray counts
#   once; reallocs and allocations racing for the same addresses in four
#   threads keep each FREE before the next ALLOC of its address;
# - in-process CPU + heap with a small ring: the heap records it refused
#   are not counted as lost CPU samples (signals = read + lost);
# - jemalloc and tcmalloc_minimal in the user's LD_PRELOAD (`record` puts
#   the library first, so the allocator serves our malloc); in-process
#   with the allocator first, one warning line and a profile comment;
#   under `record`, a program with its own malloc (heapown.c): one line;
#   a non-PIE program that takes malloc's address (heapplt.c, as python3.11
#   and node do): its allocations seen, no line;
# - a forking wrapper (timeout, xargs) run with PROFRING_PROF_HTTP: the
#   child writes no file.
# Skipped under tsan/asan (no interposed malloc there).
BUILD=${1:-build}
LABEL=${2:-check}
if [ "$LABEL" = tsan ] || [ "$LABEL" = asan ]; then
	echo "SKIP heap edge e2e under $LABEL (no interposed malloc there)"
	exit 0
fi
PROF=$(cd "$BUILD/tools" && pwd)/profring-prof
LIB=$(cd "$BUILD" && pwd)/libprofring-prof.so
W=$(cd "$BUILD/e2e" && pwd)/heapedge
OWN=$(cd "$BUILD/e2e" && pwd)/heapown
PLT=$(cd "$BUILD/e2e" && pwd)/heapplt
CHECK_PREFIX=heap_edge_
. "$(dirname "$0")/../../testing/testlib.sh"

# value FILE TYPE FUNCTION: the flat value of FUNCTION under sample TYPE.
value() {
	"$PROF" report -n 1000 -s "$2" "$TMP/$1" 2>/dev/null |
		awk -v f="$3" '$NF == f { v = $1 } END { print v + 0 }'
}

# comment FILE: the profile's comment lines.
comment() {
	"$PROF" report -n 1 "$TMP/$1" 2>/dev/null | grep '^Comment:'
}

# has FILE PATTERN: a comment of FILE matches PATTERN (grep -E).
has() {
	comment "$1" | grep -Eq "$2"
}

# heap NAME [PRELOAD] -- MODE: record heapedge MODE at rate 1 into NAME.pb.gz
# (stdout NAME.out, stderr NAME.err) with LD_PRELOAD=PRELOAD; the status.
heap() {
	n=$1
	pre=$2
	shift 3
	(cd "$TMP" && LD_PRELOAD=$pre timeout -k 5 60 "$PROF" record -q \
		--heap "$TMP/$n.pb.gz" --heap-rate 1 -- "$W" "$@" \
		>"$TMP/$n.out" 2>"$TMP/$n.err")
}

# A failed realloc: the 8 MiB block is still in use, no free matched.
heap fail "" -- realloc_fail
check realloc_fail_runs test $? = 0 -a "$(cat "$TMP/fail.out")" = \
	"heapedge realloc_fail"
check realloc_fail_keeps_block test "$(value fail.pb.gz inuse_space \
	f_realloc_fail)" = 8388608
check realloc_fail_no_free has fail.pb.gz 'frees matched 0,'

# reallocarray: 100 allocations of 1 MiB, 10 in use; counted once.
heap ra "" -- reallocarray
check reallocarray_once test "$(value ra.pb.gz alloc_objects \
	f_reallocarray)" = 100 -a "$(value ra.pb.gz alloc_space \
	f_reallocarray)" = 104857600
check reallocarray_inuse test "$(value ra.pb.gz inuse_space \
	f_reallocarray)" = 10485760 -a "$(value ra.pb.gz inuse_space \
	reallocarray)" = 0

# Four threads: malloc, realloc (moved), free; every address comes back.
heap churn "" -- churn
check churn_counts test "$(value churn.pb.gz alloc_objects f_churn)" = \
	16000 -a "$(value churn.pb.gz inuse_objects f_churn)" = 0
check churn_free_before_reuse has churn.pb.gz 'unknown 0, replaced 0,'

# In-process CPU + heap, a ring far too small for the heap records.
(cd "$TMP" && timeout -k 5 60 env PROFRING_PROF="$TMP/sp.cpu.pb.gz" \
	PROFRING_PROF_HEAP="$TMP/sp.pb.gz" PROFRING_PROF_HEAP_RATE=1 \
	PROFRING_PROF_BUFFER_WORDS=512 LD_PRELOAD="$LIB" "$W" spin \
	>"$TMP/sp.out" 2>"$TMP/sp.err")
check inprocess_spin_runs test $? = 0
# books LINE: LINE has one "signals S = read R + lost L", and it adds up.
books() {
	printf '%s\n' "$1" | grep -o 'signals [0-9]* = read [0-9]* + lost [0-9]*' |
		awk '{ ok = $2 == $5 + $8; n++ } END { exit !(n == 1 && ok) }'
}
refused=$(comment sp.pb.gz | sed -n 's/.*refused \([0-9]*\);.*/\1/p')
echo "  in-process spin: heap records refused ${refused:-?}; $(comment \
	sp.cpu.pb.gz | grep -o 'signals.*lost [0-9]*')"
# Heap records wait for room (profbuf_write_wait()): none is refused even
# in a 512-word ring; CPU samples cannot wait and are counted lost.
check inprocess_heap_none_refused test "${refused:-1}" -eq 0
check inprocess_cpu_books books "$(comment sp.cpu.pb.gz)"
check inprocess_summary_books books "$(grep 'wrote .*cpu.pb.gz' "$TMP/sp.err")"

# An allocator in the user's LD_PRELOAD.
find_lib() {
	for d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu \
		/usr/lib64 /usr/lib /usr/local/lib; do
		[ -e "$d/$1" ] && echo "$d/$1" && return
	done
}
for a in libjemalloc.so.2 libtcmalloc_minimal.so.4; do
	al=${a%%.so*}
	so=$(find_lib $a)
	if [ -z "$so" ]; then
		echo "SKIP ${CHECK_PREFIX}$al (no $a: deps.sh installs it)"
		continue
	fi
	heap "$al.ra" "$so" -- reallocarray
	st=$?
	check ${al}_preloaded_runs test $st = 0 -a \
		"$(cat "$TMP/$al.ra.out")" = "heapedge reallocarray"
	check ${al}_preloaded_seen test "$(value $al.ra.pb.gz \
		alloc_objects f_reallocarray)" = 100 -a "$(value \
		$al.ra.pb.gz inuse_space f_reallocarray)" = 10485760
	heap "$al.fail" "$so" -- realloc_fail
	check ${al}_realloc_fail test "$(value $al.fail.pb.gz \
		inuse_space f_realloc_fail)" = 8388608

	# In-process, the allocator before us: said once, in the profile too.
	(cd "$TMP" && timeout -k 5 60 env \
		PROFRING_PROF_HEAP="$TMP/$al.ip.pb.gz" LD_PRELOAD="$so:$LIB" \
		"$W" reallocarray >"$TMP/$al.ip.out" 2>"$TMP/$al.ip.err")
	check ${al}_first_runs test $? = 0 -a \
		"$(cat "$TMP/$al.ip.out")" = "heapedge reallocarray"
	check ${al}_first_warned test "$(grep -c "warning: .*$al" \
		"$TMP/$al.ip.err")" = 1
	check ${al}_first_comment has $al.ip.pb.gz "^Comment: warning: .*$al"
	# ... and after us: seen, no warning.
	(cd "$TMP" && timeout -k 5 60 env \
		PROFRING_PROF_HEAP="$TMP/$al.ok.pb.gz" PROFRING_PROF_HEAP_RATE=1 \
		LD_PRELOAD="$LIB:$so" "$W" reallocarray >"$TMP/$al.ok.out" \
		2>"$TMP/$al.ok.err")
	check ${al}_after_us test $? = 0 -a "$(value $al.ok.pb.gz \
		alloc_objects f_reallocarray)" = 100 -a \
		"$(grep -c warning "$TMP/$al.ok.err")" = 0
done

# A program with its own malloc: our hooks never run; the launcher says
# so, in one line (the program's stderr stays the program's).
(cd "$TMP" && timeout -k 5 60 "$PROF" record -q --heap "$TMP/own.pb.gz" \
	-- "$OWN" >"$TMP/own.out" 2>"$TMP/own.err")
check own_malloc_runs test $? = 0 -a "$(cat "$TMP/own.out")" = "heapown done"
check own_malloc_warned test "$(grep -c '^profring-prof: .*malloc is not ours' \
	"$TMP/own.err")" = 1 -a "$(wc -l <"$TMP/own.err")" = 1

# malloc's canonical PLT entry in a non-PIE program is not another
# allocator: the entry jumps on to ours.  Seen, and no warning.
(cd "$TMP" && timeout -k 5 60 "$PROF" record -q --heap "$TMP/plt.pb.gz" \
	--heap-rate 1 -- "$PLT" >"$TMP/plt.out" 2>"$TMP/plt.err")
check plt_malloc_runs test $? = 0 -a "$(cat "$TMP/plt.out")" = "heapplt done"
check plt_malloc_seen test "$(value plt.pb.gz alloc_objects f_plt)" = 1000
check plt_malloc_not_warned test ! -s "$TMP/plt.err"

# Forking wrappers: the wrapper serves; the child writes nothing.
mkdir "$TMP/wrap"
(cd "$TMP/wrap" && PROFRING_PROF_HTTP=127.0.0.1:0 LD_PRELOAD="$LIB" \
	timeout 30 "$W" reallocarray >"$TMP/wt.out" 2>"$TMP/wt.err")
check timeout_wrapper_runs test $? = 0 -a "$(cat "$TMP/wt.out")" = \
	"heapedge reallocarray"
(cd "$TMP/wrap" && echo reallocarray | PROFRING_PROF_HTTP=127.0.0.1:0 \
	LD_PRELOAD="$LIB" timeout 30 xargs "$W" >"$TMP/wx.out" \
	2>"$TMP/wx.err")
check xargs_wrapper_runs test $? = 0 -a "$(cat "$TMP/wx.out")" = \
	"heapedge reallocarray"
check wrapper_child_writes_nothing test -z "$(ls -A "$TMP/wrap")"

checks_done
