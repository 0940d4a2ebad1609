// SPDX-License-Identifier: MIT
/*
 * prof/agent/malloc_hook.c - the malloc family, interposed by
 * libprofring-prof.so for the heap profiler (heap.c).
 *
 * The sampling decision comes first (prof_heap_take(): the thread's own
 * countdown).  An unsampled call goes to the next definition in the
 * lookup order (glibc's, or an allocator preloaded after us) as a tail
 * call; a sampled one takes its block from heap.c's pool, in a slow path
 * of its own (noinline: its frame starts the stack heap.c walks, and
 * keeps the fast paths free of frame setup).  free() and friends know a
 * sampled block by its address alone (prof_heap_owns(): the pool's
 * bounds, which never change), so an unsampled free() reads nothing any
 * other thread writes.  Sampled blocks never reach the allocator, and the
 * allocator's blocks never reach the pool: realloc() of one into the
 * other copies (heap.c, prof_heap_realloc()).  If the program's malloc is
 * not ours (its own, or an allocator preloaded before us), none of this
 * runs: prof_malloc_foreign() tells the sessions, which warn.
 *
 * Bootstrap.  The next definitions are found with dlsym(RTLD_NEXT), and
 * dlsym itself may allocate (calloc, for its error state).  While a
 * thread resolves (the TLS flag `resolving`), its allocations come from a
 * static arena, zeroed and never reused; free() of an arena block does
 * nothing and malloc_usable_size() reads the size we stored before it.
 * Several threads may resolve at once: each stores the same pointers.
 *
 * Built into libprofring-prof.so only, and not under the sanitizers (they
 * own malloc there): the unit tests link the profiler without it.  Built
 * without frame pointers: the fast paths set up no frame and jump to the
 * allocator; the slow paths that start a recorded stack take their frame
 * with __builtin_frame_address(0), which gives them one.
 */
#include "prof/agent/heap.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define HOOK __attribute__((visibility("default")))
#define FRAME() ((uintptr_t)__builtin_frame_address(0))

struct next_fns {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
	/* The program's realloc when it is not ours (reallocarray()). */
	void *(*foreign_realloc)(void *, size_t);
};

static struct next_fns next;
static _Atomic int resolved;
static _Thread_local int resolving __attribute__((tls_model("initial-exec")));

#define ARENA_BYTES (64u << 10)
static alignas(64) char arena[ARENA_BYTES];
static _Atomic size_t arena_used;

static bool in_arena(const void *p)
{
	return (uintptr_t)p - (uintptr_t)arena < ARENA_BYTES;
}

/* A zeroed block of @size bytes aligned to @align (a power of two). */
static __attribute__((noinline, cold)) void *arena_alloc(size_t size,
							 size_t align)
{
	size_t old, start, end;

	if (align < 16)
		align = 16;
	/* Relaxed: the arena's bytes are each handed out once. */
	old = atomic_load_explicit(&arena_used, memory_order_relaxed);
	do {
		start = (old + sizeof(size_t) + align - 1) & ~(align - 1);
		if (size > ARENA_BYTES || start > ARENA_BYTES - size)
			return NULL;
		end = start + size;
	} while (!atomic_compare_exchange_weak_explicit(&arena_used, &old, end,
							memory_order_relaxed,
							memory_order_relaxed));
	memcpy(arena + start - sizeof(size_t), &size, sizeof(size));
	return arena + start;
}

static size_t arena_size(const void *p)
{
	size_t size;

	memcpy(&size, (const char *)p - sizeof(size_t), sizeof(size));
	return size;
}

static bool ready(void);

/* @fn, if it is not in our library; else NULL. */
static void *foreign(void *fn)
{
	Dl_info won, mine;

	if (!fn || !dladdr(fn, &won) || !dladdr((void *)ready, &mine) ||
	    won.dli_fbase == mine.dli_fbase)
		return NULL;
	return fn;
}

#define LOOK(name) (next.name = (__typeof__(next.name))dlsym(RTLD_NEXT, #name))

static void resolve(void)
{
	resolving = 1;
	LOOK(malloc);
	LOOK(free);
	LOOK(calloc);
	LOOK(realloc);
	LOOK(posix_memalign);
	LOOK(aligned_alloc);
	LOOK(memalign);
	LOOK(valloc);
	LOOK(pvalloc);
	LOOK(malloc_usable_size);
	next.foreign_realloc = (__typeof__(next.foreign_realloc))foreign(
		dlsym(RTLD_DEFAULT, "realloc"));
	resolving = 0;
	/* Release: pairs with ready()'s acquire; the pointers are set. */
	atomic_store_explicit(&resolved, 1, memory_order_release);
}

