// SPDX-License-Identifier: MIT
/*
 * prof/agent/mutex_session.c - the lock profiles of an in-process session:
 * PROFRING_PROF_MUTEX=FILE (contention on mutexes and rwlocks),
 * PROFRING_PROF_BLOCK=FILE (every lock wait) and PROFRING_PROF_MUTEX_RATE=N
 * (one wait in N recorded), read once by the library's constructor
 * (prof.c), strictly: a bad one is one line and the program runs
 * unprofiled.  The records go to the session's ring with the CPU
 * samples; at stop the profiles are made from the collector's
 * aggregation, as the launcher makes them (mutex_agg.c).  Variables only:
 * struct profring_prof_opts has no field for them.
 */
#include "prof/agent/mutex_session.h"
#include "prof/common/aggregate.h"
#include "prof/agent/mutex.h"
#include "prof/common/mutex_agg.h"
#include "prof/common/options.h"

#include "pprof/pprof.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMMENT_LEN 256

/*
 * The file @name names, or NULL when unset; set but empty: -1 with one
 * line, as every variable of the profiler's (options.c).
 */
static int file_var(const char *name, const char **v, char *err, size_t len)
{
	*v = getenv(name);
	if (*v && !**v) {
		snprintf(err, len, "%s=: want a file name", name);
		return -1;
	}
	return 0;
}

/* @v: digits only, 1 to UINT32_MAX. */
static bool rate_of(const char *v, uint64_t *out)
{
	uint64_t n = 0;

	if (!*v)
		return false;
	for (; *v; v++) {
		if (*v < '0' || *v > '9')
			return false;
		n = n * 10 + (uint64_t)(*v - '0');
		if (n > UINT32_MAX)
			return false;
	}
	*out = n;
	return n >= 1;
}

/**
 * prof_lock_req_from_env() - the variables, checked.
 *
 * Return: 0 (@r filled in; nothing asked: prof_lock_req_on() false), or
 * -1 with a one-line message naming the variable.
 */
int prof_lock_req_from_env(struct prof_lock_req *r, char *err, size_t len)
{
	const char *m, *b, *rate = getenv(PROF_LOCK_ENV_RATE);

	memset(r, 0, sizeof(*r));
	r->rate = PROF_LOCK_DEFAULT_RATE;
	if (file_var(PROF_LOCK_ENV_MUTEX, &m, err, len) ||
	    file_var(PROF_LOCK_ENV_BLOCK, &b, err, len))
		return -1;
	if (rate && !rate_of(rate, &r->rate)) {
		snprintf(err, len,
			 "%s=%s: want one lock wait in N recorded, N from 1 "
			 "to %u",
			 PROF_LOCK_ENV_RATE, rate, UINT32_MAX);
		return -1;
	}
	if (rate && !m && !b) {
		snprintf(err, len,
			 "%s samples lock waits for %s or %s: set one",
			 PROF_LOCK_ENV_RATE, PROF_LOCK_ENV_MUTEX,
			 PROF_LOCK_ENV_BLOCK);
		return -1;
	}
	if (m && prof_output_check(m, PROF_LOCK_ENV_MUTEX, &r->mutex, err, len))
		goto fail;
	if (b && prof_output_check(b, PROF_LOCK_ENV_BLOCK, &r->block, err, len))
		goto fail;
	if (r->mutex && r->block && !strcmp(r->mutex, r->block)) {
		snprintf(err, len, "%s and %s must name different files",
			 PROF_LOCK_ENV_MUTEX, PROF_LOCK_ENV_BLOCK);
		goto fail;
	}
	return 0;
fail:
	prof_lock_req_free(r);
	return -1;
}

void prof_lock_req_free(struct prof_lock_req *r)
{
	free(r->mutex);
	free(r->block);
	r->mutex = r->block = NULL;
}

static int write_one(struct prof_agg *agg, const struct prof_lock_req *r,
		     const struct prof_counters *c, bool block,
		     const char *path, int64_t t0, int64_t dur)
{
	/* Relaxed: every writer is done (stop waited for them). */
	uint64_t wrote =
		atomic_load_explicit(&c->lock_written, memory_order_relaxed);
	uint64_t refused =
		atomic_load_explicit(&c->lock_refused, memory_order_relaxed);
	char comment[COMMENT_LEN];
	const char *line = comment;
	struct prof_profile p;
	int err;

	err = prof_agg_lock_profile(agg, block, r->rate, refused, NULL, &p);
	if (err)
		return err;
	prof_lock_comment(comment, sizeof(comment), block, r->rate,
			  prof_agg_lock_waits(agg), wrote, refused);
	p.time_nanos = t0;
	p.duration_nanos = dur;
	p.comments = &line;
	p.ncomments = 1;
	err = prof_pprof_write(&p, NULL, path);
	prof_agg_profile_free(&p);
	return err;
}

/**
 * prof_lock_write() - write the profiles @r asks for from @agg, the
 * session's aggregation after its collector drained the ring.
 * @c:		the session's counters.
 * @verbose:	say on stderr what could not be written.
 *
 * Return: 0 or the first error.
 */
int prof_lock_write(struct prof_agg *agg, const struct prof_lock_req *r,
		    const struct prof_counters *c, int64_t start_realtime_ns,
		    int64_t duration_ns, bool verbose)
{
	const char *paths[2] = { r->mutex, r->block };
	int first = 0;

	for (int i = 0; i < 2; i++) {
		int err;

		if (!paths[i])
			continue;
		err = write_one(agg, r, c, i == 1, paths[i], start_realtime_ns,
				duration_ns);
		if (err && verbose)
			fprintf(stderr, "profring-prof: cannot write %s: %s\n",
				paths[i], strerror(-err));
		first = first ? first : err;
	}
	return first;
}
