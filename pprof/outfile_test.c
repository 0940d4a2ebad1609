// SPDX-License-Identifier: MIT
/*
 * outfile_test.c - unit tests for prof_outfile_write() (outfile.c): new
 * and existing regular files, symlinks (relative, dangling, looping), a
 * directory, a FIFO, /proc/self/fd/N and a character device, each written
 * by the rules of outfile.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "testing/ktest.h"
#include "testing/tmpfiles.h"
#include "pprof/outfile.h"

/* Write @text through prof_outfile_write() and read @check back. */
static bool outfile_holds(const char *path, const char *check, const char *text)
{
	size_t len;
	char *got;
	bool ok;

	if (prof_outfile_write(path, text, strlen(text)))
		return false;
	got = read_text(check, &len);
	ok = got && len == strlen(text) && !memcmp(got, text, len);
	free(got);
	return ok;
}

/*
 * Regular files and new paths are replaced atomically; symlinks are
 * followed; devices, FIFOs and /proc/self/fd are written through and stay
 * what they were (`-o /dev/null` as root once replaced /dev/null).
 */
static void outfile_targets(void)
{
	const char *reg = tmp_path("out.reg"), *lnk = tmp_path("out.lnk");
	const char *fifo = tmp_path("out.fifo");
	char buf[64], self[64];
	struct stat st, st2;
	ssize_t n;
	int fd;

	KT_CHECK(outfile_holds(reg, reg, "new\n"));
	KT_REQUIRE(chmod(reg, 0604) == 0 && stat(reg, &st) == 0);
	KT_CHECK(outfile_holds(reg, reg, "replaced\n"));
	KT_REQUIRE(stat(reg, &st2) == 0);
	KT_CHECK(st2.st_ino != st.st_ino); /* renamed into place */
	KT_CHECK_EQ(st2.st_mode & 07777, 0604);

	/* A relative symlink: its target changes, the link stays. */
	KT_REQUIRE(symlink("out.reg", lnk) == 0);
	KT_CHECK(outfile_holds(lnk, reg, "through a link\n"));
	KT_CHECK(lstat(lnk, &st) == 0 && S_ISLNK(st.st_mode));
	unlink(reg); /* now dangling: the target is created */
	KT_CHECK(outfile_holds(lnk, reg, "dangling\n"));
	KT_CHECK(lstat(lnk, &st) == 0 && S_ISLNK(st.st_mode));
	unlink(lnk);
	KT_REQUIRE(symlink(lnk, lnk) == 0); /* a loop */
	KT_CHECK_EQ(prof_outfile_write(lnk, "x", 1), -ELOOP);
	unlink(lnk);
	KT_CHECK_EQ(prof_outfile_write(tmpfiles_dir(), "x", 1), -EISDIR);

	/* A FIFO with a reader: the bytes arrive, the FIFO stays. */
	KT_REQUIRE(mkfifo(fifo, 0600) == 0);
	fd = open(fifo, O_RDONLY | O_NONBLOCK);
	KT_REQUIRE(fd >= 0);
	KT_CHECK_EQ(prof_outfile_write(fifo, "fifo\n", 5), 0);
	n = read(fd, buf, sizeof(buf));
	KT_CHECK(n == 5 && !memcmp(buf, "fifo\n", 5));
	close(fd);
	KT_CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
	unlink(fifo);

	/* /proc/self/fd/N on a regular file the program holds open (what
	 * /dev/stdout is under `> file`): appended, same file. */
	fd = open(reg, O_RDWR | O_CREAT | O_TRUNC, 0600);
	KT_REQUIRE(fd >= 0);
	KT_CHECK_EQ(write(fd, "program\n", 8), 8);
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	KT_CHECK_EQ(prof_outfile_write(self, "profile\n", 8), 0);
	KT_CHECK(fstat(fd, &st) == 0 && stat(reg, &st2) == 0 &&
		 st.st_ino == st2.st_ino);
	close(fd);
	KT_CHECK(outfile_holds(reg, reg, "replaced\n")); /* then atomically */
	unlink(reg);
}

/* A private character device (the kernel's null, 1:3) stays one. */
static void outfile_chardev(void)
{
	const char *dev = tmp_path("out.null");
	struct stat st;

	if (mknod(dev, S_IFCHR | 0600, makedev(1, 3)) != 0)
		KT_SKIP("mknod needs root");
	KT_CHECK_EQ(prof_outfile_write(dev, "gone\n", 5), 0);
	KT_CHECK(lstat(dev, &st) == 0 && S_ISCHR(st.st_mode) &&
		 st.st_rdev == makedev(1, 3));
	unlink(dev);
}

int main(void)
{
	if (tmpfiles_init("outfile_test"))
		return EXIT_FAILURE;
	KT_RUN(outfile_targets);
	KT_RUN(outfile_chardev);
	tmpfiles_done();
	return ktest_exit();
}
