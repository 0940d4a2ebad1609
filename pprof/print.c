// SPDX-License-Identifier: MIT
/*
 * print.c - print a profile's summary (summary.c) like `go tool pprof
 * -top`: prof_report().
 *
 * Values in nanoseconds are scaled to the largest unit (s, ms, us, ns)
 * that the total reaches, with two decimals unless whole ("1.50s",
 * "90ms"); values of other units print as integers.  Percentages are of
 * the total, six characters wide, as pprof prints them.  The profile's
 * own strings go through pprof_put_escaped() (pprof/escape.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pprof/escape.h"
#include "pprof/report.h"

/* How values of one unit print: divided by @div, followed by @suffix. */
struct scale {
	double div;
	const char *suffix;
};

static struct scale pick_scale(const char *unit, int64_t total)
{
	double t = total < 0 ? -(double)total : (double)total;

	if (strcmp(unit, "nanoseconds"))
		return (struct scale){ 1, "" };
	if (t >= 1e9)
		return (struct scale){ 1e9, "s" };
	if (t >= 1e6)
		return (struct scale){ 1e6, "ms" };
	if (t >= 1e3)
		return (struct scale){ 1e3, "us" };
	return (struct scale){ 1, "ns" };
}

/* @v in @sc's unit, two decimals unless whole ("90ms", "1.50s"). */
static const char *fmt_value(char *buf, size_t n, int64_t v,
			     const struct scale *sc)
{
	size_t len;

	if (sc->div == 1 || !v) {
		snprintf(buf, n, "%" PRId64 "%s", v, v ? sc->suffix : "");
		return buf;
	}
	snprintf(buf, n, "%.2f", (double)v / sc->div);
	len = strlen(buf);
	if (len > 3 && !strcmp(buf + len - 3, ".00"))
		buf[len - 3] = '\0';
	snprintf(buf + strlen(buf), n - strlen(buf), "%s", sc->suffix);
	return buf;
}

/* @v of @total as a percentage, six characters wide, as pprof does. */
static const char *fmt_pct(char *buf, size_t n, int64_t v, int64_t total)
{
	double r = total ? 100.0 * (double)v / (double)total : 0.0;

	r = r < 0 ? -r : r;
	if (r >= 99.95 && r <= 100.05)
		snprintf(buf, n, "  100%%");
	else if (r >= 1.0)
		snprintf(buf, n, "%5.2f%%", r);
	else
		snprintf(buf, n, "%5.2g%%", r);
	return buf;
}

/* @before, the profile's string @s escaped, @after. */
static void put_str(FILE *out, const char *before, const char *s,
		    const char *after)
{
	fputs(before, out);
	pprof_put_escaped(out, s, strlen(s));
	fputs(after, out);
}

static void print_header(const struct prof_summary *p, FILE *out,
			 const struct scale *sc)
{
	char a[48], b[48];

	put_str(out, "Type: ", p->type, "");
	put_str(out, " (", p->unit, ")\n");
	if (p->duration_nanos) {
		struct scale s = pick_scale("nanoseconds", p->duration_nanos);

		fprintf(out, "Duration: %s, ",
			fmt_value(a, sizeof(a), p->duration_nanos, &s));
	}
	fprintf(out, "Total: %s in %zu sample records\n",
		fmt_value(b, sizeof(b), p->total, sc), p->nsamples);
	for (size_t i = 0; i < p->ncomments; i++)
		put_str(out, "Comment: ", p->comments[i], "\n");
}

static void print_funcs(const struct prof_summary *p, FILE *out,
			const struct scale *sc, size_t top)
{
	size_t n = p->nfuncs < top ? p->nfuncs : top;
	char a[48], b[48], c[16], d[16], e[16];
	int64_t shown = 0, sum = 0;
	const char *share;

	for (size_t i = 0; i < n; i++)
		shown = prof_sat_add(shown, p->funcs[i].flat);
	share = fmt_pct(c, sizeof(c), shown, p->total);
	share += strspn(share, " ");
	fprintf(out, "Showing top %zu of %zu functions, %s (%s) of %s\n", n,
		p->nfuncs, fmt_value(a, sizeof(a), shown, sc), share,
		fmt_value(b, sizeof(b), p->total, sc));
	fprintf(out, "%10s %6s %6s %10s %6s  %s\n", "flat", "flat%", "sum%",
		"cum", "cum%", "name");
	for (size_t i = 0; i < n; i++) {
		const struct prof_report_func *f = &p->funcs[i];

		sum = prof_sat_add(sum, f->flat);
		fprintf(out, "%10s %s %s %10s %s  ",
			fmt_value(a, sizeof(a), f->flat, sc),
			fmt_pct(c, sizeof(c), f->flat, p->total),
			fmt_pct(d, sizeof(d), sum, p->total),
			fmt_value(b, sizeof(b), f->cum, sc),
			fmt_pct(e, sizeof(e), f->cum, p->total));
		put_str(out, "", f->name, "\n");
	}
}

static void print_tids(const struct prof_summary *p, FILE *out,
		       const struct scale *sc)
{
	char a[48], c[16];

	fprintf(out, "\nBy thread (\"tid\" label):\n%10s %6s  %s\n", "value",
		"value%", "tid  name");
	for (size_t i = 0; i < p->ntids; i++) {
		const struct prof_report_tid *t = &p->tids[i];

		fprintf(out, "%10s %s  ", fmt_value(a, sizeof(a), t->value, sc),
			fmt_pct(c, sizeof(c), t->value, p->total));
		if (t->has_tid) {
			fprintf(out, "%" PRIu64 "%s", t->tid,
				*t->name ? "  " : "");
			put_str(out, "", t->name, "\n");
		} else {
			fprintf(out, "(none)\n");
		}
	}
}

int prof_report_print(const struct prof_summary *p, FILE *out,
		      const struct prof_report_opts *o)
{
	struct prof_report_opts def = { .top = 0, .sample_index = -1 };
	struct scale sc = pick_scale(p->unit, p->total);

	if (!o)
		o = &def;
	errno = 0;
	print_header(p, out, &sc);
	print_funcs(p, out, &sc, o->top ? o->top : 20);
	if (o->by_thread)
		print_tids(p, out, &sc);
	if (fflush(out) || ferror(out))
		return errno ? -errno : -EIO;
	return 0;
}

int prof_report(const char *path, FILE *out, const struct prof_report_opts *o,
		char *err, size_t errlen)
{
	struct prof_summary *p;
	char msg[256];
	int rc;

	if (errlen)
		err[0] = '\0';
	rc = prof_summary_load_opts(path, o ? o->sample_index : -1,
				    o && o->by_line, &p, msg, sizeof(msg));
	if (rc) {
		if (errlen)
			snprintf(err, errlen, "%s: %s%s", path,
				 rc == -EBADMSG ? "malformed profile: " : "",
				 msg);
		return rc;
	}
	rc = prof_report_print(p, out, o);
	prof_summary_free(p);
	if (rc && errlen)
		snprintf(err, errlen, "writing the report: %s", strerror(-rc));
	return rc;
}
