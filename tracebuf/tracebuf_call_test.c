// SPDX-License-Identifier: MIT
/*
 * tracebuf_call_test.c - tracebuf_test.c's cases with every
 * tracebuf_emit() through the library's symbol: the path of a binary
 * built with PROFRING_NO_INLINE, without optimization, for C++, or before
 * the inline emit path existed (<profring/tracebuf_inline.h>).
 * tracebuf_test.c itself emits inline.
 */
#define PROFRING_NO_INLINE
#include "tracebuf/tracebuf_test.c"
