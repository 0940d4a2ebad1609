#!/bin/sh
# SPDX-License-Identifier: MIT
#
# testing/run-tests.sh - run every test of one build and count.
#
#	sh testing/run-tests.sh BUILD LABEL TEST...
#
# Runs each unit-test binary TEST, the README example, the manual pages
# (man/man_test.sh), the public headers
# as users compile them (headers_test.sh), make install and uninstall
# into a temporary prefix (install_test.sh), bench/RESULTS.md's generator
# on made-up results (bench/results_md_test.sh), the tools' and the profiler's
# end-to-end scripts (prof_test.sh and prof/e2e/*_test.sh: e2e, heap,
# http, http_slow, record_http, threads, wall, wall_outputs, scribble,
# fds, sigmask, outfile, heap_edge, mutex), the first scenario of each
# stress program for 2 s and, when LABEL is "check", each fuzzer for
# CHECK_FUZZ_SECONDS (make fuzz-replay).  Every part prints PASS, FAIL and
# SKIP lines; a part that exits nonzero without a FAIL line counts as one
# failure.  A SKIP is not a pass.  The closing line is
# "LABEL: N passed, N failed, N skipped"; the exit status is nonzero if
# anything failed.
BUILD=$1
LABEL=$2
shift 2
pass=0
fail=0
skip=0

# count NAME RC OUTPUT: show the result lines of one part, and the checks
# that failed (ktest.h's "  file:line: ..." lines), and add them up.
count() {
	printf '%s\n' "$3" | grep -E '^(PASS|FAIL|SKIP|#|[a-z_]+_stress:)|^  [^ ]+:[0-9]+: (.*failed|required:)'
	p=$(printf '%s\n' "$3" | grep -c '^PASS')
	f=$(printf '%s\n' "$3" | grep -c '^FAIL')
	s=$(printf '%s\n' "$3" | grep -c '^SKIP')
	if [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then
		printf '%s\n' "$3" | tail -20
		echo "FAIL $1 exited $2 without a FAIL line"
		f=1
	fi
	pass=$((pass + p))
	fail=$((fail + f))
	skip=$((skip + s))
}

# A unit test that hangs (a symbolizer blocked on a FIFO, say) fails
# after 10 minutes instead of holding CI.
for t in "$@"; do
	out=$(timeout -k 5 600 "$t" 2>&1)
	count "$t" $? "$out"
done

if out=$("$BUILD/test/readme_example" 2>&1) &&
	echo "$out" | grep -q '^[1-9][0-9]* samples'; then
	count readme_example 0 "PASS readme_example ($out)"
else
	count readme_example 1 "$out
FAIL readme_example"
fi

out=$(sh tools/tools_test.sh "$BUILD" 2>&1)
count tools_test.sh $? "$out"
out=$(sh testing/headers_test.sh "$BUILD" 2>&1)
count headers_test.sh $? "$out"
out=$(sh testing/install_test.sh "$BUILD" 2>&1)
count install_test.sh $? "$out"
out=$(sh bench/results_md_test.sh 2>&1)
count results_md_test.sh $? "$out"
out=$(sh testing/user_test.sh "$BUILD" 2>&1)
count user_test.sh $? "$out"
out=$(sh testing/symbols_test.sh "$BUILD" 2>&1)
count symbols_test.sh $? "$out"
out=$(sh man/man_test.sh "$BUILD" 2>&1)
count man_test.sh $? "$out"
out=$(sh prof/agent/prof_test.sh "$BUILD" "$LABEL" 2>&1)
count prof_test.sh $? "$out"
out=$(sh prof/e2e/e2e_test.sh "$BUILD" "$LABEL" 2>&1)
count e2e_test.sh $? "$out"
out=$(sh prof/e2e/heap_test.sh "$BUILD" "$LABEL" 2>&1)
count heap_test.sh $? "$out"
out=$(sh prof/e2e/http_test.sh "$BUILD" "$LABEL" 2>&1)
count http_test.sh $? "$out"
out=$(sh prof/e2e/http_slow_test.sh "$BUILD" "$LABEL" 2>&1)
count http_slow_test.sh $? "$out"
out=$(sh prof/e2e/record_http_test.sh "$BUILD" "$LABEL" 2>&1)
count record_http_test.sh $? "$out"
out=$(sh prof/e2e/threads_test.sh "$BUILD" "$LABEL" 2>&1)
count threads_test.sh $? "$out"
out=$(sh prof/e2e/wall_test.sh "$BUILD" "$LABEL" 2>&1)
count wall_test.sh $? "$out"
out=$(sh prof/e2e/wall_outputs_test.sh "$BUILD" "$LABEL" 2>&1)
count wall_outputs_test.sh $? "$out"
out=$(sh prof/e2e/scribble_test.sh "$BUILD" "$LABEL" 2>&1)
count scribble_test.sh $? "$out"
out=$(sh prof/e2e/fds_test.sh "$BUILD" "$LABEL" 2>&1)
count fds_test.sh $? "$out"
out=$(sh prof/e2e/sigmask_test.sh "$BUILD" "$LABEL" 2>&1)
count sigmask_test.sh $? "$out"
out=$(sh prof/e2e/outfile_test.sh "$BUILD" "$LABEL" 2>&1)
count outfile_test.sh $? "$out"
out=$(sh prof/e2e/heap_edge_test.sh "$BUILD" "$LABEL" 2>&1)
count heap_edge_test.sh $? "$out"
out=$(sh prof/e2e/mutex_test.sh "$BUILD" "$LABEL" 2>&1)
count mutex_test.sh $? "$out"
out=$(stress/run.sh --quick 2 "$BUILD" 2>&1)
count stress/run.sh $? "$out"
if [ "$LABEL" = check ]; then
	out=$(${MAKE:-make} --no-print-directory fuzz-replay \
		FUZZ_SECONDS="${CHECK_FUZZ_SECONDS:-5}" 2>&1)
	rc=$?
	if ! printf '%s\n' "$out" | grep -q '^PASS\|^FAIL'; then
		out="$out
FAIL fuzz-replay ran no fuzzer"
	fi
	count fuzz-replay $rc "$out"
fi

echo "$LABEL: $pass passed, $fail failed, $skip skipped"
test "$fail" -eq 0
