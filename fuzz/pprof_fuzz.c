// SPDX-License-Identifier: MIT
/*
 * pprof_fuzz.c - the pprof reader: decode, summarize, print.
 *
 * The input is a profile.proto message (not gzip'd).  Any input must give
 * a summary or an error: -EBADMSG, or -EFBIG past the limits of time and
 * memory (pprof/report.h), explained in one line.  A summary must hold
 * together (its sample type, functions, threads, locations and mappings
 * in range and sorted as report.h says), and printing it, the values per
 * thread included, to a memory stream must succeed and write well-formed
 * UTF-8 with no control character but newlines: the profile's strings
 * are escaped (pprof/escape.h).
 */
#define FUZZ_NAME "pprof_fuzz"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_input.h"
#include "pprof/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The summary holds together. */
static void check_summary(const struct prof_summary *p)
{
	if (p->sample_index >= p->nsample_types ||
	    p->default_index >= p->nsample_types || !p->type || !p->unit)
		fuzz_fail("sample type out of range",
			  (long long)p->sample_index,
			  (long long)p->nsample_types);
	for (size_t i = 0; i < p->nfuncs; i++) {
		const struct prof_report_func *f = &p->funcs[i];

		if (!f->name || (!f->flat && !f->cum))
			fuzz_fail("function without name or value",
				  (long long)i, 0);
		if (i && (p->funcs[i - 1].flat < f->flat ||
			  (p->funcs[i - 1].flat == f->flat &&
			   strcmp(p->funcs[i - 1].name, f->name) >= 0)))
			fuzz_fail("functions out of order", (long long)i, 0);
	}
	for (size_t i = 0; i < p->ntids; i++) {
		const struct prof_report_tid *t = &p->tids[i];

		if (!t->name || (!t->has_tid && i != p->ntids - 1))
			fuzz_fail("tid row", (long long)i, t->has_tid);
		if (i && t->has_tid && p->tids[i - 1].tid >= t->tid)
			fuzz_fail("tids out of order", (long long)i, 0);
	}
	for (size_t i = 0; i < p->nlocs; i++)
		if (p->locs[i].mapping < -1 ||
		    p->locs[i].mapping >= (long)p->nmaps)
			fuzz_fail("location's mapping", (long long)i,
				  p->locs[i].mapping);
	for (size_t i = 0; i < p->nmaps; i++)
		if (!p->maps[i].filename || !p->maps[i].build_id)
			fuzz_fail("mapping's strings", (long long)i, 0);
	for (size_t i = 0; i < p->ncomments; i++)
		if (!p->comments[i])
			fuzz_fail("comment", (long long)i, 0);
}

/*
 * @text is well-formed UTF-8 (checked here on its own, not with
 * escape.h's decoder) with no C0 control but newlines, no DEL, no C1.
 */
static void check_text(const unsigned char *text, size_t len)
{
	size_t i = 0, n, k;
	uint32_t cp;

	while (i < len) {
		unsigned char c = text[i];

		if (c < 0x80) {
			if ((c < 0x20 && c != '\n') || c == 0x7f)
				fuzz_fail("control character printed",
					  (long long)i, c);
			i++;
			continue;
		}
		n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
		if (!n || c > 0xf4 || i + n > len)
			fuzz_fail("bad UTF-8 printed", (long long)i, c);
		cp = c & (0x7f >> n);
		for (k = 1; k < n; k++) {
			if ((text[i + k] & 0xc0) != 0x80)
				fuzz_fail("bad UTF-8 printed", (long long)i, c);
			cp = cp << 6 | (text[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
		    (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			fuzz_fail("bad UTF-8 printed", (long long)i, cp);
		if (cp <= 0x9f)
			fuzz_fail("C1 control printed", (long long)i, cp);
		if (cp == 0x061c || cp == 0x200e || cp == 0x200f ||
		    (cp >= 0x202a && cp <= 0x202e) ||
		    (cp >= 0x2066 && cp <= 0x2069))
			fuzz_fail("bidirectional control printed", (long long)i,
				  cp);
		i += n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prof_report_opts o = { .top = 20,
				      .by_thread = 1,
				      .sample_index = -1 };
	struct prof_summary *p;
	char err[256], *text = NULL;
	size_t len = 0;
	FILE *out;
	int rc;

	rc = prof_summary_decode(data, size, -1, &p, err, sizeof(err));
	if (rc) {
		if (p || (rc != -EBADMSG && rc != -EFBIG && rc != -ENOMEM))
			fuzz_fail("unexpected error", rc, 0);
		if (!err[0] || strchr(err, '\n'))
			fuzz_fail("error not in one line", rc,
				  (long long)strlen(err));
		return 0;
	}
	check_summary(p);
	out = open_memstream(&text, &len);
	if (!out)
		fuzz_fail("open_memstream", errno, 0);
	if (prof_report_print(p, out, &o))
		fuzz_fail("printing failed", 0, 0);
	if (fclose(out))
		fuzz_fail("fclose", errno, 0);
	check_text((const unsigned char *)text, len);
	free(text);
	prof_summary_free(p);
	return 0;
}
