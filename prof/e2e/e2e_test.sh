#!/bin/sh
# SPDX-License-Identifier: MIT
#
# prof/e2e/e2e_test.sh - `profring-prof record` on programs that profilers
# get wrong (prof/e2e/hostile.c, shells, a static binary, python3.11, C++,
# node's JIT code):
#
#	sh prof/e2e/e2e_test.sh [BUILD [LABEL]]
#
# Each case checks that the program's output and exit status are what a
# plain run gives (a death by signal included), that a profile is written
# and read back by `go tool pprof` (or, where nothing can be profiled, that
# the launcher says why in one line and exits 125), and every run is
# bounded by timeout(1): no case can hang CI.  Bad options: one line
# naming the option, status 2, the program not run.  E2E_DLOPEN_SECONDS
# (default 5) is how long the dlopen/dlclose loop runs under libunwind
# (the issue's long run: 60).  Under LABEL tsan or asan it is skipped: the
# hostile programs are uninstrumented and the launcher's library is
# covered by prof_test.sh there.
BUILD=${1:-build}
LABEL=${2:-check}
if [ "$LABEL" = tsan ] || [ "$LABEL" = asan ]; then
	echo "SKIP e2e under $LABEL (uninstrumented programs; see prof_test.sh)"
	exit 0
fi
PROF=$(cd "$BUILD/tools" && pwd)/profring-prof
H=$(cd "$BUILD/e2e" && pwd)/hostile
DLSECS=${E2E_DLOPEN_SECONDS:-5}
CHECK_PREFIX=e2e_
. "$(dirname "$0")/../../testing/testlib.sh"

# run NAME OPTS... -- CMD...: the launcher, bounded; status in $st,
# output in $TMP/NAME.out, stderr in $TMP/NAME.err.
run() {
	name=$1
	shift
	timeout -k 5 90 "$PROF" record -o "$TMP/$name.pb.gz" "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err"
	st=$?
}

# plain NAME CMD...: the program alone, for comparison.
plain() {
	pname=$1
	shift
	timeout -k 5 90 "$@" >"$TMP/$pname.plain" 2>/dev/null
	pst=$?
}

same_as_plain() { # NAME: output and status as the plain run's
	cmp -s "$TMP/$1.out" "$TMP/$1.plain" && [ "$st" -eq "$pst" ]
}

# main_file NAME FILE: go tool pprof takes FILE (a base name) for the
# profile's main binary (its "File:" line), as for the program itself.
main_file() {
	[ $HAVE_GO = 1 ] || return 0
	(cd "$TMP" && HOME="$TMP" go tool pprof -top "$1.pb.gz") 2>/dev/null |
		grep -q "^File: $2\$"
}

says() { # NAME PATTERN: the launcher's stderr says it
	grep -q "$2" "$TMP/$1.err"
}

# 1. main ends with pthread_exit(): exits, buffered output kept.
plain mainexit "$H" mainexit
run mainexit -- "$H" mainexit
check mainexit_same same_as_plain mainexit
check mainexit_profile go_reads mainexit

# The same in-process (LD_PRELOAD, no launcher): our collector thread
# must not keep the process alive once main's thread is gone.
LIB=$(cd "$BUILD" && pwd)/libprofring-prof.so
PROFRING_PROF="$TMP/inproc.pb.gz" LD_PRELOAD="$LIB" timeout -k 5 60 \
	"$H" mainexit >"$TMP/inproc.out" 2>"$TMP/inproc.err"
st=$?
check mainexit_in_process_exits test "$st" -eq 0 -a -s "$TMP/inproc.pb.gz"
check mainexit_in_process_output cmp -s "$TMP/inproc.out" "$TMP/mainexit.plain"

# 2. Ends the program may come to: _exit, abort, a crash.
for m in exit3 abort segv; do
	plain $m "$H" $m
	run $m -- "$H" $m
	check ${m}_status_and_output same_as_plain $m
	check ${m}_profile go_reads $m
done
check segv_says_signal says segv 'killed by signal 11'
check exit3_says_status says exit3 'exited with status 3'
# One thread is "1 thread", not "1 threads".
check exit3_one_thread_singular says exit3 ', 1 thread, '

# 3. SIGTERM: to the launcher (timeout(1) does that; it passes it on),
# and to the program from outside.
timeout -s TERM 1 "$PROF" record -o "$TMP/term.pb.gz" -- "$H" wait \
	>"$TMP/term.out" 2>"$TMP/term.err"
