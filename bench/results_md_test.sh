#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/results_md_test.sh - bench/results_md.py on made-up results.
#
#	sh bench/results_md_test.sh
#
# A benchmark run twice: its block holds the second run's rows, with the
# machine, compiler and date of its run line; the paragraph of why kept
# from the old file while a goal is not met, dropped once all are met;
# a block with no result kept; a kept:NAME block dropped once NAME is
# generated, another kept:... block copied; a script's report (lttng.md,
# two runs appended) taken from its last run, its harness-style table in
# the same columns with the machine, compiler and date of its lines; a
# second run of the script changes nothing.
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0

pass() { echo "PASS results_md: $1"; }
fail() {
	echo "FAIL results_md: $1"
	fails=$((fails + 1))
}
check() {
	if grep -q -- "$2" "$tmp/RESULTS.md"; then
		pass "$1"
	else
		fail "$1: no '$2'"
	fi
}
check_not() {
	if grep -q -- "$2" "$tmp/RESULTS.md"; then
		fail "$1: '$2' there"
	else
		pass "$1"
	fi
}

command -v python3 >/dev/null 2>&1 || {
	echo "SKIP results_md: no python3"
	exit 0
}

mkdir -p "$tmp/results"
# results RATIO MET: two runs of x_bench, the second with RATIO and MET.
results() {
	cat >"$tmp/results/latest.md" <<EOF
# profring benchmark results

## x_bench

2026-01-01 10:00:00 UTC; Old CPU; 2 CPUs; gcc 1.0; reps 5

| case | unit | ours | median [min-max] | anchor | median [min-max] | ratio | goal | met | note |
|---|---|---|--:|---|--:|--:|---|---|---|

## x_bench

2026-02-02 12:00:00 UTC; New CPU; 16 CPUs; gcc 12.2.0; reps 7

| case | unit | ours | median [min-max] | anchor | median [min-max] | ratio | goal | met | note |
|---|---|---|--:|---|--:|--:|---|---|---|

What x_bench measures.
EOF
	cat >"$tmp/results/latest.csv" <<EOF
program,case,unit,ours,ours_median,ours_min,ours_max,ours_tsc,anchor,anchor_median,anchor_min,anchor_max,anchor_tsc,ratio,goal,met,note
"x_bench","write","ns/op","ours",9.0,8.0,10.0,0,"peer",3.0,2.0,4.0,0,3.0000,"<= 1.00",no,""
"x_bench","read","ns/op","ours",1.0,1.0,1.0,0,"peer",2.0,2.0,2.0,0,0.5000,"<= 1.00",yes,""
"x_bench","write","ns/op","ours",9.0,8.0,10.0,0,"peer",7.5,7.0,8.0,0,$1,"<= 1.00",$2,""
"x_bench","read","ns/op","ours",1.0,1.0,1.0,0,"peer",2.0,2.0,2.0,0,0.5000,"<= 1.00",yes,"info row"
EOF
}

cat >"$tmp/results/lttng.md" <<'EOF'
## lttng_bench: 2026-01-01 10:00 UTC

- kernel: 5.0; CPU: Old CPU; nproc: 2; compiler: gcc 1.0

| case | unit | ours | median [min-max] | anchor | median [min-max] | ratio | goal | met | note |
|---|---|---|---|---|---|---|---|---|---|
| emit2 | ns/op | tracebuf | 9.00 [9.00-9.00] | lttng-ust | 1.00 [1.00-1.00] | 9.000 | <=1.00 | no | OLD-LTTNG |

## lttng_bench: 2026-03-03 10:00 UTC

- kernel: 6.1; CPU: Some CPU; nproc: 4; compiler: gcc 12.2.0

| case | unit | ours | median [min-max] | anchor | median [min-max] | ratio | goal | met | note |
|---|---|---|---|---|---|---|---|---|---|
| emit2 | ns/op | tracebuf | 36.19 [30.98-39.58] | lttng-ust | 220.92 [194.20-224.85] | 0.164 | <=1.00 | yes | NEW-LTTNG |
EOF

cat >"$tmp/RESULTS.md" <<'EOF'
# Benchmark results

<!-- begin x_bench -->
## x_bench

<!-- why -->
WHY-TEXT stays.
<!-- /why -->
<!-- end x_bench -->

<!-- begin kept:x_bench -->
## x_bench (kept by hand)
OLD-KEPT-X
<!-- end kept:x_bench -->

<!-- begin z_bench -->
## z_bench
Z-UNTOUCHED
<!-- end z_bench -->

<!-- begin kept:lttng -->
## lttng (kept by hand)
OLD-KEPT-LTTNG
<!-- end kept:lttng -->

<!-- begin kept:elsewhere -->
## on another machine
KEPT-ELSEWHERE
<!-- end kept:elsewhere -->
EOF

run() {
	if ! out=$(python3 bench/results_md.py --results "$tmp/results" \
		--out "$tmp/RESULTS.md" 2>&1); then
		printf '%s\n' "$out"
		fail "results_md.py runs"
	fi
}

results 1.2000 no
run
check "the second run's row" '| write | ours | peer | 9.00 \[8.00-10.00\] ns/op | 7.50 \[7.00-8.00\] ns/op | 1.200 | <=1.00 | \*\*no\*\* | New CPU, 16 CPUs | gcc 12.2.0 | 2026-02-02 |'
check_not "no first-run row" '3.000'
check "the run's notes" 'What x_bench measures.'
check "unmet rows listed" 'Not met in this run: write, ours against peer (1.200, goal <=1.00)'
check "why kept while unmet" 'WHY-TEXT stays.'
check_not "kept:x_bench dropped" 'OLD-KEPT-X'
check "a block without results kept" 'Z-UNTOUCHED'
check "kept:elsewhere copied" 'KEPT-ELSEWHERE'
check "lttng's last run, in the same columns" '| emit2 | tracebuf | lttng-ust | 36.19 \[30.98-39.58\] ns/op | 220.92 \[194.20-224.85\] ns/op | 0.164 | <=1.00 | yes | Some CPU, 4 CPUs | gcc 12.2.0 | 2026-03-03 | NEW-LTTNG |'
check_not "lttng's earlier run dropped" 'OLD-LTTNG'
check_not "kept:lttng dropped" 'OLD-KEPT-LTTNG'
cp "$tmp/RESULTS.md" "$tmp/first.md"
run
if cmp -s "$tmp/first.md" "$tmp/RESULTS.md"; then
	pass "a second run changes nothing"
else
	diff "$tmp/first.md" "$tmp/RESULTS.md" | head -10
	fail "a second run changes nothing"
fi

results 0.9000 yes
run
check "met now" '| 0.900 | <=1.00 | yes |'
check_not "why dropped once all are met" 'WHY-TEXT'
check_not "no unmet list" 'Not met'
test "$fails" -eq 0