static __attribute__((noinline, cold)) bool resolve_once(void)
{
	if (resolving)
		return false;
	resolve();
	return next.malloc && next.free;
}

/* The next definitions are known; false while this thread resolves. */
static inline bool ready(void)
{
	/* Acquire: pairs with resolve()'s release. */
	if (ring_likely(atomic_load_explicit(&resolved, memory_order_acquire)))
		return true;
	return resolve_once();
}

/* The allocator's functions, for heap.c's realloc (after ready()). */
static const struct prof_heap_next *next_heap(void)
{
	static struct prof_heap_next nx;

	nx = (struct prof_heap_next){
		.malloc = next.malloc,
		.free = next.free,
		.realloc = next.realloc,
		.usable = next.malloc_usable_size,
	};
	return &nx;
}

/* What a sampled allocation falls back to: the call the program made. */
enum alloc_kind { ALLOC_MALLOC, ALLOC_CALLOC, ALLOC_MEMALIGN };

static void *next_alloc(enum alloc_kind kind, size_t size, size_t align)
{
	switch (kind) {
	case ALLOC_CALLOC:
		return next.calloc(1, size);
	case ALLOC_MEMALIGN:
		return next.memalign(align, size);
	default:
		return next.malloc(size);
	}
}

/*
 * The slow path of every allocation whose countdown ran out: a block
 * from the pool, or, when heap.c does not sample it after all, from the
 * allocator.  Its own frame starts the recorded stack: its return address
 * is in the program when the hook jumped here.
 */
static __attribute__((noinline)) void *sampled(enum alloc_kind kind,
					       size_t size, size_t align)
{
	uintptr_t frame = FRAME();
	bool untracked;
	void *p = prof_heap_new(size, align, kind == ALLOC_CALLOC, frame,
				&untracked);

	if (p)
		return p;
	p = next_alloc(kind, size, align);
	if (untracked)
		prof_heap_untracked(p, size, frame);
	return p;
}

HOOK void *malloc(size_t size)
{
	if (ring_unlikely(!ready()))
		return arena_alloc(size, 16);
	if (ring_likely(!prof_heap_take(size)))
		return next.malloc(size);
	return sampled(ALLOC_MALLOC, size, 16);
}

HOOK void free(void *p)
{
	if (ring_unlikely(prof_heap_owns(p))) {
		prof_heap_release(p);
		return;
	}
	if (ring_unlikely(in_arena(p)))
		return;
	if (ring_likely(ready()))
		next.free(p); /* NULL included: the allocator's no-op */
}

HOOK void *calloc(size_t n, size_t size)
{
	size_t bytes;

	if (ring_unlikely(!ready()))
		return __builtin_mul_overflow(n, size, &bytes)
			       ? NULL
			       : arena_alloc(bytes, 16);
	if (__builtin_mul_overflow(n, size, &bytes) ||
	    ring_likely(!prof_heap_take(bytes)))
		return next.calloc(n, size);
	return sampled(ALLOC_CALLOC, bytes, 16);
}

/*
 * realloc and reallocarray.  A pooled block, or a realloc whose new
 * size's countdown ran out, goes to heap.c, which never lets a failed
 * realloc change the block or the profile; anything else is the
 * allocator's call.  reallocarray calls the next realloc, not the next
 * reallocarray: glibc's calls realloc through the lookup order, ours,
 * which would count again.  When the program's realloc is not ours (an
 * allocator preloaded before us that has no reallocarray), reallocarray
 * hands the call to it, the allocator of the program's blocks, and counts
 * nothing, as for its other calls.
 */
static __attribute__((noinline)) void *realloc_slow(void *old, size_t size)
{
	return prof_heap_realloc(old, size, FRAME(), next_heap());
}

static void *realloc_boot(void *old, size_t size)
{
	void *p = ready() ? next.malloc(size) : arena_alloc(size, 16);

	if (p && old && in_arena(old))
		memcpy(p, old, arena_size(old) < size ? arena_size(old) : size);
	return p;
}

HOOK void *realloc(void *old, size_t size)
{
	if (ring_unlikely(!ready() || in_arena(old)))
		return realloc_boot(old, size);
	if (ring_unlikely(prof_heap_owns(old)) ||
	    ring_unlikely(prof_heap_take(size)))
		return realloc_slow(old, size);
	return next.realloc(old, size);
}

HOOK void *reallocarray(void *old, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	if (ready() && next.foreign_realloc && !prof_heap_owns(old))
		return next.foreign_realloc(old, bytes);
	return realloc(old, bytes);
}

