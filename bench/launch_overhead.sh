#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/launch_overhead.sh - the wall time a launcher adds to a process
# that does nothing: `profring-prof record` against perf record, on
# /bin/true.
#
# usage: bash bench/launch_overhead.sh [--reps R] [--build DIR]
#        (defaults: 30 repetitions, build/)
#
# Each repetition runs, in rotated order, /bin/true plain, under
# `profring-prof record -q` (shared memory set up, the program started with
# the library preloaded, its mappings read, the profile symbolized and
# written) and, when `perf` is installed and may sample, under `perf record
# -q -e cpu-clock -F 999 -g`.  Each run is timed by python3's
# time.monotonic() around fork+exec+wait.  Printed: the median and min
# wall time of each and the median added over plain, in milliseconds,
# and a markdown table appended to bench/results/launch_overhead.md.
# Exit status 1 if a run fails or writes no profile.
set -eu

reps=30
build=build
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
while [ $# -gt 0 ]; do
	case $1 in
	--reps) reps=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	*) echo "usage: $0 [--reps R] [--build DIR]" >&2; exit 2 ;;
	esac
done
prof="$root/$build/tools/profring-prof"
[ -x "$prof" ] || { echo "launch_overhead: build $prof first" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
have_perf=0
if command -v perf >/dev/null 2>&1 &&
	perf record -q -e cpu-clock -o "$tmp/probe.data" -- true 2>/dev/null; then
	have_perf=1
fi
mkdir -p "$root/bench/results"

python3 - "$reps" "$prof" "$tmp" "$have_perf" "$root/bench/results/launch_overhead.md" <<'EOF'
import os, statistics, subprocess, sys, time, datetime, platform
reps, prof, tmp, have_perf, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5]
true = "/bin/true"
cfgs = [("plain", [true], None),
        ("profring-prof record", [prof, "record", "-q", "-o", tmp + "/p.pb.gz", "--", true], tmp + "/p.pb.gz")]
if have_perf:
    cfgs.append(("perf record -g", ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-g",
                                     "-o", tmp + "/perf.data", "--", true], tmp + "/perf.data"))
times = {c[0]: [] for c in cfgs}
for r in range(reps + 1):
    order = cfgs[r % len(cfgs):] + cfgs[:r % len(cfgs)]
    for name, argv, outfile in order:
        if outfile and os.path.exists(outfile):
            os.unlink(outfile)
        t0 = time.monotonic()
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        t = time.monotonic() - t0
        if p.returncode != 0 or (outfile and not os.path.exists(outfile)):
            sys.stderr.write("launch_overhead: %s failed (%d): %s\n" % (name, p.returncode, p.stderr.decode()))
            sys.exit(1)
        if r > 0:  # the first round warms caches up
            times[name].append(t * 1000)
base = statistics.median(times["plain"])
rows = []
for name, _, _ in cfgs:
    v = times[name]
    med = statistics.median(v)
    rows.append("| %s | %.2f | %.2f | %.2f |" % (name, med, min(v), med - base))
hdr = ["| launcher on /bin/true | median ms | min ms | added ms (median) |", "|---|---|---|---|"]
text = "\n".join(hdr + rows)
print(text)
with open(out, "a") as f:
    f.write("\n## %s, %s, %d reps, %s\n\n%s\n" % (datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
            platform.release(), reps, os.cpu_count(), text))
EOF
