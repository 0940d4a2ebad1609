// SPDX-License-Identifier: MIT
/*
 * prof/e2e/cxx.cc - a C++ program (templates, std::map, exceptions) for
 * prof/e2e/e2e_test.sh: its functions must read as C++ in the profile
 * (work(int), not _Z4worki), the symbol kept as system_name.
 */
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>

__attribute__((noinline)) int work(int n)
{
	std::map<std::string, int> m;

	for (int i = 0; i < n; i++) {
		m[std::to_string(i)] = i;
		try {
			if (i % 1000 == 0)
				throw std::runtime_error("x");
		} catch (const std::exception &) {
		}
	}
	return (int)m.size();
}

int main()
{
	long s = 0;

	for (int r = 0; r < 8; r++)
		s += work(100000);
	std::printf("cxx: %ld\n", s);
	return 0;
}
