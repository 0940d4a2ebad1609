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
# offset.  Then handmade streams: many threads and many generations
# (linear, within a time bound), generations without tables, type names
# with control characters (escaped); and files that are not traces, too
# large (--max-size) or directories.  Prints one "PASS tools_trace_<name>"
# or "FAIL tools_trace_<name>" line per check; exits nonzero if any
# failed.

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

# Every event the threads wrote is in the file, and so is one exists
# event per object live at the start of each generation but the first.
accepted=$(sed -n 's/^trace_demo: accepted \([0-9]*\) .*/\1/p' "$TMP/demo.out")
events=$(sed -n 's/^events \([0-9]*\)$/\1/p' "$TMP/summary.out")
exists=$(sed -n 's/^type 5 "exists" events \([0-9]*\)$/\1/p' "$TMP/summary.out")
echo "  accepted ${accepted:-?}, exists ${exists:-?}, summary events ${events:-?}"
counts_match() {
	[ -n "$accepted" ] && [ "$accepted" -gt 0 ] && [ -n "$exists" ] &&
		[ $((accepted + exists)) = "$events" ]
}
check event_count counts_match

# Memory: the allocations and frees the threads made, and what they still
# held at the stop, are the summary's (its last generation's live set).
mem_line=$(sed -n 's/^trace_demo: memory //p' "$TMP/demo.out")
mem_summary() {
	awk '/^memory gen / { a += $7; f += $9; lo = $11; lb = $13 }
	     END { printf "allocs %d frees %d live_objects %d live_bytes %d", a, f, lo, lb }' \
		"$TMP/summary.out"
}
echo "  demo: $mem_line; summary: $(mem_summary)"
mem_match() {
	[ -n "$mem_line" ] && [ "$mem_line" = "$(mem_summary)" ]
}
check memory_exact mem_match
check memory_consistent sh -c "! grep -q 'unknown_frees\|double_allocs\|snapshot_' '$TMP/summary.out'"
check memory_top_stacks grep -q '^memory top allocation stacks by bytes' "$TMP/summary.out"

check json_parses python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["traceEvents"]) > 0
' "$TMP/json.out"
# The live heap is a counter track, ending at the live bytes of the stop.
live_bytes=$(echo "$mem_line" | sed -n 's/.*live_bytes \([0-9]*\)$/\1/p')
check json_live_heap python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = sorted((e["ts"], e["args"]["bytes"]) for e in d["traceEvents"]
           if e.get("ph") == "C" and e["name"] == "live heap")
assert len(c) > 10 and c[-1][1] == int(sys.argv[2]), c[-3:]
' "$TMP/json.out" "$live_bytes"

# Spans: slices in the JSON (ph X, with a duration), totals in the summary.
check json_spans python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = [e for e in d["traceEvents"] if e.get("ph") == "X"]
assert all(e["name"] in ("batch of 16", "worker run") for e in s), s[:3]
s = [e for e in s if e["name"] == "batch of 16"]
assert len(s) > 10 and all(e["dur"] > 0 for e in s), s[:3]
' "$TMP/json.out"
check summary_spans grep -q '^span "batch of 16" count [1-9][0-9]* total_ns [1-9]' \
	"$TMP/summary.out"
# Spans of a thread (type 7), written by the main thread after the
# workers ran: one slice per worker, on that worker's track, as long as
# its run.
check json_spans_of_thread python3 -c '
import json, re, sys
d = json.load(open(sys.argv[1]))
tids = set(int(t) for t in re.findall(r"thread (\d+) accepted", sys.argv[2]))
s = [e for e in d["traceEvents"]
     if e.get("ph") == "X" and e["name"] == "worker run"]
assert len(s) == 4 and set(e["tid"] for e in s) == tids, (s, tids)
assert all(e["dur"] > 1000 for e in s), s
' "$TMP/json.out" "$(cat "$TMP/demo.out")"
check summary_spans_of_thread grep -q '^span "worker run" count 4 total_ns [1-9]' \
	"$TMP/summary.out"

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

