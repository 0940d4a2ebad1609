// SPDX-License-Identifier: MIT
/*
 * outfile.c - writing the profiler's output files.
 *
 * THE RULES
 *
 * A profile written in place (open with O_TRUNC, then filled) can be read
 * half written, by a scraper or by the user's next command; one written
 * beside its path and renamed over it replaces whatever the path named.
 * `-o /dev/null` run as root once replaced the system's /dev/null with a
 * regular file that way; and resolving symlinks here, with readlink, then
 * renaming over what they named, let a link another user planted in /tmp
 * choose which of root's files was replaced or created, out of reach of
 * the kernel's fs.protected_symlinks.  So the kernel resolves the path:
 * its directory is opened (O_PATH), and the last component is looked at
 * without being followed.  Then, in this order:
 *
 *  - a symlink there is checked, and so is each link it leads to in
 *    turn, by the rule of fs.protected_symlinks, applied whether or not
 *    the sysctl is on: a link in a sticky world-writable directory is
 *    followed only if its owner is the directory's owner or our euid.
 *    The check reads each link relative to its directory's descriptor,
 *    but never opens the file it reaches: once the chain passes, the
 *    kernel follows the path itself (so its own protections apply too),
 *    and the file it opened must be the one the check reached, or the
 *    write is refused (-EAGAIN: the links changed underneath).  A link
 *    in /proc is not read: it may be one of the kernel's magic links,
 *    which only open() follows (/proc/self/fd/1 may read "pipe:[1234]").
 *  - a path that leads nowhere through a symlink (a dangling one) is
 *    refused, -ENOENT: no file is ever created through a link.
 *  - a path whose directory, or the directory of a link it passes, is in
 *    /dev or /proc (/dev/stdout, /proc/self/fd/N, /dev/null) is written
 *    through, appending, and nothing is created there.
 *  - a regular file named directly, or nothing yet: replaced atomically.
 *    The bytes go to "<name>.tmp.<pid>" in the same directory (created
 *    O_EXCL, so no stray file or link of that name is followed), get the
 *    old file's permission bits (not its set-id bits), and renameat()
 *    puts them in place.
 *  - a regular file reached through symlinks: truncated and written in
 *    place, never renamed over (the rename would have to name the
 *    target's directory, which only the link's text says).  A reader may
 *    see it half written, and a failed write leaves it so; the link
 *    stays a link and the file keeps its inode, owner and permissions.
 *  - anything else (character or block device, FIFO, socket): written
 *    through.
 *
 * Writing through opens O_WRONLY | O_APPEND, without O_CREAT or O_TRUNC.
 * When /dev/stdout is a regular file, the program's own output is in it:
 * replacing it would orphan that output and truncating it would erase
 * it, so the profile is appended after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "pprof/outfile.h"

#define OUTFILE_MAX_LINKS 40
#define OUTFILE_PROC_MAGIC 0x9fa0 /* PROC_SUPER_MAGIC, linux/magic.h */

/* How to write the file a path names. */
enum outfile_how {
	OUTFILE_NEW, /* nothing there: created beside, renamed into place */
	OUTFILE_REPLACE, /* a regular file: the same, with its mode */
	OUTFILE_IN_PLACE, /* a regular file behind links: truncated, written */
	OUTFILE_THROUGH, /* a device, FIFO, /dev or /proc: appended to */
};

/* Where a path leads: the entry it names, and the last one it reaches. */
struct outfile_walk {
	int dir0; /* the path's directory (O_PATH) */
	char name0[NAME_MAX + 1]; /* its last component */
	int dir; /* the directory of the last entry reached */
	char name[NAME_MAX + 1]; /* that entry's name */
	char at[PATH_MAX]; /* what named it: the path or a link's text */
	struct stat st; /* that entry, not followed (unless missing) */
	int hops; /* symlinks followed */
	bool missing; /* nothing is there */
	bool magic; /* stopped at a link in /proc: the kernel follows it */
	bool special; /* in /dev or /proc, or led through there */
};

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write to an fd and close it; the first error wins. */
static int write_close(int fd, const void *data, size_t len)
{
	int err = write_all(fd, data, len);

	if (close(fd) && !err)
		err = -errno;
	return err;
}

