// SPDX-License-Identifier: MIT
/*
 * outfile_test.c - unit tests for prof_outfile_write() (outfile.c): new
 * and existing regular files, symlinks (relative, dangling, looping), a
 * directory, a FIFO, /proc/self/fd/N and a character device, each written
 * by the rules of outfile.h; and, as root, links another user (nobody)
 * planted in a sticky world-writable directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
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

/* @path holds @text and has inode @ino. */
static bool holds(const char *path, const char *text, ino_t ino)
{
	struct stat st;
	size_t len;
	char *got = read_text(path, &len);
	bool ok = got && !strcmp(got, text) && !stat(path, &st) &&
		  st.st_ino == ino;

	free(got);
	return ok;
}

/*
 * Regular files and new paths are replaced atomically (not keeping set-id
 * bits); a link of our own is followed and its target written in place; a
 * dangling link creates nothing; devices, FIFOs and /proc/self/fd are
 * written through and stay what they were (`-o /dev/null` as root once
 * replaced /dev/null).
 */
static void outfile_targets(void)
{
	const char *reg = tmp_path("out.reg"), *lnk = tmp_path("out.lnk");
	const char *fifo = tmp_path("out.fifo");
	char buf[64], self[64], why[256], *got;
	struct stat st, st2;
	size_t len;
	ssize_t n;
	int fd;

	KT_CHECK(outfile_holds(reg, reg, "new\n"));
	KT_REQUIRE(chmod(reg, 04604) == 0 && stat(reg, &st) == 0);
	KT_CHECK(outfile_holds(reg, reg, "replaced\n"));
	KT_REQUIRE(stat(reg, &st2) == 0);
	KT_CHECK(st2.st_ino != st.st_ino); /* renamed into place */
	KT_CHECK_EQ(st2.st_mode & 07777, 0604); /* not set-uid */

	/* A relative symlink: its target written in place, the link stays. */
	KT_REQUIRE(symlink("out.reg", lnk) == 0);
	KT_CHECK(outfile_holds(lnk, reg, "through a link\n"));
	KT_CHECK(lstat(lnk, &st) == 0 && S_ISLNK(st.st_mode));
	KT_CHECK(stat(reg, &st) == 0 && st.st_ino == st2.st_ino);
	KT_CHECK(outfile_holds(lnk, reg, "short\n")); /* truncated */
	unlink(reg); /* now dangling: nothing is created */
	KT_CHECK_EQ(prof_outfile_write(lnk, "dangling\n", 9), -ENOENT);
	KT_CHECK_EQ(prof_outfile_check(lnk, why, sizeof(why)), -ENOENT);
	KT_CHECK(strstr(why, "dangling") != NULL);
	KT_CHECK(access(reg, F_OK) != 0 && errno == ENOENT);
	KT_CHECK(lstat(lnk, &st) == 0 && S_ISLNK(st.st_mode));
	unlink(lnk);
	KT_REQUIRE(symlink(lnk, lnk) == 0); /* a loop */
	KT_CHECK_EQ(prof_outfile_write(lnk, "x", 1), -ELOOP);
	unlink(lnk);
	KT_CHECK_EQ(prof_outfile_write(tmpfiles_dir(), "x", 1), -EISDIR);

	/* A FIFO with a reader: the bytes arrive, the FIFO stays.  Checking
	 * it without a reader does not wait for one. */
	KT_REQUIRE(mkfifo(fifo, 0600) == 0);
	KT_CHECK_EQ(prof_outfile_check(fifo, why, sizeof(why)), 0);
	fd = open(fifo, O_RDONLY | O_NONBLOCK);
	KT_REQUIRE(fd >= 0);
	KT_CHECK_EQ(prof_outfile_write(fifo, "fifo\n", 5), 0);
	n = read(fd, buf, sizeof(buf));
	KT_CHECK(n == 5 && !memcmp(buf, "fifo\n", 5));
	close(fd);
	KT_CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
	unlink(fifo);

	/* /proc/self/fd/N on a regular file the program holds open (what
	 * /dev/stdout is under `> file`), named or behind a link of our own:
	 * appended, same file. */
	fd = open(reg, O_RDWR | O_CREAT | O_TRUNC, 0600);
	KT_REQUIRE(fd >= 0);
	KT_CHECK_EQ(write(fd, "program\n", 8), 8);
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	KT_CHECK_EQ(prof_outfile_write(self, "profile\n", 8), 0);
	KT_REQUIRE(symlink(self, lnk) == 0);
	KT_CHECK_EQ(prof_outfile_write(lnk, "linked\n", 7), 0);
	unlink(lnk);
	KT_CHECK(fstat(fd, &st) == 0 && stat(reg, &st2) == 0 &&
		 st.st_ino == st2.st_ino);
	close(fd);
	got = read_text(reg, &len);
	KT_CHECK(got && !strcmp(got, "program\nprofile\nlinked\n"));
	free(got);
	KT_CHECK(outfile_holds(reg, reg, "replaced\n")); /* then atomically */
	unlink(reg);
}

