#!/bin/sh
# SPDX-License-Identifier: MIT
#
# prof/e2e/threads_share.sh - one recording of prof/e2e/shortthreads and
# how its profile compares with the workload's own clocks:
#
#	sh prof/e2e/threads_share.sh BUILD OUTDIR HZ THREADS US [BATCH]
#
# Prints one line:
#
#	hz H us U threads N truth T profile P total_ms A cpu_ms C ratio R
#	of_cpu W unsampled X
#
# T: thread_work()'s share of the process's CPU by the workload's clocks
# (percent); P: the share of the profile's cpu/nanoseconds whose stack
# holds thread_work; A: the profile's total cpu/nanoseconds; C: the
# process's CPU time by CLOCK_PROCESS_CPUTIME_ID; R = A / C; W: the
# profile's thread_work CPU as a percentage of C; X: the share of A in
# the "[profring: unsampled CPU]" entry (CPU no sample saw).  The profile
# is read by `go tool pprof -raw` (the real client).  Exits nonzero, with
# one line on stderr, if the recording or the reading failed.  Shared by
# threads_test.sh and bench/threads_accuracy.sh.
BUILD=$1
OUT=$2
HZ=$3
N=$4
US=$5
BATCH=${6:-2}
PROF=$BUILD/tools/profring-prof
W=$BUILD/e2e/shortthreads
f=$OUT/st_${HZ}_$US
# TIMER=posix in the environment: record --timer posix.
if ! timeout -k 5 120 "$PROF" record -q -F "$HZ" ${TIMER:+--timer "$TIMER"} \
	-o "$f.pb.gz" -- "$W" "$N" "$US" "$BATCH" >"$f.out" 2>"$f.err"; then
	echo "threads_share: recording failed: $(head -1 "$f.err")" >&2
	exit 1
fi
if ! (cd "$OUT" && HOME="$OUT" go tool pprof -raw "$f.pb.gz") \
	>"$f.raw" 2>"$f.rawerr"; then
	echo "threads_share: go tool pprof failed: $(head -1 "$f.rawerr")" >&2
	exit 1
fi
# Samples lines: "COUNT NS: LOC..."; locations: "ID: ADDR M=N FUNC ...".
awk -v hz="$HZ" -v us="$US" -v n="$N" -v truth_line="$(tail -1 "$f.out")" '
	/^Samples:/ { sec = "s"; next }
	/^Locations/ { sec = "l"; next }
	/^Mappings/ { sec = "" }
	sec == "s" && $2 ~ /^[0-9]+:$/ {
		ns = $2 + 0
		total += ns
		nsamp++
		w[nsamp] = ns
		locs[nsamp] = ""
		for (i = 3; i <= NF; i++)
			locs[nsamp] = locs[nsamp] " " $i
	}
	sec == "l" && $1 ~ /^[0-9]+:$/ {
		id = $1
		sub(":", "", id)
		if ($4 == "thread_work")
			tw[id] = 1
		if (index($0, "[profring: unsampled CPU]"))
			un[id] = 1
	}
	END {
		for (i = 1; i <= nsamp; i++) {
			k = split(locs[i], l, " ")
			for (j = 1; j <= k; j++)
				if (l[j] in tw) {
					work += w[i]
					break
				}
			if (l[1] in un)
				unsampled += w[i]
		}
		split(truth_line, t, " ")
		cpu = t[6]
		if (!total || !cpu) {
			print "threads_share: no samples or no truth line" > "/dev/stderr"
			exit 1
		}
		printf "hz %d us %d threads %d truth %.1f profile %.1f total_ms %.1f cpu_ms %.1f ratio %.3f of_cpu %.1f unsampled %.1f\n",
			hz, us, n, t[8], 100 * work / total, total / 1e6,
			cpu / 1e6, total / cpu, 100 * work / cpu,
			100 * unsampled / total
	}' "$f.raw"
