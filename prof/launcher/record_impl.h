/* SPDX-License-Identifier: MIT */
/*
 * prof/launcher/record_impl.h - what the launcher's two halves share: record.c
 * runs the program and reads the ring, record_report.c turns what was
 * read into profiles, warnings and the exit status.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_RECORD_IMPL_H
#define PROFRING_PROF_RECORD_IMPL_H

#include "prof/common/aggregate.h"
#include "prof/launcher/record.h"
#include "prof/wire/shm.h"
#include "prof/launcher/trace_out.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

#define LIB_NAME "libprofring-prof.so"
#define DRAIN_LIMIT_NS 2000000000u
#define NCOMMENTS 7 /* the last: which symbolizer ran, when it matters */
#define COMMENT_LEN 320

/*
 * struct reader - the reader thread and what it found.
 * @rb:      the guarded reader of the shared ring.
 * @closed:  the ring was closed: drain, then stop.
 * @cut:     the drain stopped at DRAIN_LIMIT_NS, @unread records unread.
 * @corrupt: what the reader found corrupted (reading stopped), or NULL.
 * @heap_rate, @mutex_rate, @cpu: the session, the launcher's own copy.
 * @ovf_since: when the losses of the last overflow record were counted.
 * @cpus:    the machine's CPUs, for what the program could have done.
 */
struct reader {
	struct profbuf_reader *rb;
	struct prof_agg *agg;
	pthread_mutex_t lock; /* around each take into agg: --http looks */
	struct prof_trace *trace; /* --trace, or NULL */
	pthread_t thread;
	_Atomic bool closed;
	bool cut;
	uint32_t unread;
	const char *corrupt;
	uint64_t heap_rate;
	uint64_t mutex_rate;
	bool cpu;
	uint64_t ovf_since;
	uint64_t cpus;
	int error;
};

/*
 * No process makes a record in less than RECORD_MIN_NS of one CPU: no
 * count the program claims (losses, samples, threads) can grow faster
 * than one per RECORD_MIN_NS of every CPU of the machine.
 */
#define RECORD_MIN_NS 10u

/*
 * struct outcome - how the program ended, and what the launcher read.
 * @status: its wait status; @ru: its resource usage.
 * @counts: the program's counters (claims: see @doubt).
 * @agg:    what the aggregation counted.
 * @ring:   how the reading of the ring ended; @ring_lost: records were
 *          lost by it.
 * @doubt:  why the program's counters are not shown (empty: they are).
 */
struct outcome {
	int status;
	struct rusage ru;
	struct prof_counts counts;
	struct prof_agg_counts agg;
	char ring[COMMENT_LEN];
	bool ring_lost;
	char doubt[COMMENT_LEN];
	int64_t start_realtime_ns;
	int64_t duration_ns;
};

/* The command run, for messages (record.c). */
extern const char *prof_record_prog;

int prof_record_finish(const struct prof_record_args *a, struct reader *rd,
		       struct prof_shm_map *m, struct outcome *o);
int prof_record_pass_on(int status);

#endif /* PROFRING_PROF_RECORD_IMPL_H */