# A regular file is read a window at a time, its pages given back: a
# 192 MiB trace (192 generations of a 1 MiB batch of 3-byte events) is
# summarized in far less memory than its size.
big_rss() {
	python3 - "$TMP/big.trace" "$TOOL" <<'PY'
import resource, struct, subprocess, sys
path, tool = sys.argv[1], sys.argv[2]
ev = bytes([8 << 3 | 1, 1, 5])
n = (1 << 20) // len(ev)
with open(path, "wb") as f:
    f.write(b"PRTRACE\n" + struct.pack("<II", 3, 0))
    for g in range(1, 193):
        p = struct.pack("<QQQQ", g, 1, 0, 0) + ev * n
        f.write(b"B\0\0\0" + struct.pack("<I", len(p)) + p)
        p = struct.pack("<QQ", g, 1000000000)
        f.write(b"F\0\0\0" + struct.pack("<I", len(p)) + p)
        p = struct.pack("<QQQ", g, 1, 0)
        f.write(b"E\0\0\0" + struct.pack("<I", len(p)) + p)
out = subprocess.run([tool, "summary", path], capture_output=True, text=True)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
events = [l for l in out.stdout.splitlines() if l.startswith("events ")]
print(out.returncode, rss, events[0].split()[1] if events else "?", n * 192)
PY
}
set -- $(big_rss)
rm -f "$TMP/big.trace"
echo "  192 MiB trace: summary exit ${1:-?}, peak RSS ${2:-?} MiB, events ${3:-?} of ${4:-?}"
# Under a sanitizer the shadow memory is the runtime's, not ours: the
# read must still succeed whole, and the bound is left to plain builds.
rss_max=64
if nm "$TOOL" 2>/dev/null | grep -q '__tsan_init\|__asan_init'; then
	rss_max=100000
fi
check big_file_bounded_memory [ "${1:-1}" = 0 -a "${3:-x}" = "${4:-y}" \
	-a "${2:-999}" -lt "$rss_max" ]

"$TOOL" >/dev/null 2>&1
check usage [ $? -eq 2 ]
"$TOOL" frob x >/dev/null 2>"$TMP/frob.err"
check usage_unknown_command [ $? -eq 2 -a "$(head -1 "$TMP/frob.err")" = \
	"profring-trace: unknown command 'frob'" ]
# mktrace KIND N FILE: a handmade stream (tracebuf/FORMAT.md):
#   threads N	one generation whose lost record names N threads
#   gens N	N generations, each an end record alone
#   bare N	N generations with events and no strings, stacks or F
#   ctrl N	an event of a type whose name holds control characters
#   unknownfree N  version 2: a free of an id never allocated
#   v1mem N	version 1 with a type 3 event of two arguments
mktrace() {
	python3 - "$@" <<'EOF'
import struct, sys

def varint(v):
    out = bytearray()
    while True:
        b, v = v & 0x7f, v >> 7
        out.append(b | 0x80 if v else b)
        if not v:
            return bytes(out)

def rec(kind, gen, payload, level=0):
    p = struct.pack('<Q', gen) + payload
    return bytes([ord(kind), level, 0, 0]) + struct.pack('<I', len(p)) + p

def end(gen, batches=0):
    return rec('E', gen, struct.pack('<QQ', batches, 0))

def batch(gen, tid, events):
    return rec('B', gen, struct.pack('<QQQ', tid, 0, 1000) + events)

kind, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = bytearray(b'PRTRACE\n' + struct.pack('<II', 1, 0))
if kind == 'threads':
    s += rec('L', 1, b''.join(varint(1000 + i) + b'\0\1' for i in range(n)))
    s += end(1)
elif kind == 'gens':
    for g in range(1, n + 1):
        s += end(g)
elif kind == 'bare':
    for g in range(1, n + 1):
        # type 9: a string and a stack argument that do not resolve
        s += batch(g, 7, bytes([9 << 3 | 3, 5, 1, 3, 4]))
        s += rec('T', g, varint(9) + varint(1) + b'q' + varint(3) + b'usk')
        s += end(g, 1)
elif kind == 'unknownfree':
    # version 2: an alloc of id 5 and a free of id 9 nobody allocated
    s[8:12] = struct.pack('<I', 2)
    s += batch(1, 7, bytes([3 << 3 | 3, 1, 5, 100, 0, 4 << 3 | 1, 1, 9]))
    s += rec('M', 1, struct.pack('<QQQ', 0x10000, 16, 4096))
    s += end(1, 1)
elif kind == 'v1mem':
    # version 1: type 3 meant nothing yet (two arguments)
    s += batch(1, 7, bytes([3 << 3 | 2, 1, 5, 100]))
    s += end(1, 1)
elif kind == 'ctrl':
    name = b'\x1b[31mred\nline\x07\\'
    s += batch(1, 7, bytes([8 << 3 | 1, 5, 42]))
    s += rec('T', 1, varint(8) + varint(len(name)) + name + varint(1) + b'u')
    s += rec('S', 1, varint(1) + varint(3) + b'\x1b\n\x00')
    s += end(1, 1)
open(path, 'wb').write(s)
EOF
}

# bounded NAME CMD...: CMD within 60 s, stdout and stderr to
# $TMP/NAME.out and .err; its exit status in $rc, NAME in $last.
bounded() {
	last=$1
	shift
	timeout -k 5 60 "$@" >"$TMP/$last.out" 2>"$TMP/$last.err"
	rc=$?
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "  $last: still running after 60 s"
	fi
}

