// SPDX-License-Identifier: MIT
/*
 * prof/e2e/heapplt.c - a non-PIE program that takes malloc's address, as
 * python3.11 and node do: its dynamic symbol table then holds malloc as an
 * undefined symbol with a value (a "canonical PLT" entry), which
 * dlsym(RTLD_DEFAULT) returns though the entry only jumps on to the first
 * definition after the program: ours.  The heap profile sees its
 * allocations, and nothing says otherwise (prof/e2e/heap_edge_test.sh).
 * Built with -fno-pie -no-pie (Makefile).
 */
#include <stdio.h>
#include <stdlib.h>

void *(*volatile alloc_fn)(size_t);
void *volatile sink;

/* The address taken in code: an absolute reference to malloc. */
__attribute__((noinline)) static void *(*malloc_address(void))(size_t)
{
	return &malloc;
}

__attribute__((noinline)) static void f_plt(void)
{
	for (int i = 0; i < 1000; i++) {
		sink = alloc_fn(64);
		free(sink);
	}
}

int main(void)
{
	alloc_fn = malloc_address();
	f_plt();
	puts("heapplt done");
	return 0;
}