/*
 * Symlinks in the directory part: walked component by component, as the
 * kernel walks them.  Links of our own (relative, and through ".."), a
 * directory named as /proc/self/fd/N and /dev/fd/N: written there; a
 * dangling directory link, a loop and a file named as a directory:
 * refused, nothing created.
 */
static void outfile_dir_links(void)
{
	char sub[512], dlink[512], loop[512], dangling[512], path[600];
	char why[512];
	int cwd, dfd;

	snprintf(sub, sizeof(sub), "%s", tmp_path("sub"));
	snprintf(dlink, sizeof(dlink), "%s", tmp_path("dlink"));
	snprintf(loop, sizeof(loop), "%s", tmp_path("dloop"));
	snprintf(dangling, sizeof(dangling), "%s", tmp_path("ddang"));

	KT_REQUIRE(mkdir(sub, 0755) == 0 && symlink("sub", dlink) == 0);
	snprintf(path, sizeof(path), "%s/new", dlink);
	KT_CHECK(outfile_holds(path, tmp_path("sub/new"), "dir link\n"));
	KT_CHECK(outfile_holds(path, tmp_path("sub/new"), "again\n"));
	KT_CHECK(outfile_holds(tmp_path("sub/../dlink/../dlink/new"),
			       tmp_path("sub/new"), "dotdot\n"));

	/* Relative to the working directory. */
	cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	KT_REQUIRE(cwd >= 0 && chdir(tmpfiles_dir()) == 0);
	KT_CHECK(outfile_holds("dlink/rel", "sub/rel", "relative\n"));
	KT_CHECK(outfile_holds("./sub/../dlink/./rel", "sub/rel", "rel2\n"));
	KT_CHECK_EQ(prof_outfile_check("dlink/rel", why, sizeof(why)), 0);
	KT_CHECK(fchdir(cwd) == 0);
	close(cwd);

	/* A directory the program holds open, named through /proc and /dev. */
	dfd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	KT_REQUIRE(dfd >= 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d/viaproc", dfd);
	KT_CHECK(outfile_holds(path, tmp_path("sub/viaproc"), "proc\n"));
	snprintf(path, sizeof(path), "/dev/fd/%d/viadev", dfd);
	KT_CHECK(outfile_holds(path, tmp_path("sub/viadev"), "dev\n"));
	close(dfd);

	KT_REQUIRE(symlink("nowhere", dangling) == 0);
	snprintf(path, sizeof(path), "%s/x", dangling);
	KT_CHECK_EQ(prof_outfile_write(path, "x", 1), -ENOENT);
	KT_CHECK(access(tmp_path("nowhere"), F_OK) != 0);
	KT_REQUIRE(symlink("dloop", loop) == 0);
	snprintf(path, sizeof(path), "%s/x", loop);
	KT_CHECK_EQ(prof_outfile_write(path, "x", 1), -ELOOP);
	KT_CHECK_EQ(prof_outfile_check(path, why, sizeof(why)), -ELOOP);
	KT_CHECK_EQ(prof_outfile_write(tmp_path("sub/new/x"), "x", 1),
		    -ENOTDIR);

	unlink(tmp_path("sub/new"));
	unlink(tmp_path("sub/rel"));
	unlink(tmp_path("sub/viaproc"));
	unlink(tmp_path("sub/viadev"));
	unlink(loop);
	unlink(dangling);
	unlink(dlink);
	rmdir(sub);
}

/*
 * prof_outfile_open(), for streams (--trace): a new name created, a
 * regular file truncated in place, a link of our own followed, a dangling
 * one refused.
 */
static void outfile_open_stream(void)
{
	const char *reg = tmp_path("stream"), *lnk = tmp_path("stream.lnk");
	struct stat st, st2;
	int fd;

	fd = prof_outfile_open(reg);
	KT_REQUIRE(fd >= 0);
	KT_CHECK_EQ(write(fd, "first\n", 6), 6);
	close(fd);
	KT_REQUIRE(stat(reg, &st) == 0 && symlink("stream", lnk) == 0);
	fd = prof_outfile_open(lnk);
	KT_REQUIRE(fd >= 0);
	KT_CHECK_EQ(write(fd, "2\n", 2), 2);
	close(fd);
	KT_CHECK(holds(reg, "2\n", st.st_ino));
	fd = prof_outfile_open(reg);
	KT_REQUIRE(fd >= 0);
	close(fd);
	KT_CHECK(stat(reg, &st2) == 0 && st2.st_size == 0 &&
		 st2.st_ino == st.st_ino);
	unlink(reg);
	KT_CHECK_EQ(prof_outfile_open(lnk), -ENOENT);
	KT_CHECK(access(reg, F_OK) != 0);
	unlink(lnk);
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
	/* Nothing is created in /dev. */
	KT_CHECK_EQ(prof_outfile_write("/dev/profring-outfile-test", "x", 1),
		    -ENOENT);
	KT_CHECK(access("/dev/profring-outfile-test", F_OK) != 0);
}

/*
 * Issue 35: root writes -o STICKY/cpu.pb.gz and --heap STICKY/heap.pb.gz
 * where nobody planted cpu.pb.gz -> VICTIM/passwd and heap.pb.gz ->
 * VICTIM/cron-evil.  Refused (-EACCES, with fs.protected_symlinks off as
 * on): passwd keeps its bytes and inode, cron-evil is not created.  A
 * link of root's own there, one of the directory owner's (a sticky
 * directory of nobody's), and a chain through nobody's link are checked
 * as the kernel would check them.
 */
static void outfile_other_users_link(void)
{
	const char *sticky = tmp_path("sticky"), *victim = tmp_path("victim");
	char passwd[512], evil[512], cpu[512], heap[512], own[512], why[512];
	char chain[512], mine[512], theirs[512], ok[512], oklink[600];
	struct stat st;
	uid_t uid;
	gid_t gid;
	int err;

	if (geteuid() != 0)
		KT_SKIP("needs root, to be root and nobody");
	snprintf(passwd, sizeof(passwd), "%s/passwd", victim);
	snprintf(evil, sizeof(evil), "%s/cron-evil", victim);
	snprintf(own, sizeof(own), "%s/own", victim);
	snprintf(ok, sizeof(ok), "%s/ok", victim);
	snprintf(chain, sizeof(chain), "%s/chain", victim);
	snprintf(cpu, sizeof(cpu), "%s/cpu.pb.gz", sticky);
	snprintf(heap, sizeof(heap), "%s/heap.pb.gz", sticky);
	snprintf(mine, sizeof(mine), "%s/mine", sticky);
	snprintf(theirs, sizeof(theirs), "%s/theirs", tmpfiles_dir());
	snprintf(oklink, sizeof(oklink), "%s/ok", theirs);
	KT_REQUIRE(chmod(tmpfiles_dir(), 0755) == 0);
	KT_REQUIRE(mkdir(sticky, 0755) == 0 && chmod(sticky, 01777) == 0);
	KT_REQUIRE(mkdir(victim, 0755) == 0);
	KT_REQUIRE(write_bytes(passwd, "secret\n", 7) == 0);
	KT_REQUIRE(write_bytes(own, "own\n", 4) == 0);
	KT_REQUIRE(write_bytes(ok, "ok\n", 3) == 0);
	KT_REQUIRE(stat(passwd, &st) == 0);
	err = nobody_symlink(passwd, cpu);
	if (err) {
		rmdir(sticky);
		unlink(passwd);
		unlink(own);
		unlink(ok);
		rmdir(victim);
		KT_SKIP("nobody cannot reach the test directory (TMPDIR?)");
	}
	KT_REQUIRE(nobody_symlink(evil, heap) == 0);

	KT_CHECK_EQ(prof_outfile_write(cpu, "gzip\n", 5), -EACCES);
	KT_CHECK(holds(passwd, "secret\n", st.st_ino));
	KT_CHECK_EQ(prof_outfile_write(heap, "gzip\n", 5), -EACCES);
	KT_CHECK(access(evil, F_OK) != 0 && errno == ENOENT);
	KT_CHECK_EQ(prof_outfile_check(cpu, why, sizeof(why)), -EACCES);
	KT_CHECK(strstr(why, "sticky") && strstr(why, "fs.protected_symlinks"));
	KT_CHECK(lstat(cpu, &st) == 0 && S_ISLNK(st.st_mode));

	/* Root's own link in a link of root's: followed past it, refused. */
	KT_REQUIRE(symlink(cpu, chain) == 0);
	KT_CHECK_EQ(prof_outfile_write(chain, "gzip\n", 5), -EACCES);
	KT_CHECK_EQ(prof_outfile_check(chain, why, sizeof(why)), -EACCES);
	KT_REQUIRE(stat(passwd, &st) == 0);
	KT_CHECK(holds(passwd, "secret\n", st.st_ino));

	/* Root's own link in the sticky directory: written through. */
	KT_REQUIRE(stat(own, &st) == 0 && symlink(own, mine) == 0);
	KT_CHECK_EQ(prof_outfile_check(mine, why, sizeof(why)), 0);
	KT_CHECK_EQ(prof_outfile_write(mine, "mine\n", 5), 0);
	KT_CHECK(holds(own, "mine\n", st.st_ino));

	/* nobody's link in nobody's sticky directory: the owner's, followed. */
	KT_REQUIRE(stat(ok, &st) == 0);
	nobody_ids(&uid, &gid);
	KT_REQUIRE(mkdir(theirs, 0755) == 0 && chown(theirs, uid, gid) == 0 &&
		   chmod(theirs, 01777) == 0);
	KT_REQUIRE(nobody_symlink(ok, oklink) == 0);
	KT_CHECK_EQ(prof_outfile_write(oklink, "fine\n", 5), 0);
	KT_CHECK(holds(ok, "fine\n", st.st_ino));

	unlink(oklink);
	rmdir(theirs);
	unlink(mine);
	unlink(chain);
	unlink(cpu);
	unlink(heap);
	rmdir(sticky);
	unlink(passwd);
	unlink(own);
	unlink(ok);
	rmdir(victim);
}

/*
 * Issue 35, symlinks in the directory part: nobody plants STICKY/x ->
 * VICTIM (a directory).  Root writing STICKY/x/cpu.pb.gz would create
 * VICTIM/cpu.pb.gz, and STICKY/x/passwd replace VICTIM/passwd: refused,
 * -EACCES, as the kernel's fs.protected_symlinks refuses every link its
 * path walk follows.  Also refused: the same through the working
 * directory and "..", a link of root's own whose text goes through
 * STICKY/x, and a stream (prof_outfile_open(), --trace).  Followed: a
 * directory link of root's own in STICKY, and one of nobody's in a sticky
 * directory of nobody's.
 */
static void outfile_other_users_dir_link(void)
{
	char sticky[512], victim[512], theirs[512], x[600], passwd[600];
	char via[600], mine[600], tx[600], path[700], why[1024];
	struct stat st;
	uid_t uid;
	gid_t gid;
	int cwd;

	if (geteuid() != 0)
		KT_SKIP("needs root, to be root and nobody");
	snprintf(sticky, sizeof(sticky), "%s", tmp_path("dsticky"));
	snprintf(victim, sizeof(victim), "%s", tmp_path("dvictim"));
	snprintf(theirs, sizeof(theirs), "%s", tmp_path("dtheirs"));
	snprintf(x, sizeof(x), "%s/x", sticky);
	snprintf(passwd, sizeof(passwd), "%s/passwd", victim);
	snprintf(via, sizeof(via), "%s/via", victim);
	snprintf(mine, sizeof(mine), "%s/mine", sticky);
	snprintf(tx, sizeof(tx), "%s/x", theirs);
	KT_REQUIRE(chmod(tmpfiles_dir(), 0755) == 0);
	KT_REQUIRE(mkdir(sticky, 0755) == 0 && chmod(sticky, 01777) == 0);
	KT_REQUIRE(mkdir(victim, 0755) == 0);
	KT_REQUIRE(write_bytes(passwd, "secret\n", 7) == 0);
	KT_REQUIRE(stat(passwd, &st) == 0);
	if (nobody_symlink(victim, x)) {
		rmdir(sticky);
		unlink(passwd);
		rmdir(victim);
		KT_SKIP("nobody cannot reach the test directory (TMPDIR?)");
	}

	snprintf(path, sizeof(path), "%s/cpu.pb.gz", x);
	KT_CHECK_EQ(prof_outfile_write(path, "gzip\n", 5), -EACCES);
	KT_CHECK(access(tmp_path("dvictim/cpu.pb.gz"), F_OK) != 0);
	KT_CHECK_EQ(prof_outfile_check(path, why, sizeof(why)), -EACCES);
	KT_CHECK(strstr(why, x) && strstr(why, "fs.protected_symlinks"));
	KT_CHECK_EQ(prof_outfile_open(path), -EACCES);
	KT_CHECK(access(tmp_path("dvictim/cpu.pb.gz"), F_OK) != 0);
	snprintf(path, sizeof(path), "%s/passwd", x);
	KT_CHECK_EQ(prof_outfile_write(path, "gzip\n", 5), -EACCES);
	KT_CHECK_EQ(prof_outfile_open(path), -EACCES);
	KT_CHECK(holds(passwd, "secret\n", st.st_ino));

	/* From the working directory, and through "..". */
	cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	KT_REQUIRE(cwd >= 0 && chdir(sticky) == 0);
	KT_CHECK_EQ(prof_outfile_write("x/passwd", "gzip\n", 5), -EACCES);
	KT_CHECK_EQ(prof_outfile_write("x/../dvictim/passwd", "gzip\n", 5),
		    -EACCES);
	KT_CHECK(fchdir(cwd) == 0);
	close(cwd);
	KT_CHECK(holds(passwd, "secret\n", st.st_ino));

	/* Root's own link, whose text goes through nobody's. */
	snprintf(path, sizeof(path), "%s/passwd", x);
	KT_REQUIRE(symlink(path, via) == 0);
	KT_CHECK_EQ(prof_outfile_write(via, "gzip\n", 5), -EACCES);
	KT_CHECK_EQ(prof_outfile_check(via, why, sizeof(why)), -EACCES);
	KT_CHECK(holds(passwd, "secret\n", st.st_ino));

	/* Root's own directory link in the sticky directory: followed. */
	KT_REQUIRE(symlink(victim, mine) == 0);
	snprintf(path, sizeof(path), "%s/passwd", mine);
	KT_CHECK_EQ(prof_outfile_check(path, why, sizeof(why)), 0);
	KT_CHECK_EQ(prof_outfile_write(path, "mine\n", 5), 0);
	KT_REQUIRE(stat(passwd, &st) == 0);
	KT_CHECK(holds(passwd, "mine\n", st.st_ino));

	/* nobody's, in nobody's sticky directory: the owner's, followed. */
	nobody_ids(&uid, &gid);
	KT_REQUIRE(mkdir(theirs, 0755) == 0 && chown(theirs, uid, gid) == 0 &&
		   chmod(theirs, 01777) == 0);
	KT_REQUIRE(nobody_symlink(victim, tx) == 0);
	snprintf(path, sizeof(path), "%s/passwd", tx);
	KT_CHECK_EQ(prof_outfile_write(path, "fine\n", 5), 0);
	KT_REQUIRE(stat(passwd, &st) == 0);
	KT_CHECK(holds(passwd, "fine\n", st.st_ino));

	unlink(tx);
	rmdir(theirs);
	unlink(mine);
	unlink(via);
	unlink(x);
	rmdir(sticky);
	unlink(passwd);
	rmdir(victim);
}

int main(void)
{
	if (tmpfiles_init("outfile_test"))
		return EXIT_FAILURE;
	KT_RUN(outfile_targets);
	KT_RUN(outfile_dir_links);
	KT_RUN(outfile_open_stream);
	KT_RUN(outfile_chardev);
	KT_RUN(outfile_other_users_link);
	KT_RUN(outfile_other_users_dir_link);
	tmpfiles_done();
	return ktest_exit();
}
