// SPDX-License-Identifier: MIT
/*
 * profring-trace.c - print a profring trace stream (tracebuf/FORMAT.md).
 *
 *	profring-trace [--max-size SIZE] dump FILE
 *	profring-trace [--max-size SIZE] summary FILE
 *	profring-trace [--max-size SIZE] json FILE
 *
 * dump: every record and event as text; summary: counts, and for a trace
 * with memory events the live objects and bytes of each generation and
 * the top allocation stacks; json: Chrome trace-event JSON (for the
 * Perfetto UI), with the live heap as a counter track.
 *
 * A regular file of any size is mapped, and handed to
 * trace_report_mapped() (trace_report.c), which validates it and prints,
 * giving the pages back as it goes: the memory it takes is that of the
 * stream's tables, not of the file.  A pipe is read into memory, at most
 * SIZE bytes of it (default 1 GiB; a larger one is refused, and so is one
 * that does not start with a trace's header, as soon as that is read).
 * --max-size refuses a larger regular file too.  A stream that does not decode, or that ends inside a
 * generation (its tables missing), is an error: the message and its byte
 * offset go to stderr and the exit status is 1, as for a file that cannot
 * be read (with what the OS said) or is too large, and for a summary
 * whose memory events contradict themselves with no loss to explain it
 * (printed, and the contradiction said on stderr).  Usage errors exit 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <profring/tracedec.h>

#include "tools/trace_report.h"
#include "tracebuf/tracebuf_format.h"

#define DEFAULT_MAX_SIZE ((size_t)1 << 30)
#define READ_CHUNK 65536

static int usage(void)
{
	fprintf(stderr,
		"usage: profring-trace [--max-size SIZE] dump|summary|json FILE\n"
		"  dump      every record and event as text\n"
		"  summary   counts: generations, events, losses, threads;\n"
		"            live heap per generation, top allocation stacks\n"
		"  json      Chrome trace-event JSON (for the Perfetto UI)\n"
		"  --max-size SIZE  refuse a FILE of more than SIZE bytes\n"
		"            (suffix K, M or G; a pipe: default 1G, read into\n"
		"            memory; a regular file: no default, mapped and\n"
		"            read a window at a time).  The stream's tables\n"
		"            take a fraction of its size for an ordinary\n"
		"            trace, up to about 15 times it for a FILE of\n"
		"            nothing but tables\n");
	return 2;
}

/* SIZE of --max-size: digits, then K, M or G; 0 when it is not one. */
static size_t parse_size(const char *s)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end)
		return 0;
	/* Beyond SIZE_MAX / 2 is no bound at all: cut it there. */
	if (v > (SIZE_MAX / 2) >> shift)
		return SIZE_MAX / 2;
	return (size_t)v << shift;
}

/**
 * read_file() - map @path (a regular file), or read all of it (a pipe)
 * into @buf, @len.
 * @max:	the most bytes a pipe may give, below SIZE_MAX.
 * @max_file:	the most bytes a regular file may have.
 * @mapped:	set if @buf maps the file (munmap() it); else it is
 *		malloc()ed.
 *
 * Return: 0, or -1 with a message on stderr (what the OS said, for a
 * file that cannot be opened or read).
 */
static int read_file(const char *path, size_t max, size_t max_file,
		     uint8_t **buf, size_t *len, bool *mapped)
{
	size_t cap = READ_CHUNK, n = 0;
	struct tracedec_error err;
	uint8_t *b = NULL;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "profring-trace: %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	/* A regular file says its size: refuse it before reading it. */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode)) {
		max = max_file;
		if ((uintmax_t)st.st_size > max)
			goto too_big;
		if (st.st_size >= TB_STREAM_HDR &&
		    (uintmax_t)st.st_size < SIZE_MAX) {
			b = mmap(NULL, (size_t)st.st_size, PROT_READ,
				 MAP_PRIVATE, fd, 0);
			if (b != MAP_FAILED) {
				madvise(b, (size_t)st.st_size, MADV_SEQUENTIAL);
				close(fd);
				*buf = b;
				*len = (size_t)st.st_size;
				*mapped = true;
				return 0;
			}
			b = NULL;
		}
		cap = (size_t)st.st_size + 1; /* + 1: to see its end */
	}
	b = malloc(cap);
	if (!b)
		goto oom;
	for (;;) {
		ssize_t got;

		if (n == cap) {
			/* Half again, to max + 1 (that byte: too big). */
			size_t ncap =
				cap > max - cap / 2 ? max + 1 : cap + cap / 2;
			void *p = realloc(b, ncap);

			if (!p)
				goto oom;
			b = p;
			cap = ncap;
		}
		got = read(fd, b + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			fprintf(stderr, "profring-trace: %s: read: %s\n", path,
				strerror(errno));
			goto fail;
		}
		if (got == 0)
			break;
		/* Not a trace (say /dev/zero): said at once, not at max. */
		if (n < TB_STREAM_HDR && n + (size_t)got >= TB_STREAM_HDR &&
		    tracedec_decode(b, TB_STREAM_HDR, NULL, NULL, &err)) {
			fprintf(stderr, "profring-trace: %s: offset %zu: %s\n",
				path, err.offset, err.what);
			goto fail;
		}
		n += (size_t)got;
		if (n > max)
			goto too_big;
	}
	close(fd);
	*buf = b;
	*len = n;
	return 0;
oom:
	fprintf(stderr, "profring-trace: %s: out of memory\n", path);
	goto fail;
too_big:
	fprintf(stderr,
		"profring-trace: %s: larger than %zu bytes (--max-size)\n",
		path, max);
fail:
	close(fd);
	free(b);
	return -1;
}

int main(int argc, char **argv)
{
	enum trace_report_cmd cmd;
	size_t max = DEFAULT_MAX_SIZE, max_file = SIZE_MAX, len;
	bool mapped = false;
	uint8_t *buf;
	int argi = 1, rc;

	if (argc == 5 && !strcmp(argv[1], "--max-size")) {
		max = parse_size(argv[2]);
		if (!max) {
			fprintf(stderr, "profring-trace: bad --max-size %s\n",
				argv[2]);
			return usage();
		}
		max_file = max;
		argi = 3;
	}
	if (argc <= argi)
		return usage();
	if (!strcmp(argv[argi], "dump")) {
		cmd = TRACE_REPORT_DUMP;
	} else if (!strcmp(argv[argi], "summary")) {
		cmd = TRACE_REPORT_SUMMARY;
	} else if (!strcmp(argv[argi], "json")) {
		cmd = TRACE_REPORT_JSON;
	} else {
		if (argv[argi][0] != '-')
			fprintf(stderr,
				"profring-trace: unknown command '%s'\n",
				argv[argi]);
		return usage();
	}
	if (argc != argi + 2)
		return usage();
	if (read_file(argv[argi + 1], max, max_file, &buf, &len, &mapped))
		return 1;
	rc = trace_report_mapped(cmd, argv[argi + 1], buf, len, mapped, stdout,
				 stderr);
	if (mapped)
		munmap(buf, len);
	else
		free(buf);
	if (rc)
		return 1;
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "profring-trace: write error: %s\n",
			strerror(errno));
		return 1;
	}
	return 0;
}
