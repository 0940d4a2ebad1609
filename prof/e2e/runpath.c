// SPDX-License-Identifier: MIT
/*
 * prof/e2e/runpath.c - a program that dlopens a plugin by bare name from
 * its own RUNPATH ($ORIGIN/plug), a library already loaded, and one that
 * does not exist, printing what dlopen and dlerror said: an interposed
 * dlopen must leave all three as they are (the loader searches the
 * caller's RUNPATH, and learns the caller from the return address).
 */
#include <dlfcn.h>
#include <stdio.h>

static void try(const char *name)
{
	void *h = dlopen(name, RTLD_NOW);
	const char *e = dlerror();

	printf("%s: %s; dlerror: %s\n", name, h ? "loaded" : "failed",
	       e ? e : "none");
}

int main(void)
{
	try("libplug.so");
	try("libm.so.6");
	try("libnonexistent-profring.so");
	return 0;
}
