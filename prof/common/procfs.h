/* SPDX-License-Identifier: MIT */
/*
 * prof/common/procfs.h - a small /proc file read whole, in one read(): what the
 * profiler asks of /proc (a thread's comm or stat, the process's status)
 * fits a page, and /proc hands a small file over in one read.  open(),
 * read() and close() only: no allocation, no stdio.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_PROCFS_H
#define PROFRING_PROF_PROCFS_H

#include <fcntl.h>
#include <stddef.h>
#include <sys/types.h>
#include <unistd.h>

/**
 * prof_read_small() - read the file at @path into @buf, NUL-terminated.
 * @path:	the file.
 * @buf:	room for @len bytes (at most @len - 1 of the file, then NUL).
 * @len:	at least 2.
 *
 * Return: the bytes read (>= 1), or -1 if the file could not be opened or
 * gave nothing.
 */
static inline ssize_t prof_read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return n;
}

#endif /* PROFRING_PROF_PROCFS_H */
