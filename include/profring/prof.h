/* SPDX-License-Identifier: MIT */
/*
 * profring/prof.h - profring-prof, a sampling CPU profiler built on profbuf
 * and stacktab.
 *
 * Use it one of two ways:
 *
 *  - unmodified programs: the launcher, `profring-prof record -o
 *    out.pb.gz -- cmd args...`, which collects the samples in its own
 *    process over shared memory and writes the profile however the
 *    program ends (exec, _exit, a signal); or in-process,
 *    LD_PRELOAD=libprofring-prof.so with PROFRING_PROF=out.pb.gz in the
 *    environment, the profile written at exit.  Profiling runs from before
 *    main().  The variables are listed below (PROFRING_PROF_ENV_OUTPUT
 *    and the rest).
 *  - programs that link -lprofring-prof: profring_prof_start() and
 *    profring_prof_stop() around the part to profile.
 *
 * Every thread is sampled in proportion to the CPU time it uses: each
 * thread gets its own counter of its CPU time, delivering our signal to
 * that thread at each period: a perf_event cpu-clock counter where the
 * kernel lets a process sample itself (perf_event_paranoid <= 2), at the
 * rate asked; else a POSIX CPU-time timer (timer_create on the thread's
 * CPU clock).  Threads that exist at start are found
 * in /proc/self/task; threads created later with pthread_create() are armed
 * as they start (the library interposes pthread_create); threads started
 * some other way (thrd_create, a raw clone) are found by a rescan of
 * /proc/self/task every 200 ms.  The kernel checks POSIX CPU-time timers
 * at its tick, so with them a thread takes at most CONFIG_HZ signals a
 * second (250 on Debian).  Either way each sample weighs the thread's CPU
 * time since its last one, in periods, the remainder carried to the next,
 * and a thread that exits leaves a sample for its time since its last, so
 * the CPU time in the profile stays right at any frequency up to
 * PROFRING_PROF_MAX_HZ (10 kHz) and for threads shorter than a period.
 *
 * Samples arrive on a real-time signal of the library's own, the highest
 * one from SIGRTMAX down to SIGRTMIN + 2 that nobody handles, never
 * SIGPROF: a program's SIGPROF handler, setitimer() and sigwait() see
 * nothing of ours.  A program that installs its own handler for that
 * signal takes it over: sampling stops first, and the stop summary says
 * so.  The handler blocks no other signal.
 *
 * The handler unwinds the interrupted thread (frame pointers,
 * every frame checked against the thread's stack bounds; or libunwind) and
 * writes one profbuf record.  It is async-signal-safe: no malloc, no lock,
 * errno preserved.  A reader thread interns the stacks and aggregates them;
 * samples the buffer could not take are reported as a
 * "[profring: lost samples]" entry with their count.  At stop the profile
 * is written as gzip'd pprof profile.proto and, optionally, folded stacks.
 *
 * Only one profiling session runs at a time in a process.  A forked child
 * has no session (it may start its own); an exec ends an in-process
 * session without writing its profile (no timer of ours survives the
 * exec; the launcher's sessions go on in the new image).  A process whose
 * threads have all ended but our reader (main ended by pthread_exit())
 * exits with status 0, as it would have without us, writing the profile.
 */
#ifndef PROFRING_PROF_H
#define PROFRING_PROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Limits and defaults of struct profring_prof_opts.  PROFRING_PROF_MAX_FRAMES
 * may not exceed the stack table's STACKTAB_MAX_DEPTH (the collector
 * asserts it at build time).
 */
