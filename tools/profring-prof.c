// SPDX-License-Identifier: MIT
/*
 * profring-prof - run a program under the profring sampling profiler, and
 * read the profiles it writes.
 *
 *	profring-prof record [-F hz] [-o out.pb.gz] [-f out.folded]
 *		[--heap heap.pb.gz] [--heap-rate BYTES] [--trace out.trace]
 *		[--http ADDR:PORT] [--mode cpu|wall]
 *		[--timer thread|kernel|posix|process] [--unwind fp|libunwind]
 *		[--frames N] [--buffer-words N] [--no-children] [-q]
 *		-- cmd [args...]
 *	profring-prof report [-n top] [--threads] [--lines] [-s TYPE]
 *		[file.pb.gz]
 *
 * record profiles the command's forked descendants too, as perf record
 * does (a shell's commands, a server's workers: one profile, each sample
 * labelled with its pid); --no-children profiles the one process the
 * command starts, through its execs (--children, the default, is still
 * taken; the last of the two wins).
 * --heap alone profiles memory only; -o with it profiles CPU too.
 * --trace also writes what was collected as a profring trace (CPU samples
 * and, with --heap, the sampled allocations and frees: prof/launcher/trace_out.c),
 * for profring-trace.
 * --http serves the program's /debug/pprof/ endpoints from the launcher
 * while it runs (prof/launcher/record_http.c); --heap-rate alone with it samples
 * the heap for the endpoints, no file written.
 * report --lines shows a row per source line ("name file:line", inlined
 * functions' lines too), as go tool pprof -lines does.
 * report -s picks the sample type by name (alloc_space, inuse_objects,
 * cpu, ...) or 0-based index; the default is the profile's own.
 *
 * record runs the command with libprofring-prof.so in LD_PRELOAD; the
 * library writes samples into memory shared with this process, which
 * collects them and writes the profile however the program ends
 * (prof/launcher/record.c).  The library is looked for in $PROFRING_PROF_LIB, then
 * beside this program, then one directory up, then in ../lib, then on
 * the loader's path.
 */
#include <profring/prof.h>

#include "pprof/report.h"
#include "pprof/symbolize.h"
#include "prof/launcher/record.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The usage: on stdout and 0 when asked for (@asked), else on stderr and 2. */
static int usage(bool asked)
{
	fprintf(asked ? stdout : stderr,
		"usage: profring-prof record [-F hz] [-o out.pb.gz] [-f out.folded]\n"
		"                            [--heap heap.pb.gz] [--heap-rate BYTES]\n"
		"                            [--trace out.trace] [--http ADDR:PORT]\n"
		"                            [--mutex mutex.pb.gz] [--block block.pb.gz]\n"
		"                            [--mutex-rate N]\n"
		"                            [--mode cpu|wall] [--timer thread|kernel|posix|process]\n"
		"                            [--unwind fp|libunwind] [--frames N]\n"
		"                            [--buffer-words N] [--no-children] [-q]\n"
		"                            -- cmd [args...]\n"
		"       profring-prof report [-n top] [--threads] [--lines] [-s sample-type]\n"
		"                            [file.pb.gz]\n");
	return asked ? 0 : 2;
}

/*
 * record: options checked before anything runs (one line and status 2 for
 * a bad one); then prof_record_run() (prof/launcher/record.c) runs the program and
 * collects its samples here, in the launcher, which says on stderr when
 * it names code from the files' own symbol tables, without libdw.
 */
static int record(int argc, char **argv)
{
	struct prof_record_args a;
	char err[512];
	int rc = prof_record_parse(argc, argv, &a, err, sizeof(err));

	if (rc == 1)
		return usage(true);
	if (!rc && prof_record_lib_check(err, sizeof(err))) {
		prof_record_args_free(&a);
		rc = -1;
	}
	if (rc) {
		fprintf(stderr, "profring-prof: %s\n", err);
		return 2;
	}
	prof_symbolizer_warn_to(stderr);
	rc = prof_record_run(&a, argv + a.cmd_index);
	prof_record_args_free(&a);
	return rc;
}

