# profring - one entry point.
#
#   make            build/libprofring.a and build/libprofring.so
#   make check      unit tests (closing line "N passed, N failed")
#   make tsan       the unit tests under ThreadSanitizer (clang)
#   make asan       the unit tests under AddressSanitizer + UBSan (clang)
#   make stress     the stress programs, STRESS_SECONDS each
#   make stress-perturb   the same with schedule perturbation compiled in
#   make stress-tsan / stress-asan   the same under the sanitizers
#   make bench      the benchmarks against their anchors
#   make bench-prof the profiler's overhead beside gperftools
#   make bench-plot the scaling and record-size curves (gnuplot)
#   make demo       the main job: profile a workload with profring-prof
#   make demo-stress a short profbuf stress run with signal storms
#   make install    PREFIX=/usr/local DESTDIR=
#   make format     clang-format every C file
#
# Build variants live in their own directories (BUILD=build/tsan, ...), so
# one tree holds all of them.

CC ?= cc
BUILD ?= build
OPT ?= -O2 -g
SAN ?=
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
BINDIR ?= $(PREFIX)/bin
INCLUDEDIR ?= $(PREFIX)/include
VERSION := 0.1.0
SONAME := libprofring.so.0

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CPPFLAGS += -D_GNU_SOURCE -Iinclude
CFLAGS += -std=c11 $(WARN) $(OPT) $(SAN) -fPIC -fvisibility=hidden
LDFLAGS += $(SAN)
LDLIBS += -lpthread

