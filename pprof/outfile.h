/* SPDX-License-Identifier: MIT */
/*
 * pprof/outfile.h - write an output file without replacing what is
 * not ours to replace.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_OUTFILE_H
#define PROFRING_PROF_OUTFILE_H

#include <stddef.h>

/**
 * prof_outfile_write() - put @len bytes at @path.
 * @path:	what the user named: a file, a symlink, a device, a FIFO.
 * @data:	the bytes.
 * @len:	how many.
 *
 * A regular file, or a path that does not exist yet, is replaced
 * atomically (a temporary file beside it, renamed over it, keeping an
 * existing file's permission bits): a reader sees the old file or the
 * whole new one.  Symlinks are followed and their target written by the
 * same rules.  Anything else (a character device such as /dev/null, a
 * FIFO, a socket, a terminal) and any path that resolves into /dev or
 * /proc (/dev/stdout, /proc/self/fd/N, which may name a regular file the
 * program holds open) is written through, appending, and never replaced.
 *
 * Not async-signal-safe: it allocates.
 *
 * Return: 0, or -errno (-EINVAL for NULL @path or @data with @len > 0;
 * -ELOOP past 40 symlinks; what lstat/open/write/rename said).
 */
int prof_outfile_write(const char *path, const void *data, size_t len);

#endif /* PROFRING_PROF_OUTFILE_H */
