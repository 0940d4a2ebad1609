#!/bin/sh
# SPDX-License-Identifier: MIT
#
# http_test.sh - the /debug/pprof/ server (PROFRING_PROF_HTTP) end to end,
# with the real client where there is one (`go tool pprof`) and raw
# requests where there is not (prof/e2e/http_client.py).
#
#	sh prof/e2e/http_test.sh [BUILD [LABEL]]
#
# httpwork (a hot function and an allocation site, until a stop file
# appears) runs under LD_PRELOAD with PROFRING_PROF_HTTP=127.0.0.1:0 and
# heap sampling; the test finds the port in its stderr line, then checks:
# the index; go tool pprof on /profile?seconds=2 finds hot_spin on top,
# on /wall?seconds=1 a wall profile with running and sleeping samples,
# on /allocs (alloc_space the default) finds alloc_site, on /heap
# (inuse_space the default) too, and on /allocs?seconds=1 a delta smaller
# than the whole; a second concurrent CPU profile gets 409; /cmdline and
# /symbol (gperftools' protocol) answer; bad requests get 400, 404, 405,
# 413 or 414 and nothing else happens (a malformed request line, a 20 kB
# path, path traversal, negative, huge, non-numeric and empty seconds, a
# PUT); 500 connections opened and abandoned, then a request still
# served; scrapes every second for a minute (heap, allocs, a 1 s CPU
# profile) with the program's RSS and thread count before and after;
# then the program is stopped: its output and exit status are those of
# a run without the profiler.  Apart: heap endpoints without heap
# sampling (404 saying how to enable it), a bad PROFRING_PROF_HTTP, a
# port in use and a non-loopback address that cannot be bound (a warning
# and one line each; the program runs, unchanged); a shell wrapper that
# execs the program (the program serves) or forks it (it does not); and
# PROFRING_PROF_PERIOD
# (a file per window, the last KEEP kept, the one at exit written too; a
# name that does not vary and a bad period refused in one line).  Every request and
# every wait is bounded.  Loopback only.
#
# LABEL asan: the ASan-built library with the ASan runtime preloaded, leak
# detection on (a leak changes the exit status).  LABEL tsan: skipped (TSan
# cannot be preloaded into an uninstrumented program).

BUILD=${1:-build}
LABEL=${2:-check}
if [ "$LABEL" = tsan ]; then
	echo "SKIP http e2e under tsan (uninstrumented program)"
	exit 0
fi
LIB=$(cd "$BUILD" && pwd)/libprofring-prof.so
PRELOAD=$LIB
if [ "$LABEL" = asan ]; then
	PRELOAD="$(clang -print-file-name=libclang_rt.asan-x86_64.so) $LIB"
	export ASAN_OPTIONS=detect_leaks=1
fi
W=$(cd "$BUILD/e2e" && pwd)/httpwork
CLIENT="python3 $(cd "$(dirname "$0")" && pwd)/http_client.py"
CHECK_PREFIX=http_
. "$(dirname "$0")/../../testing/testlib.sh"
. "$(dirname "$0")/http_lib.sh"

# start NAME VAR=VALUE...: httpwork under the profiler in the background,
# until $TMP/NAME.stop exists; its pid in $PID, its port (once it says it
# serves, within 20 s) in $PORT.
start() {
	name=$1
	shift
	timeout -k 5 600 env LD_PRELOAD="$PRELOAD" "$@" "$W" "$TMP/$name.stop" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" &
	JOB=$!
	PORT=
	PID=
	for i in $(seq 200); do
		PORT=$(sed -n 's|^profring-prof: serving http://127.0.0.1:\([0-9]*\)/.*|\1|p' \
			"$TMP/$name.err")
		[ -n "$PORT" ] && break
		sleep 0.1
	done
	for p in $(pgrep -x httpwork); do
		grep -q "$name.stop" "/proc/$p/cmdline" 2>/dev/null && PID=$p
	done
}

run_plain

start s PROFRING_PROF_HTTP=127.0.0.1:0 PROFRING_PROF_HEAP_RATE=65536
echo "  serving on port ${PORT:-?}, pid ${PID:-?}"
check started test -n "$PORT" -a -n "$PID"

