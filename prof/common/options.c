// SPDX-License-Identifier: MIT
/*
 * prof/common/options.c - strict parsing of the profiler's options (options.h).
 *
 * Numbers are decimal digits only: no sign, no blanks, no base prefix, no
 * trailing text, never wrapped; zero is refused where it would mean
 * nothing.  Keywords are exact, lower case.  Every error is one line
 * naming the option (or variable) as the user wrote it and what it wants.
 * On the command line an option given twice takes its last value, as most
 * tools do.
 */
#include "prof/common/options.h"
#include "pprof/outfile.h"
#include "prof/common/http_addr.h"
#include "prof/wire/stream.h"
#include "prof/agent/unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* @s as a decimal number in [@lo, @hi]; false if it is not one. */
static bool number(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* Smallest ring: room for two records of @frames frames. */
static uint64_t min_buffer_words(unsigned int frames)
{
	return 2 * (2 + PROF_HDR_WORDS + (uint64_t)frames);
}

enum opt_kind {
	OPT_HZ,
	OPT_FRAMES,
	OPT_BUFFER,
	OPT_TIMER,
	OPT_UNWIND,
	OPT_HEAP_RATE,
	OPT_PERIOD,
	OPT_KEEP,
	OPT_MODE
};

/* Set one option from its text; @name is how the user named it. */
static int set_opt(struct profring_prof_opts *o, enum opt_kind k,
		   const char *name, const char *eq, const char *v, char *err,
		   size_t len)
{
	uint64_t n;

	switch (k) {
	case OPT_HZ:
		if (!number(v, 1, PROFRING_PROF_MAX_HZ, &n))
			return fail(
				err, len,
				"%s%s%s: want a sampling rate from 1 to %u Hz",
				name, eq, v, PROFRING_PROF_MAX_HZ);
		o->hz = (unsigned int)n;
		return 0;
	case OPT_FRAMES:
		if (!number(v, 1, PROFRING_PROF_MAX_FRAMES, &n))
			return fail(
				err, len,
				"%s%s%s: want a number of frames from 1 to %u",
				name, eq, v, PROFRING_PROF_MAX_FRAMES);
		o->max_frames = (unsigned int)n;
		return 0;
	case OPT_BUFFER:
		if (!number(v, 1, PROFRING_PROF_MAX_BUFFER_WORDS, &n))
			return fail(
				err, len,
				"%s%s%s: want a ring size in words up to %zu",
				name, eq, v, PROFRING_PROF_MAX_BUFFER_WORDS);
		o->buffer_words = (size_t)n;
		return 0;
	case OPT_HEAP_RATE:
		if (!number(v, 1, PROFRING_PROF_MAX_HEAP_RATE, &n))
			return fail(
				err, len,
				"%s%s%s: want a mean number of bytes between "
				"heap samples from 1 to %llu",
				name, eq, v,
				(unsigned long long)
					PROFRING_PROF_MAX_HEAP_RATE);
		o->heap_rate = n;
		return 0;
	case OPT_PERIOD:
		if (!number(v, 1, PROFRING_PROF_MAX_PERIOD, &n))
			return fail(
				err, len,
				"%s%s%s: want a period from 1 to %u seconds",
				name, eq, v, PROFRING_PROF_MAX_PERIOD);
		o->period = (unsigned int)n;
		return 0;
	case OPT_KEEP:
		if (!number(v, 1, PROFRING_PROF_MAX_KEEP, &n))
			return fail(
				err, len,
				"%s%s%s: want a number of files from 1 to %u",
				name, eq, v, PROFRING_PROF_MAX_KEEP);
		o->keep = (unsigned int)n;
		return 0;
	case OPT_MODE:
		if (!strcmp(v, "cpu"))
			o->mode = PROFRING_PROF_MODE_CPU;
		else if (!strcmp(v, "wall"))
			o->mode = PROFRING_PROF_MODE_WALL;
		else
			return fail(err, len, "%s%s%s: want cpu or wall", name,
				    eq, v);
		return 0;
	case OPT_TIMER:
		if (!strcmp(v, "thread"))
			o->timer = PROFRING_PROF_TIMER_THREAD;
		else if (!strcmp(v, "process"))
			o->timer = PROFRING_PROF_TIMER_PROCESS;
		else if (!strcmp(v, "posix"))
			o->timer = PROFRING_PROF_TIMER_POSIX;
		else if (!strcmp(v, "kernel"))
			o->timer = PROFRING_PROF_TIMER_KERNEL;
		else
			return fail(err, len,
				    "%s%s%s: want thread, kernel, posix or "
				    "process",
				    name, eq, v);
		return 0;
	case OPT_UNWIND:
		if (!strcmp(v, "fp")) {
			o->unwinder = PROFRING_PROF_UNWIND_FP;
		} else if (!strcmp(v, "libunwind")) {
			if (!prof_unwind_libunwind_available())
				return fail(
					err, len,
					"%s%s%s: this build has no libunwind "
					"(want fp)",
					name, eq, v);
			o->unwinder = PROFRING_PROF_UNWIND_LIBUNWIND;
		} else {
			return fail(err, len, "%s%s%s: want fp or libunwind",
				    name, eq, v);
		}
		return 0;
	}
	return -1;
}

/*
 * The checks that need several options: the ring fits two samples; wall
 * mode's rate, and what it does not go with (prof.h, @mode).
 */
static int check_together(const struct profring_prof_opts *o, const char *name,
			  char *err, size_t len)
{
	unsigned int frames =
		o->max_frames ? o->max_frames : PROFRING_PROF_DEFAULT_FRAMES;

	if (o->mode == PROFRING_PROF_MODE_WALL &&
	    o->hz > PROFRING_PROF_MAX_WALL_HZ)
		return fail(err, len,
			    "wall mode: want a sampling rate from 1 to %u Hz",
			    PROFRING_PROF_MAX_WALL_HZ);
	if (o->mode == PROFRING_PROF_MODE_WALL && o->http)
		return fail(err, len,
			    "wall mode: not with an HTTP server (it serves "
			    "CPU profiles; /debug/pprof/wall serves wall-clock "
			    "windows without wall mode)");

	if (o->buffer_words && o->buffer_words < min_buffer_words(frames))
		return fail(err, len,
			    "%s %zu: want from %llu to %zu words (room for two "
			    "samples of %u frames)",
			    name, o->buffer_words,
			    (unsigned long long)min_buffer_words(frames),
			    PROFRING_PROF_MAX_BUFFER_WORDS, frames);
	return 0;
}

/**
 * prof_output_check() - can @path be written, without writing it?  See
 * options.h; @what names it in messages ("-o").
 *
 * Return: 0 with *@abs set (malloc'd), or -1 with @err.
 */
int prof_output_check(const char *path, const char *what, char **abs, char *err,
		      size_t len)
{
	char cwd[PATH_MAX], dir[PATH_MAX + 16], why[512], *slash;
	struct stat st;
	int fd;

	*abs = NULL;
	if (!*path)
		return fail(err, len, "%s: want a file name", what);
	if (path[0] == '/') {
		*abs = strdup(path);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return fail(err, len, "%s %s: %s", what, path,
				    strerror(errno));
		if (asprintf(abs, "%s/%s", cwd, path) < 0)
			*abs = NULL;
	}
	if (!*abs)
		return fail(err, len, "%s %s: %s", what, path,
			    strerror(ENOMEM));
	/* Links another user planted, dangling links: pprof/outfile.h. */
	if (prof_outfile_check(*abs, why, sizeof(why))) {
		fail(err, len, "%s %s: cannot write there: %s", what, path,
		     why);
		goto out;
	}
	if (!stat(*abs, &st)) {
		if (S_ISDIR(st.st_mode))
			goto bad_dir;
		/* A FIFO is not opened here: that would wait for a reader. */
		if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
			if (access(*abs, W_OK))
				goto bad;
			return 0;
		}
		fd = open(*abs, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			goto bad;
		close(fd);
		return 0;
	}
	if (errno != ENOENT)
		goto bad;
	/* A new file: prove that its directory takes one. */
	snprintf(dir, sizeof(dir), "%s", *abs);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = 0;
	else
		*slash = 0;
	fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno == EOPNOTSUPP || errno == EISDIR) { /* no O_TMPFILE there */
		if (!access(dir, W_OK | X_OK))
			return 0;
	}
	goto bad;
bad_dir:
	errno = EISDIR;
bad:
	fail(err, len, "%s %s: cannot write there: %s", what, path,
	     strerror(errno));
out:
	free(*abs);
	*abs = NULL;
	return -1;
}

