// SPDX-License-Identifier: MIT
/*
 * frames_test.c - unit tests for the frames the writers keep (pprof.c,
 * folded.c through builder.c's pb_frame_loc()).
 *
 * A frame-pointer walk from a leaf that has no frame (a libc system call
 * wrapper) reads its caller's frame pointer register, which code built
 * without frame pointers uses for anything: `sleep 2` under wall mode
 * showed a caller 0x39397156, in no mapping.  A return address that lies
 * in no mapping of a space whose mappings are known, and that nothing
 * names, is dropped from the pprof and the folded files; the leaf (the
 * PC, code that ran: JIT code, say) is kept wherever it lies, and so is
 * every frame of a space with no symbolizer.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "testing/ktest.h"
#include "testing/tmpfiles.h"
#include "pprof/decode.h"
#include "pprof/pprof.h"
#include "pprof/symbolize.h"
#include "pprof/symbolize_testing.h"

#define JUNK ((uintptr_t)0x39397156)

static struct prof_symbolizer *space; /* this program's code mapping */

/* A symbolizer of this program's code mapping only, as the launcher's. */
static struct prof_symbolizer *exe_space(void)
{
	struct prof_symbolizer *own = prof_symbolizer_new();
	const struct prof_mapping *m;
	struct prof_symbolizer *s = NULL;
	struct prof_map_spec spec;
	unsigned int id = 0;

	prof_symbolize(own, root, &id);
	m = mapping_by_id(own, id);
	if (m) {
		spec = (struct prof_map_spec){ m->start, m->limit, m->offset,
					       m->path };
		s = prof_symbolizer_new_maps(&spec, 1);
	}
	prof_symbolizer_free(own);
	return s;
}

/* The gunzip'd bytes of @path (free() them; at most 1 MiB), or NULL. */
static uint8_t *gunzip_file(const char *path, size_t *len)
{
	gzFile gz = gzopen(path, "rb");
	uint8_t *buf = malloc(1 << 20);
	int n = -1;

	if (gz && buf)
		n = gzread(gz, buf, 1 << 20);
	if (gz)
		gzclose(gz);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	*len = (size_t)n;
	return buf;
}

/* The folded text of one sample of @pcs (free() it), or NULL. */
static char *folded(const uintptr_t *pcs, size_t n, struct prof_symbolizer *s)
{
	const char *path = tmp_path("frames.folded");
	struct prof_sample ps = {
		.pcs = pcs, .npcs = n, .samples = 1, .periods = 1
	};
	struct prof_profile p = { .samples = &ps,
				  .nsamples = 1,
				  .period_ns = 1000000 };
	size_t len;
	char *text;

	if (prof_folded_write(&p, s, path))
		return NULL;
	text = read_text(path, &len);
	unlink(path);
	return text;
}

static void check_text(const char *text, const char *want)
{
	KT_REQUIRE(text);
	if (strcmp(text, want))
		fprintf(stderr, "  got %s  want %s", text, want);
	KT_CHECK(!strcmp(text, want));
}

/* A junk caller between real ones: gone from the folded stack. */
static void junk_caller_dropped_folded(void)
{
	uintptr_t pcs[4] = { leaf + 4, JUNK, mid + 9, root + 9 };
	char *text = folded(pcs, 4, space);

	check_text(text, "root_fn;mid_fn;leaf_fn 1\n");
	free(text);
}

/* The same in the pprof file: three locations, none at the junk. */
static void junk_caller_dropped_pprof(void)
{
	uintptr_t pcs[4] = { leaf + 4, JUNK, mid + 9, root + 9 };
	struct prof_sample ps = {
		.pcs = pcs, .npcs = 4, .samples = 1, .periods = 1
	};
	struct prof_profile p = { .samples = &ps,
				  .nsamples = 1,
				  .period_ns = 1000000 };
	const char *path = tmp_path("frames.pb.gz");
	char msg[256] = "";
	struct pprof_err e = { msg, sizeof(msg), false };
	struct pprof_doc doc;
	uint8_t *raw;
	size_t len;

	KT_REQUIRE(!prof_pprof_write(&p, space, path));
	raw = gunzip_file(path, &len);
	unlink(path);
	KT_REQUIRE(raw);
	memset(&doc, 0, sizeof(doc));
	KT_CHECK_EQ(pprof_doc_decode(&doc, raw, len, &e), 0);
	if (e.failed)
		fprintf(stderr, "  decode: %s\n", msg);
	KT_CHECK_EQ(doc.locs.n, 3);
	for (size_t i = 0; i < doc.locs.n; i++) {
		const struct d_loc *l = &VEC_AT(doc.locs, struct d_loc, i);

		KT_CHECK(l->address != JUNK - 1);
		KT_CHECK(l->map != DOC_NONE);
	}
	pprof_doc_free(&doc);
	free(raw);
}

/* A leaf in no mapping ran: kept, named by its address. */
static void junk_leaf_kept(void)
{
	uintptr_t pcs[2] = { JUNK, root + 9 };
	char want[64], *text = folded(pcs, 2, space);

	snprintf(want, sizeof(want), "root_fn;0x%" PRIxPTR " 1\n", JUNK);
	check_text(text, want);
	free(text);
}

/* No symbolizer: no mapping is known, no frame is dropped. */
static void unknown_mappings_keep_all(void)
{
	uintptr_t pcs[3] = { leaf + 4, JUNK, root + 9 };
	char want[128], *text = folded(pcs, 3, NULL);

	snprintf(want, sizeof(want),
		 "0x%" PRIxPTR ";0x%" PRIxPTR ";0x%" PRIxPTR " 1\n", root + 8,
		 JUNK - 1, leaf + 4);
	check_text(text, want);
	free(text);
}

int main(void)
{
	if (tmpfiles_init("frames_test"))
		return EXIT_FAILURE;
	root_fn(3); /* they are real functions */
	find_functions();
	space = exe_space();
	if (!space) {
		printf("FAIL frames_exe_space\n");
		tmpfiles_done();
		return EXIT_FAILURE;
	}
	KT_RUN(junk_caller_dropped_folded);
	KT_RUN(junk_caller_dropped_pprof);
	KT_RUN(junk_leaf_kept);
	KT_RUN(unknown_mappings_keep_all);
	prof_symbolizer_free(space);
	tmpfiles_done();
	return ktest_exit();
}
