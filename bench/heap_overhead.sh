#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/heap_overhead.sh - what heap profiling costs, profring beside
# gperftools' heap profiler and heaptrack, in the same run.
#
# usage: bash bench/heap_overhead.sh [--reps R] [--n N] [--build DIR]
#        (defaults: 3 repetitions, N = 5,000,000 allocations per thread)
#
# Workloads: build/bench/malloc_storm (2 threads, N small malloc/free
# each) and python3.11 building a 300,000-entry dict of strings (a real
# program).  Each is run plain and under: profring-prof record --heap at
# the default rate (512 KiB) and at rate 1 (every allocation), tcmalloc
# alone (LD_PRELOAD=libtcmalloc.so: the allocator gperftools' profiler
# needs, its own baseline), gperftools' heap profiler (HEAPPROFILE=) and
# heaptrack.  gperftools' profiler records every allocation under a lock:
# on the storm it runs N/50 allocations per thread (a full run takes
# minutes), and its cost is given per allocation.  Printed, per tool: the
# median wall time in ms, the overhead over plain in %, and the added
# cost per allocation in ns (storm only).  A tool that is not installed
# is skipped with a line saying so.
set -u

reps=3
n=5000000
build=build
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
while [ $# -gt 0 ]; do
	case $1 in
	--reps) reps=$2; shift 2 ;;
	--n) n=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	*) echo "usage: $0 [--reps R] [--n N] [--build DIR]" >&2; exit 2 ;;
	esac
done
prof="$root/$build/tools/profring-prof"
storm="$root/$build/bench/malloc_storm"
for f in "$prof" "$storm"; do
	[ -x "$f" ] || { echo "heap_overhead: build $f first" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tcm=$(ls /usr/lib/*/libtcmalloc.so.4 2>/dev/null | head -n 1)
py=/usr/bin/python3.11
pyscript='d = {}
for i in range(300000):
    d[i] = str(i) * 4
print(len(d))'

# ms CMD...: wall milliseconds of one run (its output discarded).
ms() {
	local s e
	s=$(date +%s%N)
	timeout 600 "$@" >/dev/null 2>&1 || echo "heap_overhead: failed: $*" >&2
	e=$(date +%s%N)
	echo $(((e - s) / 1000000))
}

# median CMD...: the median of $reps runs, after one warm-up run.
median() {
	local i
	ms "$@" >/dev/null
	for i in $(seq "$reps"); do ms "$@"; done | sort -n |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# row WORKLOAD TOOL MS BASE_MS ALLOCS: one result line.
row() {
	awk -v w="$1" -v t="$2" -v m="$3" -v b="$4" -v a="$5" 'BEGIN {
		o = b > 0 ? 100 * (m - b) / b : 0
		ns = a > 0 ? (m - b) * 1e6 / a : 0
		printf "%-8s %-26s %9d ms  %+7.1f%%", w, t, m, o
		if (a > 0) printf "  %+7.2f ns/alloc", ns
		printf "\n"
	}'
}

echo "# heap_overhead: $(nproc) CPUs, $(uname -r), reps=$reps, storm N=$n per thread"
allocs=$((2 * n))
# storm
base=$(median "$storm" "$n")
row storm plain "$base" "$base" "$allocs"
m=$(median "$prof" record -q --heap "$tmp/d.pb.gz" -- "$storm" "$n")
row storm "profring (512 KiB)" "$m" "$base" "$allocs"
m=$(median "$prof" record -q --heap "$tmp/r1.pb.gz" --heap-rate 1 -- "$storm" "$n")
row storm "profring (rate 1)" "$m" "$base" "$allocs"
if [ -n "$tcm" ]; then
	tbase=$(median env LD_PRELOAD="$tcm" "$storm" "$n")
	row storm "tcmalloc alone" "$tbase" "$base" "$allocs"
	small=$((n / 50))
	sb=$(median env LD_PRELOAD="$tcm" "$storm" "$small")
	m=$(median env LD_PRELOAD="$tcm" HEAPPROFILE="$tmp/gp" "$storm" "$small")
	row storm "gperftools (N/50)" "$m" "$sb" $((2 * small))
else
	echo "storm    gperftools: skipped (no libtcmalloc.so.4)"
fi
if command -v heaptrack >/dev/null 2>&1; then
	m=$(median heaptrack -o "$tmp/ht" "$storm" "$n")
	row storm heaptrack "$m" "$base" "$allocs"
else
	echo "storm    heaptrack: skipped (not installed)"
fi
# python3.11
if [ -x $py ]; then
	base=$(median $py -c "$pyscript")
	row python plain "$base" "$base" 0
	m=$(median "$prof" record -q --heap "$tmp/pd.pb.gz" -- $py -c "$pyscript")
	row python "profring (512 KiB)" "$m" "$base" 0
	m=$(median "$prof" record -q --heap "$tmp/pr.pb.gz" --heap-rate 1 -- $py -c "$pyscript")
	row python "profring (rate 1)" "$m" "$base" 0
	if [ -n "$tcm" ]; then
		tbase=$(median env LD_PRELOAD="$tcm" $py -c "$pyscript")
		row python "tcmalloc alone" "$tbase" "$base" 0
		m=$(median env LD_PRELOAD="$tcm" HEAPPROFILE="$tmp/gpp" $py -c "$pyscript")
		row python "gperftools" "$m" "$base" 0
	fi
	if command -v heaptrack >/dev/null 2>&1; then
		m=$(median heaptrack -o "$tmp/htp" $py -c "$pyscript")
		row python heaptrack "$m" "$base" 0
	fi
fi
