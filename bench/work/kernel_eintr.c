// SPDX-License-Identifier: MIT
/*
 * bench/work/kernel_eintr.c - what `record --timer kernel` does to a naive
 * program (profring-prof(1), --timer kernel): for 3 s, a loop of CPU work in user
 * mode, four 64 KiB reads from /dev/zero (CPU in the kernel just before
 * a sleep) and one poll(NULL, 0, 1) that is not retried; prints how many
 * polls it made and how many returned EINTR.  Run it plain, under
 * `profring-prof record -F 999` and under `record -F 999 --timer kernel`.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

int main(void)
{
	static char buf[65536];
	struct timespec t0, t;
	int eintr = 0, calls = 0, i, fd;

	fd = open("/dev/zero", O_RDONLY);
	if (fd < 0) {
		perror("kernel_eintr: /dev/zero");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (i = 0; i < 20000; i++)
			sink += i;
		for (i = 0; i < 4; i++)
			if (read(fd, buf, sizeof(buf)) < 0) {
				perror("kernel_eintr: read");
				return 1;
			}
		if (poll(NULL, 0, 1) < 0 && errno == EINTR)
			eintr++;
		calls++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 3);
	printf("polls %d eintr %d\n", calls, eintr);
	return 0;
}
