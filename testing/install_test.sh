#!/bin/sh
# SPDX-License-Identifier: MIT
#
# testing/install_test.sh - `make install` and `make uninstall` as a user
# sees them.
#
#	sh testing/install_test.sh BUILD
#
# Installs BUILD into a temporary PREFIX and checks what a user has then:
# libprofring.so's file named after its soname with its links; through
# pkg-config (PKG_CONFIG_PATH at the prefix, nothing from the tree) a C11
# and a C++17 program against profring, each linked shared and static,
# and a C11 and a C++17 program against profring-prof (shared), all run;
# profring-prof and profring-trace run from the prefix's bin (the
# launcher finding libprofring-prof.so in ../lib); every manual page of
# man/ and man/links in place, readable by man where it is installed.
# Then `make uninstall` must leave no file or link in the prefix.  The
# same with DESTDIR: every file lands under it, and uninstall with the
# same DESTDIR empties it.  Skipped for a sanitizer build.
BUILD=${1:-build}
MAKE=${MAKE:-make}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0

pass() { echo "PASS install: $1"; }
fail() {
	echo "FAIL install: $1"
	fails=$((fails + 1))
}
skip() {
	echo "SKIP install: $1"
	exit 0
}

so=$BUILD/libprofring.so
[ -f "$so" ] || skip "$so not built"
if nm -D "$so" | grep -q '__[at]san_'; then
	skip "$so is a sanitizer build"
fi
command -v pkg-config >/dev/null 2>&1 || skip "no pkg-config"

# in_prefix DIR: the files and links under DIR, one a line.
in_prefix() { (cd "$1" && find . ! -type d | sort); }

# install_into LOG VAR=VALUE...: make install with the given variables.
install_into() {
	log=$1
	shift
	if $MAKE --no-print-directory BUILD="$BUILD" "$@" install \
		>"$log" 2>&1; then
		return 0
	fi
	tail -20 "$log"
	return 1
}

prefix=$tmp/prefix
if ! install_into "$tmp/install.log" PREFIX="$prefix"; then
	fail "make install PREFIX=$prefix"
	exit 1
fi
pass "make install PREFIX=tmp ($(in_prefix "$prefix" | wc -l) files)"

# The shared library: one file named after the soname, two links.
lib=$prefix/lib
soname=$(readelf -d "$lib/libprofring.so" 2>/dev/null |
	sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
file=$(readlink "$lib/libprofring.so")
case $file in
"$soname".*)
	if [ -f "$lib/$file" ] && [ ! -L "$lib/$file" ] &&
		[ "$(readlink "$lib/$soname")" = "$file" ]; then
		pass "libprofring.so -> $file, $soname -> $file"
	else
		fail "libprofring.so's links: $(ls -l "$lib"/libprofring.so*)"
	fi
	;;
*) fail "libprofring.so's file $file is not named after its soname $soname" ;;
esac
for f in "$BUILD/libprofring.so" "$BUILD/$soname"; do
	if [ -e "$f" ]; then
		pass "$f in the build"
	else
		fail "$f in the build"
	fi
done

cat >"$tmp/lib.c" <<'EOF'
/* C11 and C++17 alike: the three buffers, written and read back. */
#include <profring/profbuf.h>
#include <profring/stacktab.h>
#include <profring/tracebuf.h>
#include <profring/tracedec.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	struct profbuf *b = profbuf_new(1, 1 << 12, 64);
	struct stacktab *t = stacktab_new(1 << 16, 16);
	struct tracebuf *tr = tracebuf_new(NULL);
	uintptr_t pcs[3] = { 0x1000, 0x2000, 0x3000 }, out[3];
	uint64_t hdr[1] = { 1 }, a[1] = { 7 }, records = 0, bytes = 0;
	struct profbuf_read r;
	struct tracebuf_chunk c;
	uint32_t id;
	FILE *f = argc > 1 ? fopen(argv[1], "w") : NULL;

	if (!b || !t || !tr || tracebuf_start(tr))
		return 2;
	for (int i = 0; i < 10; i++)
		if (profbuf_write(b, NULL, i + 1, hdr, 1, pcs, 3))
			return 3;
	profbuf_close(b);
	while (profbuf_read(b, PROFBUF_NONBLOCKING, &r) == 0 && !r.eof) {
		struct profbuf_iter it;
		struct profbuf_record rec;

		profbuf_iter_init(&it, &r, 1);
		while (profbuf_iter_next(&it, &rec))
			records++;
	}
	id = stacktab_put(t, pcs, 3);
	if (!id || stacktab_get(t, id, out, 3) != 3 || out[2] != pcs[2])
		return 4;
	if (tracebuf_emit(tr, 8, a, 1))
		return 5;
	tracebuf_stop(tr);
	do {
		if (tracebuf_read(tr, PROFBUF_NONBLOCKING, &c))
			return 6;
		bytes += c.len;
		if (f && c.len && fwrite(c.data, 1, c.len, f) != c.len)
			return 7;
	} while (!c.eof);
	if (f && fclose(f))
		return 8;
	printf("records %llu, stack %u, trace bytes %llu\n",
	       (unsigned long long)records, (unsigned)id,
	       (unsigned long long)bytes);
	tracebuf_free(tr);
	stacktab_free(t);
	profbuf_free(b);
	return records != 10 || !bytes;
}
EOF
cat >"$tmp/prof.c" <<'EOF'
/* C11 and C++17 alike: profile a loop through the API. */
#define _POSIX_C_SOURCE 200809L
#include <profring/prof.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

