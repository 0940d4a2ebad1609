#!/bin/sh
# SPDX-License-Identifier: MIT
#
# prof/e2e/wall_outputs_test.sh - wall-clock mode (prof/agent/wall.c) with the
# other outputs: a heap profile (`record --mode wall --heap`), periodic
# files (PROFRING_PROF_MODE=wall with PROFRING_PROF_PERIOD) and a trace
# (`record --mode wall --trace`), read back with the real clients (`go
# tool pprof`, build/tools/profring-trace):
#
#	sh prof/e2e/wall_outputs_test.sh [BUILD [LABEL]]
#
# Checks:
# - heap: python3.11 (through sh -c 'exec ...', as a real program is
#   started) keeps 16 MiB of 256 KiB bytearrays and sleeps 1 s, then
#   leaves with os._exit(3): its stdout and status are unchanged, the
#   wall profile is one (wall/nanoseconds) with the sleep in it (sleeping,
#   0.7 s or more), the heap profile's in-use bytes are 12 to 24 MiB (the
#   16 MiB and python's own 2-3 MiB; rate 64 KiB: sigma about 6%); and
#   prof/e2e/wallwork at --heap-rate 1 (every allocation sampled) has no
#   allocation of the profiler's own (no prof_ function in any heap
#   stack: the ticker's thread and table);
# - trace: wallwork under `record --mode wall -F 100 --trace`: the trace
#   has one "wall sample" event per wall record the profile read (the
#   profile's "read" count, none lost), both states, and a stack in every
#   one (a REPEAT's is its thread's last);
# - periodic: wallwork 3 in-process with PROFRING_PROF_PERIOD=1: at least
#   three files, each a wall profile (period type wall/nanoseconds) whose
#   window counts the program's two threads only (not the profiler's own
#   thread that waits out the window, nor its collector), and whose wall
#   time is at most 2.3 times the window's duration (two threads); the
#   worker's wall time over all files is within 15% of the 3 s it ran;
#   output and status unchanged.
# Skipped under LABEL tsan or asan (uninstrumented programs, as
# wall_test.sh) and without go or python3.11 (the heap part only).  About
# 15 s.
BUILD=${1:-build}
LABEL=${2:-check}
if [ "$LABEL" = tsan ] || [ "$LABEL" = asan ]; then
	echo "SKIP wall outputs e2e under $LABEL (uninstrumented program)"
	exit 0
fi
if ! command -v go >/dev/null 2>&1; then
	echo "SKIP wall outputs e2e (no go tool pprof)"
	exit 0
fi
CHECK_PREFIX=wall_outputs_
. "$(dirname "$0")/../../testing/testlib.sh"

PROF=$(cd "$BUILD/tools" && pwd)/profring-prof
TRACE=$(cd "$BUILD/tools" && pwd)/profring-trace
LIB=$(cd "$BUILD" && pwd)/libprofring-prof.so
PROG=$(cd "$BUILD/e2e" && pwd)/wallwork

# raw FILE: go tool pprof -raw of FILE (HOME: go's cache, not ours).
raw() {
	HOME="$TMP" timeout -k 5 60 go tool pprof -raw "$1" 2>/dev/null
}

