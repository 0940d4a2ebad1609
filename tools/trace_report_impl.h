/* SPDX-License-Identifier: MIT */
/*
 * tools/trace_report_impl.h - what the files of profring-trace's reports
 * share (trace_report.c says which does what): what the first pass
 * learns of a stream, the indexes it is found through, the lookups, the
 * output helpers and the reports.  Internal to the tools.
 */
#ifndef PROFRING_TOOLS_TRACE_REPORT_IMPL_H
#define PROFRING_TOOLS_TRACE_REPORT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <profring/tracedec.h>

#define NLEVELS 2
#define JSON_MAX_SAFE_INT (1ull << 53)

struct str_ent {
	uint64_t id;
	const char *s; /* in the stream */
	size_t len;
};

struct stack_ent {
	uint64_t id;
	size_t off; /* of its PCs in trace.pcs */
	size_t n;
	uint64_t alloc_count, alloc_bytes; /* trace_mem.c's top stacks */
};

struct type_ent {
	unsigned int type;
	const char *name; /* in the stream */
	const char *spec;
	size_t name_len, spec_len;
};

/* What the first pass learns about one generation. */
struct gen_info {
	uint64_t gen; /* first: the index's key */
	uint64_t hz; /* 0: no F record */
	unsigned int version; /* the stream's: types 3-5 mean memory from 2 */
	bool has_mem_info; /* an M record: */
	uint64_t min_addr, align;
	uint64_t min_ticks, max_ticks;
	uint64_t events, batches, flags;
	bool ended;
	struct str_ent *strs;
	size_t nstrs, cap_strs;
	struct stack_ent *stacks;
	size_t nstacks, cap_stacks;
	struct type_ent *types; /* the types it names, each once */
	size_t ntypes;
};

struct thread_info {
	uint64_t tid; /* first: the index's key */
	uint64_t events[NLEVELS];
	uint64_t lost[NLEVELS];
};

/*
 * An index over an array of entries whose first member is their uint64_t
 * key: open addressing with linear probing; a slot holds an entry's
 * position + 1 (0: empty).  At most half the slots are used.
 */
struct index {
	size_t *slots;
	size_t cap; /* 0, or a power of two from 64 */
	size_t n;
};

struct trace {
	const char *path;
	const uint8_t *buf;
	size_t len;
	bool mapped; /* buf maps a file: trace_walk() gives pages back */
	unsigned int version; /* of the stream's header */
	uint64_t seed; /* of the indexes' hash */
	struct gen_info *gens; /* in the order the stream names them */
	size_t ngens, cap_gens, gen_hint;
	struct index gen_index;
	struct thread_info *threads; /* in the order the stream names them */
	size_t nthreads, cap_threads, thread_hint;
	struct index thread_index;
	uint64_t *pcs; /* every stack's PCs */
	size_t npcs, cap_pcs;
	uint64_t type_events[TRACEDEC_MAX_TYPE + 1];
	uint64_t events, payload_events, lost, batches, strings, stacks;
	uint64_t table_failures;
	uint64_t fallback_hz; /* for a generation without an F record */
	bool hz_guessed;
	uint64_t base_ns, end_ns; /* first and last event */
	/* printing state (second pass) */
	FILE *out, *err;
	uint64_t printed;
	uint64_t last_gen, last_tid, last_seq;
	unsigned int last_level;
	bool in_batch;
};

/* The bytes trace_walk() hands the decoder at a time. */
#define WALK_WINDOW ((size_t)16 << 20)

/**
 * trace_walk() - decode the stream with @v and @arg (the incremental
 * decoder, WALK_WINDOW bytes at a time; a mapped stream's pages given
 * back behind it).
 * Return: as tracedec_decode().
 */
int trace_walk(struct trace *t, const struct tracedec_visitor *v, void *arg,
	       struct tracedec_error *err);

/*
 * trace_mem_walk() - the same with tracedec_mem_stream_* (the memory
 * events replayed a generation at a time).  Return: as
 * tracedec_mem_check() (the stream is known to decode).
 */
