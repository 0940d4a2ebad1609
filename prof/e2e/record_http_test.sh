#!/bin/sh
# SPDX-License-Identifier: MIT
#
# record_http_test.sh - `profring-prof record --http`: the launcher serves
# the program's /debug/pprof/ endpoints, read with the real client (`go
# tool pprof`) and raw requests (prof/e2e/http_client.py).
#
#	sh prof/e2e/record_http_test.sh [BUILD [LABEL]]
#
# httpwork (a hot function and an allocation site, until a stop file
# appears) runs under `record --http 127.0.0.1:0 --heap-rate 65536 -o`;
# the test finds the port in the launcher's stderr, then checks: go tool
# pprof on /profile?seconds=1 finds hot_spin on top, and the window holds
# about a second of samples, not the run's (the program ran 3 s before
# it); /allocs (alloc_space the default) and /heap (inuse_space) find
# alloc_site; /allocs?seconds=1 is a delta smaller than the whole; a
# second concurrent CPU profile gets 409; /wall is 404 (a CPU run, saying
# to record with --mode wall), and with --mode wall (and --heap-rate) a
# window of the wall-clock run, the heap beside it; /cmdline and /symbol are the
# program's, not the launcher's; then the program is stopped: its output
# and exit status are those of a run without the profiler, and the
# launcher's own profile is written as without --http.  Apart: a wrapper
# that execs the program (/cmdline follows the exec), heap endpoints
# without heap sampling and the CPU endpoint with --heap alone (404 saying
# what to add), a bad --http address and --heap-rate without --heap or
# --http (one line, status 2, nothing run).  Every request and wait is
# bounded; loopback only.
#
# Skipped under tsan and asan, as e2e_test.sh is (the program is not
# instrumented); the server itself (http.c) runs under ASan in
# http_test.sh.

BUILD=${1:-build}
LABEL=${2:-check}
if [ "$LABEL" = tsan ] || [ "$LABEL" = asan ]; then
	echo "SKIP record --http e2e under $LABEL (uninstrumented program)"
	exit 0
fi
PROF=$(cd "$BUILD/tools" && pwd)/profring-prof
W=$(cd "$BUILD/e2e" && pwd)/httpwork
CLIENT="python3 $(cd "$(dirname "$0")" && pwd)/http_client.py"
CHECK_PREFIX=record_http_
. "$(dirname "$0")/../../testing/testlib.sh"
. "$(dirname "$0")/http_lib.sh"

# start NAME ARGS... -- CMD...: the launcher in the background; $PORT once
# it says it serves (within 20 s).
start() {
	name=$1
	shift
	timeout -k 5 300 "$PROF" record "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	JOB=$!
	PORT=
	for i in $(seq 200); do
		PORT=$(sed -n 's|^profring-prof: serving http://127.0.0.1:\([0-9]*\)/.*|\1|p' \
			"$TMP/$name.err")
		[ -n "$PORT" ] && break
		sleep 0.1
	done
}

run_plain

start s --http 127.0.0.1:0 --heap-rate 65536 -o "$TMP/s.pb.gz" -- \
	"$W" "$TMP/s.stop"
echo "  serving on port ${PORT:-?}"
check started test -n "$PORT"
U=http://127.0.0.1:$PORT/debug/pprof
PID=
for p in $(pgrep -x httpwork); do
	grep -q "s.stop" "/proc/$p/cmdline" 2>/dev/null && PID=$p
done

# The program's CPU seconds so far (utime + stime of /proc/PID/stat).
cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / hz }' \
		"/proc/$PID/stat"
}
sleep 3
c0=$(cpu_s)
pprof cpu.top -top "$U/profile?seconds=1"
c1=$(cpu_s)
check cpu_hot_on_top awk '/flat%/ { getline; exit !($NF == "hot_spin") }' \
	"$TMP/cpu.top"
# The window holds about the CPU the program used during the request, not
# what it used since it started (over 3 s before it: several times more).
window() {
	t=$(sed -n 's/.*Total samples = \([0-9.]*\)\(m*\)s.*/\1 \2/p' "$TMP/cpu.top")
	echo "  1 s window: ${t:-?}s of CPU; the program used $c0 s before it, $c1 s by its end"
	[ -n "$t" ] && echo "$t" | awk -v c0="$c0" -v c1="$c1" '{
		w = $2 == "m" ? $1 / 1000 : $1
		d = c1 - c0
		exit !(w > 0.5 * d - 0.1 && w < 1.5 * d + 0.3 && w < 0.6 * c1)
	}'
}
check cpu_window_is_a_window window
check cpu_comment grep -q 'record --http /debug/pprof/profile: 99 Hz' \
	"$TMP/cpu.top"

