#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/plot.sh - the benchmark curves, as PNG, with gnuplot.
#
# usage: sh bench/plot.sh [LATEST_CSV [OUTDIR]]
#        (defaults bench/results/latest.csv and bench/results)
#
# Draws
#   OUTDIR/scaling.png      records delivered to the reader per second
#                           against the number of writers, one line per
#                           implementation, log y; below it the fraction
#                           of writes lost.  From scaling.csv next to
#                           LATEST_CSV (written by scaling_bench: columns
#                           writers, impl, delivered_per_s, lost_fraction,
#                           delivered_per_s_min, delivered_per_s_max, cpus).
#   OUTDIR/record_size.png  ns per write against record words (8, 34, 66):
#                           profbuf, floor, ck_spsc and ck_spsc_resv, the
#                           medians of profbuf_bench's "write Nw" rows in
#                           LATEST_CSV (ours_median; anchor_median by
#                           anchor).  The last run's rows win.
#
# A plot whose data is missing is skipped with a message; the exit status
# is then 1.  Without gnuplot (Debian: gnuplot-nox) nothing is drawn and
# the exit status is 1.

set -eu

if ! command -v gnuplot >/dev/null 2>&1; then
	echo "plot.sh: gnuplot not found; install it" \
		"(Debian: apt-get install gnuplot-nox)" >&2
	exit 1
fi

latest=${1:-bench/results/latest.csv}
outdir=${2:-bench/results}
scaling=$(dirname "$latest")/scaling.csv
status=0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/profring-plot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# The PNG terminal: cairo where gnuplot has it, else libgd.
if gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1; then
	term='pngcairo noenhanced size 900,700 font "sans,10"'
else
	term='png noenhanced size 900,700'
fi

# skip MESSAGE: say why a plot is not drawn; the exit status becomes 1.
skip() {
	echo "plot.sh: $1" >&2
	status=1
}

# ---- scaling.png ------------------------------------------------------

# scaling_data: one file per implementation, "writers delivered lost%",
# in $tmp/sc.<impl>.dat; their names, in order of appearance, to stdout.
scaling_data() {
	awk -F, -v dir="$tmp" '
	NR == 1 {
		for (i = 1; i <= NF; i++)
			col[$i] = i
		if (!("writers" in col) || !("impl" in col) ||
		    !("delivered_per_s" in col) || !("lost_fraction" in col))
			exit 1
		next
	}
	NF > 1 {
		impl = $col["impl"]
		gsub(/[^A-Za-z0-9_]/, "_", impl)
		if (!(impl in seen)) {
			seen[impl] = 1
			print impl
		}
		printf "%s %s %s\n", $col["writers"], $col["delivered_per_s"],
			100 * $col["lost_fraction"] > (dir "/sc." impl ".dat")
	}' "$scaling"
}

# scaling_plot IMPL...: the gnuplot script for the two panels.
scaling_plot() {
	cpus=$(awk -F, 'NR == 2 { print $NF }' "$scaling")
	cat <<EOF
set terminal $term
set output "$outdir/scaling.png"
set multiplot layout 2,1 title "profbuf writer scaling: W writers + 1 reader, 34-word records, $cpus CPUs"
set key outside right top
set grid
set logscale x 2
set xlabel "writers"
set logscale y
set ylabel "records delivered / s"
set format y "%.0e"
EOF
	printf 'plot'
	sep=' '
	for impl in "$@"; do
		printf '%b"%s/sc.%s.dat" using 1:2 with linespoints lw 2 title "%s"' \
			"$sep" "$tmp" "$impl" "$impl"
		sep=', \\\n     '
	done
	printf '\n'
	cat <<EOF
unset logscale y
set format y "%g"
set ylabel "writes lost (%)"
set yrange [0:100]
EOF
	printf 'plot'
	sep=' '
	for impl in "$@"; do
		printf '%b"%s/sc.%s.dat" using 1:3 with linespoints lw 2 title "%s"' \
			"$sep" "$tmp" "$impl" "$impl"
		sep=', \\\n     '
	done
	printf '\nunset multiplot\n'
}

