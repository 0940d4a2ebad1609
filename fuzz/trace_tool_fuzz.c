// SPDX-License-Identifier: MIT
/*
 * trace_tool_fuzz.c - arbitrary bytes into profring-trace's reports
 * (tools/trace_report.c): dump, summary and json of every input.
 *
 * Each report must return 0 or -1, never crash, hang, leak or read out
 * of bounds (ASan: the input is an exact-size copy), and keep what
 * trace_report.h promises:
 *  - the three agree: all succeed or all fail (they load alike);
 *  - a failure writes one line, "profring-trace: NAME: ...", to its
 *    error stream and nothing to its output; a success writes no error;
 *  - dump and summary print printable ASCII and newlines only; json is
 *    valid JSON (checked by the small strict parser below);
 *  - they count alike: the dump's event lines, the json's instant
 *    events and the summary's "events" are one number; so are the
 *    dump's end records and the summary's generations, and each
 *    thread's events in the dump and in the summary.
 * Half the inputs get a valid stream header in front, so that the
 * fuzzer spends its time on records rather than on the magic.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NAME "trace_tool_fuzz"
#include "fuzz/fuzz_input.h"
#include "tools/trace_report.h"
#include "tracebuf/tracebuf_format.h"

#define JSON_MAX_DEPTH 16

/* A report's output and error streams, in memory. */
struct capture {
	char *out, *err;
	size_t nout, nerr;
	int rc;
};

static void run(enum trace_report_cmd cmd, const uint8_t *buf, size_t len,
		struct capture *c)
{
	FILE *out = open_memstream(&c->out, &c->nout);
	FILE *err = open_memstream(&c->err, &c->nerr);

	if (!out || !err)
		fuzz_fail("open_memstream", 0, 0);
	c->rc = trace_report(cmd, "fuzz", buf, len, out, err);
	if (fclose(out) || fclose(err))
		fuzz_fail("a report's stream failed", cmd, 0);
}

static void capture_free(struct capture *c)
{
	free(c->out);
	free(c->err);
}

/* Printable ASCII and newlines, nothing else. */
static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != '\n' && (s[i] < 0x20 || s[i] > 0x7e))
			return false;
	return true;
}

/* Occurrences of @pat in @s (@n bytes, NUL-terminated). */
static uint64_t count(const char *s, const char *pat)
{
	uint64_t k = 0;

	for (const char *p = s; (p = strstr(p, pat)); p += strlen(pat))
		k++;
	return k;
}

/* ---- a strict JSON parser (RFC 8259, ASCII only) ------------------------- */

struct json {
	const char *p, *end;
};

static bool json_value(struct json *j, int depth);

static void json_ws(struct json *j)
{
	while (j->p < j->end && strchr(" \t\n\r", *j->p) && *j->p)
		j->p++;
}

static bool json_lit(struct json *j, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n))
		return false;
	j->p += n;
	return true;
}

static bool json_digits(struct json *j)
{
	const char *s = j->p;

	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s;
}

static bool json_number(struct json *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (!json_digits(j))
		return false;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!json_digits(j))
			return false;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!json_digits(j))
			return false;
	}
	return true;
}

static bool json_string(struct json *j)
{
	if (j->p >= j->end || *j->p++ != '"')
		return false;
	while (j->p < j->end) {
		unsigned char c = (unsigned char)*j->p++;

		if (c == '"')
			return true;
		if (c < 0x20 || c > 0x7e) /* we write ASCII only */
			return false;
		if (c != '\\')
			continue;
		if (j->p >= j->end)
			return false;
		c = (unsigned char)*j->p++;
		if (c == 'u') {
			for (int i = 0; i < 4; i++, j->p++)
				if (j->p >= j->end ||
				    !strchr("0123456789abcdefABCDEF", *j->p) ||
				    !*j->p)
					return false;
		} else if (!strchr("\"\\/bfnrt", c) || !c) {
			return false;
		}
	}
	return false;
}

/* A '{' or '[' container; @close its end, @obj: members are "k": v. */
static bool json_container(struct json *j, int depth, char close, bool obj)
{
	j->p++;
	json_ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		return true;
	}
	for (;;) {
		if (obj) {
			json_ws(j);
			if (!json_string(j))
				return false;
			json_ws(j);
			if (j->p >= j->end || *j->p++ != ':')
				return false;
		}
		if (!json_value(j, depth + 1))
			return false;
		json_ws(j);
		if (j->p >= j->end)
			return false;
		if (*j->p == close) {
			j->p++;
			return true;
		}
		if (*j->p++ != ',')
			return false;
	}
}

static bool json_value(struct json *j, int depth)
{
	if (depth > JSON_MAX_DEPTH)
		return false;
	json_ws(j);
	if (j->p >= j->end)
		return false;
	switch (*j->p) {
	case '{':
		return json_container(j, depth, '}', true);
	case '[':
		return json_container(j, depth, ']', false);
	case '"':
		return json_string(j);
	case 't':
		return json_lit(j, "true");
	case 'f':
		return json_lit(j, "false");
	case 'n':
		return json_lit(j, "null");
	default:
		return json_number(j);
	}
}

static bool json_valid(const char *s, size_t n)
{
	struct json j = { s, s + n };

	if (!json_value(&j, 0))
		return false;
	json_ws(&j);
	return j.p == j.end;
}

/* ---- the target ---------------------------------------------------------- */

