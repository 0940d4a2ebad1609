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
