#!/bin/sh
# SPDX-License-Identifier: MIT
#
# testing/user_test.sh - programs built as users build theirs, against
# the installed library (issue 36's profiler author).
#
#	sh testing/user_test.sh BUILD
#
# `make install` into a temporary DESTDIR, then, through pkg-config:
#  - testing/user/author.c, each seam of the library checked in turn, as
#    C11 (gcc) and C++17 (clang++) under ASan+UBSan against `pkg-config
#    --static profring`, and as C (clang) and C++ (g++) under TSan against
#    profring-tsan: every check "ok", no sanitizer report;
#  - testing/user/tsan_user.c (writer threads handing data to a reader
#    through profbuf, stacktab and tracebuf) by clang and gcc with
#    -fsanitize=thread against profring-tsan: every record back, no
#    ThreadSanitizer report.
# A compiler that is missing, or cannot build with a sanitizer, is
# skipped.  Skipped for a sanitizer build (its make install is not the
# user's).
BUILD=${1:-build}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() {
	echo "FAIL user: $1"
	fails=$((fails + 1))
}

if [ -f "$BUILD/libprofring.so" ] &&
	nm -D "$BUILD/libprofring.so" | grep -q '__[at]san_'; then
	echo "SKIP user: $BUILD is a sanitizer build"
	exit 0
fi
if ! command -v pkg-config >/dev/null; then
	echo "SKIP user: no pkg-config"
	exit 0
fi
if ! make -s --no-print-directory BUILD="$BUILD" PREFIX=/usr \
	DESTDIR="$tmp/root" install >"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log"
	fail "make install"
	exit 1
fi
export PKG_CONFIG_PATH="$tmp/root/usr/lib/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$tmp/root"
export PKG_CONFIG_LIBDIR="$tmp/root/usr/lib/pkgconfig"
have_tsan=1
if ! pkg-config --exists profring-tsan; then
	have_tsan=0
	if grep -q 'cannot build with -fsanitize=thread' "$tmp/install.log"; then
		echo "SKIP user: tsan (no compiler here builds the library with -fsanitize=thread)"
	else
		fail "make install installed no profring-tsan.pc"
	fi
fi
# author LABEL CC SAN PKG LANG: build author.c by CC (LANG c or c++) with
# -fsanitize=SAN against PKG, run it.
author() {
	label=$1 cc=$2 san=$3 pkg=$4 lang=$5
	std=-std=c11
	[ "$lang" = c++ ] && std=-std=c++17
	command -v "$cc" >/dev/null || {
		echo "SKIP user: author_$label ($cc not installed)"
		return
	}
	printf 'int main(void) { return 0; }\n' |
		$cc -fsanitize=$san -x c -o "$tmp/probe" - 2>/dev/null || {
		echo "SKIP user: author_$label ($cc cannot -fsanitize=$san)"
		return
	}
	# shellcheck disable=SC2046
	if ! $cc $std -O1 -g -fsanitize=$san -fno-sanitize-recover=all \
		$(pkg-config --cflags "$pkg") -o "$tmp/author-$label" \
		-x "$lang" testing/user/author.c -x none \
		$(pkg-config --static --libs "$pkg" |
			sed 's/-lprofring\( \|$\)/-l:libprofring.a /') \
		2>"$tmp/cc.log"; then
		sed 's/^/  /' "$tmp/cc.log" | head -20
		fail "author_$label: $cc builds author.c"
		return
	fi
	out=$(TSAN_OPTIONS="halt_on_error=0 exitcode=66" timeout -k 5 120 \
		"$tmp/author-$label" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ] || printf '%s\n' "$out" | grep -q 'not ok\|Sanitizer\|runtime error'; then
		printf '%s\n' "$out" | head -40 | sed 's/^/  /'
		fail "author_$label: exit $rc"
	else
		echo "PASS user: author_$label ($(printf '%s\n' "$out" | grep -c '^ok') checks ok)"
	fi
}
author c_asan gcc address,undefined profring c
author cxx_asan clang++ address,undefined profring c++
[ $have_tsan = 1 ] || exit $((fails != 0))
author c_tsan clang thread profring-tsan c
author cxx_tsan g++ thread profring-tsan c++

ran=0
for cc in clang gcc; do
	command -v $cc >/dev/null || continue
	printf 'int main(void) { return 0; }\n' |
		$cc -fsanitize=thread -x c -o "$tmp/probe" - 2>/dev/null || continue
	# shellcheck disable=SC2046
	if ! $cc -std=c11 -O1 -g -fsanitize=thread \
		$(pkg-config --cflags profring-tsan) -o "$tmp/user-$cc" \
		testing/user/tsan_user.c \
		$(pkg-config --static --libs profring-tsan) 2>"$tmp/cc.log"; then
		cat "$tmp/cc.log"
		fail "$cc builds the user program"
		continue
	fi
	out=$(TSAN_OPTIONS="halt_on_error=0 exitcode=66" "$tmp/user-$cc" 2>&1)
	rc=$?
	reports=$(printf '%s\n' "$out" | grep -c 'WARNING: ThreadSanitizer')
	printf '  %s: %s\n' "$cc" "$(printf '%s\n' "$out" | grep '^records')"
	if [ "$rc" -ne 0 ] || [ "$reports" -ne 0 ]; then
		printf '%s\n' "$out" | head -40
		fail "$cc: exit $rc, $reports ThreadSanitizer reports"
	else
		echo "PASS user: tsan_user $cc, no ThreadSanitizer report"
	fi
	ran=1
done
[ $ran = 1 ] || echo "SKIP user: no compiler here builds with -fsanitize=thread"
[ $fails = 0 ]