/* -n's argument, a number of rows from 1 to INT_MAX; 0 if it is not one. */
static size_t parse_top(const char *arg)
{
	unsigned long long v;
	char *end;

	if (*arg < '0' || *arg > '9')
		return 0;
	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || *end || !v || v > INT_MAX)
		return 0;
	return (size_t)v;
}

/*
 * report: one line on stderr for each way it can fail, exit status 2 for
 * a bad command line, 1 for a profile that cannot be read or a report
 * that cannot be written.
 */
/*
 * The index of the sample type @want (a name such as inuse_space, or a
 * 0-based index) in the profile at @path; with a message in @msg, -1
 * for a profile that cannot be read, -2 for a type it does not have (a
 * bad command line: status 2).
 */
static int sample_index_of(const char *path, const char *want, char *msg,
			   size_t len)
{
	struct prof_summary *s;
	size_t n, i;

	if (prof_summary_load(path, -1, &s, msg, len))
		return -1;
	n = s->nsample_types;
	prof_summary_free(s);
	for (i = 0; i < n; i++) {
		bool match;

		if (prof_summary_load(path, (int)i, &s, msg, len))
			return -1;
		match = !strcmp(s->type, want) ||
			(!strcmp(want, "0") && i == 0) ||
			(i && parse_top(want) == i);
		prof_summary_free(s);
		if (match)
			return (int)i;
	}
	snprintf(msg, len, "report: -s %s: no such sample type in %s", want,
		 path);
	return -2;
}

static int report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 'n' },
		{ "threads", no_argument, NULL, 'T' },
		{ "lines", no_argument, NULL, 'L' },
		{ "sample-index", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct prof_report_opts o = { .top = 20, .sample_index = -1 };
	const char *path = PROFRING_PROF_DEFAULT_OUTPUT, *stype = NULL;
	char msg[512];
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:s:TLh", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 's':
			stype = optarg;
			break;
		case 'n':
			o.top = parse_top(optarg);
			if (!o.top) {
				fprintf(stderr,
					"profring-prof: report: -n %s: want a "
					"number of rows from 1 to %d\n",
					optarg, INT_MAX);
				return 2;
			}
			break;
		case 'T':
			o.by_thread = 1;
			break;
		case 'L':
			o.by_line = 1;
			break;
		case 'h':
			return usage(true);
		case ':':
			fprintf(stderr,
				"profring-prof: report: %s needs an argument\n",
				argv[optind - 1]);
			return 2;
		default:
			if (optopt == 'T' || optopt == 'L' || optopt == 'h')
				fprintf(stderr,
					"profring-prof: report: %s takes no "
					"argument\n",
					argv[optind - 1]);
			else if (optopt)
				fprintf(stderr,
					"profring-prof: report: unknown option "
					"-%c (see --help)\n",
					optopt);
			else
				fprintf(stderr,
					"profring-prof: report: unknown option "
					"%s (see --help)\n",
					argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc)
		path = argv[optind++];
	if (optind < argc) {
		fprintf(stderr,
			"profring-prof: report: one profile at most; extra "
			"argument %s\n",
			argv[optind]);
		return 2;
	}
	if (stype) {
		o.sample_index = sample_index_of(path, stype, msg, sizeof(msg));
		if (o.sample_index < 0) {
			fprintf(stderr, "profring-prof: %s\n", msg);
			return o.sample_index == -2 ? 2 : 1;
		}
	}
	if (prof_report(path, stdout, &o, msg, sizeof(msg))) {
		fprintf(stderr, "profring-prof: %s\n", msg);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(false);
	if (!strcmp(argv[1], "record"))
		return record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return usage(true);
	fprintf(stderr, "profring-prof: unknown command '%s'\n", argv[1]);
	return usage(false);
}