/**
 * prof_record_args_free() - free what prof_record_parse() allocated.
 */
void prof_record_args_free(struct prof_record_args *a)
{
	free(a->output);
	free(a->folded);
	free(a->heap);
	free(a->trace);
	free(a->mutex);
	free(a->block);
	a->output = a->folded = a->heap = a->trace = NULL;
	a->mutex = a->block = NULL;
}

/* @path's directory (links followed) into *@st, and its last name. */
static const char *dir_of(const char *path, struct stat *st)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (!slash)
		return stat(".", st) ? NULL : path;
	if ((size_t)(slash - path) >= sizeof(dir))
		return NULL;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = 0;
	if (stat(slash == path ? "/" : dir, st))
		return NULL;
	return slash + 1;
}

/*
 * Two outputs that would overwrite each other: one file however spelt
 * (@x and @y absolute, or both relative to the working directory): the
 * same string;
 * the same file, links followed (its st_dev and st_ino: "./b" and "b", a
 * link to the other output, a hard link); or, not yet there, the same
 * name in the same directory ("d/../b" and "b").  A character device
 * (/dev/null, a terminal) is written through and may be shared.
 */
static bool same_file(const char *x, const char *y)
{
	struct stat sx, sy;
	const char *bx, *by;
	bool ex, ey;

	if (!x || !y)
		return false;
	ex = !stat(x, &sx);
	ey = !stat(y, &sy);
	if (ex && ey)
		return sx.st_dev == sy.st_dev && sx.st_ino == sy.st_ino &&
		       !S_ISCHR(sx.st_mode);
	if (!strcmp(x, y))
		return !ex || !S_ISCHR(sx.st_mode);
	if (ex || ey)
		return false;
	bx = dir_of(x, &sx);
	by = dir_of(y, &sy);
	return bx && by && !strcmp(bx, by) && sx.st_dev == sy.st_dev &&
	       sx.st_ino == sy.st_ino;
}

