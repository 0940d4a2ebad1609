/* SPDX-License-Identifier: MIT */
/*
 * tools/trace_report.h - the reports of profring-trace (dump, summary,
 * json) over a trace stream held in memory, so that the program
 * (tools/profring-trace.c) and its fuzzer (fuzz/trace_tool_fuzz.c) run
 * the same code.
 *
 * Internal to the tools: never installed.  Each call has its own state,
 * so calls may run in parallel (each with its own output FILEs).
 */
#ifndef PROFRING_TOOLS_TRACE_REPORT_H
#define PROFRING_TOOLS_TRACE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum trace_report_cmd {
	TRACE_REPORT_DUMP, /* every record and event as text */
	TRACE_REPORT_SUMMARY, /* counts: generations, events, losses, memory */
	TRACE_REPORT_JSON, /* Chrome trace-event JSON (Perfetto UI) */
};

/**
 * trace_report() - validate a whole stream and print one report of it.
 * @cmd:	which report.
 * @name:	the stream's name (its file), for the report and messages.
 * @buf:	the stream, @len bytes (tracebuf/FORMAT.md); read only.
 * @out:	where the report goes.  Its write errors are the caller's
 *		to check (ferror()).
 * @err:	where a failure's message goes: one line, "profring-trace:
 *		NAME: ..." (with the byte offset of a bad stream).
 *
 * A stream that does not decode, or that ends inside a generation (its
 * tables missing), is refused before anything is written to @out; the
 * text reports escape every byte of the stream they show, so that @out
 * gets printable ASCII and newlines only, and the json report is valid
 * JSON whatever the stream holds.  Time and memory are linear in @len.
 *
 * The summary of a stream with memory events (version 2) adds, per
 * generation, its exists, allocation and free events and its live objects
 * and bytes at the end, and the top allocation stacks; the json report
 * adds a "live heap" counter track.
 *
 * Return: 0; 1 when the summary was printed but the stream's memory
 * events contradict themselves where no loss explains it (a free of an
 * unknown id, a double allocation, a snapshot that is not the live set
 * before it: the message on @err); or -1 with the message on @err.
 */
int trace_report(enum trace_report_cmd cmd, const char *name,
		 const uint8_t *buf, size_t len, FILE *out, FILE *err);

/*
 * The same for a stream that maps a file read-only (@mapped): its pages
 * are given back (madvise(MADV_DONTNEED)) as each pass goes by, and read
 * again from the file if looked at later, so that a file of any size
 * takes the memory of its tables, not its own.
 */
int trace_report_mapped(enum trace_report_cmd cmd, const char *name,
			const uint8_t *buf, size_t len, bool mapped, FILE *out,
			FILE *err);

#endif /* PROFRING_TOOLS_TRACE_REPORT_H */