#define PROFRING_PROF_MAX_FRAMES 128
#define PROFRING_PROF_DEFAULT_FRAMES 64
#define PROFRING_PROF_MAX_HZ 10000
#define PROFRING_PROF_DEFAULT_HZ 99
#define PROFRING_PROF_DEFAULT_WALL_HZ 50
#define PROFRING_PROF_WALL_CAP 16 /* signals per wall tick, at most */
#define PROFRING_PROF_MAX_WALL_HZ 1000
#define PROFRING_PROF_DEFAULT_OUTPUT "profring.pb.gz"
#define PROFRING_PROF_DEFAULT_BUFFER_WORDS ((size_t)1 << 20) /* 8 MiB */
#define PROFRING_PROF_MAX_BUFFER_WORDS ((size_t)1 << 27) /* 1 GiB */
#define PROFRING_PROF_DEFAULT_HEAP_RATE ((uint64_t)512 << 10) /* 512 KiB */
#define PROFRING_PROF_MAX_HEAP_RATE ((uint64_t)1 << 40)
#define PROFRING_PROF_MAX_PERIOD 86400u /* a day */
#define PROFRING_PROF_MAX_KEEP 1000000u

/*
 * The environment of an LD_PRELOAD session: the library's constructor
 * reads these, and `profring-prof record` sets them from its options.  A
 * session starts only if PROFRING_PROF_ENV_OUTPUT, PROFRING_PROF_ENV_HEAP or
 * PROFRING_PROF_ENV_HTTP is set and not empty.
 * An unset variable means the default of the matching struct
 * profring_prof_opts field; one that is set but empty or does not parse
 * is refused with one line on stderr, and the program runs unprofiled.
 * Every name is PROFRING_PROF or
 * begins with PROFRING_PROF_: once it has read them, the constructor
 * takes all such variables out of the environment, so that children,
 * which inherit LD_PRELOAD, do not profile into the same file.
 */
/* @output: the pprof file; its presence starts the session. */
#define PROFRING_PROF_ENV_OUTPUT "PROFRING_PROF"
/* @hz, a decimal number. */
#define PROFRING_PROF_ENV_HZ "PROFRING_PROF_HZ"
/* @folded: the folded-stacks file. */
#define PROFRING_PROF_ENV_FOLDED "PROFRING_PROF_FOLDED"
/* @timer: "process", "posix" (per-thread POSIX timers), "kernel" (perf
 * counters sampling the kernel too), else per thread. */
#define PROFRING_PROF_ENV_TIMER "PROFRING_PROF_TIMER"
/* @unwinder: "libunwind" for PROFRING_PROF_UNWIND_LIBUNWIND; else fp. */
#define PROFRING_PROF_ENV_UNWIND "PROFRING_PROF_UNWIND"
/* @max_frames, a decimal number. */
#define PROFRING_PROF_ENV_FRAMES "PROFRING_PROF_FRAMES"
/* @buffer_words, a decimal number. */
#define PROFRING_PROF_ENV_BUFFER_WORDS "PROFRING_PROF_BUFFER_WORDS"
/* @heap_output: the heap profile; alone, it profiles memory only. */
#define PROFRING_PROF_ENV_HEAP "PROFRING_PROF_HEAP"
/* @heap_rate, a decimal number of bytes; with @http, heap sampling on. */
#define PROFRING_PROF_ENV_HEAP_RATE "PROFRING_PROF_HEAP_RATE"
/* @http: serve /debug/pprof/ at ADDR:PORT (see @http below). */
#define PROFRING_PROF_ENV_HTTP "PROFRING_PROF_HTTP"
/* @period, seconds: PROFRING_PROF and PROFRING_PROF_HEAP are patterns. */
#define PROFRING_PROF_ENV_PERIOD "PROFRING_PROF_PERIOD"
/* @keep, a number of files. */
#define PROFRING_PROF_ENV_KEEP "PROFRING_PROF_KEEP"
/* @mode: "wall" for PROFRING_PROF_MODE_WALL; "cpu" (or unset): CPU. */
#define PROFRING_PROF_ENV_MODE "PROFRING_PROF_MODE"
/*
 * Read by the launcher only: the path of libprofring-prof.so to preload
 * (else it looks beside itself, one directory up, in ../lib, then on the
 * loader's path).
 */
#define PROFRING_PROF_ENV_LIB "PROFRING_PROF_LIB"

