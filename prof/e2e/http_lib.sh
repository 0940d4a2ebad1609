# SPDX-License-Identifier: MIT
#
# http_lib.sh - what the HTTP tests (http_test.sh, record_http_test.sh)
# share; sourced after testing/testlib.sh, with $TMP, $CLIENT and $PORT
# set by the test ($W: httpwork; $JOB: the last one started).

# run_plain: what httpwork does unprofiled ($TMP/plain.out, $plain_st).
run_plain() {
	touch "$TMP/plain.stop"
	"$W" "$TMP/plain.stop" >"$TMP/plain.out" 2>&1
	plain_st=$?
}

# finish NAME: stop the last one started; its exit status in $st (the
# timeout around it bounds the wait).
finish() {
	touch "$TMP/$1.stop"
	wait "$JOB"
	st=$?
}

# pprof OUT ARGS...: go tool pprof ARGS into $TMP/OUT (bounded, no ~/pprof).
pprof() {
	out=$1
	shift
	(cd "$TMP" && HOME="$TMP" timeout 60 go tool pprof "$@") >"$TMP/$out" 2>&1
}

# status_is WANT ARGS...: http_client.py ARGS answers WANT.
status_is() {
	want=$1
	shift
	got=$($CLIENT "$PORT" "$@")
	[ "$got" = "$want" ] || { echo "  $*: $got, want $want"; false; }
}

# allocs_delta_smaller URL: /allocs?seconds=1 holds fewer objects than
# /allocs, and some (said on stdout).
total() { sed -n 's/.*of \([0-9.]*\) total.*/\1/p' "$TMP/$1" | head -1; }
allocs_delta_smaller() {
	pprof allocs.top -top -sample_index=alloc_objects "$1/allocs"
	pprof delta.top -top -sample_index=alloc_objects "$1/allocs?seconds=1"
	a=$(total allocs.top)
	d=$(total delta.top)
	echo "  alloc_objects: all ${a:-?}, last second ${d:-?}"
	[ -n "$a" ] && [ -n "$d" ] &&
		awk -v a="$a" -v d="$d" 'BEGIN { exit !(d > 0 && d < a) }'
}
