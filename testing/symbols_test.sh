#!/bin/sh
# SPDX-License-Identifier: MIT
#
# testing/symbols_test.sh - the libraries users link define the API alone.
#
#	sh testing/symbols_test.sh BUILD
#
# BUILD/libprofring-pub.a (installed as libprofring.a) defines no global
# symbol outside the API's prefixes (profbuf_, stacktab_, tracebuf_,
# tracedec_, profring__): a program that links it statically cannot have
# a name of its own taken.  BUILD/libprofring.so exports the same names,
# every one in the version node PROFRING_2 (libprofring.map).  Then a
# program that defines the library's internal names (ring_page_size,
# tb_emit, ...) itself links against the static library and runs.
BUILD=${1:-build}
A=$BUILD/libprofring-pub.a
SO=$BUILD/libprofring.so
API='^(profbuf_|stacktab_|tracebuf_|tracedec_|profring__)'
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0

check() {
	name=$1
	shift
	if "$@"; then
		echo "PASS symbols: $name"
	else
		echo "FAIL symbols: $name"
		fails=$((fails + 1))
	fi
}

if [ ! -f "$A" ] || [ ! -f "$SO" ]; then
	echo "SKIP symbols: $A or $SO not built"
	exit 0
fi
nm -g --defined-only "$A" | awk 'NF == 3 { print $3 }' >"$tmp/a.syms"
grep -Ev "$API" "$tmp/a.syms" >"$tmp/a.extra"
echo "  $A: $(wc -l <"$tmp/a.syms") global symbols," \
	"$(wc -l <"$tmp/a.extra") outside the API: $(head -5 "$tmp/a.extra" | tr '\n' ' ')"
check static_api_only test ! -s "$tmp/a.extra" -a -s "$tmp/a.syms"

objdump -T "$SO" | awk '$2 == "g" { print $(NF - 1), $NF }' >"$tmp/so.syms"
awk '$1 != "PROFRING_2"' "$tmp/so.syms" >"$tmp/so.unversioned"
awk '{ print $2 }' "$tmp/so.syms" | grep -Ev "$API" | grep -v '^PROFRING_2$' \
	>"$tmp/so.extra"
echo "  $SO: $(wc -l <"$tmp/so.syms") exported," \
	"$(wc -l <"$tmp/so.unversioned") not in PROFRING_2," \
	"$(wc -l <"$tmp/so.extra") outside the API"
check shared_versioned test ! -s "$tmp/so.unversioned" -a ! -s "$tmp/so.extra"

# The host program's own ring_page_size and tb_emit, beside the library.
cat >"$tmp/host.c" <<'C'
#include <profring/tracebuf.h>
#include <stdio.h>

int ring_page_size(void);
int tb_emit(void);
int ring_page_size(void) { return 42; }
int tb_emit(void) { return 7; }

int main(void)
{
	struct tracebuf *t = tracebuf_new(NULL);
	uint64_t a = 1;
	int rc = t && !tracebuf_start(t) &&
		 !tracebuf_emit(t, TRACEBUF_EV_USER, &a, 1) &&
		 !tracebuf_stop(t);

	tracebuf_free(t);
	printf("%d %d %d\n", rc, ring_page_size(), tb_emit());
	return rc && ring_page_size() == 42 && tb_emit() == 7 ? 0 : 1;
}
C
# A sanitizer build's library needs its runtime: clang, the same flag.
cc=${CC:-cc}
san=
if nm "$A" 2>/dev/null | grep -q '__tsan_'; then
	cc=clang san=-fsanitize=thread
elif nm "$A" 2>/dev/null | grep -q '__asan_'; then
	cc=clang san=-fsanitize=address,undefined
fi
if $cc $san -std=c11 -Iinclude -o "$tmp/host" "$tmp/host.c" "$A" -lpthread \
	2>"$tmp/host.err"; then
	"$tmp/host" >/dev/null
	check host_names_own [ $? -eq 0 ]
else
	sed 's/^/  /' "$tmp/host.err" | head -5
	check host_names_own false
fi
[ $fails -eq 0 ]
