#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/heap_cost.sh - what the heap profiler costs per allocation, by
# thread count, beside the allocators' own profilers, in one run.
#
# usage: bash bench/heap_cost.sh [--reps R] [--n N] [--threads "1 2 ..."]
#                                [--storm a|b] [--build DIR]
#        defaults: 5 repetitions, N = 6,000,000 allocations per thread,
#        threads 1 and 2 and every power of two up to nproc, storm a.
#
# The workload is build/bench/heap_storm (bench/work/heap_storm.c):
# storm a writes every block whole (a program that uses its memory),
# storm b only calls malloc and free.  Every tool runs it at two sizes,
# N/3 and N allocations per thread, interleaved with the others rep by
# rep (noise hits all alike); the marginal cost of one allocation is
# (t(N) - t(N/3)) / (2N/3), in ns of wall time per allocation of one
# thread, and the fixed cost (start, symbolizing, writing the profile)
# is what t(N/3) adds beyond the marginal cost.  Tools: plain glibc;
# profring-prof record --heap at its default rate (512 KiB); tcmalloc
# alone (libtcmalloc_minimal); jemalloc alone and with its own sampling
# profiler (MALLOC_CONF=prof:true,lg_prof_sample:19, the same mean rate);
# heaptrack (every allocation, at N/50: a full run takes minutes).
# Printed per storm and thread count: each tool's marginal ns, its ratio
# to plain's (or, for jemalloc's profiler, to jemalloc alone's), and its
# fixed cost in ms.  A tool not installed is skipped with a line.
set -u

reps=5
n=6000000
storm_kind=a
threads=""
build=build
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
while [ $# -gt 0 ]; do
	case $1 in
	--reps) reps=$2; shift 2 ;;
	--n) n=$2; shift 2 ;;
	--threads) threads=$2; shift 2 ;;
	--storm) storm_kind=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	*) echo "usage: $0 [--reps R] [--n N] [--threads LIST] [--storm a|b] [--build DIR]" >&2; exit 2 ;;
	esac
done
if [ -z "$threads" ]; then
	threads="1"
	t=2
	while [ $t -le "$(nproc)" ]; do threads="$threads $t"; t=$((t * 2)); done
fi
prof="$root/$build/tools/profring-prof"
storm="$root/$build/bench/heap_storm"
for f in "$prof" "$storm"; do
	[ -x "$f" ] || { echo "heap_cost: build $f first (make $f)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lib() { ls /usr/lib/*/"$1" 2>/dev/null | head -n 1; }
tcm=$(lib libtcmalloc_minimal.so.4)
jem=$(lib libjemalloc.so.2)

# run TOOL THREADS N: wall ms of one run of the storm under TOOL.
run() {
	local tool=$1 th=$2 nn=$3 s e
	local cmd=("$storm" "$storm_kind" "$th" "$nn")
	s=$(date +%s%N)
	case $tool in
	plain) "${cmd[@]}" ;;
	profring) "$prof" record -q --heap "$tmp/h.pb.gz" -- "${cmd[@]}" ;;
	tcmalloc) LD_PRELOAD=$tcm "${cmd[@]}" ;;
	jemalloc) LD_PRELOAD=$jem "${cmd[@]}" ;;
	jeprof) LD_PRELOAD=$jem MALLOC_CONF=prof:true,lg_prof_sample:19,prof_prefix:$tmp/jeprof \
		"${cmd[@]}" ;;
	heaptrack) heaptrack -o "$tmp/ht" "${cmd[@]}" ;;
	esac >/dev/null 2>&1 || echo "heap_cost: $tool failed" >&2
	e=$(date +%s%N)
	echo $(((e - s) / 1000000))
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

tools="plain profring"
[ -n "$tcm" ] && tools="$tools tcmalloc" || echo "# tcmalloc: skipped (no libtcmalloc_minimal.so.4)"
[ -n "$jem" ] && tools="$tools jemalloc jeprof" || echo "# jemalloc: skipped (no libjemalloc.so.2: apt-get install libjemalloc2)"
command -v heaptrack >/dev/null 2>&1 && tools="$tools heaptrack" || echo "# heaptrack: skipped (not installed)"

echo "# heap_cost: $(nproc) CPUs, $(uname -r), $(gcc --version | head -n 1), storm $storm_kind, reps=$reps, N=$n per thread, $(date -u '+%Y-%m-%d %H:%M UTC')"
printf '%-7s %-10s %12s %8s %10s\n' threads tool "ns/alloc" ratio "fixed ms"
n1=$((n / 3))
for th in $threads; do
	for tool in $tools; do : >"$tmp/$tool.1"; : >"$tmp/$tool.2"; done
	for r in $(seq "$reps"); do
		for tool in $tools; do
			big=$n small=$n1
			if [ "$tool" = heaptrack ]; then big=$((n / 50)) small=$((n1 / 50)); fi
			run "$tool" "$th" "$small" >>"$tmp/$tool.1"
			run "$tool" "$th" "$big" >>"$tmp/$tool.2"
		done
	done
	for tool in $tools; do
		big=$n small=$n1
		if [ "$tool" = heaptrack ]; then big=$((n / 50)) small=$((n1 / 50)); fi
		t1=$(median <"$tmp/$tool.1")
		t2=$(median <"$tmp/$tool.2")
		awk -v t1="$t1" -v t2="$t2" -v a="$small" -v b="$big" \
			'BEGIN { m = (t2 - t1) * 1e6 / (b - a); printf "%.3f %.1f\n", m, t1 - m * a / 1e6 }' \
			>"$tmp/$tool.m"
	done
	read -r pm pf <"$tmp/plain.m"
	for tool in $tools; do
		read -r m f <"$tmp/$tool.m"
		base=$pm basef=$pf
		if [ "$tool" = jeprof ]; then read -r base basef <"$tmp/jemalloc.m"; fi
		awk -v th="$th" -v t="$tool" -v m="$m" -v f="$f" -v b="$base" -v bf="$basef" 'BEGIN {
			printf "%-7s %-10s %12.2f %8.3f %10.1f\n", th, t, m, (b > 0 ? m / b : 0), f - bf }'
	done
done
