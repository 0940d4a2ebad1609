#!/bin/sh
# SPDX-License-Identifier: MIT
#
# man/man_test.sh - the manual pages lint clean and cannot drift from the
# code.
#
#	sh man/man_test.sh [BUILD]		(BUILD defaults to "build")
#	sh man/man_test.sh --links		print what man/links must hold
#
# Checks, each one PASS/FAIL/SKIP line:
#  - lint_PAGE: `mandoc -Tlint -W warning` finds nothing in man/PAGE
#    (SKIP without mandoc; deps.sh installs it);
#  - links: man/links is the list of link pages "PAGE.3 NAME.3", one for
#    every function a section 3 page names in its NAME section (.Nm), so
#    that `man profbuf_write` finds profbuf(3) once installed;
#  - functions: every function exported by BUILD/libprofring.so and
#    BUILD/libprofring-prof.so (nm -D; SKIP for a library not built) and
#    every public function the headers include/profring/*.h declare or
#    define (names with "__" are internal) is named in some page by .Fn,
#    .Fo or .Nm;
#  - options: every option of `profring-prof record` (the long options
#    and the getopt string of prof_record_parse(), in whichever file of
#    prof/ defines it, and those BUILD/tools/profring-prof record --help
#    prints) is in profring-prof.1 as .Fl;
#  - environment: every PROFRING_PROF* variable named by a string in the
#    sources (include/, prof/, pprof/, tools/; tests left out) is in
#    profring-prof.1 as .Ev;
#  - detects_*: each of the three drift checks fails on a copy of the
#    pages that lacks one name it wants (so the checks cannot pass
#    vacuously).
# Exits nonzero if any check failed.

cd "$(dirname "$0")/.." || exit 1

MAN=man
# The pages that must be there; every page of man/ is linted.
PAGES="profring-prof.1 profring-trace.1 profbuf.3 profbuf_group.3
	profring_prof.3 stacktab.3 tracebuf.3 tracedec.3 profring.7"

# The link lines the section 3 pages call for: each .Nm of the NAME
# section that is not the page's own name.
links_of() {
	for p in "$1"/*.3; do
		awk -v page="${p##*/}" '
			/^\.Sh / { in_name = ($2 == "NAME"); next }
			in_name && /^\.Nm / && $2 ".3" != page {
				print page, $2 ".3"
			}' "$p"
	done
}

if [ "$1" = --links ]; then
	links_of "$MAN"
	exit 0
fi

BUILD=${1:-build}
CHECK_PREFIX=man_
. testing/testlib.sh

# ---- lint ----

if command -v mandoc >/dev/null 2>&1; then
	for p in $(printf '%s\n' $PAGES "$MAN"/*.[137] | sed 's,.*/,,' |
		sort -u); do
		if [ ! -f "$MAN/$p" ]; then
			echo "FAIL man_lint_$p (no such page)"
			fails=$((fails + 1))
		elif out=$(mandoc -Tlint -W warning "$MAN/$p" 2>&1) &&
			[ -z "$out" ]; then
			echo "PASS man_lint_$p"
		else
			printf '%s\n' "$out" | sed 's/^/  /'
			echo "FAIL man_lint_$p (mandoc -Tlint: $(printf '%s\n' "$out" | wc -l) messages)"
			fails=$((fails + 1))
		fi
	done
else
	echo "SKIP man_lint (no mandoc: sh deps.sh installs it)"
fi

# ---- links ----

links_of "$MAN" | sort >"$TMP/links.want"
sort "$MAN/links" >"$TMP/links.have" 2>/dev/null
missing_target=$(awk '{ print $1 }' "$MAN/links" 2>/dev/null | sort -u |
	while read -r t; do [ -f "$MAN/$t" ] || echo "$t"; done)
if cmp -s "$TMP/links.want" "$TMP/links.have" && [ -z "$missing_target" ]; then
	echo "PASS man_links ($(wc -l <"$TMP/links.want") link pages)"
else
	diff "$TMP/links.have" "$TMP/links.want" | sed 's/^/  /'
	echo "FAIL man_links (man/links is not what the pages' NAME sections call for: sh man/man_test.sh --links > man/links)"
	fails=$((fails + 1))
fi

# ---- what the pages must name ----

# The public functions the headers declare or define: identifiers of the
# library's prefixes followed by "(" outside comments and preprocessor
# lines.
header_functions() {
	for h in include/profring/*.h; do
		awk '
			{
				line = $0
				out = ""
				while (line != "") {
					if (in_c) {
						i = index(line, "*/")
						if (!i) { line = ""; break }
						line = substr(line, i + 2)
						in_c = 0
						continue
					}
					i = index(line, "/*")
					j = index(line, "//")
					if (j && (!i || j < i)) {
						out = out substr(line, 1, j - 1)
						line = ""
						break
					}
					if (!i) { out = out line; break }
					out = out substr(line, 1, i - 1) " "
					line = substr(line, i + 2)
					in_c = 1
				}
				if (out !~ /^[ \t]*#/)
					print out
			}' "$h"
	done | grep -oE '\b(profbuf|stacktab|tracebuf|tracedec|profring_prof)_[A-Za-z0-9_]*[[:space:]]*\(' |
		sed 's/[[:space:]]*($//' | grep -v '__'
}

# The functions the shared libraries export (types T, W, i); internal
# "__" names left out.
exported_functions() {
	for so in "$BUILD/libprofring.so" "$BUILD/libprofring-prof.so"; do
		[ -e "$so" ] || continue
		nm -D --defined-only "$so" |
			awk '$2 == "T" || $2 == "W" || $2 == "i" { print $3 }'
	done | sed 's/@.*//' | grep -v '__'
}

