/* SPDX-License-Identifier: MIT */
/*
 * testing/tmpfiles.h - a private temporary directory for a test program,
 * and whole-file helpers: what the unit tests that write files share.
 */
#ifndef PROFRING_TESTING_TMPFILES_H
#define PROFRING_TESTING_TMPFILES_H

#include <sys/types.h>

#include <stddef.h>

/**
 * tmpfiles_init() - make the program's directory, $TMPDIR/@prog.XXXXXX
 * (/tmp when TMPDIR is unset or empty).
 * @prog:	the program's name.
 *
 * Return: 0, or -1 with the reason on stderr.
 */
int tmpfiles_init(const char *prog);

/**
 * tmpfiles_dir() - the directory tmpfiles_init() made.
 *
 * Return: its path.
 */
const char *tmpfiles_dir(void);

/**
 * tmpfiles_done() - remove the directory, which its files must have left
 * by now (a file left behind keeps it, and the call says so on stderr).
 *
 * Return: 0, or -1.
 */
int tmpfiles_done(void);

/**
 * tmp_path() - the path of @name in the directory.
 * @name:	a file name (or a relative path).
 *
 * Return: "<dir>/<name>", in one of four static buffers used in turn:
 * valid until the fourth call after this one.
 */
const char *tmp_path(const char *name);

/**
 * read_text() - read a whole file.
 * @path:	the file.
 * @len:	set to its length.
 *
 * Return: its bytes and a NUL (free() them), or NULL.
 */
char *read_text(const char *path, size_t *len);

/**
 * write_bytes() - create or truncate @path and write @n bytes to it.
 * @path:	the file.
 * @p:		the bytes.
 * @n:		how many.
 *
 * Return: 0, or -1.
 */
int write_bytes(const char *path, const void *p, size_t n);

/**
 * run_cmd() - run a shell command (printf-style): the tests' binutils
 * steps (strip, objcopy).
 *
 * Return: 0, or nonzero (its status) after saying on stderr what failed.
 */
__attribute__((format(printf, 1, 2))) int run_cmd(const char *fmt, ...);

/**
 * nobody_ids() - user nobody's uid and gid (65534 without a passwd entry),
 * for the tests that need a second user.
 */
void nobody_ids(uid_t *uid, gid_t *gid);

/**
 * nobody_symlink() - as nobody, in a child: the symlink @path -> @target.
 *
 * Return: 0, or the errno that stopped it (root only can switch).
 */
int nobody_symlink(const char *target, const char *path);

#endif /* PROFRING_TESTING_TMPFILES_H */
