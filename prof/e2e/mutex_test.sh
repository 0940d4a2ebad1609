#!/bin/sh
# SPDX-License-Identifier: MIT
#
# prof/e2e/mutex_test.sh - the lock profiler end to end (record --mutex,
# --block), read back with the real client (`go tool pprof -raw`):
#
#	sh prof/e2e/mutex_test.sh [BUILD [LABEL]]
#
# - accuracy: prof/e2e/mutexwork.c times its own pthread_mutex_lock calls
#   on two locks from two functions; at --mutex-rate 1 the profile's delay
#   shares are within 5 points of the program's and the total within 10%;
#   at the default rate, on more work, the total within five standard
#   errors of the sampled mean (5 / sqrt(records)), the shares within five
#   of a share's (100 * 5 * sqrt(1/4 / records) points);
# - in-process (LD_PRELOAD with PROFRING_PROF_MUTEX, _BLOCK and
#   _MUTEX_RATE): the same agreement, no CPU profile unless asked, a bad
#   variable one line and the program unprofiled;
# - the profile's shape: contentions/count and delay/nanoseconds, delay
#   the default, period type contentions/count, period the rate;
# - never hangs, never changes the program: threads dlopen at once (our
#   own lock, taken in our dlopen hook), timed condition waits, fork while
#   another thread holds a lock, recursive and error-checking mutexes:
#   output and exit status as without the profiler; the block profile
#   holds the condition waits the mutex profile leaves out;
# - over HTTP (record --http with --mutex-rate): /debug/pprof/mutex and
#   /block read by go tool pprof, ?seconds=1 a window smaller than the
#   whole run;
# - bad input: one line, status 2, nothing run.
# Every run is bounded by timeout(1).  Skipped under tsan/asan: the
# interposed lock calls are not built there (the sanitizers intercept
# them).
BUILD=${1:-build}
LABEL=${2:-check}
if [ "$LABEL" = tsan ] || [ "$LABEL" = asan ]; then
	echo "SKIP mutex e2e under $LABEL (no interposed lock calls there)"
	exit 0
fi
PROF=$(cd "$BUILD/tools" && pwd)/profring-prof
LIB=$(cd "$BUILD" && pwd)/libprofring-prof.so
W=$(cd "$BUILD/e2e" && pwd)/mutexwork
CHECK_PREFIX=mutex_
. "$(dirname "$0")/../../testing/testlib.sh"

if [ $HAVE_GO = 0 ]; then
	echo "SKIP mutex e2e: no go (deps.sh installs golang-go)"
	exit 0
fi

# raw FILE: go tool pprof -raw of $TMP/FILE into $TMP/FILE.raw.
raw() {
	(cd "$TMP" && HOME="$TMP" timeout 60 go tool pprof -raw "$1") \
		>"$TMP/$1.raw" 2>&1
}

# per_function FILE: "function contentions delay" per leaf function.
per_function() {
	awk '
	/^Samples:/ { s = 1; next }
	/^Locations/ { s = 0; l = 1; next }
	/^Mappings/ { l = 0 }
	s && /^ *[0-9]+ +[0-9]+:/ {
		split($0, a, ":"); split(a[1], v, " "); split(a[2], ids, " ")
		n++; leaf[n] = ids[1]; c[n] = v[1]; d[n] = v[2]
		next
	}
	l && /^ *[0-9]+: / { id = $1; sub(":", "", id); fn[id] = $4 }
	END {
		for (i = 1; i <= n; i++) {
			f = fn[leaf[i]]; seen[f] = 1
			tc[f] += c[i]; td[f] += d[i]
		}
		for (f in seen)
			printf "%s %d %d\n", f, tc[f], td[f]
	}' "$TMP/$1.raw" | sort
}

# agree FILE TRUTH SHARE_PTS TOTAL_TOL: f_lock_a's and f_lock_b's delay
# shares within SHARE_PTS points of TRUTH's, the total within TOTAL_TOL
# (a fraction); "auto" for either: five standard errors for the records
# read.
agree() {
	per_function "$1" | grep '^f_lock_' >"$TMP/$1.got"
	join "$TMP/$2" "$TMP/$1.got" | awk -v pts="$3" -v tol="$4" \
		-v recs="$(grep -o 'read [0-9]*' "$TMP/$1.raw" | head -1 |
			cut -d' ' -f2)" '
	{ n++; f[n] = $1; w[n] = $2; g[n] = $4; tw += $2; tg += $4 }
	END {
		if (n != 2 || tw == 0 || tg == 0) { print "no data"; exit 1 }
		if (recs < 1) recs = 1
		if (tol == "auto") tol = 5 / sqrt(recs)
		if (pts == "auto") pts = 100 * 5 * sqrt(0.25 / recs)
		for (i = 1; i <= n; i++) {
			sw = 100 * w[i] / tw; sg = 100 * g[i] / tg
			d = sw - sg; if (d < 0) d = -d
			printf "%s share: program %.1f%%, profile %.1f%% (allowed %.1f points)\n",
				f[i], sw, sg, pts
			if (d > pts) bad++
		}
		r = (tg - tw) / tw
		printf "total: program %.3f s, profile %.3f s (%+.1f%%, allowed %.1f%%)\n",
			tw / 1e9, tg / 1e9, 100 * r, 100 * tol
		if (r < 0) r = -r
		if (r > tol) bad++
		exit bad != 0
	}'
}

