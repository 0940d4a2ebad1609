// SPDX-License-Identifier: MIT
/*
 * perfmap.c - read a perf map (/tmp/perf-PID.map, perfmap.h) into a table
 * of disjoint address ranges, each named by the last line that covers it.
 *
 * THE FORMAT, as read here
 *
 * Lines end in '\n' ("\r\n" too).  A line is START, blanks (spaces or
 * tabs), SIZE, blanks, NAME: START and SIZE are 1 to 16 hex digits after
 * an optional "0x" or "0X"; NAME is the rest of the line, spaces
 * included, and must not be empty.  Anything else is skipped and counted
 * (struct prof_perfmap_stats): the file is the profiled program's, or
 * anyone's who can write /tmp, and one bad line costs only itself.
 *
 * BOUNDS
 *
 * The last PROF_PERFMAP_MAX_BYTES of the file are read whole into one
 * buffer (a perf map grows by appending: its end is the newest code);
 * where the read starts inside a line, that line is skipped.  The NAMEs
 * stay in the buffer.  Lines longer than PROF_PERFMAP_MAX_LINE are
 * skipped, and past PROF_PERFMAP_MAX_ENTRIES good lines the rest are
 * counted and dropped.  A SIZE of 4 GiB or more is taken as garbage: no
 * piece of code is that large, and it lets a range's length fit 32 bits.
 *
 * LATER LINES WIN
 *
 * A JIT frees code and puts new code at the same addresses; perf takes
 * the newest name.  Here every address gets the name of the LAST line
 * covering it, exactly, however lines overlap (a later line that covers
 * part of an earlier one leaves the earlier one its other parts).  The
 * lines, as entries (start, size, offset of the name in the buffer), are
 * sorted by start; a sweep over them keeps the entries that cover the
 * current address in a max-heap by name offset, which grows with the
 * line number: the heap's top is the latest line there.  Each step runs
 * to the next place the answer can change (the top's end, or the next
 * entry's start) and emits the range in between, joined to the previous
 * one when it is the same line's and contiguous; entries that ended are
 * popped lazily when they reach the top.  Every step ends an entry or
 * starts one, so there are at most 2n ranges, in O(n log n) time.
 * Lookups are a binary search over the ranges.
 */
#include "pprof/perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A line kept: its code [start, start + size) and its NAME in the buffer. */
struct pm_entry {
	uint64_t start;
	uint32_t size;
	uint32_t name; /* offset in the buffer: grows with the line number */
};

/* A range of the resolved map: [start, start + len), named by @name. */
struct pm_range {
	uint64_t start;
	uint32_t len;
	uint32_t name;
};

struct prof_perfmap {
	char *buf; /* the bytes read; the NAMEs, NUL-terminated, in place */
	struct pm_range *ranges;
	size_t nranges;
};

/* Parse 1 to 16 hex digits after an optional 0x at *@p; advance *@p. */
static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++, n++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (n == 16)
			return false; /* past 64 bits */
		v = v << 4 | (uint64_t)d;
	}
	*p = s;
	*out = v;
	return n > 0;
}

/* Skip blanks at *@p; false if there were none. */
static bool skip_blanks(const char **p, const char *end)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == *p)
		return false;
	*p = s;
	return true;
}

/*
 * One line, [@line, @end) without its '\n': an entry into @e, the NAME
 * NUL-terminated in place.  False if it is malformed.
 */
static bool parse_line(char *buf, char *line, char *end, struct pm_entry *e)
{
	const char *p = line;
	uint64_t start, size;

	if (end > line && end[-1] == '\r')
		end--;
	if (memchr(line, '\0', (size_t)(end - line)))
		return false;
	if (!parse_hex(&p, end, &start) || !skip_blanks(&p, end) ||
	    !parse_hex(&p, end, &size) || !skip_blanks(&p, end) || p == end)
		return false;
	if (!size || size > UINT32_MAX || start > UINT64_MAX - size)
		return false;
	*end = '\0';
	e->start = start;
	e->size = (uint32_t)size;
	e->name = (uint32_t)(p - buf);
	return true;
}

