/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/mutex_session.h - the lock profiles of an in-process session
 * (prof.c): asked for by variables only, written at stop from the
 * session's aggregation (mutex_session.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_MUTEX_SESSION_H
#define PROFRING_PROF_MUTEX_SESSION_H

#include "prof/wire/stream.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The variables: the mutex profile's file, the block profile's, the rate. */
#define PROF_LOCK_ENV_MUTEX "PROFRING_PROF_MUTEX"
#define PROF_LOCK_ENV_BLOCK "PROFRING_PROF_BLOCK"
#define PROF_LOCK_ENV_RATE "PROFRING_PROF_MUTEX_RATE"

/*
 * struct prof_lock_req - the lock profiles asked for.
 * @mutex, @block: the files (absolute, malloc'd), or NULL.
 * @rate:	one wait in @rate recorded (PROF_LOCK_DEFAULT_RATE unless
 *		set).
 */
struct prof_lock_req {
	char *mutex;
	char *block;
	uint64_t rate;
};

static inline bool prof_lock_req_on(const struct prof_lock_req *r)
{
	return r->mutex || r->block;
}

int prof_lock_req_from_env(struct prof_lock_req *r, char *err, size_t len);
void prof_lock_req_free(struct prof_lock_req *r);

struct prof_agg;
int prof_lock_write(struct prof_agg *agg, const struct prof_lock_req *r,
		    const struct prof_counters *c, int64_t start_realtime_ns,
		    int64_t duration_ns, bool verbose);

#endif /* PROFRING_PROF_MUTEX_SESSION_H */