# Library sources: every .c in a component directory except tests.
COMPONENTS := profbuf stacktab tracebuf
LIB_SRCS := $(filter-out %_test.c,$(wildcard ring/*.c) \
	$(foreach c,$(COMPONENTS),$(wildcard $(c)/*.c)))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_SRCS := $(wildcard ring/*_test.c) \
	$(foreach c,$(COMPONENTS),$(wildcard $(c)/*_test.c))
TESTS := $(TEST_SRCS:%.c=$(BUILD)/test/%)
STRESS_SRCS := $(filter-out stress/harness.c,$(wildcard stress/*.c))
STRESS := $(STRESS_SRCS:stress/%.c=$(BUILD)/stress/%)
BENCH_SRCS := $(filter-out bench/harness.c,$(wildcard bench/*.c))
BENCHES := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)
TOOL_SRCS := $(wildcard tools/*.c)
TOOLS := $(TOOL_SRCS:tools/%.c=$(BUILD)/tools/%)
FUZZ_SRCS := $(wildcard fuzz/*_fuzz.c)
FUZZERS := $(FUZZ_SRCS:fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_SECONDS ?= 60
CHECK_FUZZ_SECONDS ?= 5
HEADERS := $(wildcard include/profring/*.h ring/*.h $(addsuffix /*.h,$(COMPONENTS)) \
	tools/prof/*.h)

# profring-prof, the sampling profiler (tools/prof): libprofring-prof.so
# (LD_PRELOAD or -lprofring-prof) holds the library's objects too, so it
# is the only file a profiled program needs.  libunwind is used when its
# header is there (.ci/run installs it).
HAVE_LIBUNWIND := $(shell printf '\043include <libunwind.h>\n' | \
	$(CC) -E -x c - >/dev/null 2>&1 && echo yes)
PROF_SRCS := $(addprefix tools/prof/,sampler.c collector.c prof.c unwind.c \
	pprof.c symbolize.c outfile.c)
PROF_OBJS := $(PROF_SRCS:%.c=$(BUILD)/obj/%.o)
PROF_LIBS := -lz -ldl -lrt $(if $(HAVE_LIBUNWIND),-lunwind)
PROF_TESTS := $(BUILD)/test/tools/prof/pprof_test $(BUILD)/test/tools/prof/prof_test
PROF_TOOLS := $(BUILD)/libprofring-prof.so $(BUILD)/tools/profring-prof \
	$(BUILD)/tools/prof_demo $(BUILD)/tools/prof_demo_nofp
TESTS += $(PROF_TESTS)
ifneq ($(HAVE_LIBUNWIND),yes)
BENCHES := $(filter-out $(BUILD)/bench/unwind_bench,$(BENCHES))
endif
TOOLS += $(PROF_TOOLS)

.PHONY: all check run-tests tsan asan stress stress-perturb stress-tsan stress-asan stress-build run-stress bench \
	demo demo-stress bench-prof install format clean fuzz fuzz-build fuzz-replay bench-plot

all: $(BUILD)/libprofring.a $(BUILD)/libprofring.so $(TOOLS)

$(BUILD)/obj/tools/prof/unwind.o: CPPFLAGS += $(if $(HAVE_LIBUNWIND),-DPROFRING_HAVE_LIBUNWIND)

# -z nodelete: its handler and thread-exit destructor must outlive a
# dlclose; -z now: no lazy binding inside the SIGPROF handler.
$(BUILD)/libprofring-prof.so: $(PROF_OBJS) $(LIB_OBJS) tools/prof/libprofring-prof.map
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libprofring-prof.so \
		-Wl,--version-script,tools/prof/libprofring-prof.map -Wl,-z,nodelete -Wl,-z,now \
		-o $@ $(PROF_OBJS) $(LIB_OBJS) $(PROF_LIBS) $(LDLIBS)

$(BUILD)/tools/profring-prof: tools/prof/profring-prof.c tools/prof/report.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ tools/prof/profring-prof.c tools/prof/report.c $(LDFLAGS) -lz

# The demo workload, with frame pointers and (for the unwinder's safety
# test) without.  Built without sanitizers: it is run under LD_PRELOAD.
$(BUILD)/tools/prof_demo: tools/prof/prof_demo.c
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -std=c11 -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o $@ $< -lpthread

$(BUILD)/tools/prof_demo_nofp: tools/prof/prof_demo.c
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -std=c11 -O2 -fomit-frame-pointer -o $@ $< -lpthread

$(BUILD)/test/tools/prof/%: tools/prof/%.c $(PROF_OBJS) $(BUILD)/libprofring.a ring/ktest.h stress/harness.c stress/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o $@ $< stress/harness.c tools/prof/report.c $(PROF_OBJS) \
		$(LDFLAGS) $(BUILD)/libprofring.a $(PROF_LIBS) $(LDLIBS)

# The profiler's per-sample work (unwind + write) against glibc's
# backtrace() and libunwind's unw_backtrace(); needs libunwind.
$(BUILD)/bench/unwind_bench: bench/unwind_bench.c bench/harness.c bench/harness.h \
		$(BUILD)/obj/tools/prof/unwind.o $(BUILD)/libprofring.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fno-omit-frame-pointer -o $@ $< bench/harness.c \
		$(BUILD)/obj/tools/prof/unwind.o $(LDFLAGS) $(BUILD)/libprofring.a -lunwind $(LDLIBS) -lrt -lm

$(BUILD)/tools/%: tools/%.c $(BUILD)/libprofring.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS) $(BUILD)/libprofring.a $(LDLIBS)

$(BUILD)/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/libprofring.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/libprofring.so: $(LIB_OBJS)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,$(SONAME) -o $@.$(VERSION) $^ $(LDLIBS)
	ln -sf libprofring.so.$(VERSION) $(BUILD)/$(SONAME)
	ln -sf libprofring.so.$(VERSION) $@

$(BUILD)/test/%: %.c $(BUILD)/libprofring.a ring/ktest.h stress/harness.c stress/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< stress/harness.c $(LDFLAGS) $(BUILD)/libprofring.a $(LDLIBS)

$(BUILD)/stress/prof_stress: stress/prof_stress.c stress/harness.c stress/harness.h \
		$(PROF_OBJS) tools/prof/report.c $(BUILD)/libprofring.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fno-omit-frame-pointer -o $@ $< stress/harness.c tools/prof/report.c \
		$(PROF_OBJS) $(LDFLAGS) $(BUILD)/libprofring.a $(PROF_LIBS) $(LDLIBS)

$(BUILD)/stress/%: stress/%.c stress/harness.c stress/harness.h $(BUILD)/libprofring.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< stress/harness.c $(LDFLAGS) $(BUILD)/libprofring.a $(LDLIBS) -lrt

$(BUILD)/bench/%: bench/%.c bench/harness.c bench/harness.h $(BUILD)/libprofring.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< bench/harness.c $(LDFLAGS) $(BUILD)/libprofring.a $(LDLIBS) -lck -lurcu-cds -lurcu -lrt -lm

# The README's example, extracted and compiled, so that it stays true.
$(BUILD)/test/readme_example: README.md $(BUILD)/libprofring.a
	@mkdir -p $(dir $@)
	awk '/^```c$$/ { on = 1; next } /^```$$/ { on = 0 } on' README.md > $@.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-missing-prototypes -o $@ $@.c $(LDFLAGS) $(BUILD)/libprofring.a $(LDLIBS)

$(BUILD)/fuzz/%: fuzz/%.c $(BUILD)/libprofring.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(LDFLAGS) $(BUILD)/libprofring.a $(LDLIBS)

# libFuzzer targets: the library built with the fuzzer's coverage and
# ASan+UBSan.  `make fuzz` runs each for FUZZ_SECONDS, new inputs going to
# build/fuzz/corpus/<target> (the committed seeds in fuzz/corpus/<target>
# are read, not written); `make fuzz-replay` runs each committed input
# once and each target for FUZZ_SECONDS (as `make check` does, briefly).
FUZZ_VARS = BUILD=build/fuzz CC=clang OPT="-O1 -g" \
	SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"

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
	@for f in $(FUZZ_SRCS:fuzz/%.c=%); do \
		mkdir -p build/fuzz/scratch/$$f; \
		if build/fuzz/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=build/fuzz/ build/fuzz/scratch/$$f \
			fuzz/corpus/$$f > build/fuzz/$$f.log 2>&1; \
		then echo "PASS fuzz $$f ($$(grep -o 'cov: [0-9]*' build/fuzz/$$f.log | tail -1), $$(sed -n 's/stat::number_of_executed_units: //p' build/fuzz/$$f.log) runs)"; \
		else tail -30 build/fuzz/$$f.log; echo "FAIL fuzz $$f"; fi; \
	done

# Every test binary prints PASS/FAIL lines; the totals are the closing line.
LABEL ?= check
check: all $(TESTS) $(BUILD)/test/readme_example $(STRESS) $(TOOLS)
	@$(MAKE) --no-print-directory run-tests BUILD=$(BUILD) LABEL=$(LABEL)

# Unit tests, the README example, then each stress program for a moment.
run-tests: $(TESTS) $(BUILD)/test/readme_example $(STRESS)
	@pass=0; fail=0; \
	for t in $(TESTS); do \
		out=$$($$t 2>&1); rc=$$?; echo "$$out"; \
		p=$$(echo "$$out" | grep -c '^PASS'); f=$$(echo "$$out" | grep -c '^FAIL'); \
		if [ $$rc -ne 0 ] && [ $$f -eq 0 ]; then f=1; echo "FAIL $$t exited $$rc"; fi; \
		pass=$$((pass + p)); fail=$$((fail + f)); \
	done; \
	if out=$$($(BUILD)/test/readme_example 2>&1) && echo "$$out" | grep -q '^[1-9][0-9]* samples'; \
	then echo "PASS readme_example ($$out)"; pass=$$((pass + 1)); \
	else echo "$$out"; echo "FAIL readme_example"; fail=$$((fail + 1)); fi; \
	out=$$(sh tools/tools_test.sh $(BUILD) 2>&1); \
	echo "$$out" | grep -E '^(PASS|FAIL)'; \
	pass=$$((pass + $$(echo "$$out" | grep -c '^PASS'))); \
	fail=$$((fail + $$(echo "$$out" | grep -c '^FAIL'))); \
	out=$$(sh tools/prof/prof_test.sh $(BUILD) $(LABEL) 2>&1); \
	echo "$$out" | grep -E '^(PASS|FAIL|SKIP|#)'; \
	pass=$$((pass + $$(echo "$$out" | grep -c '^PASS'))); \
	fail=$$((fail + $$(echo "$$out" | grep -c '^FAIL'))); \
	out=$$(stress/run.sh --quick 2 $(BUILD) 2>&1); \
	echo "$$out" | grep -E '^(PASS|FAIL|[a-z_]+_stress:)'; \
	pass=$$((pass + $$(echo "$$out" | grep -c '^PASS'))); \
	fail=$$((fail + $$(echo "$$out" | grep -c '^FAIL'))); \
	if [ "$(LABEL)" = check ]; then \
		out=$$($(MAKE) --no-print-directory fuzz-replay FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS) 2>&1); \
		echo "$$out" | grep -E '^(PASS|FAIL)' || echo "$$out" | tail -5; \
		pass=$$((pass + $$(echo "$$out" | grep -c '^PASS'))); \
		fail=$$((fail + $$(echo "$$out" | grep -c '^FAIL') + \
			$$(echo "$$out" | grep -c '^PASS\|^FAIL' | grep -c '^0$$'))); \
	fi; \
	echo "$(LABEL): $$pass passed, $$fail failed"; \
	test $$fail -eq 0

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
	$(MAKE) run-stress BUILD=build/perturb \
		CPPFLAGS="-D_GNU_SOURCE -Iinclude -DPROFRING_PERTURB"

TSAN_VARS = BUILD=build/tsan CC=clang OPT="-O1 -g" SAN="-fsanitize=thread"
ASAN_VARS = BUILD=build/asan CC=clang OPT="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"

stress-tsan:
	$(MAKE) run-stress $(TSAN_VARS)

stress-asan:
	$(MAKE) run-stress $(ASAN_VARS)

# The first benchmark starts bench/results/latest.{md,csv}; the others append.
# Then the profiler's overhead against gperftools (bench-prof).
bench: $(BENCHES)
	@unset BENCH_APPEND; for b in $(BENCHES); do \
		$$b $(BENCH_FLAGS) || exit 1; export BENCH_APPEND=1; \
	done
	$(MAKE) bench-prof

# profring-prof's wall and CPU overhead on prof_demo at 99 Hz and 1 kHz,
# beside gperftools' libprofiler.so in the same run
# (bench/results/prof_overhead.md; PROF_BENCH_FLAGS="--reps 15").
bench-prof: $(PROF_TOOLS)
	bash bench/prof_overhead.sh $(PROF_BENCH_FLAGS)

# The main job: profile the bundled workload (two threads, 70% / 30% of
# the CPU in hot_seventy / hot_thirty) and print its top functions.
demo: $(BUILD)/libprofring-prof.so $(BUILD)/tools/profring-prof $(BUILD)/tools/prof_demo
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

install: all
	install -d $(DESTDIR)$(INCLUDEDIR)/profring $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 644 include/profring/*.h $(DESTDIR)$(INCLUDEDIR)/profring/
	install -m 644 $(BUILD)/libprofring.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(BUILD)/libprofring.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libprofring.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf libprofring.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libprofring.so
	install -m 755 $(BUILD)/libprofring-prof.so $(DESTDIR)$(LIBDIR)/
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(BUILD)/tools/profring-prof $(DESTDIR)$(BINDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
		profring.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/profring.pc

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build
