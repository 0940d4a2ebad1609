#!/bin/sh
# stress/run.sh - run every stress scenario in the given builds and end
# with a table: program, build, scenario, seconds, operations, records
# verified, lost (counted), violations.
#
#   stress/run.sh SECONDS BUILD...        every scenario, SECONDS per program
#   stress/run.sh --quick SECONDS BUILD...  the first scenario of each
#                                 (of profbuf_stress, the first three: one
#                                 ring, a group of rings, and a group
#                                 with owned rings)
#
# Exit status: nonzero if any run failed.
quick=0
if [ "$1" = "--quick" ]; then quick=1; shift; fi
seconds=$1; shift

scenarios() {
	case $1 in
	profbuf_stress)
		echo "--writers 4 --signals"
		echo "--writers 4 --signals --group 4"
		echo "--writers 4 --signals --group 2 --owned --close-early --mode timed"
		echo "--writers 4 --bufwords 64 --tags 4 --mode nonblocking --stall --wrap"
		echo "--writers 4 --signals --close-early --mode timed --wrap --watermark 256"
		echo "--writers 4 --bufwords 4194304 --tags 65536 --signals --cpu-clock"
		echo "--writers 6 --signals --group 2 --mode timed --bufwords 512"
		echo "--writers 3 --group 3 --mode nonblocking --stall --close-early --watermark 256"
		;;
	profbuf_shared_stress)
		echo "--procs 3 --threads 2 --signals"
		echo "--procs 3 --threads 2 --signals --kill"
		echo "--procs 6 --threads 2 --kill --bufwords 512"
		;;
	profbuf_hostile_stress)
		echo "--writers 3 --kill --stop"
		echo "--writers 4 --bufwords 64 --kill"
		echo "--writers 2 --rate 1000000 --stop"
		echo "--writers 6 --bufwords 16384 --no-agg --kill"
		;;
	tracebuf_stress)
		echo "--signals"
		echo "--signals --memory 65536 --buf 4096"
		;;
	heap_stress)
		echo "--threads 4 --hz 1000 --pace 100"
		echo "--threads 8 --hz 10000"
		echo "--threads 4 --small-ring"
		;;
	prof_stress)
		echo "--churners 4"
		echo "--churners 4 --process --libunwind"
		echo "--churners 2 --tiny"
		echo "--churners 4 --wall"
		;;
	stacktab_stress)
		echo "--signals --resets"
		echo "--signals"
		echo "--signals --arena 65536"
		;;
	esac
}

field() { # field NAME LINE
	echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1
}

table=$(mktemp)
trap 'rm -f "$table"' EXIT
status=0
for build in "$@"; do
	for prog in "$build"/stress/*_stress; do
		name=$(basename "$prog")
		n=$(scenarios "$name" | wc -l)
		if [ "$quick" = 1 ]; then
			n=1
			[ "$name" = profbuf_stress ] && n=3
		fi
		per=$((seconds / n)); [ "$per" -lt 1 ] && per=1
		scenarios "$name" | head -n "$n" | while read -r args; do
			# A hang (a reader that never wakes) fails the run
			# instead of holding CI: ten times its time, and a minute.
			out=$(timeout -k 5 $((per * 10 + 60)) \
				"$prog" --seconds "$per" $args 2>&1)
			line=$(printf '%s\n' "$out" | tail -n 1)
			echo "$line"
			v=$(field violations "$line")
			# A sanitizer report (a writer process's, say) fails
			# the run even when the summary line says OK.
			if printf '%s\n' "$out" | grep -q -E \
				'WARNING: ThreadSanitizer|ERROR: AddressSanitizer|runtime error:'; then
				printf '%s\n' "$out" | grep -m 20 -A 12 -E \
					'WARNING: ThreadSanitizer|ERROR: AddressSanitizer|runtime error:'
				echo "FAIL $name ($build) $args: sanitizer report"
				v=${v:-0}
				v=$((v + 1))
			elif [ -z "$v" ] || ! echo "$line" | grep -q ' OK$'; then
				echo "FAIL $name ($build) $args"
				v=${v:-crash}
			else
				echo "PASS $name ($build) $args"
			fi
			printf '%s|%s|%s|%s|%s|%s|%s|%s\n' "$name" "$build" "$args" \
				"$(field seconds "$line")" "$(field ops "$line")" \
				"$(field verified "$line")" "$(field lost "$line")" \
				"$v" >> "$table"
		done
	done
done
echo
printf '%-16s %-12s %-72s %7s %12s %12s %12s %s\n' program build scenario \
	seconds operations verified lost violations
while IFS='|' read -r p b a s o ve l vi; do
	printf '%-16s %-12s %-72s %7s %12s %12s %12s %s\n' "$p" "$b" "$a" "$s" "$o" "$ve" "$l" "$vi"
	[ "$vi" = 0 ] || status=1
done < "$table"
exit $status
