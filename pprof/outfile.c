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
 * the kernel's fs.protected_symlinks.  So the path is walked here as the
 * kernel walks it, one component at a time from "/" or the working
 * directory, each directory opened O_PATH | O_NOFOLLOW ("..": the parent
 * of the directory reached), and every symlink met, in the directory part
 * as in the last component, is checked by the rule of
 * fs.protected_symlinks, applied whether or not the sysctl is on: a link
 * in a sticky world-writable directory is followed only if its owner is
 * the directory's owner or our euid.  The link's text is then walked in
 * its place, from "/" or from the link's directory, 40 links in all at
 * most (-ELOOP), as the kernel counts them.  The file is opened from the
 * descriptor of the directory the walk ended in, the last entry by name
 * without following it, and must be the entry the walk looked at, or the
 * write is refused (-EAGAIN: the links changed underneath); so no link is
 * followed that was not checked, whoever changes the path meanwhile.  A
 * link in /proc is not read but opened, the kernel following it: it may
 * be one of the kernel's magic links, which only open() follows
 * (/proc/self/fd/1 may read "pipe:[1234]", /proc/self/fd/N a deleted
 * directory).  Then, in this order:
 *
 *  - a path that leads nowhere through a symlink (a dangling one) is
 *    refused, -ENOENT: no file is ever created through a link.
 *  - a path whose last entry, or a link on the way to it, is in a
 *    directory in /dev or /proc (/dev/stdout, /proc/self/fd/N, /dev/null)
 *    is written through, appending, and nothing is created there.
 *  - a regular file named directly, or nothing yet: replaced atomically.
 *    The bytes go to "<name>.tmp.<pid>" in the same directory (created
 *    O_EXCL, so no stray file or link of that name is followed), get the
 *    old file's permission bits (not its set-id bits), and renameat()
 *    puts them in place.
 *  - a regular file reached through symlinks: truncated and written in
 *    place, never renamed over (the link names that file, and a file
 *    renamed over it would be a new one, with another inode, owner and
 *    permissions).  A reader may see it half written, and a failed write
 *    leaves it so; the link stays a link and the file keeps its inode,
 *    owner and permissions.
 *  - anything else (character or block device, FIFO, socket): written
 *    through.
 *
 * Writing through opens O_WRONLY | O_APPEND, without O_CREAT or O_TRUNC.
 * A stream (prof_outfile_open()) is opened the same way, except that a
 * new name is created O_EXCL and a regular file named directly is
 * truncated in place: it cannot be renamed into place.
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

