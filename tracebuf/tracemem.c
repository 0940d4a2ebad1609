// SPDX-License-Identifier: MIT
/*
 * tracemem.c - memory events of the tracer: the live-object table and the
 * snapshot that starts each generation.
 *
 * THE PROTOCOL
 *
 * The table.  Open addressing over a power-of-two array of slots, each
 * three atomic words: key (0 never used, 1 tombstone, else the object's
 * address), size, and state (stack id << 32 | generation << 1 | live; the
 * generation is kept to 31 bits, which is enough: a live object's is
 * always the current generation or the one before).  A probe walks at
 * most TB_MEM_PROBE slots from hash(address), and stops at a never-used
 * slot.  A slot goes:
 *
 *   insert (allocating thread):  key: 0/1 -> addr   CAS, acq_rel
 *                                size             release store
 *                                state: 0 -> live  release store
 *   kill (freeing thread):       state: live -> 0  CAS, acq_rel
 *                                key: addr -> 1    release store
 *
 * Only the thread that allocates an address inserts it and only the one
 * that frees it kills it, and an address is not handed out again before
 * it is freed: so a slot's key and size do not change while its state is
 * live, and tombstones are reused only after the kill has ended.  A
 * free finds its slot by key and kills it with a CAS on the state, which
 * also decides any race with the snapshot (below).  Tombstones are never
 * cleared, so a table that has seen much churn probes further (never
 * more than TB_MEM_PROBE); an insert that finds no slot in reach is
 * refused and counted (mem_full, and a lost event).
 *
 * Events.  An allocation interns its stack in the current generation's
 * table, inserts the object with state (stack id, gen, live), then emits
 * ALLOC; if the event is lost the object is taken out again, so the table
 * never holds an object the stream does not show.  A free kills the slot
 * and emits FREE.  Both happen inside a begin/end pair, so the generation
 * they load is the one they write in.
 *
 * The snapshot.  tracebuf_advance() stores gen + 1 and waits for a grace
 * period (tracebuf.c): from then on no thread writes in the old
 * generation, and every object inserted in it is visible with state
 * (s, old, live).  It then walks the table as a writer of the new
 * generation, and for each object of the old one re-interns its stack in
 * the new stack table (old id -> PCs through the old table, which is
 * reset only later) and CASes its state (s, old, live) -> (s', new,
 * live); the CAS that succeeds emits EXISTS.  Meanwhile threads of the
 * new generation allocate (their objects have state (.., new, ..), which
 * the walk skips) and free.  A free that kills an object whose state
 * still says the old generation beat the walk to it: it emits the EXISTS
 * itself (re-interning the stack the same way) and then the FREE.  Both
 * CAS the same word, so exactly one of them emits the object's EXISTS,
 * and it comes before any FREE of the object in the new generation.  So
 * the snapshot is exactly the set of objects live at the flip: every
 * object of the old generation not freed in it, each once, whatever
 * races the walk.  The walk reads key and size after the state (acquire
 * loads); a slot killed and reused meanwhile has a new state, so its CAS
 * fails and it looks again.  After the walk, a second grace period waits
 * for the frees that beat it (they read the old stack table); only then
 * does close_gen() reset that table.
 *
 * Losses.  An EXISTS that cannot be written (no buffer, or the advancing
 * thread has no thread slot) is counted lost like any event; the object
 * still moves to the new generation.  A decoder then sees a FREE of an
 * id it does not know in a generation that has losses.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <profring/stacktab.h>
#include <profring/tracebuf.h>

#include "ring/region.h"
#include "tracebuf/tracebuf_impl.h"

#define TB_MEM_PROBE 64
#define OBJ_EMPTY 0
#define OBJ_TOMB 1
#define OBJ_LIVE 1u
#define GEN_MASK 0x7fffffffu

static uint64_t gen31(uint64_t gen)
{
	return gen & GEN_MASK;
}

static uint64_t mk_state(uint32_t sid, uint64_t gen)
{
	return (uint64_t)sid << 32 | gen31(gen) << 1 | OBJ_LIVE;
}

static uint64_t st_gen(uint64_t s)
{
	return s >> 1 & GEN_MASK;
}

static uint32_t st_sid(uint64_t s)
{
	return (uint32_t)(s >> 32);
}

static uint64_t obj_id(const struct tb_mem *m, uint64_t addr)
{
	return (addr - m->min_addr) >> m->align_shift;
}

static int check_addr(const struct tb_mem *m, uintptr_t addr)
{
	if (!m->slots)
		return -EOPNOTSUPP;
	if (addr <= OBJ_TOMB || addr < m->min_addr ||
	    ((addr - m->min_addr) & (m->align - 1)))
		return -EINVAL;
	return 0;
}

static uint64_t obj_hash(const struct tb_mem *m, uint64_t addr)
{
	uint64_t h = (addr >> m->align_shift) * 0x9e3779b97f4a7c15ull;

	return (h ^ h >> 29) & m->mask;
}

static struct tb_obj *slot_at(const struct tb_mem *m, uint64_t h, unsigned i)
{
	return &m->slots[(h + i) & m->mask];
}

/*
 * The id of stack @sid of generation @old in generation @next's table, for
 * the object whose state says @old: 0 for no stack or on loss.
 */
