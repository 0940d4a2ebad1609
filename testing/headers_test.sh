#!/bin/sh
# SPDX-License-Identifier: MIT
#
# testing/headers_test.sh - the public headers as users compile them.
#
#	sh testing/headers_test.sh BUILD
#
# A file that includes every public header and writes with profbuf_write()
# and tracebuf_emit() (constant and variable lengths) must compile without
# a warning (-Wall -Wextra -Werror) as C99 -pedantic, C11 and C++17, by
# gcc and clang where installed, at -O0 and -O2.  The inline paths'
# promises (<profring/profbuf_inline.h>, <profring/tracebuf_inline.h>):
# an optimized C object emits inline, so it names the library's TLS ways
# (profring__grace_tls); an -O0, a PROFRING_NO_INLINE or a C++ object
# calls the library and does not.  Then a program built with the inline
# paths, linked against BUILD's libprofring.so (the only test of them
# across the shared library's boundary: the unit tests link statically),
# must get every event and record back.  Skipped for a sanitizer build.
BUILD=${1:-build}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0

pass() { echo "PASS headers: $1"; }
fail() {
	echo "FAIL headers: $1"
	fails=$((fails + 1))
}

cat >"$tmp/use.c" <<'EOF'
#include <stdio.h>

#include <profring/prof.h>
#include <profring/profbuf.h>
#include <profring/profbuf_group.h>
#include <profring/stacktab.h>
#include <profring/tracebuf.h>
#include <profring/tracedec.h>

int use(struct profbuf *b, struct tracebuf *t, const uint64_t *a,
	unsigned int n);

int use(struct profbuf *b, struct tracebuf *t, const uint64_t *a,
	unsigned int n)
{
	uint64_t hdr[2] = { 1, 2 };
	uintptr_t stk[3] = { 4, 5, 6 };

	return profbuf_write(b, NULL, 7, hdr, 2, stk, 3) |
	       profbuf_write(b, NULL, 7, hdr, 1, (const uintptr_t *)a, n) |
	       tracebuf_emit(t, 8, hdr, 2) | tracebuf_emit(t, 9, a, n) |
	       tracebuf_emit(t, 10, NULL, 0);
}

#ifdef WITH_MAIN
#define EVENTS 100000
int main(void)
{
	struct tracebuf *t = tracebuf_new(NULL);
	struct profbuf *b = profbuf_new(2, 1 << 12, 128);
	struct tracebuf_chunk c;
	struct tracebuf_stats st;
	uint64_t hdr[2] = { 1, 2 }, got = 0;
	struct profbuf_read r;
	int bad = 0;

	if (!t || !b || tracebuf_start(t))
		return 2;
	for (uint64_t i = 0; i < EVENTS; i++)
		bad |= tracebuf_emit(t, 8, &i, 1);
	for (int i = 0; i < 100; i++)
		bad |= profbuf_write(b, NULL, 7, hdr, 2, NULL, 0);
	tracebuf_stop(t);
	do
		if (tracebuf_read(t, PROFBUF_NONBLOCKING, &c))
			return 2;
	while (!c.eof);
	tracebuf_stats(t, &st);
	do {
		if (profbuf_read(b, PROFBUF_NONBLOCKING, &r))
			return 2;
		got += r.ntags;
	} while (r.ntags);
	printf("emit %d, lost %llu, records %llu\n", bad,
	       (unsigned long long)st.lost, (unsigned long long)got);
	tracebuf_free(t);
	profbuf_free(b);
	return bad || st.lost || got != 100;
}
#endif
EOF

# compile NAME CC FLAGS...: compile use.c to $tmp/NAME.o, warnings fatal.
compile() {
	name=$1
	shift
	if out=$("$@" -Wall -Wextra -Werror -Iinclude -c "$tmp/use.c" \
		-o "$tmp/$name.o" 2>&1); then
		pass "$name compiles"
	else
		printf '%s\n' "$out" | head -10
		fail "$name compiles"
	fi
}

# names NAME yes|no: whether $tmp/NAME.o names profring__grace_tls.
names() {
	[ -f "$tmp/$1.o" ] || return
	if nm "$tmp/$1.o" | grep -q ' U profring__grace_tls$'; then
		has=yes
	else
		has=no
	fi
	if [ "$has" = "$2" ]; then
		pass "$1 names profring__grace_tls: $2"
	else
		fail "$1 names profring__grace_tls: $has, want $2"
	fi
}

for cc in gcc clang; do
	command -v $cc >/dev/null 2>&1 || {
		echo "SKIP headers: $cc not installed"
		continue
	}
	compile "$cc-c99-O2" $cc -std=c99 -pedantic -O2
	names "$cc-c99-O2" yes
	compile "$cc-c11-O0" $cc -std=c11 -O0
	names "$cc-c11-O0" no
	compile "$cc-c11-O2-noinline" $cc -std=c11 -O2 -DPROFRING_NO_INLINE
	names "$cc-c11-O2-noinline" no
done
for cxx in g++ clang++; do
	command -v $cxx >/dev/null 2>&1 || {
		echo "SKIP headers: $cxx not installed"
		continue
	}
	compile "$cxx-c++17-O2" $cxx -x c++ -std=c++17 -O2
	names "$cxx-c++17-O2" no
done

so=$BUILD/libprofring.so
if [ ! -f "$so" ]; then
	echo "SKIP headers: $so not built"
elif nm -D "$so" | grep -q '__[at]san_'; then
	echo "SKIP headers: $so is a sanitizer build"
elif ! gcc -std=c11 -O2 -DWITH_MAIN -Iinclude "$tmp/use.c" -o "$tmp/use" \
	-L"$BUILD" -lprofring 2>"$tmp/link.err"; then
	head -10 "$tmp/link.err"
	fail "a program against $so links"
elif out=$(LD_LIBRARY_PATH=$BUILD timeout -k 5 60 "$tmp/use" 2>&1); then
	pass "inline paths against $so ($out)"
else
	echo "$out"
	fail "inline paths against $so"
fi
test "$fails" -eq 0
