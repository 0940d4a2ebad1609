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
 * regular file that way.  So the path is first resolved, symlink by
 * symlink (at most 40, as the kernel allows), to the file it names, and
 * then:
 *
 *  - a path whose directory resolves into /dev or /proc is written
 *    through as it stands, without following it further: /dev/stdout and
 *    /proc/self/fd/N are the kernel's magic links, which only open()
 *    follows (their readlink text may be "pipe:[1234]").
 *
 *  - a regular file, or nothing yet: replaced atomically.  The bytes go
 *    to "<file>.tmp.<pid>" in the same directory (created O_EXCL, so no
 *    stray file of that name is truncated), get the old file's permission
 *    bits, and rename() puts them in place.  A symlink stays a symlink;
 *    its target is what changes.  A dangling symlink creates its target.
 *  - anything else (character or block device, FIFO, socket): written
 *    through.
 *
 * Writing through opens O_WRONLY | O_APPEND, without O_CREAT or O_TRUNC
 * (nothing is created in /dev).  When /dev/stdout is a regular file, the
 * program's own output is in it: replacing it would orphan that output
 * and truncating it would erase it, so the profile is appended after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pprof/outfile.h"

#define OUTFILE_MAX_LINKS 40

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

/*
 * Put a new file holding the bytes at @path: with the umask's permissions,
 * or, when @old is not NULL (the file it replaces), with @old's.
 */
static int write_atomic(const char *path, const struct stat *old,
			const void *data, size_t len)
{
	size_t n = strlen(path) + 32;
	char *tmp = malloc(n);
	int fd, err;

	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	err = old && fchmod(fd, old->st_mode & 07777) ? -errno : 0;
	if (!err)
		err = write_close(fd, data, len);
	else
		close(fd);
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
out:
	free(tmp);
	return err;
}

static int write_through(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	return write_close(fd, data, len);
}

/* Is @path's directory /dev or /proc, or inside one? */
static bool in_dev_or_proc(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX], real[PATH_MAX];

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (!realpath(dir, real))
		return false;
	if (!strncmp(real, "/dev", 4) && (real[4] == '/' || !real[4]))
		return true;
	return !strncmp(real, "/proc", 5) && (real[5] == '/' || !real[5]);
}

/* Replace @buf's last component (after its last '/') with @link. */
static int follow(char *buf, const char *link, size_t n)
{
	char *slash = strrchr(buf, '/');
	size_t dirlen = slash ? (size_t)(slash - buf) + 1 : 0;

	if (link[0] == '/')
		dirlen = 0;
	if (dirlen + n >= PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(buf + dirlen, link, n + 1);
	return 0;
}

/* How to write the file @buf names, once resolved. */
enum outfile_how { OUTFILE_NEW, OUTFILE_REPLACE, OUTFILE_THROUGH };

/*
 * Follow @path through its symlinks into @buf (PATH_MAX bytes), stopping
 * at a link in /dev or /proc: those (/dev/stdout, /proc/self/fd/1) may be
 * the kernel's magic links, which only open() follows.  @st is the final
 * lstat, for OUTFILE_REPLACE.
 */
static int resolve(const char *path, char *buf, struct stat *st,
		   enum outfile_how *how)
{
	char link[PATH_MAX];
	ssize_t n;
	int hops, err;

	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	strcpy(buf, path);
	for (hops = 0;; hops++) {
		if (in_dev_or_proc(buf)) {
			*how = OUTFILE_THROUGH;
			return 0;
		}
		if (lstat(buf, st)) {
			if (errno != ENOENT)
				return -errno;
			*how = OUTFILE_NEW;
			return 0;
		}
		if (!S_ISLNK(st->st_mode))
			break;
		if (hops == OUTFILE_MAX_LINKS)
			return -ELOOP;
		n = readlink(buf, link, sizeof(link) - 1);
		if (n < 0)
			return -errno;
		link[n] = '\0';
		err = follow(buf, link, (size_t)n);
		if (err)
			return err;
	}
	*how = S_ISREG(st->st_mode) ? OUTFILE_REPLACE : OUTFILE_THROUGH;
	return 0;
}

int prof_outfile_write(const char *path, const void *data, size_t len)
{
	char target[PATH_MAX];
	enum outfile_how how;
	struct stat st;
	int err;

	if (!path || !*path || (len && !data))
		return -EINVAL;
	err = resolve(path, target, &st, &how);
	if (err)
		return err;
	if (how == OUTFILE_THROUGH)
		return write_through(target, data, len);
	return write_atomic(target, how == OUTFILE_REPLACE ? &st : NULL, data,
			    len);
}
