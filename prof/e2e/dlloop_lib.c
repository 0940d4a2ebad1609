// SPDX-License-Identifier: MIT
/*
 * prof/e2e/dlloop_lib.c - the library hostile's dlloop mode loads and
 * unloads in a loop: its function must be named in the profile although
 * the library is gone by the time the profile is written.
 */
int dlloop_work(int n);

__attribute__((visibility("default"), noinline)) int dlloop_work(int n)
{
	volatile int x = 0;

	for (int i = 0; i < n * 1000; i++)
		x += i;
	return x;
}
