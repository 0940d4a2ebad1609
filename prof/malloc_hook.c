// SPDX-License-Identifier: MIT
/*
 * prof/malloc_hook.c - the malloc family, interposed by
 * libprofring-prof.so for the heap profiler (heap.c).
 *
 * Each function calls the next definition in the lookup order (glibc's,
 * or an allocator preloaded after us), then tells heap.c: an allocation
 * after the block is had, a free before the block is given back (stream.h
 * says why the order matters; realloc gives its block back only if it
 * succeeds, so heap.c holds it meanwhile).  Pointers we did not sample,
 * or that came from another allocator, pass through untouched; with no
 * heap session each call costs one relaxed load more than the
 * allocator's.  If the program's malloc is not ours (its own, or an
 * allocator preloaded before us), none of this runs: prof_malloc_foreign()
 * tells the sessions, which warn.
 *
 * Bootstrap.  The next definitions are found with dlsym(RTLD_NEXT), and
 * dlsym itself may allocate (calloc, for its error state).  While a
 * thread resolves (the TLS flag `resolving`), its allocations come from a
 * static arena, zeroed and never reused; free() of an arena block does
 * nothing and malloc_usable_size() reads the size we stored before it.
 * Several threads may resolve at once: each stores the same pointers.
 *
 * Built into libprofring-prof.so only, and not under the sanitizers (they
 * own malloc there): the unit tests link the profiler without it.
 */
#include "prof/heap.h"

#include <dlfcn.h>
#include <errno.h>
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
	return (const char *)p >= arena &&
	       (const char *)p < arena + ARENA_BYTES;
}

/* A zeroed block of @size bytes aligned to @align (a power of two). */
static void *arena_alloc(size_t size, size_t align)
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

/* The next definitions are known; false while this thread resolves. */
static bool ready(void)
{
	/* Acquire: pairs with resolve()'s release. */
	if (ring_likely(atomic_load_explicit(&resolved, memory_order_acquire)))
		return true;
	if (resolving)
		return false;
	resolve();
	return next.malloc && next.free;
}

HOOK void *malloc(size_t size)
{
	void *p;

	if (!ready())
		return arena_alloc(size, 16);
	p = next.malloc(size);
	prof_heap_alloc(p, size, FRAME());
	return p;
}

HOOK void free(void *p)
{
	if (!p || in_arena(p))
		return;
	prof_heap_free(p);
	if (ready())
		next.free(p);
}

HOOK void *calloc(size_t n, size_t size)
{
	size_t bytes;
	void *p;

	if (!ready())
		return __builtin_mul_overflow(n, size, &bytes)
			       ? NULL
			       : arena_alloc(bytes, 16);
	p = next.calloc(n, size);
	if (p && !__builtin_mul_overflow(n, size, &bytes))
		prof_heap_alloc(p, bytes, FRAME());
	return p;
}

/*
 * realloc and reallocarray: a free of the old block, then an allocation
 * of the new one, if the realloc succeeds (a size of 0 frees the old
 * block in glibc; elsewhere it may return a new one); a failed one leaves
 * the profile as it was.  The old block is held meanwhile (heap.h).
 * reallocarray calls the next realloc, not the next reallocarray: glibc's
 * calls realloc through the lookup order, ours, which would count again.
 * When the program's realloc is not ours (an allocator preloaded before
 * us that has no reallocarray), reallocarray hands the call to it, the
 * allocator of the program's blocks, and counts nothing, as for its
 * other calls.
 * @frame: the interposed function's frame.
 */
static inline __attribute__((always_inline)) void *
realloc_from(void *old, size_t size, uintptr_t frame)
{
	long held;
	void *p;

	if (!ready() || in_arena(old)) {
		p = ready() ? next.malloc(size) : arena_alloc(size, 16);
		if (p && old && in_arena(old))
			memcpy(p, old,
			       arena_size(old) < size ? arena_size(old) : size);
		return p;
	}
	held = prof_heap_realloc_begin(old);
	p = next.realloc(old, size);
	prof_heap_realloc_end(old, held, p || !size);
	prof_heap_alloc(p, size, frame);
	return p;
}

HOOK void *realloc(void *old, size_t size)
{
	return realloc_from(old, size, FRAME());
}

HOOK void *reallocarray(void *old, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	if (ready() && next.foreign_realloc)
		return next.foreign_realloc(old, bytes);
	return realloc_from(old, bytes, FRAME());
}

HOOK int posix_memalign(void **out, size_t align, size_t size)
{
	int err;

	if (!ready()) {
		*out = arena_alloc(size, align);
		return *out ? 0 : ENOMEM;
	}
	err = next.posix_memalign(out, align, size);
	if (!err)
		prof_heap_alloc(*out, size, FRAME());
	return err;
}

HOOK void *aligned_alloc(size_t align, size_t size)
{
	void *p;

	if (!ready())
		return arena_alloc(size, align);
	p = next.aligned_alloc(align, size);
	prof_heap_alloc(p, size, FRAME());
	return p;
}

HOOK void *memalign(size_t align, size_t size)
{
	void *p;

	if (!ready())
		return arena_alloc(size, align);
	p = next.memalign(align, size);
	prof_heap_alloc(p, size, FRAME());
	return p;
}

HOOK void *valloc(size_t size)
{
	void *p;

	if (!ready())
		return arena_alloc(size, 4096);
	p = next.valloc ? next.valloc(size)
			: next.memalign((size_t)sysconf(_SC_PAGESIZE), size);
	prof_heap_alloc(p, size, FRAME());
	return p;
}

HOOK void *pvalloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	if (!ready())
		return arena_alloc((size + page - 1) & ~(page - 1), page);
	p = next.pvalloc ? next.pvalloc(size)
			 : next.memalign(page, (size + page - 1) & ~(page - 1));
	prof_heap_alloc(p, size, FRAME());
	return p;
}

/**
 * prof_malloc_foreign() - the file of the malloc the program's calls reach
 * (the first definition in the global lookup order: the executable's, or
 * an allocator preloaded before us) when it is not ours, or NULL when it
 * is ours.  Not async-signal-safe (dlsym).
 */
const char *prof_malloc_foreign(void)
{
	void *m = foreign(dlsym(RTLD_DEFAULT, "malloc"));
	Dl_info won;

	if (!m || !dladdr(m, &won))
		return NULL;
	return won.dli_fname && *won.dli_fname ? won.dli_fname : "the program";
}

HOOK size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (in_arena(p))
		return arena_size(p);
	return ready() && next.malloc_usable_size ? next.malloc_usable_size(p)
						  : 0;
}
