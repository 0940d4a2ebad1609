#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/lttng_bench.sh - tracebuf_emit() with 2 arguments beside a real
# peer, an LTTng-UST tracepoint with two integer fields recorded by a live
# user-space session, in the same run: ns/event and bytes/event.
#
# usage: bash bench/lttng_bench.sh [--events N] [--reps R] [--build DIR]
#                                  [--out FILE] [--no-append]
#        (defaults: --events 1000000; --reps 3; --build build; --out
#        bench/results/lttng.md)
#
# How.  The script starts its own session daemon (lttng-sessiond
# --daemonize) with LTTNG_HOME in a temporary directory, and kills it at
# exit.  Each repetition runs both, in an order that alternates:
#
#   lttng     lttng create (output in the temporary directory),
#             enable-channel -u with 8 sub-buffers of 4 MiB (per-UID,
#             per-CPU: room for the whole run, so nothing needs to be
#             discarded), enable-event -u profring_bench:ev2, start; then
#             build/bench/lttng_emit lttng N (N tracepoint hits, event i
#             carrying the two uint64 fields i and i ^ 0x5bd1e995); stop
#             (its "events were discarded" warnings are summed), destroy.
#             Events recorded: babeltrace's count of the trace; bytes: the
#             whole trace directory (du -sb: packets, metadata, indexes).
#   tracebuf  build/bench/lttng_emit tracebuf N FILE: the same N events
#             through tracebuf_emit() (type 8, 2 arguments, 64 KiB
#             buffers, a 64 MiB bound), a reader thread draining the
#             stream into FILE while the loop runs, as LTTng's consumer
#             daemon does.  Events recorded: `profring-trace summary
#             FILE`'s count; bytes: FILE's size.
#
# ns/event is the time of the loop alone (clock_gettime around it) / N:
# the session set-up, the program's start (LTTng-UST's registration with
# the daemon) and the drain after the loop are outside it.  A run that
# records fewer events than it hit is reported (note column), not hidden;
# a run that records none, or whose program fails, stops the script with
# status 1.
#
# Output: the benchmarks' column layout (bench/harness.c): case, unit,
# ours, median [min-max], anchor, median [min-max], ratio, goal, met,
# note; printed, and appended as a Markdown table to FILE with the date,
# kernel, CPU, nproc and compiler.  Goal: ours <= 1.0 x LTTng-UST, in
# time and in bytes.
#
# Skips (exit 0, one line saying why) when build/bench/lttng_emit was not
# built (no liblttng-ust-dev), when lttng, lttng-sessiond, babeltrace or
# python3 is missing, or when a session daemon of this user is already
# running (as root the daemon's sockets live in /var/run/lttng whatever
# LTTNG_HOME says, so a system daemon would be shared: the script does not
# touch it).  Exit status: 0, 1 on a failed run, 2 on a usage error.

set -eu

events=1000000
reps=3
build=build
append=1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out="$root/bench/results/lttng.md"

usage() {
	sed -n '/^# usage:/,/^#$/{/^#$/d;s/^# //p;}' "$0" >&2
}

while [ $# -gt 0 ]; do
	case "$1" in
	--events) [ $# -ge 2 ] || { usage; exit 2; }; events=$2; shift 2 ;;
	--reps) [ $# -ge 2 ] || { usage; exit 2; }; reps=$2; shift 2 ;;
	--build) [ $# -ge 2 ] || { usage; exit 2; }; build=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || { usage; exit 2; }; out=$2; shift 2 ;;
	--no-append) append=0; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "lttng_bench.sh: unknown argument '$1'" >&2; usage; exit 2 ;;
	esac
done
for v in "$events" "$reps"; do
	case "$v" in
	''|*[!0-9]*) echo "lttng_bench.sh: '$v' is not a number" >&2; exit 2 ;;
	esac
done
if [ "$events" -lt 1 ] || [ "$reps" -lt 1 ]; then
	echo "lttng_bench.sh: --events and --reps must be at least 1" >&2
	exit 2