check term_to_launcher_status test $? -eq 124
check term_to_launcher_profile go_reads term
check term_says says term 'killed by signal 15'
"$PROF" record -o "$TMP/kill.pb.gz" -- "$H" wait >"$TMP/kill.out" \
	2>"$TMP/kill.err" &
lpid=$!
i=0
until grep -q burning "$TMP/kill.out" 2>/dev/null || [ $i -ge 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
sleep 0.3
pkill -TERM -P "$lpid" 2>/dev/null
wait "$lpid"
check term_to_program_status test $? -eq 143
check term_to_program_profile go_reads kill

# 4. Wrappers that exec: a pyenv-style script, bash -c; the same pid goes
# on writing to the same profile.
printf '#!/bin/sh\nexec "%s" "$@"\n' "$H" \
	>"$TMP/wrap.sh"
chmod +x "$TMP/wrap.sh"
plain wrap "$TMP/wrap.sh" burn
run wrap -- "$TMP/wrap.sh" burn
check exec_wrapper_same same_as_plain wrap
check exec_wrapper_profile go_reads wrap
check exec_wrapper_main_binary main_file wrap "$(basename "$H")"
plain bashc bash -c "echo x; exec $H burn"
run bashc -- bash -c "echo x; exec $H burn"
check bash_c_same same_as_plain bashc
check bash_c_profile go_reads bashc
check bash_c_main_binary main_file bashc "$(basename "$H")"
# sh -c that forks its commands: both profiled by default, as perf
# does, each in its own process (report --threads: a row per thread with
# samples, named hostile); with --no-children neither is, and the
# launcher says where the CPU went.
burners() { # NAME: the threads named hostile with samples in the profile
	"$PROF" report --threads -n 1 "$TMP/$1.pb.gz" 2>/dev/null |
		awk '/^By thread/ { on = 1; next } on && $NF == "hostile"' |
		wc -l
}
plain shc sh -c "$H burn; $H burn"
run shc -- sh -c "$H burn; $H burn"
check sh_c_fork_same same_as_plain shc
check sh_c_fork_three_processes says shc ', 3 processes;'
check sh_c_fork_both_sampled test "$(burners shc)" -eq 2
check sh_c_children_profile go_reads shc
plain shcn sh -c "$H burn; $H burn"
run shcn --no-children -- sh -c "$H burn; $H burn"
check sh_c_no_children_same same_as_plain shcn
check sh_c_no_children_one_process says shcn ', 1 process;'
check sh_c_no_children_none_sampled test "$(burners shcn)" -eq 0
check sh_c_no_children_says says shcn 'no-children was given'
run shcc --no-children --children -- sh -c "$H burn; true"
check sh_c_last_children_option_wins says shcc ', 2 processes;'

# 5. A static binary: nothing can attach; one line, status 125, the
# program ran unchanged.
plain static "$BUILD/e2e/hostile_static" burn
run static -- "$BUILD/e2e/hostile_static" burn
check static_status test "$st" -eq 125
check static_output cmp -s "$TMP/static.out" "$TMP/static.plain"
check static_says says static 'nothing was profiled.*static'
check static_one_line test "$(wc -l <"$TMP/static.err")" -eq 1

# 6. A program with its own SIGPROF handler and ITIMER_PROF: it gets its
# own signals (counts within 15% of a plain run; with our signals it got
# 3.5 times as many), we still sample.
within() { # A B PCT: |A - B| <= PCT% of B
	awk -v a="$1" -v b="$2" -v p="$3" \
		'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= b * p / 100) }'
}
# signals_untouched MODE PCT: the program's own signal count, profiled,
# within PCT% of a plain run's, and a profile with samples.
signals_untouched() {
	plain "$1" "$H" "$1"
	run "$1" -F 999 -- "$H" "$1"
	echo "# $1: $(cat "$TMP/$1.plain") plain, $(cat "$TMP/$1.out") profiled"
	check "$1_signals_untouched" within \
		"$(awk '{ print $2 }' "$TMP/$1.out")" \
		"$(awk '{ print $2 }' "$TMP/$1.plain")" "$2"
	check "$1_profile" go_reads "$1"
}
signals_untouched ownprof 15

# 7. A sigwait daemon: SIGPROF blocked in every thread, a thread sigwaits
# for it: it sees its own ticks, we sample.  Pending process signals
# merge when the waiter is slow, so its count varies run to run even
# alone: within 40%.
signals_untouched sigwaitd 40

# Threads started with every signal blocked (liblzma's workers are): our
# signal, which the program does not know of, is unblocked in them, and
# their CPU is in the profile (no "samples account for" warning).
plain blockall "$H" blockall
run blockall -F 999 -- "$H" blockall
check blockall_same same_as_plain blockall
check blockall_sampled test "$(grep -c 'samples account for' "$TMP/blockall.err")" -eq 0
check blockall_profile go_reads blockall

# 8. dlopen/dlclose in a loop on one thread, libunwind sampling: no
# deadlock, and the unloaded library's function is named.
if "$PROF" record --unwind libunwind -o "$TMP/probe.pb.gz" -- true \
	>/dev/null 2>&1; then
	run dlloop -F 999 --unwind libunwind -f "$TMP/dlloop.folded" -- \
		"$H" dlloop "$(dirname "$H")/libdlloop.so" "$DLSECS"
	check dlloop_libunwind_finishes test "$st" -eq 0
	check dlloop_unloaded_code_named grep -q 'dlloop_work' \
		"$TMP/dlloop.folded"
else
	echo "SKIP e2e_dlloop_libunwind (built without libunwind)"
fi

# A plugin opened by bare name through the program's own RUNPATH: our
# interposed dlopen must search the caller's path, not ours; dlerror()
# says what it said without us.
plain runpath "$(dirname "$H")/runpath"
run runpath -- "$(dirname "$H")/runpath"
check runpath_dlopen_same same_as_plain runpath
check runpath_plugin_loaded grep -q '^libplug.so: loaded' "$TMP/runpath.out"

# A C++ program: its functions read as C++ (the symbol stays in
# system_name), in our report and in the folded stacks.
plain cxx "$(dirname "$H")/cxx"
run cxx -F 999 -f "$TMP/cxx.folded" -- "$(dirname "$H")/cxx"
check cxx_same same_as_plain cxx
check cxx_demangled_folded grep -q 'work(int)' "$TMP/cxx.folded"
check cxx_no_mangled_folded test "$(grep -c '_Z4worki' "$TMP/cxx.folded")" -eq 0
if [ $HAVE_GO = 1 ]; then
	(cd "$TMP" && HOME="$TMP" go tool pprof -raw cxx.pb.gz) >"$TMP/cxx.raw" 2>&1
	check cxx_system_name_kept grep -q 'work(int) .*(_Z4worki)' "$TMP/cxx.raw"
fi
"$PROF" report -n 100 "$TMP/cxx.pb.gz" >"$TMP/cxx.report" 2>&1
check cxx_demangled_report grep -q ' work(int)$' "$TMP/cxx.report"
check cxx_no_mangled_report test "$(grep -c '_Z' "$TMP/cxx.report")" -eq 0

# No libdw (PROFRING_PROF_NO_LIBDW=1 in the launcher's environment, as
# on a machine without libdw.so.1): the unstripped program's functions
# are still named, from its .symtab; the profile's comment and one
# stderr line say which symbolizer ran and why there are no lines.  With
# libdw, neither is said.
PROFRING_PROF_NO_LIBDW=1 timeout -k 5 90 "$PROF" record \
	-o "$TMP/nolibdw.pb.gz" -- "$H" burn >"$TMP/nolibdw.out" \
	2>"$TMP/nolibdw.err"
check no_libdw_status test $? -eq 0
"$PROF" report -n 100 "$TMP/nolibdw.pb.gz" >"$TMP/nolibdw.report" 2>&1
check no_libdw_names_function grep -q ' burn$' "$TMP/nolibdw.report"
check no_libdw_comment grep -q \
	'^Comment: symbolizer: ELF symbol tables.*PROFRING_PROF_NO_LIBDW' \
	"$TMP/nolibdw.report"
check no_libdw_one_line test \
	"$(grep -c 'ELF symbol tables.*PROFRING_PROF_NO_LIBDW' "$TMP/nolibdw.err")" -eq 1
check libdw_says_nothing test "$(grep -c 'ELF symbol tables' \
	"$TMP/mainexit.err")" -eq 0

# 9. A fork+exec tree: one profile, a pid label per process; with
# --no-children, one process.
run tree -- "$H" forktree "$H"
check tree_status test "$st" -eq 0
check tree_processes says tree ', 5 processes;'
if [ $HAVE_GO = 1 ]; then
	(cd "$TMP" && HOME="$TMP" go tool pprof -raw tree.pb.gz) >"$TMP/tree.raw" 2>&1
	check tree_pid_labels test "$(grep -o 'pid:\[[0-9]*\]' "$TMP/tree.raw" |
		sort -u | wc -l)" -ge 3