U=http://127.0.0.1:$PORT/debug/pprof

$CLIENT "$PORT" body GET /debug/pprof/ >"$TMP/index"
index_ok() { grep -q '^200$' "$TMP/index" && grep -q 'profile' "$TMP/index"; }
check index index_ok

# The real client, unchanged.
pprof cpu.top -top "$U/profile?seconds=2"
check cpu_hot_on_top awk '/flat%/ { getline; exit !($NF == "hot_spin") }' \
	"$TMP/cpu.top"
# Wall clock: every thread, a state each.
pprof wall.raw -raw "$U/wall?seconds=1"
check wall_type grep -q '^PeriodType: wall nanoseconds' "$TMP/wall.raw"
check wall_running grep -q 'state:\[running\]' "$TMP/wall.raw"
check wall_sleeping grep -q 'state:\[sleeping\]' "$TMP/wall.raw"
pprof allocs.raw -raw "$U/allocs"
check allocs_default grep -q 'alloc_space/bytes\[dflt\]' "$TMP/allocs.raw"
pprof heap.raw -raw "$U/heap"
check heap_default grep -q 'inuse_space/bytes\[dflt\]' "$TMP/heap.raw"
# The allocator is interposed in the plain build only (ASan owns malloc).
if [ "$LABEL" != asan ]; then
	check allocs_site grep -q 'alloc_site' "$TMP/allocs.raw"
	check allocs_delta allocs_delta_smaller "$U"
fi

# One CPU profile at a time.
$CLIENT "$PORT" status GET "/debug/pprof/profile?seconds=3" >"$TMP/first" &
sleep 1
$CLIENT "$PORT" status GET "/debug/pprof/profile?seconds=1" >"$TMP/second"
wait $!
check cpu_one_at_a_time test "$(cat "$TMP/first")" = 200 -a \
	"$(cat "$TMP/second")" = 409

$CLIENT "$PORT" body GET /debug/pprof/cmdline >"$TMP/cmdline"
cmdline_ok() { tr '\0' ' ' <"$TMP/cmdline" | grep -q "httpwork $TMP/s.stop$"; }
check cmdline cmdline_ok
check symbol_get sh -c "$CLIENT $PORT body GET /debug/pprof/symbol | grep -q 'num_symbols: 1'"
$CLIENT "$PORT" symbol "$W" "$PID" hot_spin >"$TMP/symbol"
check symbol_post grep -q '^0x[0-9a-f]* hot_spin$' "$TMP/symbol"

# Bad requests: one status each, nothing else.
long=$(python3 -c 'print("/debug/pprof/" + "a" * 20000)')
check bad_request_line status_is 400 raw 'BAD LINE\r\n\r\n'
# A line without a space: the library closes the connection unanswered.
check no_spaces_closed status_is none raw 'GARBAGE\r\n\r\n'
check long_path status_is 414 status GET "$long"
check traversal status_is 404 status GET /debug/pprof/../../etc/passwd
check traversal_root status_is 404 status GET /../../etc/passwd
check seconds_negative status_is 400 status GET '/debug/pprof/profile?seconds=-1'
check seconds_huge status_is 400 status GET '/debug/pprof/profile?seconds=99999999999999999999'
check seconds_text status_is 400 status GET '/debug/pprof/profile?seconds=abc'
check seconds_empty status_is 400 status GET '/debug/pprof/allocs?seconds='
check method status_is 405 status PUT /debug/pprof/
check debug_text status_is 400 status GET '/debug/pprof/heap?debug=1'
big=$(python3 -c 'print("0x1+" * 20000)')
check symbol_body_bounded status_is 413 status POST /debug/pprof/symbol "$big"
check unknown_profile status_is 404 status GET /debug/pprof/goroutine

n=$($CLIENT "$PORT" abandon 500)
echo "  500 connections: $n connected, all abandoned"
check abandoned_then_served status_is 200 status GET /debug/pprof/cmdline

check still_served status_is 200 status GET /debug/pprof/cmdline

