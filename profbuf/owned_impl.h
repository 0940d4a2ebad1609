/* SPDX-License-Identifier: MIT */
/*
 * profbuf/owned_impl.h - what profbuf/group.c uses of the owned rings
 * (profbuf/owned.c).  Internal.
 */
#ifndef PROFRING_PROFBUF_OWNED_IMPL_H
#define PROFRING_PROFBUF_OWNED_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include <profring/profbuf.h>
#include <profring/profbuf_group.h>

#include "profbuf/profbuf_impl.h" /* PB_PAD_MARK, in OWNED_MARKS */

/*
 * The packed counts (owned.c, State): data words in bits 0-31, records
 * in bits 34-63; head's flags.
 */
#define OWNED_TAG_SHIFT 34
#define OWNED_TAG_MASK ((1u << 30) - 1)
/*
 * A void record: PB_PAD_MARK | OWNED_VOID | its words, in place of an
 * overflow record left with nothing to count (see Write, step 4): the
 * reader steps over its words and its tag slot.
 */
#define OWNED_VOID ((uint64_t)1 << 62)
#define OWNED_MARKS (PB_PAD_MARK | OWNED_VOID)

static inline uint32_t o_data(uint64_t x)
{
	return (uint32_t)x;
}

static inline uint32_t o_tag(uint64_t x)
{
	return (uint32_t)(x >> OWNED_TAG_SHIFT);
}

static inline uint64_t o_make(uint32_t data, uint32_t tag)
{
	return (uint64_t)(tag & OWNED_TAG_MASK) << OWNED_TAG_SHIFT | data;
}

#define OW_COUNTING PROFBUF__OWNED_COUNTING
#define OW_PENDING PROFBUF__OWNED_PENDING
#define OW_FLAGS PROFBUF__OWNED_FLAGS

/*
 * struct pbo_reader - the reader's own state of one owned ring.
 * @r_next:  packed counts up to where the last read of the ring got
 * @read_to: ... up to where the group returned its records (a run read
 *           and stashed is not returned yet)
 * @ovf:     a synthesized last overflow record (3 + hdrsize words)
 * @ovf_tag: its tag, NULL
 * @fenced:  close seen, and the membarrier(2) after it done
 */
struct pbo_reader {
	uint64_t r_next;
	uint64_t read_to;
	uint64_t *ovf;
	const void *ovf_tag;
	bool fenced;
};

int pbo_init(struct profbuf_owned *o, struct pbo_reader *st, size_t hdrsize,
	     size_t bufwords, size_t ntags, uint32_t *wake, uint32_t index);
void pbo_fini(struct profbuf_owned *o, struct pbo_reader *st);
bool pbo_writers_fence(void);
void pbo_wake(struct profbuf_owned *o);

/* Return: 1 records in @out, 0 nothing now, 2 EOF, -EIO. */
int pbo_read(struct profbuf_owned *o, struct pbo_reader *st,
	     struct profbuf_read *out);
void pbo_close(struct profbuf_owned *o);
void pbo_arm(struct profbuf_owned *o);
void pbo_disarm(struct profbuf_owned *o);
bool pbo_barrier(bool fence);
bool pbo_pending(struct profbuf_owned *o, const struct pbo_reader *st);
bool pbo_closing(struct profbuf_owned *o);
int pbo_after_fork(struct profbuf_owned *o, struct pbo_reader *st);
struct profbuf_owned *pbo_claim(struct profbuf_owned *rings, uint32_t n);

#endif /* PROFRING_PROFBUF_OWNED_IMPL_H */
