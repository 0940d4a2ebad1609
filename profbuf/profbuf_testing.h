/* SPDX-License-Identifier: MIT */
/*
 * profbuf/profbuf_testing.h - hooks for tests, stress and fuzz programs.
 *
 * Not part of the public API: in build/libprofring.a only, hidden in the
 * shared library.
 */
#ifndef PROFRING_PROFBUF_TESTING_H
#define PROFRING_PROFBUF_TESTING_H

#include <stddef.h>
#include <stdint.h>

struct profbuf;

/**
 * profbuf_new_at() - profbuf_new() with the read and write counters
 * starting at @data_count and @tag_count (tag counts wrap at 2^30), so
 * that tests can cross the 2^32 / 2^30 wrap-around in a few writes.
 */
struct profbuf *profbuf_new_at(size_t hdrsize, size_t bufwords, size_t ntags,
			       uint32_t data_count, uint32_t tag_count);

/*
 * Wakeup accounting.  Every sleep (the reader setting SLEEPING) ends with
 * exactly one wakeup (a writer or close clearing it and bumping the futex
 * word) or with the reader withdrawing the flag itself (timeout, EOF):
 * when the reader is not asleep, sleeps == wakeups + withdrawn.
 */
struct profbuf_test_counters {
	uint64_t wakeups;
	uint64_t sleeps;
	uint64_t withdrawn;
};

/* Only from the reader thread, between reads. */
void profbuf_test_counters(struct profbuf *b, struct profbuf_test_counters *c);

/*
 * profbuf_test_close_late() - make a closed buffer look, to the next
 * write, as it does to a writer that loaded ovf just before close: clear
 * CLOSED, and set EXTRA in w as close's wakeup does when it lands after
 * the reader sealed the buffer.  The write must then be refused by its
 * room test alone.  No reader or writer may run meanwhile.
 */
void profbuf_test_close_late(struct profbuf *b);

/*
 * Called by a writer to a shared buffer right after it stored its owner
 * stamp, before it fills and commits the record: a test parks a writer
 * there to kill or stop it mid-write.  NULL (the default): nothing.
 */
extern void (*profbuf_test_claim_hook)(void);

#endif /* PROFRING_PROFBUF_TESTING_H */
