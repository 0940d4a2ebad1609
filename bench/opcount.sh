#!/bin/sh
# bench/opcount.sh - instructions per operation of the write paths and
# their anchors, counted by callgrind (noise-free, unlike the timings):
# Ir of each op_<case>() of bench/work/opcount.c, inclusive, / its ops.
#
#   sh bench/opcount.sh [BUILD]     (default build; needs valgrind)
set -eu
build=${1:-build}
prog=$build/bench/opcount
out=${TMPDIR:-/tmp}/opcount.$$.callgrind
if ! command -v valgrind >/dev/null 2>&1; then
	echo "opcount: valgrind not installed; skipped"
	exit 0
fi
[ -x "$prog" ] || { echo "opcount: $prog missing (make $prog)" >&2; exit 1; }
trap 'rm -f "$out"' EXIT
ops=$(valgrind --tool=callgrind --callgrind-out-file="$out" \
	--toggle-collect='op_*' "$prog" 2>/dev/null | sed -n 's/^opcount: \([0-9]*\) ops.*ok$/\1/p')
[ -n "$ops" ] || { echo "opcount: $prog failed" >&2; exit 1; }
# Two rounds of each op_ function were collected (warm-up and measured):
# the per-op figure is over both.
callgrind_annotate --inclusive=yes "$out" 2>/dev/null |
	sed -n 's/^ *\([0-9,]*\) ([ 0-9.%]*) *[^ ]*opcount\.c:\(op_[a-z0-9_]*\) .*/\1 \2/p' |
	awk -v ops="$ops" '{ gsub(",", "", $1);
		printf "%-20s %7.1f Ir/op\n", substr($2, 4), $1 / (2 * ops) }' |
	sort