if [ ! -s "$scaling" ]; then
	skip "$scaling missing or empty (run build/bench/scaling_bench); no scaling.png"
elif ! impls=$(scaling_data) || [ -z "$impls" ]; then
	skip "$scaling has no data in the expected columns; no scaling.png"
else
	# shellcheck disable=SC2086 # one word per implementation
	scaling_plot $impls > "$tmp/scaling.gp"
	gnuplot "$tmp/scaling.gp"
	echo "plot.sh: wrote $outdir/scaling.png"
fi

# ---- record_size.png --------------------------------------------------

# record_data: from profbuf_bench's "write Nw" rows, one file per
# implementation, "words ns", in $tmp/rs.<impl>.dat; the names to stdout.
record_data() {
	awk -v dir="$tmp" '
	# split_csv(): the fields of one CSV line into f[1..n], unquoted.
	function split_csv(line, f,    n, i, c, q, v) {
		n = 0
		v = ""
		q = 0
		for (i = 1; i <= length(line); i++) {
			c = substr(line, i, 1)
			if (q && c == "\"" && substr(line, i + 1, 1) == "\"") {
				v = v c
				i++
			} else if (c == "\"") {
				q = !q
			} else if (!q && c == ",") {
				f[++n] = v
				v = ""
			} else {
				v = v c
			}
		}
		f[++n] = v
		return n
	}
	function keep(name, w, ns) {
		if (!(name in seen)) {
			seen[name] = 1
			names[++nnames] = name
		}
		val[name, w] = ns
		if (!(w in wseen)) {
			wseen[w] = 1
			words[++nwords] = w
		}
	}
	NR == 1 {
		n = split_csv($0, f)
		for (i = 1; i <= n; i++)
			col[f[i]] = i
		next
	}
	{
		split_csv($0, f)
		if (f[col["program"]] != "profbuf_bench" ||
		    f[col["case"]] !~ /^write [0-9]+w$/)
			next
		w = f[col["case"]]
		gsub(/[^0-9]/, "", w)
		keep(f[col["ours"]], w + 0, f[col["ours_median"]])
		keep(f[col["anchor"]], w + 0, f[col["anchor_median"]])
	}
	END {
		for (i = 2; i <= nwords; i++)	# insertion sort, numeric
			for (j = i; j > 1 && words[j - 1] > words[j]; j--) {
				t = words[j]
				words[j] = words[j - 1]
				words[j - 1] = t
			}
		for (k = 1; k <= nnames; k++) {
			name = names[k]
			file = name
			gsub(/[^A-Za-z0-9_]/, "_", file)
			print file
			for (i = 1; i <= nwords; i++)
				if ((name, words[i]) in val)
					printf "%s %s\n", words[i],
						val[name, words[i]] > \
						(dir "/rs." file ".dat")
		}
	}' "$latest"
}

# record_plot IMPL...: the gnuplot script.
record_plot() {
	cat <<EOF
set terminal $term
set output "$outdir/record_size.png"
set title "profbuf_write vs anchors: one writer, ns per record (median)"
set key outside right top
set grid
set xlabel "record size (words)"
set ylabel "ns per write"
set xtics (8, 34, 66)
set xrange [0:74]
set yrange [0:*]
EOF
	printf 'plot'
	sep=' '
	for impl in "$@"; do
		lw=2
		[ "$impl" = profbuf ] && lw=4
		printf '%b"%s/rs.%s.dat" using 1:2 with linespoints lw %s title "%s"' \
			"$sep" "$tmp" "$impl" "$lw" "$impl"
		sep=', \\\n     '
	done
	printf '\n'
}

if [ ! -s "$latest" ]; then
	skip "$latest missing or empty (run make bench); no record_size.png"
elif ! impls=$(record_data) || [ -z "$impls" ]; then
	skip "no profbuf_bench \"write Nw\" rows in $latest; no record_size.png"
else
	# shellcheck disable=SC2086 # one word per implementation
	record_plot $impls > "$tmp/record_size.gp"
	gnuplot "$tmp/record_size.gp"
	echo "plot.sh: wrote $outdir/record_size.png"
fi

exit "$status"
