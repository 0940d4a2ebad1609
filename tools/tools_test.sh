#!/bin/sh
# SPDX-License-Identifier: MIT
#
# tools_test.sh - end-to-end test of trace_demo and profring-trace.
#
#	sh tools/tools_test.sh [BUILD]		(BUILD defaults to "build")
#
# Writes a trace with $BUILD/tools/trace_demo, then checks that
# profring-trace summary, dump and json succeed on it, that the summary
# counts exactly the events trace_demo says were accepted, that the JSON
# parses, and that a copy cut in half is refused with an error naming an
# offset.  Prints one "PASS tools_trace_<name>" or "FAIL tools_trace_<name>"
# line per check; exits nonzero if any failed.

BUILD=${1:-build}
DEMO=$BUILD/tools/trace_demo
TOOL=$BUILD/tools/profring-trace
CHECK_PREFIX=tools_trace_
. "$(dirname "$0")/../testing/testlib.sh"

# run_ok NAME CMD...: run CMD with stdout to $TMP/NAME.out, stderr shown
# on failure; check that it exits 0.
run_ok() {
	name=$1
	shift
	"$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	rc=$?
	[ $rc -eq 0 ] || { echo "  $name: exit $rc"; sed 's/^/  /' "$TMP/$name.err"; }
	check "$name" [ $rc -eq 0 ]
}

run_ok demo "$DEMO" "$TMP/demo.trace"
sed 's/^/  /' "$TMP/demo.out"
run_ok summary "$TOOL" summary "$TMP/demo.trace"
run_ok dump "$TOOL" dump "$TMP/demo.trace"
run_ok json "$TOOL" json "$TMP/demo.trace"

accepted=$(sed -n 's/^trace_demo: accepted \([0-9]*\) .*/\1/p' "$TMP/demo.out")
events=$(sed -n 's/^events \([0-9]*\)$/\1/p' "$TMP/summary.out")
echo "  accepted ${accepted:-?}, summary events ${events:-?}"
counts_match() {
	[ -n "$accepted" ] && [ "$accepted" -gt 0 ] && [ "$accepted" = "$events" ]
}
check event_count counts_match

check json_parses python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["traceEvents"]) > 0
' "$TMP/json.out"

# Half the file: cut inside a record (an error of the decoder) or, by
# chance, at a record boundary (a generation without its end: the tool's).
size=$(wc -c <"$TMP/demo.trace")
head -c $((size / 2)) "$TMP/demo.trace" >"$TMP/half.trace"
"$TOOL" dump "$TMP/half.trace" >/dev/null 2>"$TMP/half.err"
rc=$?
echo "  truncated to $((size / 2)) of $size bytes: exit $rc: $(cat "$TMP/half.err")"
refused_with_offset() {
	[ $rc -eq 1 ] && grep -q 'offset [0-9][0-9]*' "$TMP/half.err"
}
check truncated refused_with_offset

"$TOOL" >/dev/null 2>&1
check usage [ $? -eq 2 ]

[ $fails -eq 0 ]
