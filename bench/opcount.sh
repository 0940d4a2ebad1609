#!/bin/sh
# bench/opcount.sh - instructions per operation of the write paths and
# their anchors, counted by callgrind (noise-free, unlike the timings):
# Ir of each op_<case>() of bench/work/opcount.c, inclusive, / its ops.
#
#   sh bench/opcount.sh [BUILD]     (default build; needs valgrind)
set -eu
build=${1:-build}
prog=$build/bench/opcount
if ! command -v valgrind >/dev/null 2>&1; then
	echo "opcount: valgrind not installed; skipped"
	exit 0
fi
[ -x "$prog" ] || { echo "opcount: $prog missing (make $prog)" >&2; exit 1; }
# One callgrind run per op_ function, collecting inside it only: the
# run's total is the function's inclusive count whatever files its code
# came from (callgrind_annotate splits a function by source file, and a
# function that starts in an inlined header is listed under that file).
for fn in $(nm "$prog" | sed -n 's/^[0-9a-f]* [tT] \(op_[a-z0-9_]*\)$/\1/p' | sort); do
	res=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		--toggle-collect="$fn" "$prog" 2>&1) ||
		{ echo "opcount: $prog failed" >&2; exit 1; }
	ops=$(echo "$res" | sed -n 's/^opcount: \([0-9]*\) ops.*ok$/\1/p')
	ir=$(echo "$res" | sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p')
	[ -n "$ops" ] && [ -n "$ir" ] ||
		{ echo "opcount: $prog failed" >&2; exit 1; }
	# Two rounds of each op_ function run (warm-up and measured): the
	# per-op figure is over both.
	awk -v n="${fn#op_}" -v ir="$ir" -v ops="$ops" \
		'BEGIN { printf "%-20s %7.1f Ir/op\n", n, ir / (2 * ops) }'
done