/** enum profring_prof_timer - how samples are triggered. */
enum profring_prof_timer {
	/**
	 * Per thread: a perf_event cpu-clock counter of the thread's CPU
	 * time where the kernel lets a process sample itself
	 * (perf_event_paranoid <= 2), else a POSIX CPU-time timer; the
	 * process timer if neither can be had.
	 */
	PROFRING_PROF_TIMER_THREAD = 0,
	/** One POSIX timer on CLOCK_PROCESS_CPUTIME_ID (never ITIMER_PROF). */
	PROFRING_PROF_TIMER_PROCESS = 1,
	/** Per thread, POSIX CPU-time timers only (tick-bound rates). */
	PROFRING_PROF_TIMER_POSIX = 2,
	/**
	 * As PROFRING_PROF_TIMER_THREAD, the perf counters sampling in the
	 * kernel too where allowed (perf_event_paranoid <= 1 or
	 * CAP_PERFMON; else user mode only): system calls and page faults
	 * are charged where the program entered the kernel, as perf does,
	 * but a blocking call that a sample finds in the kernel before it
	 * sleeps returns EINTR.
	 */
	PROFRING_PROF_TIMER_KERNEL = 3,
};

/** enum profring_prof_mode - what a session's samples measure. */
enum profring_prof_mode {
	/** CPU time: each thread in proportion to the CPU it uses. */
	PROFRING_PROF_MODE_CPU = 0,
	/**
	 * Wall-clock time: every thread, running or sleeping, @hz times a
	 * second of real time (default PROFRING_PROF_DEFAULT_WALL_HZ), by a
	 * ticker thread of the library that sends our signal to each
	 * thread (at most PROFRING_PROF_WALL_CAP a tick); a thread that has
	 * not run since its last sample is not interrupted, its last stack
	 * is counted again.  Samples carry a "state" label (running,
	 * sleeping).  The signal interrupts the program's blocking calls:
	 * those that are not restarted under SA_RESTART (poll, epoll_wait,
	 * select...) return EINTR; nanosleep, clock_nanosleep, usleep and
	 * sleep are resumed for the time left instead, unless the program
	 * has a signal handler of its own; see profring-prof(1), --mode wall.
	 */
	PROFRING_PROF_MODE_WALL = 1,
};

/** enum profring_prof_unwinder - how the handler walks the stack. */
enum profring_prof_unwinder {
	/** Frame pointers, validated against the thread's stack bounds. */
	PROFRING_PROF_UNWIND_FP = 0,
	/**
	 * libunwind (unw_init_local2 on the signal context), for code built
	 * without frame pointers.  libunwind reads unwind tables through
	 * dl_iterate_phdr, which takes the dynamic loader's lock: a sample
	 * landing while its thread holds that lock (inside dlopen) would
	 * deadlock, so this is opt-in.  -ENOTSUP when the library was built
	 * without libunwind.
	 */
	PROFRING_PROF_UNWIND_LIBUNWIND = 1,
};