# A minute of scrapes: memory and threads flat.  Measured after five
# scrapes: the first ones load libdw and the DWARF of the program's
# libraries, kept for the life of the process (pprof/dwarf.c), once.
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$PID/status"; }
threads() { awk '/^Threads/ { print $2 }' "/proc/$PID/status"; }
rss_cold=$(rss)
warm=$($CLIENT "$PORT" scrape 5)
rss0=$(rss)
thr0=$(threads)
fails0=$($CLIENT "$PORT" scrape 60)
rss1=$(rss)
thr1=$(threads)
echo "  5 scrapes to warm up: RSS ${rss_cold} kB -> ${rss0} kB ($warm not 200)"
echo "  60 scrapes: RSS ${rss0} kB -> ${rss1} kB, threads $thr0 -> $thr1, $fails0 not 200"
check scrapes_all_200 test "$fails0" = 0
check scrapes_rss_flat test "$rss1" -lt $((rss0 + 16384))
check scrapes_threads_flat test "$thr1" -le "$((thr0 + 1))"

finish s
check same_output test "$(cat "$TMP/s.out")" = "$(cat "$TMP/plain.out")"
check same_exit test "$st" = "$plain_st"
check no_leak_report sh -c "! grep -q 'ERROR: LeakSanitizer\|ERROR: AddressSanitizer' '$TMP/s.err'"

# Heap endpoints without heap sampling: 404, saying how.
start noheap PROFRING_PROF_HTTP=127.0.0.1:0
$CLIENT "$PORT" body GET /debug/pprof/heap >"$TMP/noheap.body"
check heap_off_404 grep -q '^404$' "$TMP/noheap.body"
check heap_off_says_how grep -q 'PROFRING_PROF_HEAP_RATE' "$TMP/noheap.body"
finish noheap
check heap_off_same_exit test "$st" = "$plain_st"
check heap_off_same_output test "$(cat "$TMP/noheap.out")" = "$(cat "$TMP/plain.out")"

# Bad addresses: one line, the program runs as ever.
bad_addr() {
	name=$1
	shift
	touch "$TMP/$name.stop"
	timeout -k 5 60 env LD_PRELOAD="$PRELOAD" "$@" "$W" "$TMP/$name.stop" \
		>"$TMP/$name.out" 2>"$TMP/$name.err"
	echo $? >"$TMP/$name.status"
}
bad_addr badspec PROFRING_PROF_HTTP=1.2.3.4:99999
check bad_spec_one_line test "$(grep -c 'PROFRING_PROF_HTTP' "$TMP/badspec.err")" = 1
check bad_spec_runs test "$(cat "$TMP/badspec.status")" = "$plain_st" -a \
	"$(cat "$TMP/badspec.out")" = "$(cat "$TMP/plain.out")"
start busy PROFRING_PROF_HTTP=127.0.0.1:0
bad_addr inuse PROFRING_PROF_HTTP=127.0.0.1:"$PORT"
check port_in_use_said grep -q 'cannot listen on 127.0.0.1:[0-9]*: Address already in use' "$TMP/inuse.err"
check port_in_use_one_line test "$(wc -l <"$TMP/inuse.err")" = 1
check port_in_use_runs test "$(cat "$TMP/inuse.status")" = "$plain_st" -a \
	"$(cat "$TMP/inuse.out")" = "$(cat "$TMP/plain.out")"
finish busy
# 192.0.2.1 (TEST-NET-1) is no address of this machine: warned, not bound.
bad_addr remote PROFRING_PROF_HTTP=192.0.2.1:0
check non_loopback_warned grep -q 'warning: 192.0.2.1:0 is not a loopback address' "$TMP/remote.err"
check non_loopback_runs test "$(cat "$TMP/remote.status")" = "$plain_st"

# A wrapper that execs the program: the program serves (same pid, a new
# image); a child the shell forks does not (nor tries the port).
serving_lines() { grep -c '^profring-prof: serving' "$TMP/$1.err"; }
last_port() {
	sed -n 's|^profring-prof: serving http://127.0.0.1:\([0-9]*\)/.*|\1|p' \
		"$TMP/$1.err" | tail -1
}
rm -f "$TMP/wrap.stop"
timeout -k 5 60 env LD_PRELOAD="$PRELOAD" PROFRING_PROF_HTTP=127.0.0.1:0 \
	sh -c 'exec "$0" "$1"' "$W" "$TMP/wrap.stop" >"$TMP/wrap.out" 2>"$TMP/wrap.err" &
