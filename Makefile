# profring - one entry point.
#
#   make            the libraries, the profiler and the tools
#   make deps       install the build's Debian packages (deps.sh)
#   make check      everything testing/run-tests.sh runs: unit tests, the
#                   README example, the tools' and the profiler's end-to-end
#                   checks, each stress program briefly, each fuzzer briefly
#                   (closing line "check: N passed, N failed")
#   make tsan       the same (fuzzers aside) under ThreadSanitizer (clang)
#   make asan       the same (fuzzers aside) under AddressSanitizer + UBSan
#   make stress     the stress programs, STRESS_SECONDS each
#   make stress-perturb   the same with schedule perturbation compiled in
#   make stress-tsan / stress-asan   the same under the sanitizers
#   make fuzz       each libFuzzer target for FUZZ_SECONDS
#   make bench      the benchmarks against their anchors
#   make bench-prof the profiler's overhead beside gperftools
#   make bench-lttng tracebuf's emit beside LTTng-UST (skips without it)
#   make bench-agree the profiler's flat shares beside perf's on five real
#                   programs (bench/perf_agree.py, a few minutes; skips with
#                   a reason without perf or above perf_event_paranoid 2;
#                   AGREE_FLAGS=--quick for about a minute)
#   make bench-plot the scaling and record-size curves (gnuplot)
#   make demo       the main job: profile a workload with profring-prof
#   make demo-stress a short profbuf stress run with signal storms
#   make install    PREFIX=/usr/local DESTDIR=
#   make uninstall  the same variables: removes what install put
#   make format     clang-format every C file
#
# Build variants live in their own directories (BUILD=build/tsan, ...), so
# one tree holds all of them.  Header dependencies come from the compiler
# (-MMD -MP): touching a header rebuilds exactly what includes it.

CC ?= cc
BUILD ?= build
OPT ?= -O2 -g
SAN ?=
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
BINDIR ?= $(PREFIX)/bin
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
VERSION := 0.2.0
# libprofring.so's ABI: the soname carries the major number, the file the
# whole ABI version (libprofring.so.2.0.0 with its .so.2 and .so links).
# 2: a write after close returns -ESHUTDOWN, as every "not running" case
# does (it was -EINVAL).
SOMAJOR := 2
SONAME := libprofring.so.$(SOMAJOR)
SOFILE := $(SONAME).0.0

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CPPFLAGS += -D_GNU_SOURCE -Iinclude -I. $(DEFS)
CFLAGS += -std=c11 $(WARN) $(OPT) $(SAN) -fPIC -fvisibility=hidden
DEPFLAGS = -MMD -MP
LDFLAGS += $(SAN)
LDLIBS += -lpthread
FRAMEPTR := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer

# What is built from where: every .c of a directory except its tests.
srcs = $(filter-out %_test.c,$(wildcard $(1)/*.c))
objs = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
bins = $(patsubst %.c,$(BUILD)/$(2)/%,$(notdir $(1)))

# libprofring: the buffers.
LIB_OBJS := $(call objs,$(call srcs,ring) $(call srcs,profbuf) \
	$(call srcs,stacktab) $(call srcs,tracebuf))
LIB_A := $(BUILD)/libprofring.a
# What is installed as libprofring.a: the API alone (see its rule).
LIB_PUB_A := $(BUILD)/libprofring-pub.a
# The test kit every unit test and stress program links.
TESTKIT_OBJS := $(call objs,$(call srcs,testing))
# pprof/: profile.proto encoding and decoding, folded stacks, symbols,
# reports; an internal static library (never installed).
PPROF_OBJS := $(call objs,$(call srcs,pprof))
PPROF_A := $(BUILD)/libpprof.a
PPROF_LIBS := -lz -ldl
# pprof/dwarf.c reads source lines with elfutils' libdw, loaded with
# dlopen() at run time: only its headers are needed here.
HAVE_LIBDW := $(shell printf '\043include <elfutils/libdwfl.h>\n' | \
	$(CC) -E -x c - >/dev/null 2>&1 && echo yes)
# prof/: the profiler.  libunwind is used when its header is there.
HAVE_LIBUNWIND := $(shell printf '\043include <libunwind.h>\n' | \
	$(CC) -E -x c - >/dev/null 2>&1 && echo yes)
# bench/lttng_bench.sh's driver needs LTTng-UST's headers (liblttng-ust-dev).
HAVE_LTTNG_UST := $(shell printf '\043include <lttng/tracepoint.h>\n' | \
	$(CC) -E -x c - >/dev/null 2>&1 && echo yes)
# prof/ is laid out by the process a file runs in:
#   prof/agent/     inside the profiled program (libprofring-prof.so):
#                   signal handlers, interposed calls, async-signal-safety;
#   prof/launcher/  inside `profring-prof record`: reads the memory the
#                   program can scribble on, writes the files;
#   prof/wire/      what crosses between the two (the shared block, records);
#   prof/common/    aggregation, HTTP and options, linked into both.
# malloc_hook.c (the interposed malloc family) and mutex_hook.c (the lock
# calls) go into libprofring-prof.so alone, and not under the sanitizers,
# which own malloc and intercept the lock calls.
PROF_OBJS := $(call objs,$(filter-out prof/agent/malloc_hook.c \
	prof/agent/mutex_hook.c,$(call srcs,prof/agent) $(call srcs,prof/wire) \
	$(call srcs,prof/common)))
MALLOC_HOOK_OBJS := $(if $(SAN),,$(call objs,prof/agent/malloc_hook.c prof/agent/mutex_hook.c))
PROF_LIBS := $(PPROF_LIBS) -lrt -lm $(if $(HAVE_LIBUNWIND),-lunwind)
# What the launcher links: it reads, aggregates and writes; it never
# samples (options.c asks unwind.c whether libunwind is there).
RECORD_OBJS := $(call objs,$(call srcs,prof/launcher) $(call srcs,prof/wire) \
	$(call srcs,prof/common) prof/agent/unwind.c)
PROF_SO := $(BUILD)/libprofring-prof.so

TESTS := $(patsubst %.c,$(BUILD)/test/%,$(wildcard ring/*_test.c \
	profbuf/*_test.c stacktab/*_test.c tracebuf/*_test.c \
	pprof/*_test.c prof/*/*_test.c))