static void say(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The reason for a refusal, for prof_outfile_check()'s caller. */
static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/*
 * Split @path into its directory (@dir, PATH_MAX bytes: "." when it has
 * no slash) and its last component (@name, NAME_MAX + 1 bytes), which
 * must name an entry: not empty (a trailing slash), "." or "..".
 */
static int split(const char *path, char *dir, char *name)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t dirlen = slash ? (size_t)(slash - path) : 0;

	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return -EISDIR;
	if (strlen(base) > NAME_MAX || dirlen >= PATH_MAX)
		return -ENAMETOOLONG;
	strcpy(name, base);
	if (!slash)
		strcpy(dir, ".");
	else if (!dirlen)
		strcpy(dir, "/");
	else
		snprintf(dir, PATH_MAX, "%.*s", (int)dirlen, path);
	return 0;
}

static bool on_proc(int fd)
{
	struct statfs sf;

	return !fstatfs(fd, &sf) && sf.f_type == OUTFILE_PROC_MAGIC;
}

/* Is the directory @fd /dev or /proc, or inside one? */
static bool in_dev_or_proc(int fd)
{
	char self[32], real[PATH_MAX];
	struct stat a, b;
	ssize_t n;

	if (on_proc(fd))
		return true;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	n = readlink(self, real, sizeof(real) - 1);
	if (n < 0) /* no /proc: on /dev's file system, then */
		return !fstat(fd, &a) && !stat("/dev", &b) &&
		       a.st_dev == b.st_dev;
	real[n] = '\0';
	return !strncmp(real, "/dev", 4) && (real[4] == '/' || !real[4]);
}

/*
 * fs.protected_symlinks, sysctl or not: the link @w is at may be followed
 * if it is outside a sticky world-writable directory, or ours, or its
 * directory owner's.
 */
static int may_follow(const struct outfile_walk *w, char *why, size_t len)
{
	struct stat d;

	if (w->st.st_uid == geteuid())
		return 0;
	if (fstat(w->dir, &d))
		return -errno;
	if ((d.st_mode & (S_ISVTX | S_IWOTH)) != (S_ISVTX | S_IWOTH) ||
	    d.st_uid == w->st.st_uid)
		return 0;
	if (!w->hops)
		say(why, len,
		    "a symlink of uid %u in a sticky world-writable directory "
		    "of uid %u: not followed (the rule of fs.protected_symlinks)",
		    (unsigned int)w->st.st_uid, (unsigned int)d.st_uid);
	else
		say(why, len,
		    "it leads to %s, a symlink of uid %u in a sticky "
		    "world-writable directory of uid %u: not followed (the "
		    "rule of fs.protected_symlinks)",
		    w->at, (unsigned int)w->st.st_uid, (unsigned int)d.st_uid);
	return -EACCES;
}

/* Move @w from the link it is at to the entry the link's text names. */
static int step(struct outfile_walk *w, char *why, size_t len)
{
	char text[PATH_MAX], dir[PATH_MAX];
	ssize_t n;
	int fd, err;

	n = readlinkat(w->dir, w->name, text, sizeof(text) - 1);
	if (n < 0)
		return -errno;
	text[n] = '\0';
	err = split(text, dir, w->name);
	if (err)
		return err;
	fd = openat(w->dir, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err == -ENOENT)
			say(why, len,
			    "a dangling symlink (to %s): nothing is created "
			    "through it",
			    text);
		return err;
	}
	close(w->dir);
	w->dir = fd;
	memcpy(w->at, text, (size_t)n + 1);
	return 0;
}

/* Follow @path's last component, link by link, checking each (the rules). */
static int walk(const char *path, struct outfile_walk *w, char *why, size_t len)
{
	char dir[PATH_MAX];
	int err;

	memset(w, 0, sizeof(*w));
	w->dir0 = w->dir = -1;
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	err = split(path, dir, w->name0);
	if (err)
		return err;
	w->dir0 = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w->dir0 < 0)
		return -errno;
	w->dir = fcntl(w->dir0, F_DUPFD_CLOEXEC, 0);
	if (w->dir < 0)
		return -errno;
	strcpy(w->name, w->name0);
	strcpy(w->at, path);
	for (;;) {
		if (in_dev_or_proc(w->dir))
			w->special = true;
		if (fstatat(w->dir, w->name, &w->st, AT_SYMLINK_NOFOLLOW)) {
			if (errno != ENOENT)
				return -errno;
			w->missing = true;
			return 0;
		}
		if (!S_ISLNK(w->st.st_mode))
			return 0;
		err = may_follow(w, why, len);
		if (err)
			return err;
		if (w->hops++ == OUTFILE_MAX_LINKS)
			return -ELOOP;
		if (on_proc(w->dir)) {
			w->magic = true;
			return 0;
		}
		err = step(w, why, len);
		if (err)
			return err;
	}
}