/**
 * struct profring_prof_opts - profiling options; all-zero means defaults.
 * @hz:		samples per CPU-second per thread (wall mode: per second
 *		of real time); 0 means PROFRING_PROF_DEFAULT_HZ
 *		(PROFRING_PROF_DEFAULT_WALL_HZ in wall mode); at most
 *		PROFRING_PROF_MAX_HZ (wall mode: 1000).
 * @output:	CPU pprof file (gzip'd profile.proto); NULL means
 *		PROFRING_PROF_DEFAULT_OUTPUT, or no CPU profiling at all
 *		when @heap_output is set.
 * @folded:	folded-stacks file ("a;b;c 42" lines); NULL means none.
 * @timer:	see enum profring_prof_timer.
 * @unwinder:	see enum profring_prof_unwinder.
 * @max_frames:	frames kept per sample (deeper stacks are cut at the
 *		root end and counted); 0 means PROFRING_PROF_DEFAULT_FRAMES,
 *		at most PROFRING_PROF_MAX_FRAMES.
 * @buffer_words: size of the profbuf ring in 8-byte words; 0 means
 *		PROFRING_PROF_DEFAULT_BUFFER_WORDS; otherwise at least room
 *		for two records of @max_frames frames, at most
 *		PROFRING_PROF_MAX_BUFFER_WORDS.  Small rings make the
 *		reader's lag visible as lost samples (for tests).
 * @heap_output: heap pprof file; NULL means no heap profiling.
 * @heap_rate:	mean bytes allocated between heap samples; 0 means
 *		PROFRING_PROF_DEFAULT_HEAP_RATE, 1 samples every allocation,
 *		at most PROFRING_PROF_MAX_HEAP_RATE.
 * @http:	NULL, or "ADDR:PORT" ("[IPV6]:PORT"; "PORT" or ":PORT":
 *		127.0.0.1; port 0: any free one, said on stderr): serve Go's
 *		net/http/pprof endpoints there while the session runs.
 *		Without @output and @heap_output nothing is profiled until a
 *		request asks: /debug/pprof/profile?seconds=N samples the CPU
 *		for N seconds (1 to 3600, default 30; one at a time, and not
 *		while @output's CPU profile runs: 409);
 *		/debug/pprof/wall?seconds=N the same in wall-clock mode
 *		(PROFRING_PROF_MODE_WALL at PROFRING_PROF_DEFAULT_WALL_HZ;
 *		it shares the sampler with /profile); /debug/pprof/heap
 *		and /debug/pprof/allocs (?seconds=N: the allocations of the
 *		next N seconds) serve the heap profile when heap sampling is
 *		on (@heap_output, or a nonzero @heap_rate), else 404.  Also
 *		/debug/pprof/ (an index), /debug/pprof/cmdline and
 *		/debug/pprof/symbol (GET, POST).  Bodies are gzip'd
 *		profile.proto, symbolized.  The server is libmicrohttpd's,
 *		on threads of its own, never in a signal handler; while no
 *		request is served it sleeps in poll() and costs nothing.
 *		Bounded: 16 connections at once, 16 KiB of request per
 *		connection, 10 s of silence closes one.  A non-loopback
 *		address gets a warning on stderr: profiles show code and
 *		data addresses to whoever connects.  In-process (LD_PRELOAD)
 *		the variable stays in the environment as SPEC@PID: after an
 *		exec (a wrapper script that execs the program) the same
 *		process serves again; its children do not.
 * @period:	0, or seconds (1 to PROFRING_PROF_MAX_PERIOD): instead of
 *		one profile at stop, write one every @period seconds.
 *		@output and @heap_output (at least one) are then patterns:
 *		%p the pid, %t the UTC time the window began
 *		(20261126T013000Z), %n its number from 1, %% a %; %t or %n
 *		must be there.  Each window's CPU profile (its time_nanos
 *		and duration_nanos those of the window) and the heap
 *		profile as it is then are written to a temporary name and
 *		renamed into place, so a collector never reads half a file;
 *		the window running at stop is written too.  @folded is not
 *		written.
 * @keep:	with @period, keep the last @keep files of each kind (the
 *		older ones are deleted); 0 keeps them all.
 * @mode:	see enum profring_prof_mode (last in the struct: callers
 *		built against an older header zero it with the rest).
 *		Wall mode replaces CPU sampling for the session; its
 *		profile's sample types are samples/count and
 *		wall/nanoseconds.  With @period, each window's file is a
 *		wall-clock profile of the window.  It is refused (-EINVAL)
 *		with @http, whose server serves CPU profiles (its
 *		/debug/pprof/wall serves wall-clock windows without it).
 *
 * The heap profiler.  libprofring-prof.so interposes malloc, free,
 * calloc, realloc, reallocarray, posix_memalign, aligned_alloc,
 * memalign, valloc, pvalloc and malloc_usable_size (C++'s operator new
 * and delete reach them), passing each call on to the next allocator.
 * Each thread samples its allocations by bytes, as Go and tcmalloc do: an
 * allocation of s bytes is sampled with probability 1 - exp(-s / rate).
 * A sampled block's stack is walked through frame pointers from the
 * allocator's caller, and the block remembered in a lock-free table, so
 * that its free is seen; the collector counts, per stack and size, the
 * blocks allocated and those still live, and writes them unbiased (Go's
 * scaleHeapSample) as a pprof heap profile: alloc_objects, alloc_space,
 * inuse_objects, inuse_space (the default), a "bytes" label with the
 * size.  In use means not freed when the profile is written.  An
 * unsampled allocation costs a load, a subtraction and a branch; a free,
 * one load while nothing is tracked, else a probe of a small filter.
 * What is lost is counted and shown: allocations the table had no room
 * for as "[profring: heap table full]" (allocated, never in use), records
 * the ring refused as "[profring: lost heap records]".  The allocator
 * calls never lock and never wait on the profiler; in a forked child the
 * heap profiler stops, unless the launcher follows children.
 */