fi
run tree1 --no-children -- "$H" forktree "$H"
check tree_without_children_one_process says tree1 ', 1 process;'

# 10. python3.11 ending in os._exit(4).
if [ -x /usr/bin/python3.11 ]; then
	py='s = 0
for i in range(2000000): s += i
print(s, flush=True)
import os; os._exit(4)'
	plain py /usr/bin/python3.11 -c "$py"
	run py -- /usr/bin/python3.11 -c "$py"
	check python_os_exit_same same_as_plain py
	check python_os_exit_profile go_reads py
else
	echo "SKIP e2e_python (no /usr/bin/python3.11)"
fi

# 10b. JIT code named from perf's /tmp/perf-PID.map: node
# --perf-basic-prof writes it (and leaves it: we remove the one of each
# node run here, by the pid the script prints).  The hot JavaScript
# function must be named in our report, go tool pprof and the folded
# stacks, in a "[perf-PID.map]" mapping; the profile's comments count the
# map's lines.  Under the launcher (the map read after node is gone) and
# in-process (read by node itself, at exit).
# node also writes isolate-*-v8.log where it runs: it runs in $TMP.
NODE=$(command -v node || command -v nodejs)
if [ -n "$NODE" ]; then
	here=$(pwd)
	cd "$TMP" || exit 1
	cat >"$TMP/hot.js" <<'JS'