/* Where a path leads: the last entry it reaches, and how. */
struct outfile_walk {
	int dir; /* the directory of the last entry reached (O_PATH) */
	char name[NAME_MAX + 1]; /* that entry's name */
	char at[PATH_MAX]; /* what named it: the path or a link's text */
	struct stat st; /* that entry, not followed (unless missing) */
	int hops; /* symlinks followed, in directories and last components */
	bool linked; /* the path's last component was a symlink */
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
 * Split @path into its directory part (its first *@dirlen bytes: none
 * when it has no slash, "/" alone when that is its only slash) and its
 * last component (*@base), which must name an entry: not empty (a
 * trailing slash), "." or "..".
 */
static int split(const char *path, size_t *dirlen, const char **base)
{
	const char *slash = strrchr(path, '/');

	*base = slash ? slash + 1 : path;
	*dirlen = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
	if (!**base || !strcmp(*base, ".") || !strcmp(*base, ".."))
		return -EISDIR;
	if (strlen(*base) > NAME_MAX || *dirlen >= PATH_MAX)
		return -ENAMETOOLONG;
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
 * fs.protected_symlinks, sysctl or not: the link @st, in the directory
 * @dir, may be followed if that directory is not sticky and world-writable,
 * or the link is ours or the directory owner's.  @how and the first @n
 * bytes of @link say where it is, for @why ("it leads to" the link's
 * text, "it goes through" a directory); NULL @link: the path itself.
 */
static int may_follow(int dir, const struct stat *st, const char *how,
		      const char *link, size_t n, char *why, size_t len)
{
	struct stat d;

	if (st->st_uid == geteuid())
		return 0;
	if (fstat(dir, &d))
		return -errno;
	if ((d.st_mode & (S_ISVTX | S_IWOTH)) != (S_ISVTX | S_IWOTH) ||
	    d.st_uid == st->st_uid)
		return 0;
	if (!link)
		say(why, len,
		    "a symlink of uid %u in a sticky world-writable directory "
		    "of uid %u: not followed (the rule of fs.protected_symlinks)",
		    (unsigned int)st->st_uid, (unsigned int)d.st_uid);
	else
		say(why, len,
		    "%s %.*s, a symlink of uid %u in a sticky world-writable "
		    "directory of uid %u: not followed (the rule of "
		    "fs.protected_symlinks)",
		    how, (int)n, link, (unsigned int)st->st_uid,
		    (unsigned int)d.st_uid);
	return -EACCES;
}

/*
 * The link @fd (O_PATH | O_NOFOLLOW) was met at the start of @rest, a
 * PATH_MAX buffer, whose components from @next on are still to walk: put
 * its text in its place.  Return: 0 or -errno.
 */
static int splice_link(int fd, char *rest, const char *next)
{
	char text[PATH_MAX];
	size_t tail = strlen(next);
	ssize_t n = readlinkat(fd, "", text, sizeof(text));

	if (n < 0)
		return -errno;
	if (!n)
		return -ENOENT; /* as the kernel says of an empty link */
	if ((size_t)n + tail >= PATH_MAX)
		return -ENAMETOOLONG;
	memmove(rest + n, next, tail + 1);
	memcpy(rest, text, (size_t)n);
	return 0;
}

/*
 * Open the directory named by the first @n bytes of @path (O_PATH), from
 * "/" if @path starts with one, else from @at (a directory or AT_FDCWD),
 * one component at a time as the kernel's path walk goes: each symlink
 * met is checked by the rule (may_follow()) and its text walked in its
 * place, from "/" or from the link's directory; ".." is the parent of the
 * directory reached.  A link in a directory of /proc is opened, not read:
 * the kernel follows it (a magic link: /proc/self/fd/N, /proc/self/cwd).
 * @hops counts the links (-ELOOP past OUTFILE_MAX_LINKS).
 *
 * Return: the directory's descriptor, or -errno.
 */
static int open_dir(int at, const char *path, size_t n, int *hops, char *why,
		    size_t len)
{
	char rest[PATH_MAX], name[NAME_MAX + 1];
	char *p = rest, *next;
	struct stat st;
	int fd, sub, err;
	size_t clen;

	if (n >= PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(rest, path, n);
	rest[n] = '\0';
	fd = openat(at, rest[0] == '/' ? "/" : ".",
		    O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		p += strspn(p, "/");
		if (!*p)
			return fd;
		clen = strcspn(p, "/");
		next = p + clen;
		err = -ENAMETOOLONG;
		if (clen > NAME_MAX)
			goto fail;
		memcpy(name, p, clen);
		name[clen] = '\0';
		if (!strcmp(name, ".")) {
			p = next;
			continue;
		}
		sub = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		err = sub < 0 || fstat(sub, &st) ? -errno : 0;
		if (err)
			goto fail_sub;
		if (S_ISDIR(st.st_mode)) {
			close(fd);
			fd = sub;
			p = next;
			continue;
		}
		err = -ENOTDIR;
		if (!S_ISLNK(st.st_mode))
			goto fail_sub;
		err = -ELOOP;
		if (++*hops > OUTFILE_MAX_LINKS)
			goto fail_sub;
		err = may_follow(fd, &st, "it goes through", rest,
				 (size_t)(next - rest), why, len);
		if (err)
			goto fail_sub;
		if (on_proc(fd)) {
			close(sub);
			sub = openat(fd, name,
				     O_PATH | O_DIRECTORY | O_CLOEXEC);
			err = sub < 0 ? -errno : 0;
			if (err)
				goto fail;
			close(fd);
			fd = sub;
			p = next;
			continue;
		}
		err = splice_link(sub, rest, next);
		close(sub);
		if (err)
			goto fail;
		p = rest;
		if (rest[0] == '/') {
			sub = openat(fd, "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			err = sub < 0 ? -errno : 0;
			if (err)
				goto fail;
			close(fd);
			fd = sub;
		}
	}
fail_sub:
	if (sub >= 0)
		close(sub);
fail:
	close(fd);
	return err;
}

/* Move @w from the link it is at to the entry the link's text names. */
static int step(struct outfile_walk *w, char *why, size_t len)
{
	const char *base;
	size_t dirlen;
	ssize_t n;
	int fd, err;

	n = readlinkat(w->dir, w->name, w->at, sizeof(w->at) - 1);
	if (n < 0)
		return -errno;
	w->at[n] = '\0';
	err = split(w->at, &dirlen, &base);
	if (err)
		return n ? err : -ENOENT;
	fd = open_dir(w->dir, w->at, dirlen, &w->hops, why, len);
	if (fd < 0) {
		if (fd == -ENOENT)
			say(why, len,
			    "a dangling symlink (to %s): nothing is created "
			    "through it",
			    w->at);
		return fd;
	}
	close(w->dir);
	w->dir = fd;
	strcpy(w->name, base);
	return 0;
}

/* Follow @path's last component, link by link, checking each (the rules). */
static int walk(const char *path, struct outfile_walk *w, char *why, size_t len)
{
	const char *base;
	size_t dirlen;
	int err;

	memset(w, 0, sizeof(*w));
	w->dir = -1;
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	err = split(path, &dirlen, &base);
	if (err)
		return err;
	err = open_dir(AT_FDCWD, path, dirlen, &w->hops, why, len);
	if (err < 0)
		return err;
	w->dir = err;
	strcpy(w->name, base);
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
		err = may_follow(w->dir, &w->st, "it leads to",
				 w->linked ? w->at : NULL, strlen(w->at), why,
				 len);
		if (err)
			return err;
		w->linked = true;
		if (++w->hops > OUTFILE_MAX_LINKS)
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
	if (w->missing && w->linked) {
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
		return w->linked ? OUTFILE_IN_PLACE : OUTFILE_REPLACE;
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
 * Open the entry @w reached, from its directory, without following it
 * (but for a magic link in /proc, which the kernel follows): appending
 * (OUTFILE_THROUGH), created (OUTFILE_NEW, O_EXCL), or truncated.  It
 * must be the entry the walk looked at.  Return: the descriptor, or
 * -errno.
 */
static int open_reached(const struct outfile_walk *w, enum outfile_how how)
{
	int flags = O_WRONLY | O_NOCTTY | O_CLOEXEC;
	struct stat st;
	int fd, err;

	if (how == OUTFILE_NEW) {
		fd = openat(w->dir, w->name,
			    flags | O_CREAT | O_EXCL | O_NOFOLLOW, 0666);
		return fd >= 0 ? fd : errno == EEXIST ? -EAGAIN : -errno;
	}
	if (how == OUTFILE_THROUGH)
		flags |= O_APPEND;
	if (!w->magic)
		flags |= O_NOFOLLOW;
	fd = openat(w->dir, w->name, flags);
	if (fd < 0) /* ELOOP: a link now, where the walk saw none */
		return errno == ELOOP && !w->magic ? -EAGAIN : -errno;
	err = fstat(fd, &st) ? -errno : 0;
	if (!err && !w->magic &&
	    (st.st_dev != w->st.st_dev || st.st_ino != w->st.st_ino))
		err = -EAGAIN;
	if (!err && how != OUTFILE_THROUGH && ftruncate(fd, 0))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
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
	else if ((err = open_reached(&w, how)) >= 0)
		err = write_close(err, data, len);
	walk_done(&w);
	return err;
}

int prof_outfile_open(const char *path)
{
	struct outfile_walk w;
	int how;

	if (!path || !*path)
		return -EINVAL;
	how = resolve(path, &w, NULL, 0);
	if (how >= 0)
		how = open_reached(&w, how);
	walk_done(&w);
	return how;
}
