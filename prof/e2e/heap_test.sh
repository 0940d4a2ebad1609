#!/bin/sh
# SPDX-License-Identifier: MIT
#
# prof/e2e/heap_test.sh - the heap profiler end to end, read back with the
# real client (`go tool pprof -raw`):
#
#	sh prof/e2e/heap_test.sh [BUILD [LABEL]]
#
# - accuracy: prof/e2e/heapwork.c's allocations are known per function;
#   at --heap-rate 1 all four values (alloc_objects, alloc_space,
#   inuse_objects, inuse_space) must be exact per function, under the
#   launcher and in-process (LD_PRELOAD); at 64 KiB, on 100 times the
#   work, the byte totals must fall within four standard deviations of
#   the truth (sigma ~ sqrt(rate / bytes) relative);
# - the profile's shape: sample types in Go's order, inuse_space the
#   default, period type space/bytes, the "bytes" label;
# - programs: a fork, 1,000 threads, free() keeping errno, python3.11 and
#   a C++ program: output and exit status unchanged, a profile written;
# - bad input: one line, and the program runs unprofiled (in-process) or
#   is not run (the launcher's usage errors, status 2).
# Every run is bounded by timeout(1).  Skipped under tsan/asan: the
# interposed malloc is not built there (the sanitizers own malloc); the
# allocation side is covered by stress/heap_stress.c.
BUILD=${1:-build}
LABEL=${2:-check}
if [ "$LABEL" = tsan ] || [ "$LABEL" = asan ]; then
	echo "SKIP heap e2e under $LABEL (no interposed malloc there)"
	exit 0
fi
PROF=$(cd "$BUILD/tools" && pwd)/profring-prof
LIB=$(cd "$BUILD" && pwd)/libprofring-prof.so
W=$(cd "$BUILD/e2e" && pwd)/heapwork
TRACE=$(cd "$BUILD/tools" && pwd)/profring-trace
CXX=$(cd "$BUILD/e2e" && pwd)/cxx
CHECK_PREFIX=heap_
. "$(dirname "$0")/../../testing/testlib.sh"

if ! command -v go >/dev/null 2>&1; then
	echo "SKIP heap e2e: no go (deps.sh installs golang-go)"
	exit 0
fi

# raw FILE: go tool pprof -raw of $TMP/FILE into $TMP/FILE.raw.
raw() {
	(cd "$TMP" && HOME="$TMP" timeout 60 go tool pprof -raw "$1") \
		>"$TMP/$1.raw" 2>&1
}

# per_function FILE: "function alloc_objects alloc_space inuse_objects
# inuse_space" for each leaf function of the raw profile, sorted.
per_function() {
	awk '
	/^Samples:/ { s = 1; next }
	/^Locations/ { s = 0; l = 1; next }
	/^Mappings/ { l = 0 }
	s && /^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+:/ {
		split($0, a, ":"); split(a[1], v, " "); split(a[2], ids, " ")
		n++; leaf[n] = ids[1]
		for (i = 1; i <= 4; i++) val[n, i] = v[i]
		next
	}
	l && /^ *[0-9]+: / { id = $1; sub(":", "", id); fn[id] = $4 }
	END {
		for (i = 1; i <= n; i++) {
			f = fn[leaf[i]]; seen[f] = 1
			for (j = 1; j <= 4; j++) tot[f, j] += val[i, j]
		}
		for (f in seen)
			printf "%s %d %d %d %d\n", f, tot[f, 1], tot[f, 2],
				tot[f, 3], tot[f, 4]
	}' "$TMP/$1.raw" | sort
}

# The truth for heapwork at scale S (two threads; heapwork.c's table).
truth() {
	S=$1
	echo "f_aligned $((200 * S)) $((1638400 * S)) $((200 * S)) $((1638400 * S))"
	echo "f_calloc $((1000 * S)) $((300000 * S)) 0 0"
	echo "f_malloc $((2000 * S + 2)) $((216000 * S)) $((800 * S + 2)) $((96000 * S))"
	echo "f_memalign $((600 * S)) $((600000 * S)) $((400 * S)) $((400000 * S))"
	echo "f_realloc $((800 * S)) $((128000 * S)) $((400 * S)) $((102400 * S))"
}

# exact FILE: every heapwork function's four values equal the truth.
exact() {
	per_function "$1" | grep '^f_' >"$TMP/$1.got"
	truth 1 >"$TMP/$1.want"
	if ! cmp -s "$TMP/$1.got" "$TMP/$1.want"; then
		echo "want:" && cat "$TMP/$1.want"
		echo "got:" && cat "$TMP/$1.got"
		return 1
	fi
}