JOB=$!
for i in $(seq 100); do
	[ "$(serving_lines wrap)" -ge 2 ] && break
	sleep 0.1
done
$CLIENT "$(last_port wrap)" body GET /debug/pprof/cmdline >"$TMP/wrap.cmdline"
finish wrap
check exec_wrapper_serves grep -aq 'httpwork' "$TMP/wrap.cmdline"
check exec_wrapper_same_output test "$st" = "$plain_st" -a \
	"$(cat "$TMP/wrap.out")" = "$(cat "$TMP/plain.out")"
touch "$TMP/child.stop"
timeout -k 5 60 env LD_PRELOAD="$PRELOAD" PROFRING_PROF_HTTP=127.0.0.1:0 \
	sh -c '"$0" "$1"; exit $?' "$W" "$TMP/child.stop" >"$TMP/child.out" 2>"$TMP/child.err"
check forked_child_does_not_serve test $? = "$plain_st" -a \
	"$(serving_lines child)" = 1 -a "$(cat "$TMP/child.out")" = "$(cat "$TMP/plain.out")"

# PROFRING_PROF_PERIOD: a file per window, renamed into place, the last
# KEEP kept; the window running at exit written too.
mkdir "$TMP/per"
rm -f "$TMP/per.stop"
(sleep 3.5 && touch "$TMP/per.stop") &
timeout -k 5 60 env LD_PRELOAD="$PRELOAD" PROFRING_PROF="$TMP/per/cpu-%p-%n.pb.gz" \
	PROFRING_PROF_HEAP="$TMP/per/heap-%t-%n.pb.gz" PROFRING_PROF_PERIOD=1 \
	PROFRING_PROF_KEEP=2 "$W" "$TMP/per.stop" >"$TMP/per.out" 2>"$TMP/per.err"
per_st=$?
wait
ls "$TMP/per" >"$TMP/per.ls"
echo "  periodic files: $(tr '\n' ' ' <"$TMP/per.ls")"
check periodic_runs test "$per_st" = "$plain_st" -a \
	"$(cat "$TMP/per.out")" = "$(cat "$TMP/plain.out")"
check periodic_keep test "$(grep -c '^cpu-[0-9]*-[0-9]*\.pb\.gz$' "$TMP/per.ls")" = 2 -a \
	"$(grep -c '^heap-[0-9]\{8\}T[0-9]\{6\}Z-[0-9]*\.pb\.gz$' "$TMP/per.ls")" = 2
check periodic_no_temporaries test "$(wc -l <"$TMP/per.ls")" = 4
last=$(ls "$TMP/per"/cpu-* | sort -t- -k3 -n | tail -1)
pprof per.raw -raw "$last"
check periodic_cpu_parses grep -q '^Duration:' "$TMP/per.raw"
check periodic_cpu_hot grep -q 'hot_spin' "$TMP/per.raw"
timeout -k 5 60 env LD_PRELOAD="$PRELOAD" PROFRING_PROF="$TMP/per/x.pb.gz" \
	PROFRING_PROF_PERIOD=1 "$W" "$TMP/plain.stop" >"$TMP/pbad.out" 2>"$TMP/pbad.err"
check periodic_fixed_name_refused test $? = "$plain_st" -a \
	"$(grep -c 'needs %t or %n' "$TMP/pbad.err")" = 1
timeout -k 5 60 env LD_PRELOAD="$PRELOAD" PROFRING_PROF="$TMP/per/y-%n.pb.gz" \
	PROFRING_PROF_PERIOD=0 "$W" "$TMP/plain.stop" >"$TMP/pbad2.out" 2>"$TMP/pbad2.err"
check periodic_bad_period test $? = "$plain_st" -a \
	"$(grep -c 'PROFRING_PROF_PERIOD=0: want a period' "$TMP/pbad2.err")" = 1

checks_done
