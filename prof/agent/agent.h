/* SPDX-License-Identifier: MIT */
/*
 * prof/agent/agent.h - the profiled process's side of `profring-prof record`
 * (agent.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_AGENT_H
#define PROFRING_PROF_AGENT_H

#include <stdbool.h>

bool prof_agent_init(void);

#endif /* PROFRING_PROF_AGENT_H */
