# SPDX-License-Identifier: MIT
#
# testing/testlib.sh - what the end-to-end test scripts share; sourced with
# CHECK_PREFIX set (the name every PASS/FAIL line starts with).
#
# Sets TMP (a scratch directory removed at exit) and fails (the count of
# failed checks).

fails=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/${CHECK_PREFIX}test.XXXXXX") || exit 1
trap '[ -n "$KEEP_TMP" ] || rm -rf "$TMP"' EXIT
trap 'exit 1' HUP INT TERM

# check NAME CONDITION-COMMAND...: one PASS/FAIL line.
check() {
	name=$1
	shift
	if "$@"; then
		echo "PASS $CHECK_PREFIX$name"
	else
		echo "FAIL $CHECK_PREFIX$name"
		fails=$((fails + 1))
	fi
}

# checks_done: exit 0 if every check passed; else show the first lines of
# every non-empty $TMP/*.err (what the programs said) and exit 1.
checks_done() {
	[ $fails = 0 ] && exit 0
	for f in "$TMP"/*.err; do
		[ -s "$f" ] && echo "== $f" && head -5 "$f"
	done
	exit 1
}

# HAVE_GO: 1 when `go tool pprof` is there to read profiles with.
HAVE_GO=0
command -v go >/dev/null 2>&1 && HAVE_GO=1

# go_reads NAME: go tool pprof reads $TMP/NAME.pb.gz and finds samples
# (true without go).
go_reads() {
	[ $HAVE_GO = 1 ] || return 0
	(cd "$TMP" && HOME="$TMP" go tool pprof -raw "$1.pb.gz") \
		>"$TMP/$1.raw" 2>&1 &&
		grep -q '^Samples:' "$TMP/$1.raw" &&
		awk '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 }
			on && $1 ~ /^[0-9]+$/ && $1 > 0 { n++ }
			END { exit !n }' "$TMP/$1.raw"
}