# wall_sums RAW [STATE]: "total_ns tids worker_ns" of a -raw listing;
# with STATE, only the samples of that state.
wall_sums() {
	awk -v want="$2" '
	/^Samples:/ { s = 1; next }
	/^Locations/ { s = 0 }
	s && /^ *[0-9]+ +[0-9]+: / { v = $2 + 0; next }
	s && /state:\[/ {
		st = $0; sub(/.*state:\[/, "", st); sub(/\].*/, "", st)
		th = $0; sub(/.*thread:\[/, "", th); sub(/\].*/, "", th)
		next
	}
	s && /tid:\[/ {
		t = $0; sub(/.*tid:\[/, "", t); sub(/\].*/, "", t)
		if (want != "" && st != want) next
		tot += v; tids[t] = 1
		if (th == "worker") wk += v
	}
	END { n = 0; for (t in tids) n++; printf "%d %d %d\n", tot, n, wk }' "$1"
}

between() { # X LO HI
	awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'
}

# ---- heap: a real program --------------------------------------------------
if command -v python3.11 >/dev/null 2>&1; then
	# --no-children: python's own wall time, not that of the commands a
	# pyenv shim forks before it execs python.
	out=$(timeout -k 5 60 "$PROF" record -q --mode wall --no-children \
		-o "$TMP/py.pb.gz" --heap "$TMP/pyheap.pb.gz" --heap-rate 65536 \
		-- sh -c 'exec python3.11 -c "
import os, sys, time
keep = [bytearray(256 * 1024) for i in range(64)]
time.sleep(1.0)
print(\"py done\", len(keep))
sys.stdout.flush()
os._exit(3)"' 2>"$TMP/py.err")
	rc=$?
	check heap_py_status [ "$rc" = 3 ]
	check heap_py_stdout [ "$out" = "py done 64" ]
	raw "$TMP/py.pb.gz" >"$TMP/py.raw"
	check heap_py_wall_type grep -q '^PeriodType: wall nanoseconds' \
		"$TMP/py.raw"
	set -- $(wall_sums "$TMP/py.raw" sleeping)
	echo "# python: sleeping ${1:-0} ns of wall time"
	check heap_py_wall_sleep between "${1:-0}" 700000000 3000000000
	inuse=$(HOME="$TMP" timeout -k 5 60 go tool pprof -raw \
		-sample_index=inuse_space "$TMP/pyheap.pb.gz" 2>/dev/null |
		awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
		s && /^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+:/ { b += $4 }
		END { print b + 0 }')
	echo "# python: heap in use $inuse bytes (16 MiB kept)"
	check heap_py_inuse between "$inuse" $((12 << 20)) $((24 << 20))
else
	echo "SKIP wall_outputs_heap_py (no python3.11)"
fi

# ---- heap at rate 1 and trace: wallwork ------------------------------------
out=$(timeout -k 5 30 "$PROF" record -q --mode wall -F 100 \
	-o "$TMP/ww.pb.gz" --heap "$TMP/wwheap.pb.gz" --heap-rate 1 \
	--trace "$TMP/ww.trace" -- "$PROG" 2 2>"$TMP/ww.err")
rc=$?
check trace_status [ "$rc" = 0 ]
check trace_stdout [ "$out" = "wallwork done" ]
HOME="$TMP" timeout -k 5 60 go tool pprof -traces "$TMP/wwheap.pb.gz" \
	>"$TMP/wwheap.traces" 2>/dev/null
check heap_has_samples grep -q 'bytes:' "$TMP/wwheap.traces"
check heap_not_ours sh -c "! grep -q ' prof_' '$TMP/wwheap.traces'"
raw "$TMP/ww.pb.gz" >"$TMP/ww.raw"
read_n=$(sed -n 's/^Comment: signals .*; read \([0-9]*\), lost 0$/\1/p' \
	"$TMP/ww.raw")
timeout -k 5 30 "$TRACE" summary "$TMP/ww.trace" >"$TMP/ww.summary" \
	2>"$TMP/trace.err"
events=$(sed -n 's/^type 8 "wall sample" events \([0-9]*\)$/\1/p' \
	"$TMP/ww.summary")
echo "# trace: $events wall sample events; the profile read ${read_n:-?}" \
	"wall records, none lost"
check trace_events test "${events:-0}" -gt 100 -a \
	"${events:-x}" = "${read_n:-y}"
check trace_lost grep -q '^lost 0$' "$TMP/ww.summary"
timeout -k 5 30 "$TRACE" dump "$TMP/ww.trace" 2>>"$TMP/trace.err" |
	grep 'wall sample(8)' >"$TMP/ww.dump"
check trace_sleeping grep -q 's:"sleeping"$' "$TMP/ww.dump"
check trace_running grep -q 's:"running"$' "$TMP/ww.dump"
check trace_stacks sh -c "[ -s '$TMP/ww.dump' ] &&
	! grep -v ' k:\[0x' '$TMP/ww.dump' | grep -q ."

# ---- periodic files in-process ---------------------------------------------
out=$(PROFRING_PROF="$TMP/per-%n.pb.gz" PROFRING_PROF_MODE=wall \
	PROFRING_PROF_PERIOD=1 PROFRING_PROF_HZ=100 timeout -k 5 30 \
	env LD_PRELOAD="$LIB" "$PROG" 3 2>"$TMP/per.err")
rc=$?
check period_status [ "$rc" = 0 ]
check period_stdout [ "$out" = "wallwork done" ]
files=0
bad=0
worker=0
for f in "$TMP"/per-*.pb.gz; do
	[ -f "$f" ] || continue
	files=$((files + 1))
	raw "$f" >"$f.raw"
	grep -q '^PeriodType: wall nanoseconds' "$f.raw" || bad=$((bad + 1))
	grep -q '^Comment: .*/wall: 100 Hz;.*; threads [12]$' "$f.raw" ||
		bad=$((bad + 1))
	# the window's duration in ns (-top says "Duration: 1.02s" or "890ms")
	dur=$(HOME="$TMP" timeout -k 5 60 go tool pprof -top "$f" 2>/dev/null |
		sed -n 's/^Duration: \([0-9.]*\)\([mu]*s\),.*/\1 \2/p' |
		awk '{ print int($1 * ($2 == "s" ? 1e9 : $2 == "ms" ? 1e6 : 1e3)) }')
	set -- $(wall_sums "$f.raw")
	echo "# $(basename "$f"): ${dur:-?} ns long, wall ${1:-0} ns," \
		"${2:-0} threads, worker ${3:-0} ns"
	# the program's two threads, each the window's length (a tick more)
	[ "${2:-0}" -le 2 ] && [ "${dur:-0}" -gt 0 ] &&
		awk -v t="${1:-0}" -v d="$dur" 'BEGIN { exit !(t <= 2.3 * d) }' ||
		bad=$((bad + 1))
	worker=$((worker + ${3:-0}))
done
echo "# periodic: $files files, $bad bad, worker $worker ns in all"
check period_files [ "$files" -ge 3 ]
check period_each_wall test "$files" -ge 1 -a "$bad" = 0
check period_worker_total between "$worker" 2550000000 3450000000
checks_done