/* Every line of @buf[0, @len) into @*ev; the count into @*np. */
static int parse_lines(char *buf, size_t len, struct pm_entry **ev, size_t *np,
		       struct prof_perfmap_stats *st)
{
	struct pm_entry *v = NULL, e;
	size_t n = 0, cap = 0;
	char *p = buf, *end = buf + len, *nl;

	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		st->lines++;
		if (!nl) {
			st->truncated = 1;
			break;
		}
		if (nl - p > PROF_PERFMAP_MAX_LINE) {
			st->too_long++;
			continue;
		}
		if (!parse_line(buf, p, nl, &e)) {
			st->malformed++;
			continue;
		}
		if (n == PROF_PERFMAP_MAX_ENTRIES) {
			st->over_cap++;
			continue;
		}
		if (n == cap) {
			size_t c = cap ? 2 * cap : 256;
			void *q;

			if (c > PROF_PERFMAP_MAX_ENTRIES)
				c = PROF_PERFMAP_MAX_ENTRIES;
			q = realloc(v, c * sizeof(*v));
			if (!q) {
				free(v);
				return -ENOMEM;
			}
			v = q;
			cap = c;
		}
		v[n++] = e;
	}
	st->entries = n;
	*ev = v;
	*np = n;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* The max-heap of entry indices, by name offset (the latest line on top). */
struct pm_heap {
	uint32_t *v;
	size_t n;
	const struct pm_entry *e;
};

static bool heap_above(const struct pm_heap *h, size_t i, size_t j)
{
	return h->e[h->v[i]].name > h->e[h->v[j]].name;
}

static void heap_swap(struct pm_heap *h, size_t i, size_t j)
{
	uint32_t t = h->v[i];

	h->v[i] = h->v[j];
	h->v[j] = t;
}

