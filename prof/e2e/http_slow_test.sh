#!/bin/sh
# SPDX-License-Identifier: MIT
#
# http_slow_test.sh - the /debug/pprof/ server against clients that keep it
# waiting (slowloris), end to end (prof/common/http.c: CONN_LIMIT,
# REQUEST_SECONDS).
#
#	sh prof/e2e/http_slow_test.sh [BUILD [LABEL]]
#
# httpwork runs under LD_PRELOAD with PROFRING_PROF_HTTP=127.0.0.1:0.
# Sixteen connections (every slot) each send a request line and then a
# header line a second, never ending their headers; a request sent while
# they go on must be answered within 5 s (a slot is kept for a new
# client).  One connection that trickles a header line a second (never
# silent for long) must be closed within 20 s: the whole request has a
# deadline, not only silence.  Then a request is still served, and the
# program's output and exit status are those of a run without the
# profiler.  Loopback only; about 20 s.

BUILD=${1:-build}
LABEL=${2:-check}
if [ "$LABEL" = tsan ]; then
	echo "SKIP http_slow e2e under tsan (uninstrumented program)"
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
CHECK_PREFIX=http_slow_
. "$(dirname "$0")/../../testing/testlib.sh"
. "$(dirname "$0")/http_lib.sh"

run_plain

timeout -k 5 120 env LD_PRELOAD="$PRELOAD" PROFRING_PROF_HTTP=127.0.0.1:0 \
	"$W" "$TMP/s.stop" >"$TMP/s.out" 2>"$TMP/s.err" &
JOB=$!
PORT=
for i in $(seq 200); do
	PORT=$(sed -n 's|^profring-prof: serving http://127.0.0.1:\([0-9]*\)/.*|\1|p' \
		"$TMP/s.err")
	[ -n "$PORT" ] && break
	sleep 0.1
done
check started test -n "$PORT"

t0=$(date +%s)
check served_despite_slowloris status_is 200 slowloris 16
echo "  16 slow connections, then a request: $(($(date +%s) - t0)) s"
trickled=$($CLIENT "$PORT" trickle 20)
echo "  a connection trickling a header line a second: $trickled"
check trickle_closed test "${trickled% after*}" = closed
check served_after status_is 200 status GET /debug/pprof/cmdline

finish s
check same_output test "$(cat "$TMP/s.out")" = "$(cat "$TMP/plain.out")"
check same_exit test "$st" = "$plain_st"

checks_done
