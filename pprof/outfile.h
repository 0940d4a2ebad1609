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
 * @path is walked as the kernel walks it (outfile.c has the rules).  A
 * regular file named directly, or a name that does not exist yet, is
 * replaced atomically (a temporary file beside it, renamed over it,
 * keeping an existing file's permission bits but not its set-id bits): a
 * reader sees the old file or the whole new one.  A symlink is followed
 * only if each link on the way, in the directories as in the last
 * component, passes fs.protected_symlinks' rule, whatever the sysctl says
 * (a link in a sticky world-writable directory must be ours or the
 * directory owner's); a regular file reached through links is truncated
 * and written in place, never renamed over, and a link that leads nowhere
 * is refused, never creating its target.  Anything else (a character
 * device such as /dev/null, a FIFO, a socket, a terminal) and any path in
 * /dev or /proc (/dev/stdout, /proc/self/fd/N, which may name a regular
 * file the program holds open) is written through, appending, and never
 * replaced or created.
 *
 * Not async-signal-safe (stdio); about 16 KiB of stack.
 *
 * Return: 0, or -errno: -EINVAL for NULL @path or @data with @len > 0;
 * -EACCES for a link the rule refuses; -ENOENT for a link that leads
 * nowhere, or a name in /dev or /proc that does not exist; -ELOOP past 40
 * symlinks; -ENOTDIR for a file named as a directory; -EAGAIN when the
 * links changed between the check and the open; -EISDIR for a
 * directory; what open/write/rename said.
 */
int prof_outfile_write(const char *path, const void *data, size_t len);

/**
 * prof_outfile_open() - open @path for bytes written over time (a stream:
 * --trace), reaching it as prof_outfile_write() does: the same links
 * followed or refused, the same errors.  A new name is created (O_EXCL,
 * never through a link); a regular file, named directly or behind links,
 * is truncated and written in place (a stream is never renamed into
 * place: a reader may see it half written); anything else is opened to
 * append, as prof_outfile_write() writes through.
 * @path:	what the user named.
 *
 * Return: a descriptor (O_WRONLY, O_CLOEXEC), or -errno, as
 * prof_outfile_write() returns (-EAGAIN also when a file appeared at a
 * new name).
 */
int prof_outfile_open(const char *path);

/**
 * prof_outfile_check() - would prof_outfile_write() refuse @path as it
 * stands?  It reads links and directories (opened O_PATH) but opens no
 * file, creates nothing and never blocks (a FIFO is not opened), so
 * options can be checked before the program runs and nothing collected
 * is lost later.
 * @path:	what the user named.
 * @why:	set to one line saying why, on refusal ("" otherwise).
 * @len:	@why's size.
 *
 * Return: 0, or what prof_outfile_write() would return for its links
 * (-EACCES, -ENOENT, -ELOOP, -ENOTDIR, -EISDIR, what open/readlink
 * said).  0 does not promise the write will succeed: permissions are
 * left to open().
 */
int prof_outfile_check(const char *path, char *why, size_t len);

#endif /* PROFRING_PROF_OUTFILE_H */