/* Power-of-two alignments the pool serves; others go to the allocator. */
static bool pool_align(size_t align)
{
	return align && !(align & (align - 1));
}

static __attribute__((noinline)) int memalign_sampled(void **out, size_t align,
						      size_t size)
{
	uintptr_t frame = FRAME();
	bool untracked;
	void *p = prof_heap_new(size, align, false, frame, &untracked);
	int err;

	if (p) {
		*out = p;
		return 0;
	}
	err = next.posix_memalign(out, align, size);
	if (untracked)
		prof_heap_untracked(err ? NULL : *out, size, frame);
	return err;
}

HOOK int posix_memalign(void **out, size_t align, size_t size)
{
	if (ring_unlikely(!ready())) {
		*out = arena_alloc(size, align);
		return *out ? 0 : ENOMEM;
	}
	if (align % sizeof(void *) || !pool_align(align) ||
	    ring_likely(!prof_heap_take(size)))
		return next.posix_memalign(out, align, size);
	return memalign_sampled(out, align, size);
}

HOOK void *aligned_alloc(size_t align, size_t size)
{
	if (ring_unlikely(!ready()))
		return arena_alloc(size, align);
	if (!pool_align(align) || ring_likely(!prof_heap_take(size)))
		return next.aligned_alloc(align, size);
	return sampled(ALLOC_MEMALIGN, size, align);
}

HOOK void *memalign(size_t align, size_t size)
{
	if (ring_unlikely(!ready()))
		return arena_alloc(size, align);
	if (!pool_align(align) || ring_likely(!prof_heap_take(size)))
		return next.memalign(align, size);
	return sampled(ALLOC_MEMALIGN, size, align);
}

HOOK void *valloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (ring_unlikely(!ready()))
		return arena_alloc(size, page);
	if (ring_likely(!prof_heap_take(size)))
		return next.valloc ? next.valloc(size)
				   : next.memalign(page, size);
	return sampled(ALLOC_MEMALIGN, size, page);
}

HOOK void *pvalloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t whole = (size + page - 1) & ~(page - 1);

	if (ring_unlikely(!ready()))
		return arena_alloc(whole, page);
	if (ring_likely(!prof_heap_take(size)))
		return next.pvalloc ? next.pvalloc(size)
				    : next.memalign(page, whole);
	return sampled(ALLOC_MEMALIGN, whole, page);
}

/*
 * The first object after the executable, in load order (the global lookup
 * order: preloads, then the needed libraries), that defines @name itself:
 * its definition, or NULL.
 */
static void *first_definition_after_exe(const char *name)
{
	struct link_map *lm = NULL;
	void *self = dlopen(NULL, RTLD_LAZY), *found = NULL;

	if (!self || dlinfo(self, RTLD_DI_LINKMAP, &lm) || !lm)
		goto out;
	for (lm = lm->l_next; lm && !found; lm = lm->l_next) {
		void *h = lm->l_name[0]
				  ? dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD)
				  : NULL;
		void *p = h ? dlsym(h, name) : NULL;
		Dl_info in;

		/* dlsym(h) also searches h's dependencies: its own only. */
		if (p && dladdr(p, &in) && in.dli_fname &&
		    !strcmp(in.dli_fname, lm->l_name))
			found = p;
		if (h)
			dlclose(h);
	}
out:
	if (self)
		dlclose(self);
	return found;
}

/**
 * prof_malloc_foreign() - the file of the malloc the program's calls reach
 * (the first definition in the global lookup order: the executable's, or
 * an allocator preloaded before us) when it is not ours, or NULL when it
 * is ours.  A non-PIE executable that takes malloc's address has a
 * "canonical PLT" entry for it: an undefined symbol with a value, which
 * dlsym() returns, though the entry only jumps to the first definition
 * after the executable; that definition is the one looked at.  Not
 * async-signal-safe (dlsym).
 */
const char *prof_malloc_foreign(void)
{
	void *m = dlsym(RTLD_DEFAULT, "malloc");
	const ElfW(Sym) *sym = NULL;
	Dl_info won;

	if (m && dladdr1(m, &won, (void **)&sym, RTLD_DL_SYMENT) && sym &&
	    sym->st_shndx == SHN_UNDEF)
		m = first_definition_after_exe("malloc");
	m = foreign(m);
	if (!m || !dladdr(m, &won))
		return NULL;
	return won.dli_fname && *won.dli_fname ? won.dli_fname : "the program";
}

HOOK size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (prof_heap_owns(p))
		return prof_heap_usable(p);
	if (in_arena(p))
		return arena_size(p);
	return ready() && next.malloc_usable_size ? next.malloc_usable_size(p)
						  : 0;
}