struct profring_prof_opts {
	unsigned int hz;
	const char *output;
	const char *folded;
	enum profring_prof_timer timer;
	enum profring_prof_unwinder unwinder;
	unsigned int max_frames;
	size_t buffer_words;
	const char *heap_output;
	uint64_t heap_rate;
	const char *http;
	unsigned int period;
	unsigned int keep;
	enum profring_prof_mode mode;
};

/**
 * struct profring_prof_stats - a profiling session's accounting.
 * @signals:	sampling signals the handler took while profiling.
 * @written:	samples the handler wrote to the ring.
 * @refused:	samples the ring refused (counted as overflow by profbuf,
 *		or arriving after close); @written + @refused == @signals.
 * @read:	samples the reader took from the ring.
 * @lost:	samples the ring reported lost (overflow records);
 *		at stop, @read + @lost == @signals.
 * @periods:	sampling periods the read samples stand for.
 * @truncated:	samples whose stack was cut at max_frames.
 * @unwind_unchecked: samples taken on threads whose stack bounds were not
 *		known; the unwinder then reads frames with process_vm_readv,
 *		which cannot fault.
 * @threads:	threads that were given a timer.
 * @stacks:	distinct stacks.
 * @stack_table_full: samples kept without interning because the stack
 *		table was full (reported as their own entry).
 */
struct profring_prof_stats {
	uint64_t signals;
	uint64_t written;
	uint64_t refused;
	uint64_t read;
	uint64_t lost;
	uint64_t periods;
	uint64_t truncated;
	uint64_t unwind_unchecked;
	uint64_t threads;
	uint64_t stacks;
	uint64_t stack_table_full;
};

/**
 * profring_prof_start() - start profiling the whole process.
 * @opts: options, or NULL for the defaults.
 *
 * Installs the sampling handler, starts the reader thread and arms every
 * thread's timer.  Not async-signal-safe.
 *
 * Return: 0; -EBUSY if a session is running, or a CPU profile is being
 * taken for an HTTP request and @opts asks for one too; -EINVAL for bad
 * options (an @http address that does not parse); -EADDRINUSE and the
 * like when the @http server cannot listen; -ENOTSUP for an unwinder not
 * built in; or the -errno of what failed (no state is left behind).
 */
int profring_prof_start(const struct profring_prof_opts *opts);

/**
 * profring_prof_stop() - stop profiling and write the profile.
 *
 * Stops the @http server first (a CPU profile it is taking ends at once,
 * its request answered 503), disarms the timers, waits for handlers in
 * flight, drains the ring, writes the pprof file (and the folded file if
 * asked).  The sampling handler stays
 * installed, doing nothing, so that a signal still pending cannot kill the
 * process.
 *
 * Return: 0; -ESHUTDOWN if no session is running (none was started, it
 * was stopped already, or it belongs to the parent of this forked
 * process); or the -errno of the first output that failed (the session
 * is stopped all the same).
 */
int profring_prof_stop(void);

/**
 * profring_prof_get_stats() - the current or last session's accounting.
 * @st: filled in.
 *
 * Return: 0, or -EINVAL for a NULL @st.
 */
int profring_prof_get_stats(struct profring_prof_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* PROFRING_PROF_H */