# 1. Rate 1: shares and total against the program's own clock.
(cd "$TMP" && timeout -k 5 60 "$PROF" record -q --mutex "$TMP/m1.pb.gz" \
	--block "$TMP/b1.pb.gz" --mutex-rate 1 -- "$W" share 300 \
	"$TMP/m1.truth" >"$TMP/m1.out" 2>"$TMP/m1.err")
st=$?
check rate1_runs test $st = 0 -a "$(cat "$TMP/m1.out")" = "share: 300 rounds"
check no_cpu_profile test ! -e "$TMP/profring.pb.gz"
raw m1.pb.gz
check rate1_agrees agree m1.pb.gz m1.truth 5 0.10
check types grep -q '^contentions/count delay/nanoseconds\[dflt\]$' \
	"$TMP/m1.pb.gz.raw"
check period_type grep -q '^PeriodType: contentions count$' "$TMP/m1.pb.gz.raw"
check period_is_rate grep -q '^Period: 1$' "$TMP/m1.pb.gz.raw"
raw b1.pb.gz
check block_has_mutex_waits agree b1.pb.gz m1.truth 5 0.10

# 1b. In-process (LD_PRELOAD, the variables): the same, and no CPU
# profile when only lock profiles are asked for.
mkdir "$TMP/ip"
(cd "$TMP/ip" && timeout -k 5 60 env PROFRING_PROF_MUTEX="$TMP/ip1.pb.gz" \
	PROFRING_PROF_BLOCK="$TMP/ipb1.pb.gz" PROFRING_PROF_MUTEX_RATE=1 \
	LD_PRELOAD="$LIB" "$W" share 300 "$TMP/ip1.truth" >"$TMP/ip1.out" \
	2>"$TMP/ip1.err")
check inprocess_runs test $? = 0 -a "$(cat "$TMP/ip1.out")" = "share: 300 rounds"
check inprocess_no_cpu_profile test ! -e "$TMP/ip/profring.pb.gz"
raw ip1.pb.gz
check inprocess_rate1_agrees agree ip1.pb.gz ip1.truth 5 0.10
check inprocess_block_written test -s "$TMP/ipb1.pb.gz"
# A bad variable: one line, the program unprofiled and unchanged.
env PROFRING_PROF_MUTEX="$TMP/ip2.pb.gz" PROFRING_PROF_MUTEX_RATE=0 \
	LD_PRELOAD="$LIB" "$W" share 10 "$TMP/ip2.truth" >"$TMP/ip2.out" \
	2>"$TMP/ip2.err"
check inprocess_bad_rate test $? = 0 -a ! -e "$TMP/ip2.pb.gz" -a \
	"$(wc -l <"$TMP/ip2.err")" = 1 -a "$(cat "$TMP/ip2.out")" = "share: 10 rounds"

# 1c. With --trace, every recorded wait is a span of the waiting thread:
# at rate 1 the summary's wait spans are as many as the block profile's
# contentions (every recorded wait), on the program's threads (not the
# launcher's reader, which writes them), and the json draws them as
# slices on those threads.
TR=$(cd "$BUILD/tools" && pwd)/profring-trace
(cd "$TMP" && timeout -k 5 60 "$PROF" record -q --mutex "$TMP/mt.pb.gz" \
	--block "$TMP/bt.pb.gz" --mutex-rate 1 --trace "$TMP/t.trace" -- \
	"$W" share 300 "$TMP/mt.truth" >"$TMP/mt.out" 2>"$TMP/mt.err")
check trace_runs test $? = 0 -a "$(cat "$TMP/mt.out")" = "share: 300 rounds"
"$TR" summary "$TMP/t.trace" >"$TMP/t.sum" 2>"$TMP/tsum.err"
"$TR" json "$TMP/t.trace" >"$TMP/t.json" 2>"$TMP/tjson.err"
raw bt.pb.gz
spans=$(awk '/^span ".* wait" count / {
	for (i = 1; i < NF; i++) if ($i == "count") n += $(i + 1)
} END { print n + 0 }' "$TMP/t.sum")
check trace_wait_spans test "$spans" -gt 0 -a \
	"$spans" = "$(per_function bt.pb.gz | awk '{ n += $2 } END { print n + 0 }')"
