// SPDX-License-Identifier: MIT
/*
 * trace_text.c - what the reports write of a stream's bytes: escaped
 * text, JSON strings, hex, type names, string and stack arguments, and
 * the one-line complaint (trace_report_impl.h).  Whatever the stream holds, the text
 * reports get printable ASCII and newlines only, and the JSON report
 * valid strings.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tools/trace_report_impl.h"

/*
 * put_text() - write @len bytes at @s for the text reports: printable
 * ASCII as it is, a backslash as \\, any other byte as \xHH, so that the
 * report holds no control character (no terminal escape) from the stream.
 */
void put_text(FILE *out, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\')
			fputs("\\\\", out);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			putc(c, out);
	}
}

/**
 * put_quoted() - write @len bytes at @s as a JSON string literal: quotes,
 * backslashes and control characters escaped, every byte outside printable
 * ASCII as \u00XX (so any input gives valid JSON; the dump uses it too).
 */
void put_quoted(FILE *out, const char *s, size_t len)
{
	putc('"', out);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c == '\r')
			fputs("\\r", out);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			putc(c, out);
	}
	putc('"', out);
}

void put_hex_bytes(FILE *out, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%02x", p[i]);
}

/* A type's name, or "type N", quoted for JSON or escaped for text. */
void put_type(FILE *out, const struct gen_info *g, unsigned int type, bool json)
{
	size_t len;
	const char *name = type_name(g, type, &len);
	char buf[32];

	if (!name) {
		snprintf(buf, sizeof(buf), "type %u", type);
		name = buf;
		len = strlen(buf);
	}
	if (json) {
		put_quoted(out, name, len);
	} else {
		put_text(out, name, len);
		fprintf(out, "(%u)", type);
	}
}

/*
 * put_ref() - an 's' or 'k' argument @v, resolved in @g: the string,
 * quoted, or the stack's pcs in brackets (for JSON quoted and between
 * commas, for text between spaces).
 * Return: false, nothing written, when @kind is neither or @v is not there.
 */
bool put_ref(const struct trace *t, const struct gen_info *g, char kind,
	     uint64_t v, bool json)
{
	const struct str_ent *s;
	const struct stack_ent *k;

	if (kind == 's' && (s = find_string(g, v))) {
		put_quoted(t->out, s->s, s->len);
	} else if (kind == 'k' && (k = find_stack(g, v))) {
		putc('[', t->out);
		for (size_t i = 0; i < k->n; i++) {
			uint64_t pc = t->pcs[k->off + i];

			if (json)
				fprintf(t->out, "%s\"0x%" PRIx64 "\"",
					i ? "," : "", pc);
			else
				fprintf(t->out, "%s0x%" PRIx64, i ? " " : "",
					pc);
		}
		putc(']', t->out);
	} else {
		return false;
	}
	return true;
}

/* One line on t->err: "profring-trace: NAME: " and @what. */
void complain(const struct trace *t, const char *what)
{
	fputs("profring-trace: ", t->err);
	put_text(t->err, t->path, strlen(t->path));
	fprintf(t->err, ": %s\n", what);
}