/* The number on the summary's line that starts with @key. */
static uint64_t summary_value(const char *s, const char *key)
{
	char pat[32];
	const char *p;

	snprintf(pat, sizeof(pat), "\n%s ", key);
	p = strstr(s, pat);
	if (!p)
		fuzz_fail("summary line missing", 0, 0);
	return strtoull(p + strlen(pat), NULL, 10);
}

struct tally {
	unsigned long long tid, events;
};

/*
 * The dump's events per thread (its "  event gen=G thread=T" lines)
 * into @tl, of room for @max threads.  Return: the threads.
 */
static size_t dump_tally(const char *dump, struct tally *tl, size_t max)
{
	static const char pat[] = "\n  event gen=";
	size_t n = 0, i;

	for (const char *p = dump; (p = strstr(p, pat)); p += sizeof(pat) - 1) {
		unsigned long long gen, tid;

		if (sscanf(p, "\n  event gen=%llu thread=%llu", &gen, &tid) !=
		    2)
			fuzz_fail("dump's event line", 0, 0);
		for (i = 0; i < n && tl[i].tid != tid; i++)
			;
		if (i == n) {
			if (n == max)
				fuzz_fail("more threads than batches", 0, 0);
			tl[n++] = (struct tally){ tid, 0 };
		}
		tl[i].events++;
	}
	return n;
}

/*
 * Per thread, the summary's events are the dump's, and every thread of
 * the dump is in the summary.
 */
static void check_threads(const char *dump, const char *summary, size_t len)
{
	static const char pat[] = "\nthread ";
	size_t max = len / 8 + 2, n, found = 0;
	struct tally *tl = calloc(max, sizeof(*tl));

	if (!tl)
		fuzz_fail("calloc", 0, 0);
	n = dump_tally(dump, tl, max);
	for (const char *p = summary; (p = strstr(p, pat));
	     p += sizeof(pat) - 1) {
		unsigned long long tid, events, want = 0;

		if (sscanf(p, "\nthread %llu events %llu", &tid, &events) != 2)
			fuzz_fail("summary's thread line", 0, 0);
		for (size_t i = 0; i < n; i++)
			if (tl[i].tid == tid)
				want = tl[i].events, found++;
		if (events != want)
			fuzz_fail("a thread's events", (long long)events,
				  (long long)want);
	}
	if (found != n)
		fuzz_fail("dump's threads not in the summary", (long long)n,
			  (long long)found);
	free(tl);
}

static void check(const struct capture *c, enum trace_report_cmd cmd)
{
	static const char prefix[] = "profring-trace: fuzz: ";

	if (c->rc != 0 && c->rc != -1)
		fuzz_fail("return value", cmd, c->rc);
	if (c->rc) {
		if (c->nout)
			fuzz_fail("output before a failure", cmd,
				  (long long)c->nout);
		if (c->nerr < sizeof(prefix) ||
		    memcmp(c->err, prefix, sizeof(prefix) - 1) ||
		    strchr(c->err, '\n') != c->err + c->nerr - 1 ||
		    !printable(c->err, c->nerr))
			fuzz_fail("failure message not one line", cmd,
				  (long long)c->nerr);
		return;
	}
	if (c->nerr)
		fuzz_fail("message on success", cmd, (long long)c->nerr);
	if (cmd == TRACE_REPORT_JSON) {
		if (!json_valid(c->out, c->nout))
			fuzz_fail("json not valid", cmd, (long long)c->nout);
	} else if (!printable(c->out, c->nout)) {
		fuzz_fail("text report not printable", cmd, (long long)c->nout);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool framed = size && (data[0] & 1);
	size_t len = size + (framed ? TB_STREAM_HDR - 1 : 0);
	uint8_t *buf = malloc(len ? len : 1);
	struct capture c[3] = { 0 };

	if (framed) {
		tb_put_stream_hdr(buf);
		memcpy(buf + TB_STREAM_HDR, data + 1, size - 1);
	} else if (size) {
		memcpy(buf, data, size);
	}
	run(TRACE_REPORT_DUMP, buf, len, &c[0]);
	run(TRACE_REPORT_SUMMARY, buf, len, &c[1]);
	run(TRACE_REPORT_JSON, buf, len, &c[2]);
	for (int i = 0; i < 3; i++)
		check(&c[i], (enum trace_report_cmd)i);
	if (c[0].rc != c[1].rc || c[1].rc != c[2].rc)
		fuzz_fail("the reports disagree on the stream", c[0].rc,
			  c[2].rc);
	if (!c[0].rc) {
		uint64_t events = summary_value(c[1].out, "events");
		uint64_t gens = summary_value(c[1].out, "generations");

		if (count(c[0].out, "\n  event ") != events)
			fuzz_fail("dump's events", (long long)events,
				  (long long)count(c[0].out, "\n  event "));
		if (count(c[2].out, "\"ph\":\"i\"") != events)
			fuzz_fail("json's events", (long long)events,
				  (long long)count(c[2].out, "\"ph\":\"i\""));
		/* Every generation ends (or the stream is refused). */
		if (count(c[0].out, "\nend gen=") != gens)
			fuzz_fail("dump's generations", (long long)gens,
				  (long long)count(c[0].out, "\nend gen="));
		check_threads(c[0].out, c[1].out, len);
	}
	for (int i = 0; i < 3; i++)
		capture_free(&c[i]);
	free(buf);
	return 0;
}
