/* SPDX-License-Identifier: MIT */
/*
 * prof/launcher/record_http.h - `profring-prof record --http`: the launcher serves
 * /debug/pprof/ from what it reads of the program (record_http.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_RECORD_HTTP_H
#define PROFRING_PROF_RECORD_HTTP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct prof_agg;
struct prof_shm;

/*
 * struct prof_record_view - what the launcher lends its server.
 * @agg:	the reader's aggregation of everything read so far.
 * @lock:	held by the reader around every record it takes into @agg.
 * @shm:	the writers' counters.
 * @pid:	the program (the same pid through its execs).
 * @hz:		the sampling rate; @cpu: CPU samples are taken; @wall:
 *		wall-clock samples are (--mode wall) instead.
 * @heap_rate:	the heap sampling rate, 0 when heap sampling is off.
 * @mutex_rate:	one lock wait in this many recorded, 0 when lock
 *		profiling is off.
 * @start_realtime_ns, @start_mono_ns: when the program started.
 */
struct prof_record_view {
	struct prof_agg *agg;
	pthread_mutex_t *lock;
	const struct prof_shm *shm;
	pid_t pid;
	unsigned int hz;
	bool cpu, wall;
	uint64_t heap_rate;
	uint64_t mutex_rate;
	int64_t start_realtime_ns, start_mono_ns;
};

/*
 * prof_record_http_start() - serve at @addr from @v (which must outlive
 * prof_record_http_stop()).  Call with every signal blocked: the server's
 * threads take the caller's mask.
 * Return: 0 or -errno (said on stderr).
 */
int prof_record_http_start(const char *addr, const struct prof_record_view *v);

/* Stop serving: a request in flight ends at once (503). */
void prof_record_http_stop(void);

#endif /* PROFRING_PROF_RECORD_HTTP_H */