# 1. Exact at rate 1, under the launcher.
(cd "$TMP" && timeout -k 5 60 "$PROF" record -q --heap "$TMP/l1.pb.gz" \
	--heap-rate 1 -- "$W" >"$TMP/l1.out" 2>"$TMP/l1.err")
st=$?
check launcher_runs test $st = 0 -a "$(cat "$TMP/l1.out")" = "heapwork done"
check launcher_no_cpu_profile test ! -e "$TMP/profring.pb.gz"
raw l1.pb.gz
check launcher_rate1_exact exact l1.pb.gz
check types_in_go_order grep -q '^alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes\[dflt\]$' "$TMP/l1.pb.gz.raw"
check period_type grep -q '^PeriodType: space bytes$' "$TMP/l1.pb.gz.raw"
check period_is_rate grep -q '^Period: 1$' "$TMP/l1.pb.gz.raw"
check bytes_label grep -q 'bytes:\[8192\]' "$TMP/l1.pb.gz.raw"
"$PROF" report -s alloc_objects -n 5 "$TMP/l1.pb.gz" >"$TMP/l1.report" 2>&1
check report_sample_type grep -q '^ *2002 .* f_malloc$' "$TMP/l1.report"

# 2. Exact at rate 1, in-process, CPU profile beside it.
(cd "$TMP" && timeout -k 5 60 env PROFRING_PROF_HEAP="$TMP/p1.pb.gz" \
	PROFRING_PROF_HEAP_RATE=1 PROFRING_PROF="$TMP/p1cpu.pb.gz" \
	LD_PRELOAD="$LIB" "$W" >"$TMP/p1.out" 2>"$TMP/p1.err")
check inprocess_runs test $? = 0 -a "$(cat "$TMP/p1.out")" = "heapwork done"
raw p1.pb.gz
check inprocess_rate1_exact exact p1.pb.gz
check inprocess_cpu_written test -s "$TMP/p1cpu.pb.gz"

# 3. Sampled at 64 KiB on 100 times the work: bytes within 4 sigma.
R=65536
timeout -k 5 120 "$PROF" record -q --heap "$TMP/s.pb.gz" --heap-rate $R \
	-- "$W" 100 >"$TMP/s.out" 2>"$TMP/s.err"
raw s.pb.gz
per_function s.pb.gz | grep '^f_' >"$TMP/s.got"
truth 100 >"$TMP/s.want"
within() {
	join "$TMP/s.want" "$TMP/s.got" | awk -v r=$R '
	{
		for (k = 0; k < 2; k++) {
			w = (k ? $5 : $3); g = (k ? $9 : $7)
			if (w == 0) { if (g != 0) bad++; continue }
			tol = 4 * sqrt(r / w)
			d = (g - w) / w; if (d < 0) d = -d
			printf "%s %s want %d got %d (%.1f%%, allowed %.1f%%)\n",
				$1, k ? "inuse_space" : "alloc_space", w, g,
				100 * d, 100 * tol
			if (d > tol) bad++
		}
		n++
	}
	END { exit !(n == 5 && !bad) }'
}
check sampled_64k_within_error within

# 4. Programs.
timeout -k 5 60 "$PROF" record -q --children --heap "$TMP/f.pb.gz" \
	--heap-rate 4096 -- "$W" fork >"$TMP/f.out" 2>"$TMP/f.err"
st=$?
"$W" fork >"$TMP/f.plain" 2>/dev/null
check fork_same_output_status test $st = 7 -a \
	"$(sort "$TMP/f.out")" = "$(sort "$TMP/f.plain")"
raw f.pb.gz
check fork_two_pids test "$(grep -o 'pid:\[[0-9]*\]' "$TMP/f.pb.gz.raw" |
	sort -u | wc -l)" = 2

timeout -k 5 120 "$PROF" record -q --heap "$TMP/t.pb.gz" -- \
	"$W" threads 1000 >"$TMP/t.out" 2>"$TMP/t.err"
check threads_1000 test $? = 0 -a "$(cat "$TMP/t.out")" = "threads 1000"

timeout -k 5 60 "$PROF" record -q --heap "$TMP/e.pb.gz" --heap-rate 1 -- \
	"$W" errno >"$TMP/e.out" 2>"$TMP/e.err"
check free_keeps_errno test $? = 0

PY=/usr/bin/python3.11
if [ -x $PY ]; then
	script='d = {}
for i in range(200000):
    d[i] = str(i) * 3