/**
 * prof_outputs_clash() - two of the outputs @out (@n of them; a NULL
 * path: not asked for) name one file, however spelt (same_file()).
 *
 * Return: 0, or -1 with one line naming both as the user wrote them.
 */
int prof_outputs_clash(const struct prof_output_name *out, size_t n, char *err,
		       size_t len)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (same_file(out[i].path, out[j].path))
				return fail(err, len,
					    "%s%s and %s%s name one file: "
					    "each output must name a file of "
					    "its own",
					    out[i].opt, out[i].given,
					    out[j].opt, out[j].given);
	return 0;
}

/* The options that set_opt() parses, and the name errors give them. */
static const struct {
	int opt;
	enum opt_kind kind;
	const char *name;
} kinds[] = {
	{ 'F', OPT_HZ, "-F" },
	{ 'd', OPT_FRAMES, "--frames" },
	{ 'b', OPT_BUFFER, "--buffer-words" },
	{ 't', OPT_TIMER, "--timer" },
	{ 'u', OPT_UNWIND, "--unwind" },
	{ 'r', OPT_HEAP_RATE, "--heap-rate" },
	{ 'm', OPT_MODE, "--mode" },
};

/* --http ADDR: the address, checked now (one line), not when serving. */
static int http_check(const char *spec, char *err, size_t len)
{
	struct prof_http_addr a;
	char msg[200];

	if (!prof_http_addr_parse(spec, "--http ", &a, msg, sizeof(msg)))
		return 0;
	return fail(err, len, "record: %s", msg);
}

/**
 * prof_record_parse() - parse and check `record`'s arguments (argv[0] is
 * "record"): options.h.
 *
 * Return: 0; 1 for --help; -1 with a one-line message in @err.
 */