fi
case "$build" in
/*) ;;
*) build="$root/$build" ;;
esac

skip() {
	echo "lttng_bench.sh: skipped: $*"
	exit 0
}

prog="$build/bench/lttng_emit"
ttool="$build/tools/profring-trace"
[ -x "$prog" ] || skip "$prog not built (needs liblttng-ust-dev: <lttng/tracepoint.h>)"
[ -x "$ttool" ] || { echo "lttng_bench.sh: $ttool missing; run make -j2 first" >&2; exit 1; }
for c in lttng lttng-sessiond babeltrace python3 du; do
	command -v "$c" >/dev/null 2>&1 || skip "$c not found (lttng-tools, babeltrace)"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lttng_bench.XXXXXX")
export LTTNG_HOME="$tmp/home"
mkdir -p "$LTTNG_HOME"
if [ "$(id -u)" -eq 0 ]; then
	pidfile=/var/run/lttng/lttng-sessiond.pid
else
	pidfile="$LTTNG_HOME/.lttng/lttng-sessiond.pid"
fi
sd_pid=

cleanup() {
	if [ -n "$sd_pid" ]; then
		timeout -k 5 20 lttng destroy --all >/dev/null 2>&1 || true
		kill "$sd_pid" 2>/dev/null || true
		# Its consumer daemons go with it; wait for it, at most 10 s.
		k=0
		while kill -0 "$sd_pid" 2>/dev/null && [ "$k" -lt 100 ]; do
			sleep 0.1
			k=$((k + 1))
		done
		kill -0 "$sd_pid" 2>/dev/null && kill -9 "$sd_pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
	skip "a session daemon is already running (pid $(cat "$pidfile"), $pidfile); not sharing it"
fi
if ! timeout -k 5 30 lttng-sessiond --daemonize >"$tmp/sessiond.log" 2>&1; then
	cat "$tmp/sessiond.log" >&2
	skip "lttng-sessiond --daemonize failed"
fi
sd_pid=$(cat "$pidfile" 2>/dev/null || true)
if [ -z "$sd_pid" ] || ! kill -0 "$sd_pid" 2>/dev/null; then
	sd_pid=
	skip "lttng-sessiond started but left no live pid in $pidfile"
fi

# ctl ARGS...: one lttng command, its output kept for a failure.
ctl() {
	if ! timeout -k 5 60 lttng "$@" >>"$tmp/ctl.log" 2>&1; then
		echo "lttng_bench.sh: lttng $* failed:" >&2
		cat "$tmp/ctl.log" >&2
		exit 1
	fi
}

data="$tmp/runs.tsv"
: >"$data"

# run_lttng REP: one LTTng repetition; appends "lttng REP ns bytes recorded
# discarded" to $data.
run_lttng() {
	local rep=$1 sess="pbench$1" dir="$tmp/trace.$1" line ns bytes rec disc
	: >"$tmp/ctl.log"
	ctl create "$sess" --output="$dir"
	ctl enable-channel -u -s "$sess" --subbuf-size=4M --num-subbuf=8 c0
	ctl enable-event -u -s "$sess" -c c0 profring_bench:ev2
	ctl start "$sess"
	if ! line=$(timeout -k 5 120 "$prog" lttng "$events"); then
		echo "lttng_bench.sh: lttng_emit lttng failed" >&2
		exit 1
	fi
	: >"$tmp/ctl.log"
	ctl stop "$sess"
	disc=$(sed -n 's/.*Warning: \([0-9][0-9]*\) events were discarded.*/\1/p' \
		"$tmp/ctl.log" | awk '{ s += $1 } END { print s + 0 }')
	ctl destroy "$sess"
	ns=$(printf '%s\n' "$line" | sed -n 's/^lttng_emit: lttng events [0-9]* ns \([0-9]*\)$/\1/p')
	bytes=$(du -sb "$dir" | cut -f1)
	rec=$(timeout -k 5 300 babeltrace "$dir" | grep -c 'profring_bench:ev2' || true)
	if [ -z "$ns" ] || [ "$rec" -eq 0 ]; then
		echo "lttng_bench.sh: LTTng run $rep recorded nothing ($line)" >&2
		exit 1
	fi
	rm -rf "$dir"
	printf 'lttng\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$ns" "$bytes" "$rec" "$disc" >>"$data"
	printf ' lttng=%s ns' "$ns" >&2
}

# run_tracebuf REP: one tracebuf repetition; appends "tracebuf REP ns
# bytes recorded lost" to $data.
run_tracebuf() {
	local rep=$1 f="$tmp/tb.$1" line ns bytes lost rec
	if ! line=$(timeout -k 5 120 "$prog" tracebuf "$events" "$f"); then
		echo "lttng_bench.sh: lttng_emit tracebuf failed" >&2
		exit 1
	fi
	# "lttng_emit: tracebuf events N ns T bytes B lost L"
	set -- $line
	ns=$6 bytes=$8 lost=${10}
	if [ "$(du -b "$f" | cut -f1)" != "$bytes" ]; then
		echo "lttng_bench.sh: $f is not the $bytes bytes the reader wrote" >&2
		exit 1
	fi
	rec=$(timeout -k 5 120 "$ttool" summary "$f" | sed -n 's/^events \([0-9]*\)$/\1/p')
	if [ -z "$rec" ] || [ "$rec" -eq 0 ]; then
		echo "lttng_bench.sh: tracebuf run $rep recorded nothing" >&2
		exit 1
	fi
	rm -f "$f"
	printf 'tracebuf\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$ns" "$bytes" "$rec" "$lost" >>"$data"
	printf ' tracebuf=%s ns' "$ns" >&2
}

