// SPDX-License-Identifier: MIT
/*
 * pprof/demangle_test.c - C++ names demangled with the C++ runtime's
 * __cxa_demangle, loaded only where allowed; everything else left alone.
 */
#include "pprof/demangle.h"

#include "testing/ktest.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static void names(void)
{
	char *s;

	/* a C program: no C++ runtime until loading is allowed */
	KT_CHECK(!dlsym(RTLD_DEFAULT, "__cxa_demangle") ||
		 prof_demangle("_Z9leaf_workl"));
	KT_CHECK(!prof_demangle("main"));
	prof_demangle_allow_load();
	s = prof_demangle("_Z9leaf_workl");
	if (!s)
		KT_SKIP("no libstdc++.so.6 here");
	KT_CHECK(!strcmp(s, "leaf_work(long)"));
	free(s);
	s = prof_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi");
	KT_CHECK(
		s &&
		!strcmp(s,
			"std::vector<int, std::allocator<int> >::push_back(int const&)"));
	free(s);
	KT_CHECK(!prof_demangle("_Zbroken@@"));
	KT_CHECK(!prof_demangle("leaf_work"));
	KT_CHECK(!prof_demangle(""));
}

int main(void)
{
	KT_RUN(names);
	return ktest_exit();
}