print(len(d), sum(len(v) for v in d.values()))'
	timeout -k 5 120 "$PROF" record -q --heap "$TMP/py.pb.gz" -- \
		$PY -c "$script" >"$TMP/py.out" 2>"$TMP/py.err"
	st=$?
	$PY -c "$script" >"$TMP/py.plain"
	check python_same_output test $st = 0 -a \
		"$(cat "$TMP/py.out")" = "$(cat "$TMP/py.plain")"
	raw py.pb.gz
	check python_profile_read grep -q '^Samples:' "$TMP/py.pb.gz.raw"
fi

timeout -k 5 60 "$PROF" record -q --unwind libunwind --heap "$TMP/c.pb.gz" \
	--heap-rate 4096 -- "$CXX" >"$TMP/c.out" 2>"$TMP/c.err"
st=$?
"$CXX" >"$TMP/c.plain"
check cxx_same_output test $st = 0 -a "$(cat "$TMP/c.out")" = "$(cat "$TMP/c.plain")"
(cd "$TMP" && HOME="$TMP" timeout 60 go tool pprof -sample_index=alloc_space \
	-top c.pb.gz) >"$TMP/c.top" 2>&1
check cxx_names_allocators grep -q 'work(int)' "$TMP/c.top"

# 5. The trace (--trace): at rate 1 its memory events are the heap
# profile's, generation by generation.  A shell that execs the program
# first: its own objects are freed at the exec; the program's work runs
# twice, 1.5 s apart, so its first half's objects reach the next
# generations through their snapshots.  What is live at the end of the
# last generation is exactly what the heap profile has in use.
timeout -k 5 60 "$PROF" record --heap "$TMP/tr.pb.gz" --heap-rate 1 \
	--trace "$TMP/tr.trace" -- sh -c "exec '$W' twice" \
	>"$TMP/tr.out" 2>"$TMP/tr.err"
check trace_run test $? = 0 -a "$(cat "$TMP/tr.out")" = "heapwork twice done"
timeout 60 "$TRACE" summary "$TMP/tr.trace" >"$TMP/trs.out" 2>"$TMP/trs.err"
check trace_consistent test $? = 0 -a ! -s "$TMP/trs.err"
raw tr.pb.gz
# inuse_objects of every sample, summed (the raw dump's second column).
inuse() {
	awk '/^Samples:/ { on = 1; next } on && /^ *[0-9]+ / { n += $3 }
	     END { print n + 0 }' "$TMP/tr.pb.gz.raw"
}
trace_live() {
	awk '/^memory gen / { n = $11 } END { print n + 0 }' "$TMP/trs.out"
}
echo "  trace: $(grep -c '^memory gen' "$TMP/trs.out") generations, $(trace_live) live at the end; heap profile: $(inuse) in use"
check trace_generations test "$(grep -c '^memory gen' "$TMP/trs.out")" -ge 2
check trace_snapshot_carried awk '/^memory gen / && $5 > 1000 { ok = 1 }
	END { exit !ok }' "$TMP/trs.out"
check trace_live_is_inuse test "$(trace_live)" = "$(inuse)" -a "$(inuse)" -gt 0

# 6. Bad input.
"$PROF" record --heap "$TMP/x.pb.gz" --heap-rate 0 -- true >/dev/null \
	2>"$TMP/b1.err"
check bad_rate_usage test $? = 2 -a "$(wc -l <"$TMP/b1.err")" = 1
"$PROF" record --heap /nonexistent/dir/h.pb.gz -- true >/dev/null \
	2>"$TMP/b2.err"
check bad_path_usage test $? = 2 -a "$(wc -l <"$TMP/b2.err")" = 1
timeout -k 5 60 env PROFRING_PROF_HEAP="$TMP/b3.pb.gz" \
	PROFRING_PROF_HEAP_RATE=lots LD_PRELOAD="$LIB" "$W" >"$TMP/b3.out" \
	2>"$TMP/b3.err"
check bad_env_rate_runs_unprofiled test $? = 0 -a \
	"$(cat "$TMP/b3.out")" = "heapwork done" -a \
	"$(wc -l <"$TMP/b3.err")" = 1 -a ! -e "$TMP/b3.pb.gz"
timeout -k 5 60 env PROFRING_PROF_HEAP=/nonexistent/dir/h.pb.gz \
	LD_PRELOAD="$LIB" "$W" >"$TMP/b4.out" 2>"$TMP/b4.err"
check bad_env_path_runs_unprofiled test $? = 0 -a \
	"$(cat "$TMP/b4.out")" = "heapwork done" -a \
	"$(wc -l <"$TMP/b4.err")" = 1

checks_done
