// SPDX-License-Identifier: MIT
/*
 * bench/agree/recurse.cc - C++ with deep recursion for bench/perf_agree.py:
 * a linear recursion thousands of frames deep, Ackermann's function and a
 * binary tree built, summed and freed recursively, so the profilers' leaves
 * sit under deep stacks.  Built -O2 -fno-omit-frame-pointer.
 */
#include <cstdio>
#include <cstdlib>
#include <memory>

struct node {
	std::unique_ptr<node> l, r;
	unsigned v;
};

/* Not a tail call (nor an accumulator loop): the result is shifted. */
__attribute__((noinline)) static unsigned long descend(int depth,
						       unsigned long h)
{
	for (int i = 0; i < 64; i++)
		h = h * 6364136223846793005ul + 1442695040888963407ul;
	if (depth == 0)
		return h;
	return h ^ (descend(depth - 1, h) >> 1);
}

__attribute__((noinline)) static unsigned long ackermann(unsigned long m,
							 unsigned long n)
{
	if (m == 0)
		return n + 1;
	if (n == 0)
		return ackermann(m - 1, 1);
	return ackermann(m - 1, ackermann(m, n - 1));
}

__attribute__((noinline)) static std::unique_ptr<node> build(int depth,
							     unsigned &seed)
{
	auto n = std::make_unique<node>();

	seed = seed * 1103515245u + 12345u;
	n->v = seed >> 16;
	if (depth > 0) {
		n->l = build(depth - 1, seed);
		n->r = build(depth - 1, seed);
	}
	return n;
}

__attribute__((noinline)) static unsigned long sum_tree(const node *n)
{
	if (!n)
		return 0;
	unsigned long s = n->v;

	for (int i = 0; i < 8; i++)
		s = (s ^ (s >> 7)) * 0x9e3779b97f4a7c15ul;
	return s + sum_tree(n->l.get()) + sum_tree(n->r.get());
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? std::atoi(argv[1]) : 10;
	unsigned long total = 0;
	unsigned seed = 16;

	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 100; i++)
			total += descend(20000, i);
		total += ackermann(2, 3000 + r);
		auto tree = build(18, seed);
		for (int i = 0; i < 4; i++)
			total += sum_tree(tree.get());
	}
	std::printf("recurse: %lu\n", total);
	return 0;
}