echo "lttng_bench.sh: $events events x $reps repetitions, LTTng-UST and tracebuf interleaved (sessiond pid $sd_pid)" >&2
r=0
while [ "$r" -lt "$reps" ]; do
	printf 'rep %d:' "$((r + 1))" >&2
	if [ $((r % 2)) -eq 0 ]; then
		run_lttng "$r"
		run_tracebuf "$r"
	else
		run_tracebuf "$r"
		run_lttng "$r"
	fi
	printf '\n' >&2
	r=$((r + 1))
done

date_s=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
kernel=$(uname -r)
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
ncpu=$(nproc)
compiler=$(readelf -p .comment "$prog" 2>/dev/null |
	sed -n 's/^ *\[ *[0-9a-f]*\] *//p' | head -n 1)
ust=$(dpkg-query -W -f '${Version}' liblttng-ust1 2>/dev/null || echo unknown)

python3 - "$data" "$events" "$reps" "$date_s" "$kernel" "$cpu_model" "$ncpu" \
	"$compiler" "$ust" "$tmp/table.md" <<'EOF'
import statistics, sys

(data, events, reps, date_s, kernel, cpu_model, ncpu, compiler, ust,
 outp) = sys.argv[1:]
n = int(events)
runs = {"lttng": [], "tracebuf": []}
for line in open(data):
    who, rep, ns, nbytes, rec, lost = line.rstrip("\n").split("\t")
    runs[who].append(dict(ns=int(ns) / n, b=int(nbytes) / max(int(rec), 1),
                          rec=int(rec), lost=int(lost)))

def st(who, key):
    v = [r[key] for r in runs[who]]
    return statistics.median(v), min(v), max(v)

def cell(s):
    return "%.2f [%.2f-%.2f]" % s

def recnote(who, lostword):
    rec = [r["rec"] for r in runs[who]]
    lost = sum(r["lost"] for r in runs[who])
    short = sum(n - x for x in rec)
    return "%s recorded %d..%d of %d, %s %d" % (
        who, min(rec), max(rec), n, lostword, lost) + (
        "" if short == 0 else " (SHORT by %d in all)" % short)

rows = []
for case, unit, key, what in (
        ("emit2", "ns/op", "ns", "loop time / events hit"),
        ("emit2 size", "B/ev", "b", "trace bytes on disk / events recorded")):
    o, a = st("tracebuf", key), st("lttng", key)
    ratio = o[0] / a[0]
    note = "%s; %s; %s; %s reps" % (
        what, recnote("tracebuf", "lost"),
        recnote("lttng", "discarded"), reps)
    rows.append((case, unit, "tracebuf", cell(o), "lttng-ust", cell(a),
                 ratio, "<=1.00", "yes" if ratio <= 1.0 else "no", note))

fmt = "%-10s %-6s %-14s %-22s %-14s %-22s %6s %-6s %-4s %s"
print(fmt % ("case", "unit", "ours", "median [min-max]", "anchor",
             "median [min-max]", "ratio", "goal", "met", "note"))
for r in rows:
    print(fmt % (r[:6] + ("%.3f" % r[6],) + r[7:]))

md = []
md.append("## lttng_bench: %s" % date_s)
md.append("")
md.append("- %d events (two 64-bit integers each) per run, %s repetitions, interleaved; LTTng-UST %s, per-UID buffers, 8 x 4 MiB sub-buffers; tracebuf 64 KiB buffers, 64 MiB bound, a reader thread writing the stream to a file" % (n, reps, ust))
md.append("- kernel: %s; CPU: %s; nproc: %s; compiler: %s" % (
    kernel, cpu_model, ncpu, compiler))
md.append("")
md.append("| case | unit | ours | median [min-max] | anchor | median [min-max] | ratio | goal | met | note |")
md.append("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    md.append("| %s | %s | %s | %s | %s | %s | %.3f | %s | %s | %s |" % r)
open(outp, "w").write("\n".join(md) + "\n")
EOF

if [ "$append" = 1 ]; then
	mkdir -p "$(dirname "$out")"
	{
		cat "$tmp/table.md"
		echo
	} >>"$out"
	echo "lttng_bench.sh: appended to $out" >&2
fi
