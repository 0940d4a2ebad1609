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
