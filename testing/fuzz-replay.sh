#!/bin/sh
# SPDX-License-Identifier: MIT
#
# testing/fuzz-replay.sh - run each committed input of each libFuzzer
# target once, then the target for SECONDS; one PASS or FAIL line each.
#
#	sh testing/fuzz-replay.sh FUZZ_BUILD SECONDS TARGET...
FUZZ_BUILD=$1
SECONDS_EACH=$2
shift 2
for f in "$@"; do
	mkdir -p "$FUZZ_BUILD/scratch/$f"
	log=$FUZZ_BUILD/$f.log
	if "$FUZZ_BUILD/fuzz/$f" -max_total_time="$SECONDS_EACH" \
		-print_final_stats=1 -artifact_prefix="$FUZZ_BUILD/" \
		"$FUZZ_BUILD/scratch/$f" "fuzz/corpus/$f" >"$log" 2>&1; then
		cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
		runs=$(sed -n 's/stat::number_of_executed_units: //p' "$log")
		echo "PASS fuzz $f ($cov, $runs runs)"
	else
		tail -30 "$log"
		echo "FAIL fuzz $f"
	fi
done