int trace_mem_walk(struct trace *t, const struct tracedec_mem_visitor *v,
		   void *arg);

/* The generation @gen, or NULL; @add creates it (NULL when out of memory). */
struct gen_info *gen_get(struct trace *t, uint64_t gen, bool add);

/* Stack @id of @g (its PCs at t->pcs + off), or NULL. */
const struct stack_ent *find_stack(const struct gen_info *g, uint64_t id);

/* Ticks of @g's clock to nanoseconds. */
uint64_t to_ns(const struct trace *t, const struct gen_info *g, uint64_t ticks);

/* The failure's one line on t->err: "profring-trace: NAME: @what". */
void complain(const struct trace *t, const char *what);

/*
 * The memory reports (trace_mem.c), after the first pass: the summary's
 * memory lines (Return: 0, or 1 when the stream contradicts itself
 * where no loss explains it: said on t->err too; -1 on failure), and the
 * json report's live-heap counter events (0 or -1).
 */
int trace_mem_summary(struct trace *t);
int trace_mem_json(struct trace *t);

/* ---- trace_index.c ---- */

/* The kernel's 16 random bytes for this process (else a constant). */
uint64_t trace_seed(void);

/* The position of @key's entry in @base, found through @x; or SIZE_MAX. */
size_t index_find(const struct index *x, uint64_t seed, const void *base,
		  size_t esize, uint64_t key);

/*
 * Put the entry at @pos of @base (the last, its key set, not yet in @x)
 * into @x.  Return: 0, or -1 when out of memory.
 */
int index_add(struct index *x, uint64_t seed, const void *base, size_t esize,
	      size_t pos);

/*
 * Room for @need elements of @size bytes in @arr (of *@cap), half again
 * as many each time.  Return: the array, or NULL (@arr and *@cap as they
 * were).
 */
void *trace_grow(void *arr, size_t *cap, size_t need, size_t size);

/* ---- trace_collect.c ---- */

/* The first pass's visitor (its arg: the struct trace). */
extern const struct tracedec_visitor trace_collect_visitor;

/* After the first pass: sort the id tables, find the first and last times. */
void trace_finish_collect(struct trace *t);

/* Free what the first pass allocated. */
void trace_free(struct trace *t);

/* Is @ev a span (type 6 from version 3 on)? */
bool is_span(const struct tracedec_event *ev);

/* String @id of @g, or NULL. */
const struct str_ent *find_string(const struct gen_info *g, uint64_t id);

/* The type table entry of @type in @g, if @g names it. */
struct type_ent *named_type(const struct gen_info *g, unsigned int type);

/* The name of @type in @g (or a built-in one); NULL if it has none. */
const char *type_name(const struct gen_info *g, unsigned int type, size_t *len);

/* The spec letter of argument @i of @type in @g: 'u' when unknown. */
char type_arg(const struct gen_info *g, unsigned int type, unsigned int i);

/* ---- trace_text.c ---- */

/* @len bytes for the text reports, every other byte escaped. */
void put_text(FILE *out, const char *s, size_t len);

/* @len bytes as a JSON string literal. */
void put_quoted(FILE *out, const char *s, size_t len);

/* @n bytes in hex. */
void put_hex_bytes(FILE *out, const uint8_t *p, size_t n);

/* A type's name, or "type N", quoted for JSON or escaped for text. */
void put_type(FILE *out, const struct gen_info *g, unsigned int type,
	      bool json);

/* A string or stack argument resolved; false: not written (put_ref()). */
bool put_ref(const struct trace *t, const struct gen_info *g, char kind,
	     uint64_t v, bool json);

/* ---- trace_report.c ---- */

/* tracedec_decode() over the stream with @v: 0, or -1 said on t->err. */
int trace_decode(struct trace *t, const struct tracedec_visitor *v);

/* ---- the reports: 0, or -1 (trace_summary(): 1 as trace_mem_summary) ---- */

int trace_dump(struct trace *t);
int trace_summary(struct trace *t);
int trace_json(struct trace *t);

#endif /* PROFRING_TOOLS_TRACE_REPORT_IMPL_H */