static uint32_t restack(struct tracebuf *t, uint64_t old, uint64_t next,
			uint32_t sid)
{
	uintptr_t pcs[STACKTAB_MAX_DEPTH];
	size_t n;

	if (!sid)
		return 0;
	n = stacktab_get(t->stacks[old & 1], sid, pcs, STACKTAB_MAX_DEPTH);
	if (n > STACKTAB_MAX_DEPTH)
		n = STACKTAB_MAX_DEPTH;
	return n ? stacktab_put(t->stacks[next & 1], pcs, n) : 0;
}

static int emit_obj(struct tracebuf_ev *ev, unsigned int type, uint64_t addr,
		    uint64_t size, uint32_t sid)
{
	uint64_t args[3] = { obj_id(&ev->t->objs, addr), size, sid };

	return tb_emit(ev, type, args, type == TRACEBUF_EV_FREE ? 1 : 3);
}

/* Kill the live object in @o (at @addr) and emit its free; see above. */
static int obj_kill(struct tracebuf_ev *ev, struct tb_obj *o, uint64_t addr)
{
	/* Acquire: pairs with the insert's release store and the walk's CAS. */
	uint64_t s = atomic_load_explicit(&o->state, memory_order_acquire);
	uint64_t size;
	int rc = 0;

	do {
		if (!(s & OBJ_LIVE))
			return -ENOENT;
		/* Acq_rel: decides the race with the walk (see above). */
	} while (!atomic_compare_exchange_weak_explicit(
		&o->state, &s, 0, memory_order_acq_rel, memory_order_acquire));
	/* Ours now: nobody else changes size until the tombstone. */
	size = atomic_load_explicit(&o->size, memory_order_relaxed);
	if (st_gen(s) != gen31(ev->gen)) {
		/* The walk has not reached it: its EXISTS is ours to write. */
		uint32_t sid = st_gen(s) == gen31(ev->gen - 1)
				       ? restack(ev->t, ev->gen - 1, ev->gen,
						 st_sid(s))
				       : 0;

		rc = emit_obj(ev, TRACEBUF_EV_EXISTS, addr, size, sid);
	}
	if (!rc)
		rc = emit_obj(ev, TRACEBUF_EV_FREE, addr, 0, 0);
	else /* Neither in the snapshot nor freed: the FREE is lost too. */
		tb_count_lost(ev);
	/* Release: pairs with the acquire loads of the key in a probe. */
	atomic_store_explicit(&o->key, OBJ_TOMB, memory_order_release);
	return rc;
}

/* A slot for @addr, claimed (key set), or NULL: no free slot in reach. */
static struct tb_obj *obj_claim(struct tracebuf_ev *ev, uint64_t addr)
{
	struct tb_mem *m = &ev->t->objs;
	uint64_t h = obj_hash(m, addr);

	for (;;) {
		struct tb_obj *spot = NULL;
		uint64_t spot_key = 0;

		for (unsigned int i = 0; i < TB_MEM_PROBE; i++) {
			struct tb_obj *o = slot_at(m, h, i);
			/* Acquire: pairs with the release stores of keys. */
			uint64_t key = atomic_load_explicit(
				&o->key, memory_order_acquire);

			if (key == addr) {
				/* Its free was never seen: free it now. */
				obj_kill(ev, o, addr);
				key = atomic_load_explicit(
					&o->key, memory_order_acquire);
			}
			if (key <= OBJ_TOMB && !spot) {
				spot = o;
				spot_key = key;
			}
			if (key == OBJ_EMPTY)
				break;
		}
		if (!spot)
			return NULL;
		/* Acq_rel: the tombstone's kill happens before our stores. */
		if (atomic_compare_exchange_strong_explicit(
			    &spot->key, &spot_key, addr, memory_order_acq_rel,
			    memory_order_relaxed))
			return spot;
		/* Another insert took it: look again. */
	}
}