# The options of `record`: prof_record_parse()'s long options and getopt
# string, and what its --help shows.  One per line, "-X" or "--name".
record_options() {
	src=$(grep -rl --include='*.c' '^int prof_record_parse(' prof | head -1)
	[ -n "$src" ] || echo --no-prof_record_parse-found # a name no page has
	awk '/^int prof_record_parse\(/ { on = 1 } on { print } on && /^}/ { exit }' \
		${src:-/dev/null} | tr '\n' ' ' >"$TMP/parse.c"
	sed 's/{ NULL, 0, NULL, 0 }.*//' "$TMP/parse.c" |
		grep -oE '\{ "[a-z][a-z0-9-]*", *(no|required|optional)_argument' |
		sed 's/^{ "\([^"]*\)".*/--\1/'
	grep -oE 'getopt_long\([^"]*"[^"]*"' "$TMP/parse.c" |
		sed 's/^[^"]*"//; s/"$//' | tr -d '+:' | fold -w1 | sed 's/^/-/'
	if [ -x "$BUILD/tools/profring-prof" ]; then
		"$BUILD/tools/profring-prof" record --help 2>/dev/null |
			sed -n '/record/,/report/p' | sed '/report/d' |
			grep -oE '(^|[[ ])--?[A-Za-z][a-z0-9-]*' |
			sed 's/^[[ ]*//'
	fi
}

# The PROFRING_PROF* variables: the strings that name them in the
# sources, tests left out.
env_variables() {
	grep -rhoE '"PROFRING_PROF[A-Z0-9_]*' include prof pprof tools \
		--include='*.c' --include='*.h' --exclude='*_test.c' \
		--exclude-dir=e2e | tr -d '"'
}

# missing_in KIND WANT-FILE PAGE...: the names of WANT-FILE (one a line)
# that no PAGE names with the macros of KIND (fn: .Fn/.Fo/.Nm; fl: .Fl;
# ev: .Ev).  Prints them on one line.
missing_in() {
	kind=$1
	want=$2
	shift 2
	sort -u "$want" | while read -r name; do
		[ -n "$name" ] || continue
		case $kind in
		fn) re="(^\.|[[:space:]])(Fn|Fo|Nm)[[:space:]]+$name([[:space:],]|$)" ;;
		fl) re="(^\.|[[:space:]])Fl[[:space:]]+${name#-}([[:space:]]|$)" ;;
		ev) re="(^\.|[[:space:]])Ev[[:space:]]+$name([[:space:],]|$)" ;;
		esac
		grep -qE -- "$re" "$@" || printf '%s ' "$name"
	done
}

# drift_checks DIR [LABEL]: the three checks against the pages in DIR;
# one PASS/FAIL line each (named LABEL-less for the real pages).
drift_checks() {
	dir=$1
	m=$(missing_in fn "$TMP/functions" "$dir"/*.[137])
	report functions "$m" "$(sort -u "$TMP/functions" | wc -l) functions" \
		"not in any page (.Fn)"
	m=$(missing_in fl "$TMP/options" "$dir/profring-prof.1")
	report options "$m" "$(sort -u "$TMP/options" | wc -l) record options" \
		"not in profring-prof.1 (.Fl)"
	m=$(missing_in ev "$TMP/env" "$dir/profring-prof.1")
	report environment "$m" "$(sort -u "$TMP/env" | wc -l) variables" \
		"not in profring-prof.1 (.Ev)"
}

# report NAME MISSING WHAT-PASSED WHY: a PASS or FAIL line.
report() {
	if [ -z "$2" ]; then
		echo "PASS man_$1 ($3)"
	else
		echo "FAIL man_$1 ($4: $2)"
		fails=$((fails + 1))
	fi
}

header_functions >"$TMP/functions"
exported_functions >>"$TMP/functions"
for so in libprofring.so libprofring-prof.so; do
	[ -e "$BUILD/$so" ] ||
		echo "SKIP man_exports_$so (not built in $BUILD: only the headers' functions checked)"
done
record_options | grep -v '^-*$' >"$TMP/options"
env_variables >"$TMP/env"
drift_checks "$MAN"

# ---- the drift checks catch a missing name ----

# detects NAME KIND WANT-FILE: a copy of the pages without the first name
# of the list that the pages do name must fail that check.
detects() {
	first=
	for n in $(sort -u "$3"); do
		echo "$n" >"$TMP/one"
		[ -z "$(missing_in "$2" "$TMP/one" "$MAN"/*.[137])" ] &&
			first=$n && break
	done
	if [ -z "$first" ]; then
		echo "FAIL man_detects_$1 (no name of the list is in the pages)"
		fails=$((fails + 1))
		return
	fi
	rm -rf "$TMP/copy"
	mkdir "$TMP/copy" && cp "$MAN"/*.[137] "$TMP/copy/"
	case $2 in
	fn) macro='Fn|Fo|Nm' word=$first ;;
	fl) macro=Fl word=${first#-} ;;
	ev) macro=Ev word=$first ;;
	esac
	# Every mention of the name by that macro becomes plain text.
	for p in "$TMP/copy"/*; do
		sed -E "s/(^\.|[[:space:]])($macro)[[:space:]]+$word([[:space:],]|$)/\1No XX\3/g" \
			"$p" >"$p.new" && mv "$p.new" "$p"
	done
	m=$(missing_in "$2" "$TMP/one" "$TMP/copy"/*.[137])
	if [ -n "$m" ]; then
		echo "PASS man_detects_$1 (pages without $first fail)"
	else
		echo "FAIL man_detects_$1 (pages without $first still pass)"
		fails=$((fails + 1))
	fi
}
detects functions fn "$TMP/functions"
detects options fl "$TMP/options"
detects environment ev "$TMP/env"

checks_done