STRESS := $(call bins,$(wildcard stress/*.c),stress)
BENCHES := $(call bins,$(filter-out bench/harness.c,$(wildcard bench/*.c)),bench)
ifneq ($(HAVE_LIBUNWIND),yes)
BENCHES := $(filter-out $(BUILD)/bench/unwind_bench,$(BENCHES))
endif
# profring-trace's reports, one job a file (tools/trace_report.c says which).
TRACE_REPORT_SRCS := tools/trace_report.c tools/trace_collect.c tools/trace_index.c \
	tools/trace_text.c tools/trace_dump.c tools/trace_summary.c tools/trace_json.c \
	tools/trace_mem.c
TOOLS := $(call bins,$(filter-out tools/prof_demo.c $(TRACE_REPORT_SRCS),$(wildcard tools/*.c)),tools)
# profring-trace's reports, shared with their fuzzer.
TRACE_REPORT_OBJS := $(call objs,$(TRACE_REPORT_SRCS))
DEMOS := $(BUILD)/tools/prof_demo $(BUILD)/tools/prof_demo_nofp
FUZZ_SRCS := $(wildcard fuzz/*_fuzz.c)
FUZZERS := $(call bins,$(FUZZ_SRCS),fuzz)
FUZZ_SECONDS ?= 60
CHECK_FUZZ_SECONDS ?= 5
PROF_TOOLS := $(PROF_SO) $(BUILD)/tools/profring-prof $(DEMOS)

.PHONY: all deps check run-tests tsan asan stress stress-perturb stress-tsan \
	stress-asan stress-build run-stress bench demo demo-stress bench-prof \
	install uninstall tsan-lib format clean fuzz fuzz-build fuzz-replay bench-plot \
	bench-agree bench-lttng

all: $(LIB_A) $(LIB_PUB_A) $(BUILD)/libprofring.so $(PROF_SO) $(TOOLS) $(DEMOS)

deps:
	sh deps.sh

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -c -o $@ $<

# The same, with frame pointers (code a frame-pointer walk goes through).
$(BUILD)/obj-fp/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(FRAMEPTR) $(DEPFLAGS) -c -o $@ $<

# The interposed sleeps sit between the program and libc's frameless
# system call wrappers, where a sample's frame-pointer walk starts.
$(BUILD)/obj/prof/agent/sleep_hook.o: CFLAGS += $(FRAMEPTR)
# The lock hooks' slow paths start the waiter's frame-pointer walk.
$(BUILD)/obj/prof/agent/mutex_hook.o: CFLAGS += $(FRAMEPTR)

$(BUILD)/obj/prof/agent/unwind.o: CPPFLAGS += $(if $(HAVE_LIBUNWIND),-DPROFRING_HAVE_LIBUNWIND)
$(BUILD)/obj/pprof/dwarf.o $(BUILD)/obj/pprof/dwfl.o: CPPFLAGS += $(if $(HAVE_LIBDW),-DPROFRING_HAVE_LIBDW)

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

# The installed libprofring.a: the library's objects linked into one
# (ld -r) whose hidden symbols are then made local, so that a program
# linking it statically sees the API alone (profbuf_*, stacktab_*,
# tracebuf_*, tracedec_*, profring__*): no internal name can collide with
# one of its own (testing/symbols_test.sh).  The tree's tests and tools
# link $(LIB_A), internals and all.
$(LIB_PUB_A): $(LIB_OBJS)
	$(LD) -r -o $(BUILD)/obj/libprofring-pub.o $^
	objcopy --localize-hidden $(BUILD)/obj/libprofring-pub.o
	rm -f $@
	ar rcs $@ $(BUILD)/obj/libprofring-pub.o

$(PPROF_A): $(PPROF_OBJS)
	rm -f $@
	ar rcs $@ $^

# Its symbols in one version node (libprofring.map).
$(BUILD)/libprofring.so: $(LIB_OBJS) libprofring.map
	$(CC) -shared $(LDFLAGS) -Wl,-soname,$(SONAME) \
		-Wl,--version-script,libprofring.map -o $(BUILD)/$(SOFILE) \
		$(LIB_OBJS) $(LDLIBS)
	ln -sf $(SOFILE) $(BUILD)/$(SONAME)
	ln -sf $(SOFILE) $@

# libprofring-prof.so (LD_PRELOAD or -lprofring-prof) holds the library's
# objects too, so it is the only file a profiled program needs.
# -z nodelete: its handler and thread-exit destructor must outlive a
# dlclose; -z now: no lazy binding inside the SIGPROF handler.
$(PROF_SO): $(PROF_OBJS) $(MALLOC_HOOK_OBJS) $(PPROF_A) $(LIB_A) prof/agent/libprofring-prof.map
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libprofring-prof.so \
		-Wl,--version-script,prof/agent/libprofring-prof.map -Wl,-z,nodelete -Wl,-z,now \
		-o $@ $(PROF_OBJS) $(MALLOC_HOOK_OBJS) $(PPROF_A) $(LIB_OBJS) $(PROF_LIBS) $(LDLIBS)

# Programs: one source file each, linked against what they name:
# $(call link,LIBS[,EXTRA CFLAGS]): the first prerequisite is the source,
# the objects and archives among the others are linked in.
link = $(CC) $(CPPFLAGS) $(CFLAGS) $(2) $(DEPFLAGS) -MF $(dir $@).$(notdir $@).d -MT $@ -o $@ \
	$< $(filter %.o %.a,$^) $(LDFLAGS) $(1) $(LDLIBS)

$(BUILD)/tools/profring-prof: tools/profring-prof.c $(RECORD_OBJS) $(PPROF_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,$(PROF_LIBS))

# profring-trace: main and file reading; its reports in TRACE_REPORT_SRCS
# (shared with their fuzzer).
$(BUILD)/tools/profring-trace: tools/profring-trace.c $(TRACE_REPORT_OBJS) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,)

$(BUILD)/tools/%: tools/%.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,)

# The demo workload, with frame pointers and (for the unwinder's safety
# test) without.  Built without sanitizers: it is run under LD_PRELOAD.
$(BUILD)/tools/prof_demo: tools/prof_demo.c
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -std=c11 -O2 -g $(FRAMEPTR) -o $@ $< -lpthread

$(BUILD)/tools/prof_demo_nofp: tools/prof_demo.c
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -std=c11 -O2 -fomit-frame-pointer -o $@ $< -lpthread

# The end-to-end suite's hostile programs (prof/e2e/e2e_test.sh), built
# without sanitizers (they run under LD_PRELOAD), one of them static.
E2E_PROGS := $(BUILD)/e2e/hostile $(BUILD)/e2e/hostile_static \
	$(BUILD)/e2e/libdlloop.so $(BUILD)/e2e/runpath $(BUILD)/e2e/plug/libplug.so \
	$(BUILD)/e2e/cxx $(BUILD)/e2e/heapwork $(BUILD)/e2e/httpwork \
	$(BUILD)/e2e/shortthreads $(BUILD)/e2e/wallwork $(BUILD)/e2e/scribble \
	$(BUILD)/e2e/heapedge $(BUILD)/e2e/heapown $(BUILD)/e2e/heapplt
E2E_CFLAGS := -D_GNU_SOURCE -std=c11 -O2 -g $(FRAMEPTR)

$(BUILD)/e2e/hostile: prof/e2e/hostile.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -lpthread -ldl

# It writes over the profiler's shared memory: it knows the layout.
$(BUILD)/e2e/scribble: prof/e2e/scribble.c prof/wire/shm.h profbuf/profbuf_impl.h
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -Iinclude -I. -o $@ $<

$(BUILD)/e2e/heapwork: prof/e2e/heapwork.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -lpthread

$(BUILD)/e2e/heapedge: prof/e2e/heapedge.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -lpthread

# Non-PIE, malloc's address taken: a canonical PLT entry (heapplt.c).
$(BUILD)/e2e/heapplt: prof/e2e/heapplt.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -fno-pie -no-pie -o $@ $<

$(BUILD)/e2e/heapown: prof/e2e/heapown.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $<

$(BUILD)/e2e/httpwork: prof/e2e/httpwork.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -lpthread

$(BUILD)/e2e/shortthreads: prof/e2e/shortthreads.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -lpthread

$(BUILD)/e2e/wallwork: prof/e2e/wallwork.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -lpthread

# Lock waits it times itself (prof/e2e/mutex_test.sh).
E2E_PROGS += $(BUILD)/e2e/mutexwork
$(BUILD)/e2e/mutexwork: prof/e2e/mutexwork.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -lpthread -ldl

# It closes and dup2()s over every descriptor (prof/e2e/fds_test.sh).
E2E_PROGS += $(BUILD)/e2e/fds
$(BUILD)/e2e/fds: prof/e2e/fds.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -lpthread

$(BUILD)/e2e/hostile_static: prof/e2e/hostile.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -DHOSTILE_STATIC -static -o $@ $< -lpthread

$(BUILD)/e2e/libdlloop.so: prof/e2e/dlloop_lib.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -shared -fPIC -o $@ $<

# C++ names in the profile (g++ comes with build-essential).
$(BUILD)/e2e/cxx: prof/e2e/cxx.cc
	@mkdir -p $(dir $@)
	g++ -O2 -g $(FRAMEPTR) -o $@ $<

# A plugin found only through its loader's RUNPATH ($ORIGIN/plug).
$(BUILD)/e2e/plug/libplug.so: prof/e2e/dlloop_lib.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -shared -fPIC -o $@ $<

$(BUILD)/e2e/runpath: prof/e2e/runpath.c
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -ldl '-Wl,-rpath,$$ORIGIN/plug' -Wl,--enable-new-dtags

# Unit tests: one binary per *_test.c, beside its code's directory.
$(BUILD)/test/%: %.c $(TESTKIT_OBJS) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,)

$(BUILD)/test/pprof/%: pprof/%.c $(TESTKIT_OBJS) $(PPROF_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,$(PPROF_LIBS),$(FRAMEPTR))

$(BUILD)/test/prof/%: prof/%.c $(TESTKIT_OBJS) $(PROF_OBJS) $(PPROF_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,$(PROF_LIBS),$(FRAMEPTR))

# trace_out.c is the launcher's, not in PROF_OBJS: its test links it.
$(BUILD)/test/prof/launcher/trace_out_test: prof/launcher/trace_out_test.c \
		$(call objs,prof/launcher/trace_out.c) $(TESTKIT_OBJS) $(PROF_OBJS) \
		$(PPROF_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,$(PROF_LIBS),$(FRAMEPTR))

# The README's example, extracted and compiled, so that it stays true.
$(BUILD)/test/readme_example: README.md $(LIB_A)
	@mkdir -p $(dir $@)
	awk '/^```c$$/ { on = 1; next } /^```$$/ { on = 0 } on' README.md > $@.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-missing-prototypes -o $@ $@.c $(LDFLAGS) $(LIB_A) $(LDLIBS)

$(BUILD)/stress/prof_stress: stress/prof_stress.c $(TESTKIT_OBJS) $(PROF_OBJS) $(PPROF_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,$(PROF_LIBS),-fno-omit-frame-pointer)

$(BUILD)/stress/heap_stress: stress/heap_stress.c $(TESTKIT_OBJS) $(PROF_OBJS) $(PPROF_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,$(PROF_LIBS),-fno-omit-frame-pointer)

# The launcher's aggregation, without its I/O: what a hostile ring feeds.
AGG_OBJS := $(call objs,prof/common/aggregate.c prof/common/aggregate_profile.c \
	prof/common/heap_agg.c prof/common/mutex_agg.c)
# The guarded reader against scribbling writers, aggregating as the
# launcher does.
$(BUILD)/stress/profbuf_hostile_stress: stress/profbuf_hostile_stress.c \
		$(TESTKIT_OBJS) $(AGG_OBJS) $(PPROF_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,$(PPROF_LIBS) -lrt -lm)

$(BUILD)/stress/%: stress/%.c $(TESTKIT_OBJS) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,-lrt)

BENCH_LIBS := -lck -lurcu-cds -lurcu -lrt -lm

# scaling_bench: its description and main() in bench/scaling_bench.c, its
# parts in bench/scaling/ (one job a file; scaling.h says which).
SCALING_OBJS := $(call objs,$(wildcard bench/scaling/*.c))
$(BUILD)/bench/scaling_bench: bench/scaling_bench.c $(SCALING_OBJS) \
		$(BUILD)/obj/bench/harness.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,$(BENCH_LIBS))

# trace_bench: likewise, its parts in bench/trace/ (trace.h says which).
TRACE_BENCH_OBJS := $(call objs,$(wildcard bench/trace/*.c))
$(BUILD)/bench/trace_bench: bench/trace_bench.c $(TRACE_BENCH_OBJS) \
		$(BUILD)/obj/bench/harness.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,$(BENCH_LIBS))

# stacktab_bench: likewise, its parts in bench/stacktab/ (stacktab.h says
# which).
STACKTAB_BENCH_OBJS := $(call objs,$(wildcard bench/stacktab/*.c))
$(BUILD)/bench/stacktab_bench: bench/stacktab_bench.c $(STACKTAB_BENCH_OBJS) \
		$(BUILD)/obj/bench/harness.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,$(BENCH_LIBS))

# The profiler's per-sample work (unwind + write) against glibc's
# backtrace() and libunwind's unw_backtrace(); needs libunwind.  Its
# harness is compiled with frame pointers: the reference walk goes up
# through the harness's frames.
$(BUILD)/bench/unwind_bench: bench/unwind_bench.c $(BUILD)/obj-fp/bench/harness.o \
		$(BUILD)/obj/prof/agent/unwind.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,-lunwind $(BENCH_LIBS),-fno-omit-frame-pointer)

# The heap profiler benchmark's workload (bench/heap_overhead.sh): a plain
# program, built as users build theirs (frame pointers, as the issue's
# comparison asks of every profiler).
$(BUILD)/bench/malloc_storm: bench/work/malloc_storm.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g $(FRAMEPTR) -o $@ $< -lpthread

# The heap-cost storms a and b by thread count (bench/heap_cost.sh).
$(BUILD)/bench/heap_storm: bench/work/heap_storm.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g $(FRAMEPTR) -o $@ $< -lpthread

# sample_cost_bench: what one CPU sample costs the sampled thread (the
# profiler linked in, as prof_stress links it).
$(BUILD)/bench/sample_cost_bench: bench/sample_cost_bench.c $(BUILD)/obj/bench/harness.o \
		$(PROF_OBJS) $(PPROF_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,$(PROF_LIBS) $(BENCH_LIBS),-fno-omit-frame-pointer)

# Wall-clock mode's workloads (bench/wall_overhead.sh): plain programs.
$(BUILD)/bench/wall_eintr: bench/work/wall_eintr.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g $(FRAMEPTR) -o $@ $<

# --timer kernel's EINTR (profring-prof(1), --timer kernel): a plain program.
$(BUILD)/bench/kernel_eintr: bench/work/kernel_eintr.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g $(FRAMEPTR) -o $@ $<

$(BUILD)/bench/wall_sleepers: bench/work/wall_sleepers.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g $(FRAMEPTR) -o $@ $< -lpthread

# symbolize_bench: the symbolizer's (pprof/) speed with lines and inlines.
$(BUILD)/bench/symbolize_bench: bench/symbolize_bench.c $(BUILD)/obj/bench/harness.o \
		$(PPROF_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,$(PPROF_LIBS) $(BENCH_LIBS))

# Instructions per operation of the write paths under callgrind
# (bench/opcount.sh): the library as built, called as the benchmarks call it.
$(BUILD)/bench/opcount: bench/work/opcount.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,)

# LTTng-UST against tracebuf_emit() (bench/lttng_bench.sh): a tracepoint
# with two integer fields, and the same events through tracebuf; built only
# when <lttng/tracepoint.h> is there.
LTTNG_EMIT := $(if $(HAVE_LTTNG_UST),$(BUILD)/bench/lttng_emit)
$(BUILD)/bench/lttng_emit: bench/work/lttng_emit.c bench/work/lttng_tp.c \
		bench/work/lttng_tp.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Ibench/work $(CFLAGS) $(DEPFLAGS) \
		-MF $(dir $@).$(notdir $@).d -MT $@ -o $@ \
		bench/work/lttng_emit.c bench/work/lttng_tp.c $(LIB_A) \
		$(LDFLAGS) -llttng-ust -ldl $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(BUILD)/obj/bench/harness.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,$(BENCH_LIBS))

$(BUILD)/fuzz/%: fuzz/%.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,-fsanitize=fuzzer)

# Fuzzers of the tools' readers: the pprof decoder and report, and
# profring-trace's reports.
$(BUILD)/fuzz/pprof_fuzz: fuzz/pprof_fuzz.c $(PPROF_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,-fsanitize=fuzzer $(PPROF_LIBS))

# The perf map reader (JIT names: a file anyone may write in /tmp).
$(BUILD)/fuzz/perfmap_fuzz: fuzz/perfmap_fuzz.c $(PPROF_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,-fsanitize=fuzzer $(PPROF_LIBS))

# The launcher's aggregation of records another process wrote.
$(BUILD)/fuzz/agg_fuzz: fuzz/agg_fuzz.c $(AGG_OBJS) $(PPROF_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,-fsanitize=fuzzer $(PPROF_LIBS))

# The launcher's guarded read of a shared ring given any bytes.
$(BUILD)/fuzz/reader_fuzz: fuzz/reader_fuzz.c $(AGG_OBJS) \
		$(PPROF_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,-fsanitize=fuzzer $(PPROF_LIBS))

$(BUILD)/fuzz/trace_tool_fuzz: fuzz/trace_tool_fuzz.c $(TRACE_REPORT_OBJS) $(LIB_A)
	@mkdir -p $(dir $@)
	$(call link,-fsanitize=fuzzer)

# libFuzzer targets: the library built with the fuzzer's coverage and
# ASan+UBSan.  `make fuzz` runs each for FUZZ_SECONDS, new inputs going to
# build/fuzz/corpus/<target> (the committed seeds in fuzz/corpus/<target>
# are read, not written); `make fuzz-replay` runs each committed input
# once and each target for FUZZ_SECONDS (as `make check` does, briefly).
FUZZ_VARS = BUILD=build/fuzz CC=clang OPT="-O1 -g" \
	SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
TSAN_VARS = BUILD=build/tsan CC=clang OPT="-O1 -g" SAN="-fsanitize=thread"
ASAN_VARS = BUILD=build/asan CC=clang OPT="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"

fuzz:
	$(MAKE) fuzz-build $(FUZZ_VARS)
	@for f in $(FUZZ_SRCS:fuzz/%.c=%); do \
		mkdir -p build/fuzz/corpus/$$f fuzz/corpus/$$f build/fuzz/artifacts; \
		echo "== $$f, $(FUZZ_SECONDS) s"; \
		build/fuzz/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=build/fuzz/artifacts/ \
			build/fuzz/corpus/$$f fuzz/corpus/$$f 2>&1 | \
			grep -E '^#[0-9]+.*(DONE|pulse)|stat::number_of_executed_units|cov:|ERROR|SUMMARY' | tail -4 || exit 1; \
	done

fuzz-build: $(FUZZERS)

fuzz-replay:
	@$(MAKE) --no-print-directory fuzz-build $(FUZZ_VARS) >/dev/null
	@sh testing/fuzz-replay.sh build/fuzz $(FUZZ_SECONDS) $(FUZZ_SRCS:fuzz/%.c=%)

# Every test program prints PASS/FAIL/SKIP lines; testing/run-tests.sh
# runs them all and prints the totals as the closing line.
LABEL ?= check
check: all $(TESTS) $(BUILD)/test/readme_example $(STRESS) $(E2E_PROGS)
	@$(MAKE) --no-print-directory run-tests BUILD=$(BUILD) LABEL=$(LABEL)

run-tests: $(TESTS) $(BUILD)/test/readme_example $(STRESS) $(E2E_PROGS)
	@sh testing/run-tests.sh $(BUILD) $(LABEL) $(TESTS)

tsan:
	$(MAKE) check $(TSAN_VARS) LABEL=tsan

asan:
	$(MAKE) check $(ASAN_VARS) LABEL=asan

# Every stress program, STRESS_SECONDS each (split over its scenarios),
# plain, then under TSan, then under ASan+UBSan; ends with a table.
STRESS_SECONDS_DEFAULT = 60
stress:
	$(MAKE) stress-build
	$(MAKE) stress-build $(TSAN_VARS)
	$(MAKE) stress-build $(ASAN_VARS)
	stress/run.sh $(or $(STRESS_SECONDS),$(STRESS_SECONDS_DEFAULT)) \
		build build/tsan build/asan

stress-build: $(STRESS)

# Every scenario in one build (used by stress-perturb, -tsan, -asan).
run-stress: $(STRESS)
	stress/run.sh $(or $(STRESS_SECONDS),$(STRESS_SECONDS_DEFAULT)) $(BUILD)

stress-perturb:
	$(MAKE) run-stress BUILD=build/perturb DEFS=-DPROFRING_PERTURB

stress-tsan:
	$(MAKE) run-stress $(TSAN_VARS)

stress-asan:
	$(MAKE) run-stress $(ASAN_VARS)

# The first benchmark starts bench/results/latest.{md,csv}; the others append.
# Then the profiler's overhead against gperftools (bench-prof).  Last,
# bench/RESULTS.md is written again from bench/results/ (results_md.py).
bench: $(BENCHES)
	@unset BENCH_APPEND; for b in $(BENCHES); do \
		$$b $(BENCH_FLAGS) || exit 1; export BENCH_APPEND=1; \
	done
	$(MAKE) bench-lttng
	$(MAKE) bench-prof
	python3 bench/results_md.py

# tracebuf_emit() with 2 arguments beside an LTTng-UST tracepoint recorded
# by a live session (bench/results/lttng.md; LTTNG_BENCH_FLAGS="--reps 5").
# Skips, with a line saying why, without liblttng-ust-dev or lttng-tools.
bench-lttng: $(LTTNG_EMIT) $(BUILD)/tools/profring-trace
	bash bench/lttng_bench.sh --build $(BUILD) $(LTTNG_BENCH_FLAGS)

# profring-prof's wall and CPU overhead on prof_demo at 99 Hz and 1 kHz,
# beside gperftools' libprofiler.so in the same run, and at 999 Hz beside
# perf record -F 999 -g (those two rows skip without perf)
# (bench/results/prof_overhead.md; PROF_BENCH_FLAGS="--reps 15"); then the
# wall time the launcher adds to a process, beside perf record
# (bench/results/launch_overhead.md).
bench-prof: $(PROF_TOOLS) $(BUILD)/bench/malloc_storm $(BUILD)/bench/heap_storm
	bash bench/prof_overhead.sh $(PROF_BENCH_FLAGS)
	bash bench/launch_overhead.sh --build $(BUILD)
	bash bench/heap_overhead.sh --build $(BUILD)
	bash bench/heap_cost.sh --build $(BUILD)
	bash bench/http_overhead.sh --build $(BUILD)

# Agreement with perf (issue 16): python3.11, xz -9 -T1, sqlite3, xz -9 -T2
# and deep C++ recursion recorded by both, 5 runs each, interleaved; each
# function's flat share beside perf's and the total-variation distances
# (bench/results/agree/agree.md; AGREE_FLAGS="--quick" or "--runs 5").
# Not part of check or bench-prof: it needs perf, python3.11, xz, sqlite3.
bench-agree: $(PROF_TOOLS)
	python3 bench/perf_agree.py --build $(BUILD) $(AGREE_FLAGS)
	python3 bench/results_md.py --agree

# The main job: profile the bundled workload (two threads, 70% / 30% of
# the CPU in hot_seventy / hot_thirty) and print its top functions.
demo: $(PROF_TOOLS)
	$(BUILD)/tools/profring-prof record -F 1000 -o $(BUILD)/demo.pb.gz \
		-f $(BUILD)/demo.folded -- $(BUILD)/tools/prof_demo
	$(BUILD)/tools/profring-prof report -n 10 $(BUILD)/demo.pb.gz

# The previous main job: a profbuf stress run with signal storms.
demo-stress: $(BUILD)/stress/profbuf_stress
	$(BUILD)/stress/profbuf_stress --seconds 5 --writers 4 --signals

# Curves from bench/results/latest.csv (gnuplot-nox): writer scaling and
# record size, ours against the anchors, as PNG in bench/results/.
bench-plot:
	sh bench/plot.sh bench/results/latest.csv bench/results

# The public headers; libprofring (static, and shared as $(SOFILE) with
# its $(SONAME) and .so links) and the profiler's libprofring-prof.so, with
# their pkg-config files (profring.pc, profring-prof.pc); the tools
# profring-prof and profring-trace; the manual: man/NAME.N into
# $(MANDIR)/manN, and for each line "TARGET.N LINK.N" of man/links a page
# LINK.N holding ".so manN/TARGET.N".  uninstall removes the same list.
INSTALL_HEADERS := $(notdir $(wildcard include/profring/*.h))
INSTALL_LIBS := libprofring.a $(SOFILE) $(SONAME) libprofring.so \
	libprofring-prof.so libprofring-tsan.a
INSTALL_PCS := profring.pc profring-prof.pc profring-tsan.pc
INSTALL_BINS := profring-prof profring-trace
MAN_PAGES := $(wildcard man/*.1 man/*.3 man/*.7)
# man/links: lines "TARGET.N LINK.N"; any other line is ignored.
man_links = awk 'NF == 2 && $$1 ~ /^[a-z].*\.[1-9]$$/ && $$2 ~ /^[a-z].*\.[1-9]$$/' man/links
MAN_LINKS := $(shell test -f man/links && $(man_links) | awk '{ print $$2 }')
# $(call man_path,PAGE): where PAGE (NAME.N) is installed.
man_path = $(DESTDIR)$(MANDIR)/man$(patsubst .%,%,$(suffix $(1)))/$(1)
pc_sed = sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|'
install: all
	install -d $(DESTDIR)$(INCLUDEDIR)/profring $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(BINDIR)
	install -m 644 include/profring/*.h $(DESTDIR)$(INCLUDEDIR)/profring/
	install -m 644 $(LIB_PUB_A) $(DESTDIR)$(LIBDIR)/libprofring.a
	install -m 755 $(BUILD)/$(SOFILE) $(DESTDIR)$(LIBDIR)/
	ln -sf $(SOFILE) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SOFILE) $(DESTDIR)$(LIBDIR)/libprofring.so
	install -m 755 $(PROF_SO) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(addprefix $(BUILD)/tools/,$(INSTALL_BINS)) $(DESTDIR)$(BINDIR)/
	$(pc_sed) profring.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/profring.pc
	$(pc_sed) profring-prof.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/profring-prof.pc
	@for p in $(MAN_PAGES); do \
		d=$(DESTDIR)$(MANDIR)/man$${p##*.}; \
		echo "install -m 644 $$p $$d/"; \
		install -d $$d && install -m 644 $$p $$d/ || exit 1; \
	done
	@test ! -f man/links || $(man_links) | \
	while read t l; do \
		d=$(DESTDIR)$(MANDIR)/man$${l##*.}; \
		echo "$$d/$$l: .so man$${t##*.}/$$t"; \
		install -d $$d && \
		printf '.so man%s/%s\n' "$${t##*.}" "$$t" > $$d/$$l || exit 1; \
	done
	@if $(TSAN_PROBE); then \
		$(MAKE) --no-print-directory tsan-lib && \
		install -m 644 $(TSAN_LIB) $(DESTDIR)$(LIBDIR)/ && \
		$(pc_sed) profring-tsan.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/profring-tsan.pc; \
	else \
		echo "install: $(TSAN_CC) cannot build with -fsanitize=thread: no libprofring-tsan.a"; \
	fi

# libprofring-tsan.a (pkg-config profring-tsan): the library built with
# ThreadSanitizer, for programs built with -fsanitize=thread.  TSan sees
# the hand-over of their data only through atomics it instrumented: against
# the plain library it reports races that are not there.  Built by
# TSAN_CC (clang: gcc refuses the library's fences under TSan), installed
# when it can build with -fsanitize=thread; programs built by gcc or clang
# link it.
TSAN_CC ?= clang
TSAN_LIB := $(BUILD)/libprofring-tsan.a
TSAN_PROBE = printf 'int main(void) { return 0; }\n' | \
	$(TSAN_CC) -fsanitize=thread -x c -o /dev/null - 2>/dev/null
tsan-lib:
	$(MAKE) --no-print-directory BUILD=$(BUILD)/tsan-lib CC=$(TSAN_CC) \
		OPT="-O1 -g" SAN=-fsanitize=thread \
		$(BUILD)/tsan-lib/libprofring-pub.a
	cp $(BUILD)/tsan-lib/libprofring-pub.a $(TSAN_LIB)

uninstall:
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/profring/,$(INSTALL_HEADERS))
	rm -f $(addprefix $(DESTDIR)$(LIBDIR)/,$(INSTALL_LIBS))
	rm -f $(addprefix $(DESTDIR)$(PKGCONFIGDIR)/,$(INSTALL_PCS))
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(INSTALL_BINS))
	rm -f $(foreach p,$(notdir $(MAN_PAGES)) $(MAN_LINKS),$(call man_path,$(p)))
	test ! -d $(DESTDIR)$(INCLUDEDIR)/profring || \
		rmdir --ignore-fail-on-non-empty $(DESTDIR)$(INCLUDEDIR)/profring

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build