RING_API int tracebuf_ev_mem_alloc(struct tracebuf_ev *ev, uintptr_t addr,
				   size_t size, const uintptr_t *pcs, size_t n)
{
	struct tb_mem *m;
	struct tb_obj *o;
	uint32_t sid;
	int rc;

	if (!ev || !ev->t || (n && !pcs))
		return -EINVAL;
	m = &ev->t->objs;
	rc = check_addr(m, addr);
	if (rc)
		return rc;
	sid = n ? tracebuf_ev_stack(ev, pcs, n) : 0;
	o = obj_claim(ev, addr);
	if (!o) {
		atomic_fetch_add_explicit(&m->full, 1, memory_order_relaxed);
		tb_count_lost(ev);
		return -ENOSPC;
	}
	/* Release: pairs with the acquire loads of the walk. */
	atomic_store_explicit(&o->size, size, memory_order_release);
	/* Release: pairs with the acquire loads of a kill and the walk. */
	atomic_store_explicit(&o->state, mk_state(sid, ev->gen),
			      memory_order_release);
	rc = emit_obj(ev, TRACEBUF_EV_ALLOC, addr, size, sid);
	if (rc) {
		/*
		 * Lost (counted): the table must not show it either.  Ours
		 * alone (nobody frees what was never handed out, and the
		 * walk of this generation has not begun): relaxed state;
		 * release on the key, paired with a probe's acquire load.
		 */
		atomic_store_explicit(&o->state, 0, memory_order_relaxed);
		atomic_store_explicit(&o->key, OBJ_TOMB, memory_order_release);
	}
	return rc;
}

RING_API int tracebuf_ev_mem_free(struct tracebuf_ev *ev, uintptr_t addr)
{
	struct tb_mem *m;
	uint64_t h;
	int rc;

	if (!ev || !ev->t)
		return -EINVAL;
	m = &ev->t->objs;
	rc = check_addr(m, addr);
	if (rc)
		return rc;
	h = obj_hash(m, addr);
	for (unsigned int i = 0; i < TB_MEM_PROBE; i++) {
		struct tb_obj *o = slot_at(m, h, i);
		/* Acquire: pairs with the release stores of keys. */
		uint64_t key =
			atomic_load_explicit(&o->key, memory_order_acquire);

		if (key == addr)
			return obj_kill(ev, o, addr);
		if (key == OBJ_EMPTY)
			break;
	}
	return -ENOENT;
}

RING_API int tracebuf_mem_alloc(struct tracebuf *t, uintptr_t addr, size_t size,
				const uintptr_t *pcs, size_t n)
{
	struct tracebuf_ev ev;
	int rc = tracebuf_begin(t, &ev);

	if (rc)
		return rc;
	rc = tracebuf_ev_mem_alloc(&ev, addr, size, pcs, n);
	tracebuf_end(&ev);
	return rc;
}

RING_API int tracebuf_mem_free(struct tracebuf *t, uintptr_t addr)
{
	struct tracebuf_ev ev;
	int rc = tracebuf_begin(t, &ev);

	if (rc)
		return rc;
	rc = tracebuf_ev_mem_free(&ev, addr);
	tracebuf_end(&ev);
	return rc;
}

RING_API long tracebuf_mem_free_all(struct tracebuf *t)
{
	struct tracebuf_ev ev;
	struct tb_mem *m;
	long n = 0;
	int rc;

	if (!t)
		return -EINVAL;
	m = &t->objs;
	if (!m->slots)
		return -EOPNOTSUPP;
	rc = tracebuf_begin(t, &ev);
	if (rc)
		return rc;
	for (uint64_t i = 0; i <= m->mask; i++) {
		struct tb_obj *o = &m->slots[i];
		/* Acquire: pairs with the release stores of keys. */
		uint64_t key =
			atomic_load_explicit(&o->key, memory_order_acquire);

		if (key > OBJ_TOMB && obj_kill(&ev, o, key) != -ENOENT)
			n++;
	}
	tracebuf_end(&ev);
	return n;
}

/* ---- the snapshot (advance thread) --------------------------------------- */