int prof_record_parse(int argc, char **argv, struct prof_record_args *a,
		      char *err, size_t len)
{
	static const struct option longopts[] = {
		{ "freq", required_argument, NULL, 'F' },
		{ "output", required_argument, NULL, 'o' },
		{ "folded", required_argument, NULL, 'f' },
		{ "timer", required_argument, NULL, 't' },
		{ "mode", required_argument, NULL, 'm' },
		{ "unwind", required_argument, NULL, 'u' },
		{ "frames", required_argument, NULL, 'd' },
		{ "buffer-words", required_argument, NULL, 'b' },
		{ "heap", required_argument, NULL, 'H' },
		{ "heap-rate", required_argument, NULL, 'r' },
		{ "trace", required_argument, NULL, 'T' },
		{ "mutex", required_argument, NULL, 'X' },
		{ "block", required_argument, NULL, 'B' },
		{ "mutex-rate", required_argument, NULL, 'R' },
		{ "http", required_argument, NULL, 'W' },
		{ "children", no_argument, NULL, 'c' },
		{ "no-children", no_argument, NULL, 'C' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *folded = NULL, *heap = NULL, *trace = NULL;
	const char *mutex = NULL, *block = NULL;
	uint64_t n;
	int c;

	memset(a, 0, sizeof(*a));
	a->children = true; /* as perf record: a command's children too */
	optind = 0; /* a fresh scan (GNU: also resets its state) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:F:o:f:qh", longopts, NULL)) !=
	       -1) {
		size_t i;

		for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (kinds[i].opt == c)
				break;
		if (i < sizeof(kinds) / sizeof(kinds[0])) {
			if (set_opt(&a->opts, kinds[i].kind, kinds[i].name, " ",
				    optarg, err, len))
				return -1;
			continue;
		}
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'f':
			folded = optarg;
			break;
		case 'H':
			heap = optarg;
			break;
		case 'T':
			trace = optarg;
			break;
		case 'X':
			mutex = optarg;
			break;
		case 'B':
			block = optarg;
			break;
		case 'R':
			if (!number(optarg, 1, UINT32_MAX, &n))
				return fail(err, len,
					    "--mutex-rate %s: want one lock "
					    "wait in N recorded, N from 1 to "
					    "%u",
					    optarg, UINT32_MAX);
			a->mutex_rate = n;
			break;
		case 'W':
			if (http_check(optarg, err, len))
				return -1;
			a->http = optarg;
			break;
		case 'c':
		case 'C':
			a->children = c == 'c'; /* the last one given wins */
			break;
		case 'q':
			a->quiet = true;
			break;
		case 'h':
			return 1;
		case ':':
			return fail(err, len, "record: %s needs an argument",
				    argv[optind - 1]);
		default:
			if (optopt)
				return fail(err, len,
					    "record: unknown option -%c (see "
					    "--help)",
					    optopt);
			return fail(err, len,
				    "record: unknown option %s (see --help)",
				    argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return fail(err, len,
			    "record: no command to run (record [options] -- "
			    "cmd [args...])");
	a->cmd_index = optind;
	if (check_together(&a->opts, "--buffer-words", err, len))
		return -1;
	if (!out && !heap && !mutex && !block)
		out = PROFRING_PROF_DEFAULT_OUTPUT;
	if (a->mutex_rate && !mutex && !block && !a->http)
		return fail(err, len,
			    "record: --mutex-rate samples lock waits for "
			    "--mutex FILE, --block FILE or --http ADDR: add "
			    "one");
	if (a->opts.heap_rate && !heap && !a->http)
		return fail(err, len,
			    "record: --heap-rate samples the heap for --heap "
			    "FILE or --http ADDR: add one");
	if (folded && !out) {
		fail(err, len, "-f: folded stacks are a CPU profile's; add -o");
		return -1;
	}
	if (out && prof_output_check(out, "-o", &a->output, err, len))
		return -1;
	if (folded && prof_output_check(folded, "-f", &a->folded, err, len))
		goto fail;
	if (heap && prof_output_check(heap, "--heap", &a->heap, err, len))
		goto fail;
	if (trace && prof_output_check(trace, "--trace", &a->trace, err, len))
		goto fail;
	if (mutex && prof_output_check(mutex, "--mutex", &a->mutex, err, len))
		goto fail;
	if (block && prof_output_check(block, "--block", &a->block, err, len))
		goto fail;
	{
		const struct prof_output_name names[] = {
			{ "-o ", out, a->output },
			{ "-f ", folded, a->folded },
			{ "--heap ", heap, a->heap },
			{ "--trace ", trace, a->trace },
			{ "--mutex ", mutex, a->mutex },
			{ "--block ", block, a->block },
		};

		if (prof_outputs_clash(names, sizeof(names) / sizeof(names[0]),
				       err, len))
			goto fail;
	}
	a->opts.output = a->output;
	a->opts.folded = a->folded;
	a->opts.heap_output = a->heap;
	return 0;
fail:
	prof_record_args_free(a);
	return -1;
}

static int pattern_check(const char *pattern, const char *what, char *err,
			 size_t len)
{
	bool varies = false;

	for (const char *p = pattern; *p; p++) {
		if (*p != '%')
			continue;
		p++;
		if (*p == 't' || *p == 'n')
			varies = true;
		else if (*p != 'p' && *p != '%') {
			snprintf(err, len,
				 "%s=%.200s: %%%c: a pattern knows %%p, %%t, "
				 "%%n and %%%%",
				 what, pattern, *p ? *p : ' ');
			return -1;
		}
	}
	if (!varies) {
		snprintf(err, len,
			 "%s=%.200s: with PROFRING_PROF_PERIOD the name needs "
			 "%%t or %%n, or every window writes the same file",
			 what, pattern);
		return -1;
	}
	return 0;
}

/*
 * PROFRING_PROF_HTTP, unless a parent's: the library leaves it in the
 * environment of a program that serves as "SPEC@PID", so that the same
 * process serves again after an exec and its children do not.  NULL when
 * unset, empty or a parent's.
 */
static const char *http_of_this_process(const char *v)
{
	static char spec[128];
	const char *at;
	char *end;
	long pid;

	if (!v || !*v)
		return NULL;
	at = strrchr(v, '@');
	if (!at)
		return v;
	pid = strtol(at + 1, &end, 10);
	if (*end || pid != (long)getpid() || (size_t)(at - v) >= sizeof(spec))
		return NULL;
	memcpy(spec, v, (size_t)(at - v));
	spec[at - v] = 0;
	return spec;
}

/**
 * prof_periodic_names_check() - with @o->period, @o->output and
 * @o->heap_output (at least one) are patterns that vary (periodic.h).
 *
 * Return: 0, or -1 with a one-line message.
 */
int prof_periodic_names_check(const struct profring_prof_opts *o, char *err,
			      size_t len)
{
	if (!o->output && !o->heap_output)
		return fail(err, len,
			    "%s needs %s or %s: the files to write each period",
			    PROFRING_PROF_ENV_PERIOD, PROFRING_PROF_ENV_OUTPUT,
			    PROFRING_PROF_ENV_HEAP);
	if (o->output &&
	    pattern_check(o->output, PROFRING_PROF_ENV_OUTPUT, err, len))
		return -1;
	if (o->heap_output &&
	    pattern_check(o->heap_output, PROFRING_PROF_ENV_HEAP, err, len))
		return -1;
	return 0;
}

/**
 * prof_opts_from_env() - the in-process mode's variables, strictly.
 * @o: filled in; output/folded point into the environment.
 *
 * Return: 0, or -1 with a one-line message naming the variable.
 */
int prof_opts_from_env(struct profring_prof_opts *o, char *err, size_t len)
{
	static const struct {
		const char *env;
		enum opt_kind kind;
	} vars[] = {
		{ PROFRING_PROF_ENV_HZ, OPT_HZ },
		{ PROFRING_PROF_ENV_FRAMES, OPT_FRAMES },
		{ PROFRING_PROF_ENV_BUFFER_WORDS, OPT_BUFFER },
		{ PROFRING_PROF_ENV_TIMER, OPT_TIMER },
		{ PROFRING_PROF_ENV_UNWIND, OPT_UNWIND },
		{ PROFRING_PROF_ENV_HEAP_RATE, OPT_HEAP_RATE },
		{ PROFRING_PROF_ENV_PERIOD, OPT_PERIOD },
		{ PROFRING_PROF_ENV_KEEP, OPT_KEEP },
		{ PROFRING_PROF_ENV_MODE, OPT_MODE },
	};
	char *abs;

	memset(o, 0, sizeof(*o));
	o->output = getenv(PROFRING_PROF_ENV_OUTPUT);
	if (o->output && !*o->output)
		o->output = NULL;
	o->folded = getenv(PROFRING_PROF_ENV_FOLDED);
	if (o->folded && !*o->folded)
		o->folded = NULL;
	o->heap_output = getenv(PROFRING_PROF_ENV_HEAP);
	if (o->heap_output && !*o->heap_output)
		return fail(err, len, "%s=: want a file name",
			    PROFRING_PROF_ENV_HEAP);
	if (o->heap_output) {
		if (prof_output_check(o->heap_output, PROFRING_PROF_ENV_HEAP,
				      &abs, err, len))
			return -1;
		free(abs);
	}
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i].env);

		if (v &&
		    set_opt(o, vars[i].kind, vars[i].env, "=", v, err, len))
			return -1;
	}
	if (o->period && prof_periodic_names_check(o, err, len))
		return -1;
	o->http = http_of_this_process(getenv(PROFRING_PROF_ENV_HTTP));
	if (o->http) {
		struct prof_http_addr a;

		if (prof_http_addr_parse(o->http, PROFRING_PROF_ENV_HTTP "=",
					 &a, err, len))
			return -1;
	}
	return check_together(o, PROFRING_PROF_ENV_BUFFER_WORDS, err, len);
}