int main(int argc, char **argv)
{
	struct profring_prof_opts o;
	struct profring_prof_stats st;
	struct timespec t0, t;
	int rc;

	if (argc < 2)
		return 2;
	memset(&o, 0, sizeof(o));
	o.hz = 999;
	o.output = argv[1];
	rc = profring_prof_start(&o);
	if (rc) {
		fprintf(stderr, "profring_prof_start: %d\n", rc);
		return 3;
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink += i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000LL +
			 (t.tv_nsec - t0.tv_nsec) < 200000000LL);
	rc = profring_prof_stop();
	if (rc || profring_prof_get_stats(&st)) {
		fprintf(stderr, "profring_prof_stop: %d\n", rc);
		return 4;
	}
	printf("signals %llu\n", (unsigned long long)st.signals);
	return 0;
}
EOF
cp "$tmp/lib.c" "$tmp/lib.cc"
cp "$tmp/prof.c" "$tmp/prof.cc"

export PKG_CONFIG_PATH="$lib/pkgconfig"
export PKG_CONFIG_LIBDIR="$lib/pkgconfig"
for pc in profring profring-prof; do
	if pkg-config --exists "$pc" &&
		pkg-config --cflags "$pc" | grep -q -- "-I$prefix/include"; then
		pass "pkg-config $pc: $(pkg-config --cflags --libs "$pc")"
	else
		fail "pkg-config $pc from the prefix"
	fi
done

# build NAME PKG LINK COMPILER FLAGS SOURCE: compile SOURCE against PKG's
# installed files (LINK shared or static), warnings fatal.
build() {
	name=$1 pkg=$2 link=$3 cc=$4 std=$5 src=$6
	if [ "$link" = static ]; then
		libs="-static $(pkg-config --static --libs "$pkg")"
	else
		libs=$(pkg-config --libs "$pkg")
	fi
	# shellcheck disable=SC2046,SC2086
	if ! out=$($cc $std -Wall -Wextra -Werror -O2 \
		$(pkg-config --cflags "$pkg") "$src" -o "$tmp/$name" \
		$libs 2>&1); then
		printf '%s\n' "$out" | head -10
		fail "$name builds ($cc $std, $pkg $link)"
		return 1
	fi
	pass "$name builds ($cc $std, $pkg $link)"
}

# run NAME ARGS...: run a program built above, the prefix's lib on the
# loader's path; it must exit 0.
run() {
	name=$1
	shift
	if out=$(LD_LIBRARY_PATH=$lib timeout -k 5 60 "$tmp/$name" "$@" 2>&1); then
		pass "$name runs ($out)"
	else
		printf '%s\n' "$out" | tail -5
		fail "$name runs"
	fi
}

# wrote NAME FILE: the program NAME wrote the profile FILE.
wrote() {
	if [ -s "$2" ]; then
		pass "$1 wrote its profile"
	else
		fail "$1 wrote its profile"
	fi
}

# needs_prefix NAME SONAME: a shared program loads SONAME from the prefix.
needs_prefix() {
	if LD_LIBRARY_PATH=$lib ldd "$tmp/$1" | grep -q "$2 => $lib/"; then
		pass "$1 loads $2 from the prefix"
	else
		fail "$1 loads $2 from the prefix: $(LD_LIBRARY_PATH=$lib ldd "$tmp/$1" | grep profring)"
	fi
}

cxx=g++
command -v g++ >/dev/null 2>&1 || cxx=clang++
build c11-shared profring shared cc -std=c11 "$tmp/lib.c" &&
	needs_prefix c11-shared "$soname" && run c11-shared
build c11-static profring static cc -std=c11 "$tmp/lib.c" && run c11-static
build cxx17-shared profring shared $cxx -std=c++17 "$tmp/lib.cc" &&
	needs_prefix cxx17-shared "$soname" && run cxx17-shared
build cxx17-static profring static $cxx -std=c++17 "$tmp/lib.cc" &&
	run cxx17-static
build prof-c11 profring-prof shared cc -std=c11 "$tmp/prof.c" &&
	needs_prefix prof-c11 libprofring-prof.so &&
	run prof-c11 "$tmp/c11.pb.gz" && wrote prof-c11 "$tmp/c11.pb.gz"