/* restack(), remembered per old id for this walk (on OOM: not). */
static uint32_t remap(struct tracebuf *t, uint64_t old, uint64_t next,
		      uint32_t sid)
{
	struct tb_mem *m = &t->objs;

	if (sid >= m->remap_len) {
		size_t len = m->remap_len ? m->remap_len : 1024;
		uint32_t *p;

		while (len <= sid)
			len *= 2;
		p = realloc(m->remap, len * sizeof(*p));
		if (!p)
			return restack(t, old, next, sid);
		memset(p + m->remap_len, 0, (len - m->remap_len) * sizeof(*p));
		m->remap = p;
		m->remap_len = len;
	}
	if (!m->remap[sid])
		m->remap[sid] = restack(t, old, next, sid);
	return m->remap[sid];
}

/* Move one slot's object of @old to @next; see the protocol. */
static void snapshot_obj(struct tracebuf *t, struct tb_obj *o, uint64_t old,
			 uint64_t next, struct tracebuf_ev *ev)
{
	/* Acquire: pairs with the insert's release store. */
	uint64_t s = atomic_load_explicit(&o->state, memory_order_acquire);
	uint64_t key, size;
	uint32_t sid;

	do {
		if (!(s & OBJ_LIVE) || st_gen(s) != gen31(old))
			return;
		/* Acquire: a reuse seen here makes the CAS below fail. */
		key = atomic_load_explicit(&o->key, memory_order_acquire);
		size = atomic_load_explicit(&o->size, memory_order_acquire);
		sid = st_sid(s) ? remap(t, old, next, st_sid(s)) : 0;
		/* Acq_rel: decides the race with a kill (see above). */
	} while (!atomic_compare_exchange_strong_explicit(
		&o->state, &s, mk_state(sid, next), memory_order_acq_rel,
		memory_order_acquire));
	if (ev)
		emit_obj(ev, TRACEBUF_EV_EXISTS, key, size, sid);
	else /* No thread slot for the walk: counted as thread 0's. */
		atomic_fetch_add_explicit(&t->lost_noslot, 1,
					  memory_order_relaxed);
}

void tb_mem_snapshot(struct tracebuf *t, uint64_t old, uint64_t next)
{
	struct tb_mem *m = &t->objs;
	struct tracebuf_ev ev;
	bool can_emit;

	if (!m->slots || !next)
		return;
	if (m->remap)
		memset(m->remap, 0, m->remap_len * sizeof(*m->remap));
	/* A writer of @next (t->lock keeps the generation from moving). */
	can_emit = tb_begin(t, &ev, false) == 0;
	for (uint64_t i = 0; i <= m->mask; i++)
		snapshot_obj(t, &m->slots[i], old, next, can_emit ? &ev : NULL);
	if (can_emit)
		tracebuf_end(&ev);
	/* The frees that beat the walk are done with @old's stack table. */
	ring_grace_wait(&t->grace);
}

/*
 * tb_mem_live() - the objects in the table now, counted by a walk (for
 * tracebuf_stats(): a counter would cost every allocation and free an
 * atomic add on one shared line).  Approximate while writers run.
 */
uint64_t tb_mem_live(const struct tb_mem *m)
{
	uint64_t n = 0;

	for (uint64_t i = 0; m->slots && i <= m->mask; i++)
		/* Relaxed: a count for a report. */
		n += atomic_load_explicit(&m->slots[i].state,
					  memory_order_relaxed) &
		     OBJ_LIVE;
	return n;
}

/* ---- life cycle ---------------------------------------------------------- */

int tb_mem_init(struct tb_mem *m, const struct tracebuf_opts *o)
{
	size_t align = o->mem_align ? o->mem_align : 8;
	uint64_t nslots = 2;

	memset(m, 0, sizeof(*m));
	if (!o->mem_objects)
		return 0;
	if (o->mem_objects > TRACEBUF_MAX_MEM_OBJECTS || (align & (align - 1)))
		return -EINVAL;
	while (nslots < 2 * (uint64_t)o->mem_objects)
		nslots *= 2;
	m->slots = ring_map_zeroed(nslots * sizeof(*m->slots));
	if (!m->slots)
		return -ENOMEM;
	m->mask = nslots - 1;
	m->min_addr = o->mem_min_addr;
	m->align = align;
	while (((size_t)1 << m->align_shift) < align)
		m->align_shift++;
	m->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	return 0;
}

void tb_mem_destroy(struct tb_mem *m)
{
	if (m->slots)
		munmap(m->slots, (m->mask + 1) * sizeof(*m->slots));
	free(m->remap);
	memset(m, 0, sizeof(*m));
}
