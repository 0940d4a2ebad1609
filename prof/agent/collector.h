/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/collector.h - the profiler's reader side: a thread that drains the
 * sampler's profbuf into an aggregation (aggregate.h) whose profile
 * (pprof/profile.h) prof.c writes.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_COLLECTOR_H
#define PROFRING_PROF_COLLECTOR_H

#include <profring/prof.h>
#include <profring/profbuf.h>

#include <stddef.h>
#include <sys/types.h>

#include "pprof/profile.h"
#include "prof/common/aggregate.h"
#include "prof/agent/sampler.h"

struct prof_collector;

struct prof_collector *prof_collector_start(struct profbuf *buf, int *err);
pid_t prof_collector_tid(const struct prof_collector *c);
int prof_collector_join(struct prof_collector *c);
int prof_collector_profile(struct prof_collector *c, struct prof_profile *p);
void prof_collector_profile_free(struct prof_profile *p);
void prof_collector_add_stats(const struct prof_collector *c,
			      struct profring_prof_stats *st);
int prof_collector_with_agg(struct prof_collector *c,
			    int (*fn)(struct prof_agg *a, void *arg),
			    void *arg);
struct prof_agg *prof_collector_agg(struct prof_collector *c);
void prof_collector_free(struct prof_collector *c);
void prof_collector_set_test_stall(unsigned int us);
void prof_collector_set_test_table_bytes(size_t bytes);

#endif /* PROFRING_PROF_COLLECTOR_H */
