/* SPDX-License-Identifier: MIT */
/*
 * pprof/escape.h - print a string from a file (a function name, a comment)
 * on a terminal without letting it drive the terminal.
 *
 * A profile's strings are anyone's bytes: a name holding "\e]0;...\a" or
 * "\e[2J" would retitle or clear the terminal of whoever reads the report.
 * pprof_put_escaped() writes them as profring-trace's text reports write
 * a stream's strings: printable ASCII as it is, a backslash as "\\", any
 * other byte as "\xHH" (so "\e[2J" prints as "\x1b[2J", a newline as
 * "\x0a") -- except that well-formed UTF-8 of a printable character
 * (U+00A0 and up, but the bidirectional formatting characters, which
 * reorder what a terminal shows) is written as it is, so that names in any
 * script stay readable.  The C1 controls (U+0080 to U+009F), which some
 * terminals act on, are escaped byte by byte like the rest.
 *
 * Header-only, so that a program that links no build/libpprof.a can use
 * it too.  Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PPROF_ESCAPE_H
#define PROFRING_PPROF_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/**
 * pprof_utf8_len() - the length of the well-formed UTF-8 sequence at @s.
 * @s:		the bytes.
 * @n:		how many there are, at least 1.
 * @cp:		set to its code point.
 *
 * Well-formed as RFC 3629 says: no overlong form, no surrogate, nothing
 * past U+10FFFF.
 *
 * Return: 1 to 4; 0 if @s does not start with a well-formed sequence.
 */
static inline size_t pprof_utf8_len(const unsigned char *s, size_t n,
				    uint32_t *cp)
{
	uint32_t v, min;
	size_t len;

	*cp = s[0];
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		v = s[0] & 0x1f;
		min = 0x80;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		v = s[0] & 0x0f;
		min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		v = s[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* Does code point @cp reorder text (bidirectional formatting)? */
static inline int pprof_is_bidi(uint32_t cp)
{
	return cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/**
 * pprof_put_escaped() - write @len bytes at @s to @out, escaped (above).
 * @out:	where to write; its error indicator tells of a failure.
 * @s:		the bytes.
 * @len:	how many.
 */
static inline void pprof_put_escaped(FILE *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;
	uint32_t cp;

	while (i < len) {
		n = pprof_utf8_len(p + i, len - i, &cp);
		if (n && cp == '\\') {
			fputs("\\\\", out);
		} else if (n && ((cp >= 0x20 && cp < 0x7f) ||
				 (cp >= 0xa0 && !pprof_is_bidi(cp)))) {
			fwrite(p + i, 1, n, out);
		} else {
			n = n ? n : 1;
			for (size_t k = 0; k < n; k++)
				fprintf(out, "\\x%02x", p[i + k]);
		}
		i += n;
	}
}

#endif /* PROFRING_PPROF_ESCAPE_H */
