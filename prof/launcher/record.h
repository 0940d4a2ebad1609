/* SPDX-License-Identifier: MIT */
/*
 * prof/launcher/record.h - `profring-prof record`: run a program and profile it
 * from the launcher (record.c).
 *
 * Internal header of the profiler: never installed.
 */
#ifndef PROFRING_PROF_RECORD_H
#define PROFRING_PROF_RECORD_H

#include "prof/common/options.h"

int prof_record_lib_check(char *err, size_t len);
int prof_record_run(const struct prof_record_args *a, char **argv);

#endif /* PROFRING_PROF_RECORD_H */