# failed_with PATTERN: the last bounded command exited 1 with PATTERN
# in its message.
failed_with() {
	[ $rc -eq 1 ] && grep -q "$1" "$TMP/$last.err" ||
		{ echo "  $last: exit $rc: $(cat "$TMP/$last.err")"; false; }
}

bounded usage_max_size "$TOOL" --max-size 12X summary "$TMP/demo.trace"
check usage_max_size [ $rc -eq 2 ]

# Linear in threads and in generations: each took minutes when a new
# one was looked for among all the others (quadratic).
mktrace threads 500000 "$TMP/threads.trace"
lines=$({
	timeout -k 5 60 "$TOOL" summary "$TMP/threads.trace"
	echo $? >"$TMP/threads.rc"
} | grep -c '^thread ')
rc=$(cat "$TMP/threads.rc")
echo "  500000 threads: exit $rc, $lines thread lines"
check many_threads [ "$rc.$lines" = 0.500000 ]
mktrace gens 300000 "$TMP/gens.trace"
bounded gens "$TOOL" summary "$TMP/gens.trace"
check many_generations grep -q '^generations 300000 (1-300000)$' "$TMP/gens.out"

# Generations without strings or stacks: nothing to sort or search
# (qsort() of a NULL array was undefined behaviour, UBSan's to see).
mktrace bare 3 "$TMP/bare.trace"
for cmd in summary dump json; do
	bounded bare_$cmd "$TOOL" $cmd "$TMP/bare.trace"
	check no_tables_$cmd [ $rc -eq 0 ]
done
check no_tables_unresolved grep -q \
	'q(9) u:1 s:string#3(missing) k:stack#4(missing)' "$TMP/bare_dump.out"

# The stream's control characters never reach a terminal: the text
# reports escape them, the JSON keeps them exactly (escaped).
mktrace ctrl 1 "$TMP/ctrl.trace"
printable() {
	[ -s "$1" ] && ! tr -d '\n' <"$1" | LC_ALL=C grep -q '[^ -~]'
}
for cmd in summary dump; do
	bounded ctrl_$cmd "$TOOL" $cmd "$TMP/ctrl.trace"
	check escaped_$cmd printable "$TMP/ctrl_$cmd.out"
done
check escaped_dump_name grep -qF '\x1b[31mred\x0aline\x07\\(8)' \
	"$TMP/ctrl_dump.out"
bounded ctrl_json "$TOOL" json "$TMP/ctrl.trace"
check escaped_json python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["traceEvents"][0]["name"] == "\x1b[31mred\nline\x07\\"
' "$TMP/ctrl_json.out"

# A free of an id the generation never saw: reported (exit 1, the
# summary printed all the same), not a crash.  A version 1 stream's
# type 3 is no memory event.
mktrace unknownfree 1 "$TMP/unknownfree.trace"
bounded unknownfree "$TOOL" summary "$TMP/unknownfree.trace"
check unknown_free_reported failed_with 'generation 1: memory events contradict'
check unknown_free_line grep -q \
	'^memory gen 1 exists 0 allocs 1 frees 1 live_objects 1 live_bytes 100 unknown_frees 1 (first id 9 at 0x10090)$' \
	"$TMP/unknownfree.out"
mktrace v1mem 1 "$TMP/v1mem.trace"
bounded v1mem "$TOOL" summary "$TMP/v1mem.trace"
v1_no_memory() {
	[ $rc -eq 0 ] && grep -q '^type 3 "type 3" events 1$' "$TMP/v1mem.out" &&
		! grep -q '^memory' "$TMP/v1mem.out"
}
check version1_read v1_no_memory

# Files that are not traces: what the OS said; /dev/zero at once.
bounded directory "$TOOL" summary "$TMP"
check directory_errno failed_with 'read: Is a directory'
bounded zero "$TOOL" summary /dev/zero
check not_a_trace failed_with 'offset 0: not a profring trace'

# --max-size: a file of exactly SIZE bytes is read, one more is refused:
# a regular file before it is read, a pipe once it brings too much.
bounded max_size_exact "$TOOL" --max-size "$size" summary "$TMP/demo.trace"
check max_size_exact [ $rc -eq 0 ]
bounded max_size_file "$TOOL" --max-size $((size - 1)) summary \
	"$TMP/demo.trace"
check max_size_file failed_with "larger than $((size - 1)) bytes"
mkfifo "$TMP/fifo"
# (the writer opens the FIFO inside the bound: the open waits for a reader)
timeout -k 5 60 sh -c 'cat "$1" >"$2"' sh "$TMP/demo.trace" "$TMP/fifo" \
	2>"$TMP/cat.err" &
bounded max_size_pipe "$TOOL" --max-size 100K summary "$TMP/fifo"
wait
check max_size_pipe failed_with 'larger than 102400 bytes'

[ $fails -eq 0 ]
