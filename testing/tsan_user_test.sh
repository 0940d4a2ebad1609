#!/bin/sh
# SPDX-License-Identifier: MIT
#
# testing/tsan_user_test.sh - a program built with -fsanitize=thread
# against the installed library is clean under ThreadSanitizer.
#
#	sh testing/tsan_user_test.sh BUILD
#
# `make install` into a temporary DESTDIR, then testing/user/tsan_user.c
# (writer threads handing data to a reader through profbuf, stacktab and
# tracebuf) built as a user builds it - the installed headers, `pkg-config
# --static profring-tsan` - by clang and gcc where they can build with
# -fsanitize=thread, run: every record back, no ThreadSanitizer report.
# Skipped for a sanitizer build (its make install is not the user's).
BUILD=${1:-build}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() {
	echo "FAIL tsan_user: $1"
	fails=$((fails + 1))
}

if [ -f "$BUILD/libprofring.so" ] &&
	nm -D "$BUILD/libprofring.so" | grep -q '__[at]san_'; then
	echo "SKIP tsan_user: $BUILD is a sanitizer build"
	exit 0
fi
if ! command -v pkg-config >/dev/null; then
	echo "SKIP tsan_user: no pkg-config"
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
if ! pkg-config --exists profring-tsan; then
	if grep -q 'cannot build with -fsanitize=thread' "$tmp/install.log"; then
		echo "SKIP tsan_user: the compiler cannot build with -fsanitize=thread"
		exit 0
	fi
	fail "make install installed no profring-tsan.pc"
	exit 1
fi
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
		echo "PASS tsan_user: $cc, no ThreadSanitizer report"
	fi
	ran=1
done
[ $ran = 1 ] || echo "SKIP tsan_user: no compiler here builds with -fsanitize=thread"
[ $fails = 0 ]
