// SPDX-License-Identifier: MIT
/*
 * perfmap_fuzz.c - the perf map reader (pprof/perfmap.c): the text of a
 * /tmp/perf-PID.map, which anyone who can write /tmp may have written.
 *
 * Any input must give a map (never a crash), every line must be counted
 * once (kept, malformed, too long, cut off or past the cap), and the map
 * must hold together: its ranges sorted, disjoint and not empty, each
 * named at its first and last address by a non-empty name with no
 * newline, and nothing named just below a range that does not touch the
 * one before it.
 */
#define FUZZ_NAME "perfmap_fuzz"

#include <stdint.h>
#include <string.h>

#include "fuzz/fuzz_input.h"
#include "pprof/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const struct prof_perfmap *m, uint64_t addr)
{
	const char *name = prof_perfmap_lookup(m, addr);

	if (!name || !*name || strchr(name, '\n'))
		fuzz_fail("range without a good name", (long long)addr, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prof_perfmap_stats st;
	struct prof_perfmap *m;
	uint64_t lo, hi, prev = 0;
	size_t n;

	if (size > PROF_PERFMAP_MAX_BYTES)
		return 0;
	m = prof_perfmap_parse((const char *)data, size, &st);
	if (!m)
		fuzz_fail("no map", (long long)size, 0);
	if (st.lines != st.entries + st.malformed + st.too_long + st.truncated +
				st.over_cap)
		fuzz_fail("lines not accounted for", (long long)st.lines,
			  (long long)st.entries);
	n = prof_perfmap_range(m, &lo, &hi);
	if (n > 2 * st.entries)
		fuzz_fail("more than two ranges a line", (long long)n,
			  (long long)st.entries);
	for (size_t i = 0; i < n; i++) {
		prof_perfmap_range_at(m, i, &lo, &hi);
		if (lo >= hi || (i && lo < prev))
			fuzz_fail("ranges out of order", (long long)i,
				  (long long)lo);
		check_name(m, lo);
		check_name(m, hi - 1);
		if (lo && (!i || lo != prev) && prof_perfmap_lookup(m, lo - 1))
			fuzz_fail("named below a range", (long long)i,
				  (long long)lo);
		prev = hi;
	}
	prof_perfmap_free(m);
	return 0;
}
