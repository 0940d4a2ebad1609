// SPDX-License-Identifier: MIT
/*
 * profring-prof - run a program under the profring sampling profiler, and
 * read the profiles it writes.
 *
 *	profring-prof record [-F hz] [-o out.pb.gz] [-f out.folded]
 *		[--timer thread|process] [--unwind fp|libunwind]
 *		[--frames N] [--buffer-words N] -- cmd [args...]
 *	profring-prof report [-n top] [--threads] [file.pb.gz]
 *
 * record puts libprofring-prof.so in LD_PRELOAD, passes the options in
 * the PROFRING_PROF* variables prof.h lists (PROFRING_PROF_ENV_*) and
 * execs the command; the library profiles it from before main() to exit.
 * The library is looked for in $PROFRING_PROF_LIB, then beside this
 * program, then one directory up, then in ../lib, then on the loader's
 * path.
 */
#include <profring/prof.h>

#include "pprof/report.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIB_NAME "libprofring-prof.so"

/* The usage: on stdout and 0 when asked for (@asked), else on stderr and 2. */
static int usage(bool asked)
{
	fprintf(asked ? stdout : stderr,
		"usage: profring-prof record [-F hz] [-o out.pb.gz] [-f out.folded]\n"
		"                            [--timer thread|process] [--unwind fp|libunwind]\n"
		"                            [--frames N] [--buffer-words N] -- cmd [args...]\n"
		"       profring-prof report [-n top] [--threads] [file.pb.gz]\n");
	return asked ? 0 : 2;
}

static int file_exists(const char *path)
{
	return access(path, R_OK) == 0;
}

/* Where libprofring-prof.so is: @out gets a path (or the bare name). */
static void find_library(char *out, size_t len)
{
	static const char *const rel[] = { "/" LIB_NAME, "/../" LIB_NAME,
					   "/../lib/" LIB_NAME };
	const char *env = getenv(PROFRING_PROF_ENV_LIB);
	char self[PATH_MAX];
	ssize_t n;
	size_t i;
	char *slash;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash)
			*slash = 0;
		for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(out, len, "%s%s", self, rel[i]);
			if (file_exists(out))
				return;
		}
	}
	snprintf(out, len, "%s", LIB_NAME);
}

static int set_preload(void)
{
	char lib[PATH_MAX], *val;
	const char *old = getenv("LD_PRELOAD");
	size_t len;
	int rc;

	find_library(lib, sizeof(lib));
	len = strlen(lib) + (old ? strlen(old) + 1 : 0) + 1;
	val = malloc(len);
	if (!val)
		return -1;
	/* After the ones already there (a sanitizer runtime must be first). */
	snprintf(val, len, "%s%s%s", old ? old : "", old && *old ? ":" : "",
		 lib);
	rc = setenv("LD_PRELOAD", val, 1);
	free(val);
	return rc;
}

/* The variable through which record passes option @c on, or NULL. */
static const char *record_env(int c)
{
	static const struct {
		int opt;
		const char *env;
	} vars[] = {
		{ 'F', PROFRING_PROF_ENV_HZ },
		{ 'f', PROFRING_PROF_ENV_FOLDED },
		{ 't', PROFRING_PROF_ENV_TIMER },
		{ 'u', PROFRING_PROF_ENV_UNWIND },
		{ 'd', PROFRING_PROF_ENV_FRAMES },
		{ 'b', PROFRING_PROF_ENV_BUFFER_WORDS },
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (vars[i].opt == c)
			return vars[i].env;
	return NULL;
}

static int record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "freq", required_argument, NULL, 'F' },
		{ "output", required_argument, NULL, 'o' },
		{ "folded", required_argument, NULL, 'f' },
		{ "timer", required_argument, NULL, 't' },
		{ "unwind", required_argument, NULL, 'u' },
		{ "frames", required_argument, NULL, 'd' },
		{ "buffer-words", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = PROFRING_PROF_DEFAULT_OUTPUT;
	int c;

	while ((c = getopt_long(argc, argv, "+F:o:f:h", longopts, NULL)) !=
	       -1) {
		const char *env = record_env(c);

		if (env) {
			setenv(env, optarg, 1);
			continue;
		}
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			return usage(true);
		default:
			return usage(false);
		}
	}
	if (optind >= argc)
		return usage(false);
	if (setenv(PROFRING_PROF_ENV_OUTPUT, out, 1) || set_preload()) {
		perror("profring-prof: setenv");
		return 1;
	}
	execvp(argv[optind], argv + optind);
	fprintf(stderr, "profring-prof: cannot run %s: %s\n", argv[optind],
		strerror(errno));
	return 127;
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
static int report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 'n' },
		{ "threads", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct prof_report_opts o = { .top = 20, .sample_index = -1 };
	const char *path = PROFRING_PROF_DEFAULT_OUTPUT;
	char msg[512];
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:Th", longopts, NULL)) != -1) {
		switch (c) {
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
		case 'h':
			return usage(true);
		case ':':
			fprintf(stderr,
				"profring-prof: report: %s needs an argument\n",
				argv[optind - 1]);
			return 2;
		default:
			if (optopt == 'T' || optopt == 'h')
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
	return usage(!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
}