pprof allocs.raw -raw "$U/allocs"
check allocs_default grep -q 'alloc_space/bytes\[dflt\]' "$TMP/allocs.raw"
check allocs_site grep -q 'alloc_site' "$TMP/allocs.raw"
pprof heap.raw -raw "$U/heap"
check heap_default grep -q 'inuse_space/bytes\[dflt\]' "$TMP/heap.raw"
check heap_site grep -q 'alloc_site' "$TMP/heap.raw"
check allocs_delta allocs_delta_smaller "$U"

$CLIENT "$PORT" status GET "/debug/pprof/profile?seconds=3" >"$TMP/first" &
sleep 1
$CLIENT "$PORT" status GET "/debug/pprof/profile?seconds=1" >"$TMP/second"
wait $!
check cpu_one_at_a_time test "$(cat "$TMP/first")" = 200 -a \
	"$(cat "$TMP/second")" = 409

$CLIENT "$PORT" body GET /debug/pprof/cmdline >"$TMP/cmdline"
check cmdline_is_the_programs sh -c \
	"tr '\\0' ' ' <'$TMP/cmdline' | grep -q 'httpwork $TMP/s.stop\$'"
$CLIENT "$PORT" symbol "$W" "$PID" hot_spin >"$TMP/symbol"
check symbol_post grep -q '^0x[0-9a-f]* hot_spin$' "$TMP/symbol"
check bad_seconds status_is 400 status GET '/debug/pprof/profile?seconds=x'
check wall_off_in_cpu_mode sh -c "$CLIENT $PORT body GET '/debug/pprof/wall?seconds=1' | grep -q 'record with --mode wall'"

finish s
check same_output test "$st" = "$plain_st" -a \
	"$(cat "$TMP/s.out")" = "$(cat "$TMP/plain.out")"
pprof s.top -top "$TMP/s.pb.gz"
check profile_written awk '/flat%/ { getline; exit !($NF == "hot_spin") }' \
	"$TMP/s.top"

# A wrapper that execs: the launcher serves the program it became.
start wrap --http 127.0.0.1:0 -o "$TMP/wrap.pb.gz" -- \
	sh -c 'sleep 0.5; exec "$0" "$1"' "$W" "$TMP/wrap.stop"
sleep 1.5
$CLIENT "$PORT" body GET /debug/pprof/cmdline >"$TMP/wrap.cmdline"
check exec_followed grep -aq 'httpwork' "$TMP/wrap.cmdline"
check heap_off sh -c "$CLIENT $PORT body GET /debug/pprof/heap | grep -q 'record with --heap-rate'"
finish wrap
check exec_same_output test "$st" = "$plain_st" -a \
	"$(cat "$TMP/wrap.out")" = "$(cat "$TMP/plain.out")"

start mem --http 127.0.0.1:0 --heap "$TMP/mem.pb.gz" -- "$W" "$TMP/mem.stop"
check cpu_off sh -c "$CLIENT $PORT body GET /debug/pprof/profile | grep -q 'CPU profiling is off'"
check heap_on status_is 200 status GET /debug/pprof/heap
finish mem
check mem_same_output test "$st" = "$plain_st"

timeout -k 5 30 "$PROF" record --http 127.0.0.1:99999 -- "$W" "$TMP/plain.stop" \
	>"$TMP/bad.out" 2>"$TMP/bad.err"
check bad_address test $? = 2 -a "$(wc -l <"$TMP/bad.err")" = 1 -a \
	! -s "$TMP/bad.out"
timeout -k 5 30 "$PROF" record --heap-rate 4096 -- "$W" "$TMP/plain.stop" \
	>"$TMP/rate.out" 2>"$TMP/rate.err"
check heap_rate_alone test $? = 2 -a "$(grep -c 'heap-rate' "$TMP/rate.err")" = 1

# --mode wall --http --heap-rate: /wall serves windows of the wall-clock
# run (types and the state label), /heap the heap beside it, /profile
# says CPU is off.
start wall --mode wall --http 127.0.0.1:0 --heap-rate 65536 \
	-o "$TMP/wall.pb.gz" -- "$W" "$TMP/wall.stop"
check wall_started test -n "$PORT"
pprof wall.raw -raw "http://127.0.0.1:$PORT/debug/pprof/wall?seconds=1"
check wall_window_type grep -q 'wall/nanoseconds\[dflt\]' "$TMP/wall.raw"
check wall_window_state grep -q 'state:\[running\]' "$TMP/wall.raw"
pprof wallheap.raw -raw "http://127.0.0.1:$PORT/debug/pprof/heap"
check wall_heap_site grep -q 'alloc_site' "$TMP/wallheap.raw"
check wall_cpu_off sh -c "$CLIENT $PORT body GET /debug/pprof/profile | grep -q 'CPU profiling is off'"
finish wall
check wall_same_output test "$st" = "$plain_st" -a \
	"$(cat "$TMP/wall.out")" = "$(cat "$TMP/plain.out")"

checks_done
