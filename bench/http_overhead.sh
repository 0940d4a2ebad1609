#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/http_overhead.sh - what the /debug/pprof/ server (PROFRING_PROF_HTTP)
# costs the program it serves: idle, and while a 30 s CPU profile request
# runs.
#
# usage: bash bench/http_overhead.sh [--build DIR] [--units U] [--reps R]
#                                    [--seconds S]
#        (defaults: build, --units 110 (about 33 s of wall time per run on
#        a 2-vCPU machine), --reps 3, --seconds 30)
#
# The workload is build/tools/prof_demo --units U (two threads, fixed
# work), run whole under three configurations, interleaved repetition by
# repetition (order rotated), each exec'd through env(1) and timed with
# time.monotonic() around fork+exec+wait:
#
#   baseline     no profiler
#   idle server  LD_PRELOAD=libprofring-prof.so PROFRING_PROF_HTTP=127.0.0.1:0
#                (no request: the server only listens)
#   profile      the same, and one GET /debug/pprof/profile?seconds=S sent
#                as soon as the server says its port (the answer is read
#                and checked: 200 and a gzip'd body)
#
# Reported: median and min wall time per configuration and the overhead
# against the baseline (paired: the median over repetitions of
# run/baseline of the same repetition).  Appends to
# bench/results/http_overhead.md.  The goal: the idle server's overhead is
# within noise (paired median below 1%).
set -euo pipefail

BUILD=build
UNITS=110
REPS=3
SECONDS_ARG=30
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--units) UNITS=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--seconds) SECONDS_ARG=$2; shift 2 ;;
	*) echo "usage: $0 [--build DIR] [--units U] [--reps R] [--seconds S]" >&2; exit 2 ;;
	esac
done
DEMO=$BUILD/tools/prof_demo
LIB=$(cd "$BUILD" && pwd)/libprofring-prof.so
mkdir -p bench/results
OUT=bench/results/http_overhead.md

python3 - "$DEMO" "$LIB" "$UNITS" "$REPS" "$SECONDS_ARG" "$OUT" <<'EOF'
import os, re, socket, statistics, subprocess, sys, threading, time

demo, lib, units, reps, secs, out = sys.argv[1:7]
reps, secs = int(reps), int(secs)
cmd = [demo, "--units", units]


def fetch_profile(proc, result):
    port = None
    for line in proc.stderr:
        m = re.search(r"serving http://127\.0\.0\.1:(\d+)/", line)
        if m:
            port = int(m.group(1))
            break
    if not port:
        result.append("no port")
        return
    s = socket.create_connection(("127.0.0.1", port), timeout=secs + 30)
    s.sendall(b"GET /debug/pprof/profile?seconds=%d HTTP/1.1\r\n"
              b"Host: x\r\nConnection: close\r\n\r\n" % secs)
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    head, _, body = data.partition(b"\r\n\r\n")
    # 200, and a gzip'd body (maybe behind a chunk size line)
    ok = head.startswith(b"HTTP/1.1 200") and b"\x1f\x8b" in body[:32]
    result.append("ok" if ok else head.split(b"\r\n")[0].decode())
    for _ in proc.stderr:
        pass


def run(config):
    env = ["env"]
    if config != "baseline":
        env += ["LD_PRELOAD=" + lib, "PROFRING_PROF_HTTP=127.0.0.1:0"]
    t0 = time.monotonic()
    p = subprocess.Popen(env + cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    result = []
    th = None
    if config == "profile":
        th = threading.Thread(target=fetch_profile, args=(p, result))
        th.start()
    else:
        p.stderr.read()
    rc = p.wait()
    dt = time.monotonic() - t0
    if th:
        th.join()
        if result != ["ok"]:
            sys.exit("http_overhead: profile request: %s" % result)
    if rc:
        sys.exit("http_overhead: %s exited %d" % (config, rc))
    return dt


configs = ["baseline", "idle server", "profile"]
times = {c: [] for c in configs}
for r in range(reps):
    order = configs[r % 3:] + configs[:r % 3]
    for c in order:
        times[c].append(run(c))
        print("  rep %d %-12s %.2f s" % (r + 1, c, times[c][-1]),
              file=sys.stderr)

base = times["baseline"]
lines = ["", "## http_overhead (%s)" % time.strftime("%Y-%m-%d %H:%M UTC",
                                                      time.gmtime()),
         "",
         "prof_demo --units %s, %d reps, profile request %d s" %
         (units, reps, secs), "",
         "| config | median s | min s | paired overhead |",
         "|---|---|---|---|"]
for c in configs:
    t = times[c]
    paired = statistics.median(x / b - 1 for x, b in zip(t, base))
    lines.append("| %s | %.2f | %.2f | %+.2f%% |" %
                 (c, statistics.median(t), min(t), 100 * paired))
text = "\n".join(lines) + "\n"
print(text)
with open(out, "a") as f:
    f.write(text)
EOF