static void heap_push(struct pm_heap *h, uint32_t x)
{
	size_t i = h->n++;

	h->v[i] = x;
	while (i && heap_above(h, i, (i - 1) / 2)) {
		heap_swap(h, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_pop(struct pm_heap *h)
{
	size_t i = 0, c;

	h->v[0] = h->v[--h->n];
	for (;;) {
		c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && heap_above(h, c + 1, c))
			c++;
		if (!heap_above(h, c, i))
			break;
		heap_swap(h, i, c);
		i = c;
	}
}

static uint64_t entry_end(const struct pm_entry *e)
{
	return e->start + e->size; /* no overflow: parse_line() */
}

/* Append [@start, @limit) named @name to @m, joined to the last if it can. */
static int add_range(struct prof_perfmap *m, size_t *cap, uint64_t start,
		     uint64_t limit, uint32_t name)
{
	struct pm_range *r = m->nranges ? &m->ranges[m->nranges - 1] : NULL;

	if (r && r->name == name && r->start + r->len == start) {
		r->len += (uint32_t)(limit - start); /* within one entry */
		return 0;
	}
	if (m->nranges == *cap) {
		size_t c = *cap ? 2 * *cap : 256;
		void *q = realloc(m->ranges, c * sizeof(*m->ranges));

		if (!q)
			return -ENOMEM;
		m->ranges = q;
		*cap = c;
	}
	m->ranges[m->nranges++] = (struct pm_range){
		.start = start, .len = (uint32_t)(limit - start), .name = name
	};
	return 0;
}

/* The sweep (see the top of the file): @v sorted, into @m->ranges. */
static int resolve(struct prof_perfmap *m, const struct pm_entry *v, size_t n)
{
	struct pm_heap h = { .v = malloc((n + 1) * sizeof(*h.v)), .e = v };
	size_t i = 0, cap = 0;
	uint64_t pos = 0, next;
	int err = 0;

	if (!h.v)
		return -ENOMEM;
	while (!err && (i < n || h.n)) {
		if (!h.n)
			pos = v[i].start;
		while (i < n && v[i].start <= pos)
			heap_push(&h, (uint32_t)i++);
		while (h.n && entry_end(&v[h.v[0]]) <= pos)
			heap_pop(&h);
		if (!h.n)
			continue;
		next = entry_end(&v[h.v[0]]);
		if (i < n && v[i].start < next)
			next = v[i].start;
		err = add_range(m, &cap, pos, next, v[h.v[0]].name);
		pos = next;
	}
	free(h.v);
	return err;
}

/* Make the map from @buf[0, @len), which it takes (freed on error). */
static struct prof_perfmap *make_map(char *buf, size_t len,
				     struct prof_perfmap_stats *st)
{
	struct prof_perfmap *m = calloc(1, sizeof(*m));
	struct pm_entry *v = NULL;
	size_t n = 0;
	int err;

	if (!m) {
		free(buf);
		errno = ENOMEM;
		return NULL;
	}
	m->buf = buf;
	err = parse_lines(buf, len, &v, &n, st);
	if (!err && n) {
		qsort(v, n, sizeof(*v), entry_cmp);
		err = resolve(m, v, n);
	}
	free(v);
	if (err) {
		prof_perfmap_free(m);
		errno = -err;
		return NULL;
	}
	return m;
}

struct prof_perfmap *prof_perfmap_parse(const char *text, size_t len,
					struct prof_perfmap_stats *st)
{
	struct prof_perfmap_stats unused;
	char *buf = malloc(len + 1);

	st = st ? st : &unused;
	memset(st, 0, sizeof(*st));
	if (!buf || len > PROF_PERFMAP_MAX_BYTES) {
		free(buf);
		errno = buf ? EFBIG : ENOMEM;
		return NULL;
	}
	memcpy(buf, text, len);
	buf[len] = '\0';
	return make_map(buf, len, st);
}

/* read() until @len bytes or the end of the file. */
static ssize_t read_full(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = read(fd, buf + got, len - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (!r)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/*
 * The last PROF_PERFMAP_MAX_BYTES of @fd (and the byte before them, to
 * tell whether the read starts at a line's start), into *@bufp; its
 * length into *@lenp, the bytes left out counted in @st.
 */
static int read_tail(int fd, off_t size, char **bufp, size_t *lenp,
		     struct prof_perfmap_stats *st)
{
	size_t want = PROF_PERFMAP_MAX_BYTES, skip = 0;
	off_t from = 0;
	ssize_t got;
	char *buf;

	if (size > (off_t)want) {
		from = size - (off_t)want - 1;
		want++;
		if (lseek(fd, from, SEEK_SET) < 0)
			return -errno;
	}
	buf = malloc(want + 1);
	if (!buf)
		return -ENOMEM;
	got = read_full(fd, buf, want);
	if (got < 0) {
		free(buf);
		return -errno;
	}
	if (from) {
		/* Skip through the first '\n' (the byte before included). */
		char *nl = memchr(buf, '\n', (size_t)got);

		skip = nl ? (size_t)(nl - buf) + 1 : (size_t)got;
		memmove(buf, buf + skip, (size_t)got - skip);
		st->bytes_skipped = (uint64_t)from + skip;
	}
	*lenp = (size_t)got - skip;
	buf[*lenp] = '\0';
	*bufp = buf;
	return 0;
}

int prof_perfmap_read(const char *path, struct prof_perfmap **out,
		      struct prof_perfmap_stats *st)
{
	struct prof_perfmap_stats unused;
	struct stat sb;
	char *buf = NULL;
	size_t len = 0;
	int fd, err;

	st = st ? st : &unused;
	memset(st, 0, sizeof(*st));
	*out = NULL;
	/* O_NONBLOCK: a FIFO planted there must not hang us at open. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0)
		err = -errno;
	else if (!S_ISREG(sb.st_mode))
		err = -EINVAL;
	else if (sb.st_uid != geteuid() && sb.st_uid != 0)
		err = -EPERM;
	else
		err = read_tail(fd, sb.st_size, &buf, &len, st);
	close(fd);
	if (err)
		return err;
	*out = make_map(buf, len, st);
	if (!*out) {
		err = -errno;
		memset(st, 0, sizeof(*st));
	}
	return err;
}

/* Index of the range holding @addr, or -1. */
static long find_range(const struct prof_perfmap *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nranges, mid;

	while (lo < hi) { /* the first range starting above @addr */
		mid = lo + (hi - lo) / 2;
		if (m->ranges[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - m->ranges[lo - 1].start >= m->ranges[lo - 1].len)
		return -1;
	return (long)(lo - 1);
}

const char *prof_perfmap_lookup(const struct prof_perfmap *m, uint64_t addr)
{
	long i = m ? find_range(m, addr) : -1;

	return i < 0 ? NULL : m->buf + m->ranges[i].name;
}

size_t prof_perfmap_range(const struct prof_perfmap *m, uint64_t *start,
			  uint64_t *limit)
{
	const struct pm_range *last;

	*start = *limit = 0;
	if (!m || !m->nranges)
		return 0;
	last = &m->ranges[m->nranges - 1];
	*start = m->ranges[0].start;
	*limit = last->start + last->len;
	return m->nranges;
}

void prof_perfmap_range_at(const struct prof_perfmap *m, size_t i,
			   uint64_t *start, uint64_t *limit)
{
	*start = m->ranges[i].start;
	*limit = m->ranges[i].start + m->ranges[i].len;
}

void prof_perfmap_free(struct prof_perfmap *m)
{
	if (!m)
		return;
	free(m->buf);
	free(m->ranges);
	free(m);
}
