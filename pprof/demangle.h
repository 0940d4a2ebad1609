/* SPDX-License-Identifier: MIT */
/*
 * pprof/demangle.h - C++ names as people read them, for the profile's
 * Function.name (Function.system_name keeps the symbol).
 *
 * Not async-signal-safe: the writers call it.  Internal header of the
 * profiler: never installed.
 */
#ifndef PROFRING_PPROF_DEMANGLE_H
#define PROFRING_PPROF_DEMANGLE_H

char *prof_demangle(const char *sym);
void prof_demangle_allow_load(void);

#endif /* PROFRING_PPROF_DEMANGLE_H */