check trace_mutex_wait_named grep -q '^span "mutex wait" count ' "$TMP/t.sum"
# Threads with events: only those that waited (the reader wrote none).
check trace_on_waiting_threads test "$(sed -n 's/^threads //p' "$TMP/t.sum")" \
	= "$(grep -o '"ph":"X".*"tid":[0-9]*' "$TMP/t.json" |
		sed 's/.*"tid"://' | sort -u | wc -l)" -a \
	"$(grep -c '"ph":"X"' "$TMP/t.json")" = "$spans"

# 2. The default rate, on more work: within sampling error.
timeout -k 5 120 "$PROF" record -q --mutex "$TMP/m10.pb.gz" -- \
	"$W" share 1000 "$TMP/m10.truth" >"$TMP/m10.out" 2>"$TMP/m10.err"
check default_rate_runs test $? = 0
raw m10.pb.gz
check default_rate_period grep -q '^Period: 10$' "$TMP/m10.pb.gz.raw"
check default_rate_within_error agree m10.pb.gz m10.truth auto auto

# 3. Never hangs, never changes the program.
timeout -k 5 60 "$W" hang >"$TMP/h.plain" 2>&1
pst=$?
timeout -k 5 60 "$PROF" record -q --mutex "$TMP/h.pb.gz" --block \
	"$TMP/hb.pb.gz" --mutex-rate 1 -- "$W" hang >"$TMP/h.out" 2>"$TMP/h.err"
st=$?
check hang_same_status test $st = $pst -a $st = 3
check hang_same_output cmp -s "$TMP/h.out" "$TMP/h.plain"
check hang_child_ok grep -q '^fork: child exit 7$' "$TMP/h.out"
raw h.pb.gz
raw hb.pb.gz
check block_has_cond_waits grep -q ' pthread_cond_timedwait \| cond_part ' \
	"$TMP/hb.pb.gz.raw"
# The condition waits are in the block profile only: more waits there.
total() { per_function "$1" | awk '{ n += $2 } END { print n + 0 }'; }
check block_more_than_mutex test "$(total hb.pb.gz)" -gt "$(total h.pb.gz)"

# 4. Over HTTP (record --http, --mutex-rate alone turns it on): Go's
# /debug/pprof/mutex and /block, ?seconds=N a window of the run.
timeout -k 5 120 "$PROF" record -q --http 127.0.0.1:0 --mutex-rate 1 -- \
	"$W" share 4000 "$TMP/http.truth" >"$TMP/http.out" 2>"$TMP/http.err" &
JOB=$!
PORT=
for i in $(seq 200); do
	PORT=$(sed -n 's|^profring-prof: serving http://127.0.0.1:\([0-9]*\)/.*|\1|p' \
		"$TMP/http.err")
	[ -n "$PORT" ] && break
	sleep 0.1
done
check http_serving test -n "$PORT"
U=http://127.0.0.1:$PORT/debug/pprof
sleep 1
get() {
	(cd "$TMP" && HOME="$TMP" timeout 60 go tool pprof -raw "$2") \
		>"$TMP/$1.raw" 2>&1
}
get hwin "$U/mutex?seconds=1"
get hall "$U/mutex"
get hblock "$U/block"
wait $JOB
check http_program_unchanged test $? = 0 -a \
	"$(cat "$TMP/http.out")" = "share: 4000 rounds"
check http_mutex_types grep -q '^contentions/count delay/nanoseconds\[dflt\]$' \
	"$TMP/hwin.raw"
check http_mutex_names grep -q ' f_lock_a ' "$TMP/hall.raw"
check http_block_names grep -q ' f_lock_b ' "$TMP/hblock.raw"
check http_window_smaller test "$(total hwin)" -gt 0 -a \
	"$(total hwin)" -lt "$(total hall)"

# 5. Bad input: one line, status 2, the command not run.
"$PROF" record --mutex "$TMP/x.pb.gz" --mutex-rate 0 -- touch "$TMP/ran" \
	>/dev/null 2>"$TMP/bad1.err"
check bad_rate test $? = 2 -a ! -e "$TMP/ran" -a \
	"$(wc -l <"$TMP/bad1.err")" = 1
"$PROF" record --mutex-rate 5 -- touch "$TMP/ran" >/dev/null \
	2>"$TMP/bad2.err"
check rate_without_output test $? = 2 -a ! -e "$TMP/ran" -a \
	"$(wc -l <"$TMP/bad2.err")" = 1
"$PROF" record --mutex "$TMP/same.pb.gz" --block "$TMP/same.pb.gz" -- \
	touch "$TMP/ran" >/dev/null 2>"$TMP/bad3.err"
check same_file test $? = 2 -a ! -e "$TMP/ran"

checks_done