function hotLoopForProfring(n) {
	let s = 0;
	for (let i = 0; i < n; i++)
		s = (s + i * i) % 1000003;
	return s;
}
let t = 0;
const end = Date.now() + 1500;
while (Date.now() < end)
	t += hotLoopForProfring(100000);
console.log("pid " + process.pid, t > 0);
JS
	node_done() { # NAME: remove its node's perf map
		npid=$(awk '/^pid [0-9]+ / { print $2 }' "$TMP/$1.out")
		[ -n "$npid" ] && rm -f "/tmp/perf-$npid.map"
	}
	run node -F 999 -f "$TMP/node.folded" -- "$NODE" --perf-basic-prof \
		"$TMP/hot.js"
	check node_runs test "$st" -eq 0
	node_done node
	"$PROF" report "$TMP/node.pb.gz" >"$TMP/node.report" 2>&1
	grep -E 'perf maps|hotLoop' "$TMP/node.report" | sed 's/^/# /'
	check node_js_name_report grep -q 'JS:.hotLoopForProfring' \
		"$TMP/node.report"
	check node_perf_map_counted grep -q 'Comment: perf maps 1: lines [1-9]' \
		"$TMP/node.report"
	check node_js_name_folded grep -q ';JS:.hotLoopForProfring [^;]* [0-9]*$' \
		"$TMP/node.folded"
	if [ $HAVE_GO = 1 ]; then
		(cd "$TMP" && HOME="$TMP" go tool pprof -top node.pb.gz) \
			>"$TMP/node.top" 2>&1
		check node_js_name_go_pprof grep -q 'JS:.hotLoopForProfring' \
			"$TMP/node.top"
		(cd "$TMP" && HOME="$TMP" go tool pprof -raw node.pb.gz) \
			>"$TMP/node.raw" 2>&1
		check node_jit_mapping grep -q ' \[perf-[0-9]*\.map\]' \
			"$TMP/node.raw"
	fi
	timeout -k 5 90 env PROFRING_PROF="$TMP/node_inproc.pb.gz" \
		LD_PRELOAD="$LIB" "$NODE" --perf-basic-prof "$TMP/hot.js" \
		>"$TMP/node_inproc.out" 2>"$TMP/node_inproc.err"
	check node_inproc_runs test $? -eq 0
	node_done node_inproc
	"$PROF" report "$TMP/node_inproc.pb.gz" >"$TMP/node_inproc.report" 2>&1
	check node_inproc_js_name grep -q 'JS:.hotLoopForProfring' \
		"$TMP/node_inproc.report"
	cd "$here" || exit 1