build prof-cxx17 profring-prof shared $cxx -std=c++17 "$tmp/prof.cc" &&
	run prof-cxx17 "$tmp/cxx17.pb.gz" && wrote prof-cxx17 "$tmp/cxx17.pb.gz"

# The tools, from the prefix: the launcher finds its library in ../lib.
bin=$prefix/bin
# shellcheck disable=SC2016
if out=$(env -u LD_LIBRARY_PATH -u PROFRING_PROF_LIB timeout -k 5 60 \
	"$bin/profring-prof" record -q -F 999 -o "$tmp/rec.pb.gz" -- \
	sh -c 'i=0; while [ $i -lt 30000 ]; do i=$((i + 1)); done' 2>&1) &&
	out=$("$bin/profring-prof" report -n 3 "$tmp/rec.pb.gz" 2>&1); then
	pass "profring-prof record and report from the prefix"
else
	printf '%s\n' "$out" | tail -5
	fail "profring-prof record and report from the prefix"
fi
if LD_LIBRARY_PATH=$lib "$tmp/c11-static" "$tmp/out.trace" >/dev/null &&
	out=$("$bin/profring-trace" summary "$tmp/out.trace" 2>&1); then
	pass "profring-trace summary from the prefix"
else
	printf '%s\n' "$out" | tail -5
	fail "profring-trace summary from the prefix"
fi

# The manual: every page of man/ and every link of man/links.
pages=$(ls man/*.[137] 2>/dev/null)
if [ -z "$pages" ]; then
	echo "SKIP install: no pages in man/"
else
	missing=
	for p in $pages; do
		n=${p##*/}
		[ -f "$prefix/share/man/man${n##*.}/$n" ] || missing="$missing $n"
	done
	if [ -f man/links ]; then
		links=$(awk 'NF == 2 && $1 ~ /^[a-z].*\.[1-9]$/ &&
			$2 ~ /^[a-z].*\.[1-9]$/ { print $2 }' man/links)
		for n in $links; do
			[ -f "$prefix/share/man/man${n##*.}/$n" ] ||
				missing="$missing $n"
		done
	fi
	if [ -z "$missing" ]; then
		# shellcheck disable=SC2086
		pass "manual pages in share/man ($(echo $pages $links | wc -w))"
	else
		fail "manual pages missing from share/man:$missing"
	fi
	if ! command -v man >/dev/null 2>&1; then
		echo "SKIP install: man not installed"
	elif MANPATH=$prefix/share/man MANPAGER=cat man profring-prof \
		2>/dev/null | grep -q 'profring-prof'; then
		pass "man profring-prof reads the installed page"
	else
		fail "man profring-prof reads the installed page"
	fi
	link=$(printf '%s\n' "$links" | awk 'NR == 1 { print $1 }')
	link=${link%.*}
	if [ -n "$link" ] && command -v man >/dev/null 2>&1; then
		if MANPATH=$prefix/share/man MANPAGER=cat man 3 "$link" \
			2>/dev/null | grep -q "$link"; then
			pass "man 3 $link reads the page it links to"
		else
			fail "man 3 $link reads the page it links to"
		fi
	fi
fi

# uninstall: nothing of ours left in the prefix.
if $MAKE --no-print-directory BUILD="$BUILD" PREFIX="$prefix" uninstall \
	>"$tmp/uninstall.log" 2>&1; then
	left=$(in_prefix "$prefix")
	if [ -z "$left" ]; then
		pass "make uninstall leaves no file in the prefix"
	else
		fail "make uninstall left: $(printf '%s ' "$left")"
	fi
else
	tail -10 "$tmp/uninstall.log"
	fail "make uninstall"
fi

# DESTDIR: every file under it, at the prefix; uninstall empties it.
dest=$tmp/dest
if install_into "$tmp/destdir.log" DESTDIR="$dest" PREFIX=/opt/profring; then
	stray=$(cd "$dest" && find . ! -type d ! -path './opt/profring/*')
	if [ -z "$stray" ] && [ -x "$dest/opt/profring/bin/profring-prof" ] &&
		grep -q '^prefix=/opt/profring$' \
			"$dest/opt/profring/lib/pkgconfig/profring.pc"; then
		pass "make install DESTDIR=tmp PREFIX=/opt/profring"
	else
		fail "make install DESTDIR: stray files $stray"
	fi
	$MAKE --no-print-directory BUILD="$BUILD" DESTDIR="$dest" \
		PREFIX=/opt/profring uninstall >"$tmp/uninstall.log" 2>&1
	left=$(in_prefix "$dest")
	if [ -z "$left" ]; then
		pass "make uninstall DESTDIR=tmp leaves no file"
	else
		fail "make uninstall DESTDIR=tmp left: $(printf '%s ' "$left")"
	fi
else
	fail "make install DESTDIR=tmp PREFIX=/opt/profring"
fi
test "$fails" -eq 0
