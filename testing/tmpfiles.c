// SPDX-License-Identifier: MIT
/*
 * testing/tmpfiles.c - a private temporary directory per test program and
 * whole-file helpers (testing/tmpfiles.h).
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testing/tmpfiles.h"

static char dir[256];

int tmpfiles_init(const char *prog)
{
	const char *t = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/%s.XXXXXX", t && *t ? t : "/tmp", prog);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

const char *tmpfiles_dir(void)
{
	return dir;
}

int tmpfiles_done(void)
{
	if (rmdir(dir)) {
		perror(dir);
		return -1;
	}
	return 0;
}

const char *tmp_path(const char *name)
{
	static char buf[4][512];
	static int next;
	char *p = buf[next++ & 3];

	snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
	return p;
}

char *read_text(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 &&
	    !fseek(f, 0, SEEK_SET)) {
		buf = calloc(1, (size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

int write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(p, 1, n, f) == n;
	return fclose(f) == 0 && ok ? 0 : -1;
}

int run_cmd(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(cmd))
		return -1;
	rc = system(cmd);
	if (rc)
		fprintf(stderr,
			"  `%s` failed (status %d): binutils (objcopy, strip) "
			"missing?\n",
			cmd, rc);
	return rc;
}

void nobody_ids(uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam("nobody");

	*uid = pw ? pw->pw_uid : 65534;
	*gid = pw ? pw->pw_gid : 65534;
}

int nobody_symlink(const char *target, const char *path)
{
	uid_t uid;
	gid_t gid;
	pid_t pid;
	int status;

	nobody_ids(&uid, &gid);
	pid = fork();
	if (pid < 0)
		return errno;
	if (!pid) {
		if (setgroups(0, NULL) || setgid(gid) || setuid(uid))
			_exit(errno);
		_exit(symlink(target, path) ? errno : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return ECHILD;
	return WEXITSTATUS(status);
}
