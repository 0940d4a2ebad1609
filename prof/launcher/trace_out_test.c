// SPDX-License-Identifier: MIT
/*
 * trace_out_test.c - unit tests for prof_trace_open() (trace_out.c): the
 * --trace file is opened as the other outputs are (pprof/outfile.h): a
 * new file is written, and, as root, links another user (nobody) planted
 * in a sticky world-writable directory after the options were checked
 * are not followed (issue 35, item 3).
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testing/ktest.h"
#include "testing/tmpfiles.h"
#include "prof/launcher/trace_out.h"

/* A new file: the stream is written there, and closing says so. */
static void trace_out_new(void)
{
	const char *path = tmp_path("new.trace");
	struct prof_trace_counts c;
	struct prof_trace *t;
	struct stat st;

	KT_REQUIRE(prof_trace_open(&t, path, 0, false) == 0);
	KT_CHECK_EQ(prof_trace_close(t, &c), 0);
	KT_CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode));
	KT_CHECK_EQ((uint64_t)st.st_size, c.bytes);
	KT_CHECK(c.bytes > 0);
	unlink(path);
}

/* What prof_trace_open() says of @path (a trace opened is closed). */
static int trace_open_err(const char *path)
{
	struct prof_trace_counts c;
	struct prof_trace *t;
	int err = prof_trace_open(&t, path, 0, false);

	if (!err)
		prof_trace_close(t, &c);
	return err;
}

/*
 * nobody plants STICKY/out.trace -> VICTIM/passwd and STICKY/x -> VICTIM,
 * as if after root's options were checked: prof_trace_open() refuses
 * both (-EACCES, sysctl fs.protected_symlinks on or off); passwd keeps
 * its bytes, VICTIM/new.trace is not created.
 */
static void trace_out_other_users_link(void)
{
	char sticky[512], victim[512], passwd[600], trace[600], x[600];
	char via[700], *got;
	size_t len;

	if (geteuid() != 0)
		KT_SKIP("needs root, to be root and nobody");
	snprintf(sticky, sizeof(sticky), "%s", tmp_path("sticky"));
	snprintf(victim, sizeof(victim), "%s", tmp_path("victim"));
	snprintf(passwd, sizeof(passwd), "%s/passwd", victim);
	snprintf(trace, sizeof(trace), "%s/out.trace", sticky);
	snprintf(x, sizeof(x), "%s/x", sticky);
	snprintf(via, sizeof(via), "%s/new.trace", x);
	KT_REQUIRE(chmod(tmpfiles_dir(), 0755) == 0);
	KT_REQUIRE(mkdir(sticky, 0755) == 0 && chmod(sticky, 01777) == 0);
	KT_REQUIRE(mkdir(victim, 0755) == 0);
	KT_REQUIRE(write_bytes(passwd, "secret\n", 7) == 0);
	if (nobody_symlink(passwd, trace)) {
		rmdir(sticky);
		unlink(passwd);
		rmdir(victim);
		KT_SKIP("nobody cannot reach the test directory (TMPDIR?)");
	}
	KT_REQUIRE(nobody_symlink(victim, x) == 0);

	KT_CHECK_EQ(trace_open_err(trace), -EACCES);
	got = read_text(passwd, &len);
	KT_CHECK(got && !strcmp(got, "secret\n"));
	free(got);
	KT_CHECK_EQ(trace_open_err(via), -EACCES);
	KT_CHECK(access(tmp_path("victim/new.trace"), F_OK) != 0);

	unlink(tmp_path("victim/new.trace"));
	unlink(x);
	unlink(trace);
	rmdir(sticky);
	unlink(passwd);
	rmdir(victim);
}

int main(void)
{
	if (tmpfiles_init("trace_out_test"))
		return EXIT_FAILURE;
	KT_RUN(trace_out_new);
	KT_RUN(trace_out_other_users_link);
	tmpfiles_done();
	return ktest_exit();
}