static void walk_done(struct outfile_walk *w)
{
	if (w->dir0 >= 0)
		close(w->dir0);
	if (w->dir >= 0)
		close(w->dir);
}

/* Walk @path and say how to write it (enum outfile_how), or -errno. */
static int resolve(const char *path, struct outfile_walk *w, char *why,
		   size_t len)
{
	int err = walk(path, w, why, len);

	if (err)
		return err;
	if (w->missing && w->hops) {
		say(why, len,
		    "a dangling symlink (to %s): nothing is created through it",
		    w->at);
		return -ENOENT;
	}
	if (w->missing && w->special) {
		say(why, len,
		    "no such file, and nothing is created in /dev or "
		    "/proc");
		return -ENOENT;
	}
	if (w->magic || w->special)
		return OUTFILE_THROUGH;
	if (w->missing)
		return OUTFILE_NEW;
	if (S_ISDIR(w->st.st_mode))
		return -EISDIR;
	if (S_ISREG(w->st.st_mode))
		return w->hops ? OUTFILE_IN_PLACE : OUTFILE_REPLACE;
	return OUTFILE_THROUGH;
}

/*
 * Put a new file holding the bytes at @name in @dir: with the umask's
 * permissions, or, when @old is not NULL (the file it replaces), with
 * @old's permission bits.
 */
static int write_atomic(int dir, const char *name, const struct stat *old,
			const void *data, size_t len)
{
	char tmp[NAME_MAX + 32];
	int fd, err;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", name, (long)getpid());
	fd = openat(dir, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		return -errno;
	err = old && fchmod(fd, old->st_mode & 0777) ? -errno : 0;
	if (!err)
		err = write_close(fd, data, len);
	else
		close(fd);
	if (!err && renameat(dir, tmp, dir, name))
		err = -errno;
	if (err)
		unlinkat(dir, tmp, 0);
	return err;
}

/*
 * Let the kernel open the path @w walked (following its links, if any,
 * itself) and write there: appending, or (OUTFILE_IN_PLACE) from the
 * start of the truncated file.  The file must be the one the walk reached.
 */
static int write_opened(const struct outfile_walk *w, enum outfile_how how,
			const void *data, size_t len)
{
	int flags = O_WRONLY | O_NOCTTY | O_CLOEXEC;
	struct stat st;
	int fd, err;

	if (how == OUTFILE_THROUGH)
		flags |= O_APPEND;
	if (!w->hops)
		flags |= O_NOFOLLOW;
	fd = openat(w->dir0, w->name0, flags);
	if (fd < 0)
		return -errno;
	err = fstat(fd, &st) ? -errno : 0;
	if (!err && !w->magic &&
	    (st.st_dev != w->st.st_dev || st.st_ino != w->st.st_ino))
		err = -EAGAIN;
	if (!err && how == OUTFILE_IN_PLACE && ftruncate(fd, 0))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return write_close(fd, data, len);
}

int prof_outfile_check(const char *path, char *why, size_t len)
{
	struct outfile_walk w;
	int how;

	if (why && len)
		why[0] = '\0';
	if (!path || !*path)
		return -EINVAL;
	how = resolve(path, &w, why, len);
	walk_done(&w);
	if (how < 0 && why && len && !why[0])
		say(why, len, "%s", strerror(-how));
	return how < 0 ? how : 0;
}

int prof_outfile_write(const char *path, const void *data, size_t len)
{
	struct outfile_walk w;
	int how, err;

	if (!path || !*path || (len && !data))
		return -EINVAL;
	how = resolve(path, &w, NULL, 0);
	if (how < 0)
		err = how;
	else if (how == OUTFILE_NEW || how == OUTFILE_REPLACE)
		err = write_atomic(w.dir, w.name,
				   how == OUTFILE_REPLACE ? &w.st : NULL, data,
				   len);
	else
		err = write_opened(&w, how, data, len);
	walk_done(&w);
	return err;
}