else
	echo "SKIP e2e_node (no node or nodejs: apt-get install nodejs)"
fi

# 11. A relative -o is the starting directory's, whatever the program
# does with its own.
mkdir -p "$TMP/start" "$TMP/start/elsewhere"
(cd "$TMP/start" && timeout 60 "$PROF" record -q -o rel.pb.gz -- \
	"$H" chdir elsewhere >/dev/null 2>&1)
check relative_output_start_dir test -s "$TMP/start/rel.pb.gz" -a \
	! -e "$TMP/start/elsewhere/rel.pb.gz"

# 11b. --timer kernel that the kernel does not grant (perf_event_paranoid
# 2 or more without CAP_PERFMON: here a root whose capabilities are
# dropped) is said in one line, not only in the profile's comment; when
# granted, nothing is said.  Whichever happened, the line is there
# exactly when the comment lacks "(kernel mode too)".
# kernel_run NAME [PREFIX...]: --timer kernel, -q, under PREFIX.
kernel_run() {
	kname=$1
	shift
	timeout -k 5 60 "$@" "$PROF" record -q -o "$TMP/$kname.pb.gz" \
		--timer kernel -- "$H" burn 300 >/dev/null 2>"$TMP/$kname.err"
	"$PROF" report "$TMP/$kname.pb.gz" >"$TMP/$kname.report" 2>&1
	ksaid=$(grep -c -- '--timer kernel not granted' "$TMP/$kname.err")
	if grep -q '(kernel mode too)' "$TMP/$kname.report"; then
		check "${kname}_granted_unsaid" test "$ksaid" = 0
	else
		check "${kname}_refused_said" test "$ksaid" = 1
	fi
}
kernel_run kernel
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null)
if ! setpriv --bounding-set=-all --inh-caps=-all true 2>/dev/null; then
	echo "SKIP e2e_kernel_nocaps (setpriv cannot drop capabilities here)"
elif [ "${paranoid:-0}" -lt 2 ]; then
	echo "SKIP e2e_kernel_nocaps (perf_event_paranoid $paranoid grants" \
		"kernel sampling to all)"
else
	kernel_run kernel_nocaps setpriv --bounding-set=-all --inh-caps=-all
	check kernel_nocaps_names_paranoid grep -q \
		"perf_event_paranoid 1 or less, or CAP_PERFMON; it is $paranoid" \
		"$TMP/kernel_nocaps.err"
fi

# 12. Bad options: one line naming the option, status 2, nothing run.
bad() { # NAME WANT-IN-MESSAGE OPTS...
	bname=$1
	bwant=$2
	shift 2
	rm -f "$TMP/ran"
	timeout 30 "$PROF" record "$@" -- sh -c "touch $TMP/ran" \
		>/dev/null 2>"$TMP/$bname.err"
	bst=$?
	check "bad_${bname}" test "$bst" -eq 2 -a ! -e "$TMP/ran" -a \
		"$(wc -l <"$TMP/$bname.err")" -eq 1
	check "bad_${bname}_names_it" grep -q -- "$bwant" "$TMP/$bname.err"
}
bad hz_negative '-F -5' -F -5
bad hz_high '-F 20000' -F 20000
bad hz_text '-F abc' -F abc
bad hz_zero '-F 0' -F 0
bad hz_wraps '-F 4294967396' -F 4294967396
bad frames_zero '--frames 0' --frames 0
bad frames_high '--frames 129' --frames 129
bad buffer_small '--buffer-words 10' --buffer-words 10
bad timer '--timer bogus' --timer bogus
bad unwind '--unwind dwarf' --unwind dwarf
bad output_dir '-o /nonexistent-dir' -o /nonexistent-dir/x.pb.gz
bad output_is_dir "-o $TMP" -o "$TMP"
bad folded_dir '-f /nonexistent' -f /nonexistent/x.folded
bad unknown '--bogus' --bogus
# One file under two spellings (a relative name and ./name, dir/../name,
# a link to the file or to its directory, a hard link): refused as two
# outputs that name one file, not one profile silently overwriting the
# other.  Devices are still shared.
mkdir -p "$TMP/clash/sub"
top=$(pwd)
cd "$TMP/clash" || exit 1
: >real.pb.gz
ln -s real.pb.gz link.pb.gz
ln real.pb.gz hard.folded
ln -s . dirlink
bad clash_dot_heap '-o ./b.pb.gz and --heap b.pb.gz name one file' \
	-o ./b.pb.gz --heap b.pb.gz
