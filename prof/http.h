/* SPDX-License-Identifier: MIT */
/*
 * prof/http.h - the /debug/pprof/ server of an in-process session
 * (http.c; what it serves: <profring/prof.h>, struct profring_prof_opts'
 * @http).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_HTTP_H
#define PROFRING_PROF_HTTP_H

/*
 * prof_http_start() - listen at @addr (http_addr.h's syntax) and serve.
 * Return: 0; -EINVAL (a bad address: said on stderr); -EALREADY (one
 * runs); -errno (the listening socket failed: said on stderr).
 */
int prof_http_start(const char *addr);

/* Stop serving: requests in flight end (a CPU profile at once). */
void prof_http_stop(void);

#endif /* PROFRING_PROF_HTTP_H */
