// SPDX-License-Identifier: MIT
/*
 * profbuf_call_test.c - profbuf_test.c's cases with every write through
 * the library's profbuf_write() symbol: the path of a binary built with
 * PROFRING_NO_INLINE, without optimization, or before the inline write
 * path existed (<profring/profbuf_inline.h>).  profbuf_test.c itself
 * writes inline.
 */
#define PROFRING_NO_INLINE
#include "profbuf/profbuf_test.c"
