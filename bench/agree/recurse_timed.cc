// SPDX-License-Identifier: MIT
/*
 * bench/agree/recurse_timed.cc - recurse.cc measuring its own truth: the
 * same functions (included from recurse.cc), the same main loop, with each
 * top-level phase timed on the thread CPU clock.  Every phase calls only one
 * recursive function (descend, ackermann and sum_tree call nothing else), so
 * a phase's time is that function's self time, with two clock reads per
 * phase (not per call) as overhead.  build's phase also holds operator new,
 * and freeing the tree holds ~node and free.  Prints each phase's share.
 */
#define main recurse_main
#include "recurse.cc"
#undef main
#include <ctime>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? std::atoi(argv[1]) : 10;
	unsigned long total = 0;
	unsigned seed = 16;
	double t[5] = { 0 }, a, b;
	const char *name[5] = { "descend", "ackermann", "build+new",
				"sum_tree", "free tree" };

	for (int r = 0; r < rounds; r++) {
		a = now();
		for (int i = 0; i < 100; i++)
			total += descend(20000, i);
		b = now(), t[0] += b - a, a = b;
		total += ackermann(2, 3000 + r);
		b = now(), t[1] += b - a, a = b;
		auto tree = build(18, seed);
		b = now(), t[2] += b - a, a = b;
		for (int i = 0; i < 4; i++)
			total += sum_tree(tree.get());
		b = now(), t[3] += b - a, a = b;
		tree.reset();
		b = now(), t[4] += b - a;
	}
	double all = t[0] + t[1] + t[2] + t[3] + t[4];
	for (int i = 0; i < 5; i++)
		std::printf("%-10s %6.2f%%  %.3fs\n", name[i], 100 * t[i] / all,
			    t[i]);
	std::printf("recurse: %lu\n", total);
	return 0;
}