bad clash_dot_mutex '-o d.pb.gz and --mutex ./d.pb.gz name one file' \
	-o d.pb.gz --mutex ./d.pb.gz
bad clash_dotdot_trace 'name one file' -o sub/../e.pb.gz --trace e.pb.gz
bad clash_link_heap '-o real.pb.gz and --heap link.pb.gz' \
	-o real.pb.gz --heap link.pb.gz
bad clash_dirlink_block 'name one file' --mutex f.pb.gz --block dirlink/f.pb.gz
bad clash_hardlink_folded 'name one file' -o real.pb.gz -f hard.folded
bad clash_same_string 'name one file' --mutex m.pb.gz --block m.pb.gz
timeout 30 "$PROF" record -q -o /dev/null --heap /dev/null -- true \
	>/dev/null 2>"$TMP/clash_devnull.err"
check clash_device_shared test $? -eq 0 -a ! -s "$TMP/clash_devnull.err"
check clash_nothing_written test "$(ls | sort | tr '\n' ' ')" = \
	"dirlink hard.folded link.pb.gz real.pb.gz sub "
cd "$top" || exit 1
# A PROFRING_PROF_LIB that cannot be preloaded is said before the
# program runs, naming the variable (not the loader's error and ours
# blaming a static program).
export PROFRING_PROF_LIB=/nonexistent/libprofring-prof.so
bad lib_missing 'PROFRING_PROF_LIB=/nonexistent/libprofring-prof.so: ' \
	-o "$TMP/lib.pb.gz"
PROFRING_PROF_LIB=$TMP
bad lib_dir "PROFRING_PROF_LIB=$TMP: " -o "$TMP/lib.pb.gz"
PROFRING_PROF_LIB="$LIB:/x.so"
bad lib_colon 'PROFRING_PROF_LIB=.*LD_PRELOAD' -o "$TMP/lib.pb.gz"
unset PROFRING_PROF_LIB
# In-process mode: a bad variable gets one line; the program runs as is.
PROFRING_PROF_TIMER=Process PROFRING_PROF="$TMP/env.pb.gz" \
	LD_PRELOAD="$LIB" timeout 30 "$H" burn 10 \
	>"$TMP/env.out" 2>"$TMP/env.err"
check env_bad_variable_runs test $? -eq 0 -a -s "$TMP/env.out"
check env_bad_variable_named grep -q 'PROFRING_PROF_TIMER=Process' "$TMP/env.err"
# An empty file variable is a bad value too (as an empty PROFRING_PROF_HZ
# is), not a silent "no heap profile": one line, nothing profiled.
for v in PROFRING_PROF_HEAP PROFRING_PROF_MUTEX PROFRING_PROF_BLOCK; do
	rm -f "$TMP/envempty.pb.gz"
	env "$v=" PROFRING_PROF="$TMP/envempty.pb.gz" LD_PRELOAD="$LIB" \
		timeout 30 "$H" burn 10 >"$TMP/envempty.out" 2>"$TMP/envempty.err"
	check "env_empty_${v}_runs" test $? -eq 0 -a -s "$TMP/envempty.out"
	check "env_empty_${v}_said" test "$(grep -c "^profring-prof: $v=: " \
		"$TMP/envempty.err")" = 1 -a ! -e "$TMP/envempty.pb.gz"
done
# In-process, two variables naming one file however spelt: one line,
# nothing profiled (not one profile overwriting the other).
(cd "$TMP/clash" && PROFRING_PROF=envsame.pb.gz \
	PROFRING_PROF_HEAP=./envsame.pb.gz LD_PRELOAD="$LIB" \
	timeout 30 "$H" burn 10 >"$TMP/envsame.out" 2>"$TMP/envsame.err")
check env_same_file_runs test $? -eq 0 -a -s "$TMP/envsame.out"
check env_same_file_said test "$(grep -c \
	'PROFRING_PROF=envsame.pb.gz and PROFRING_PROF_HEAP=./envsame.pb.gz name one file' \
	"$TMP/envsame.err")" = 1 -a ! -e "$TMP/clash/envsame.pb.gz"

if [ $fails -ne 0 ]; then
	for f in "$TMP"/*.err; do
		echo "== $f"
		tail -3 "$f"
	done
fi
exit $((fails != 0))
