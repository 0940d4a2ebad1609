/* SPDX-License-Identifier: MIT */
/*
 * prof/common/http.h - the /debug/pprof/ server (http.c) of an in-process
 * session (<profring/prof.h>, struct profring_prof_opts' @http) or of the
 * launcher (`profring-prof record --http`); what it serves: serve.h.
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_HTTP_H
#define PROFRING_PROF_HTTP_H

#include "prof/agent/serve.h"

/*
 * prof_http_start() - listen at @addr (http_addr.h's syntax) and serve
 * what @ops make.  The server's threads are created with the caller's
 * signal mask.
 * Return: 0; -EINVAL (a bad address: said on stderr); -EALREADY (one
 * runs); -errno (the listening socket failed: said on stderr).
 */
int prof_http_start(const char *addr, const struct prof_http_ops *ops);

/* Stop serving: requests in flight end (a CPU profile at once). */
void prof_http_stop(void);

#endif /* PROFRING_PROF_HTTP_H */
