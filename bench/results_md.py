#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/results_md.py - write bench/RESULTS.md from the benchmarks' output.

    python3 bench/results_md.py [--results bench/results] [--out bench/RESULTS.md]

`make bench` runs it at its end.  RESULTS.md holds the current figure of
every benchmark, one block per benchmark, each between the lines
`<!-- begin NAME -->` and `<!-- end NAME -->`:

- the C benchmarks (bench/*_bench.c, through bench/harness.c) write
  RESULTS/latest.md: a section per program, its run line (date; CPU; CPUs;
  compiler; options) and one row per comparison.  Each program's last
  section becomes a table: case, ours and its anchor with their medians,
  ratio, goal, met, machine, compiler, date.  Rows whose goal is not met
  are listed under the table, followed by the paragraph of why kept
  between `<!-- why -->` and `<!-- /why -->` in the block RESULTS.md held
  before (written by hand; kept while a goal is not met, dropped once
  every goal is met); a paragraph between `<!-- about -->` and
  `<!-- /about -->` is kept as it is;
- the scripts that write their own report (bench-prof, bench-lttng; and
  bench-agree's with --agree, which `make bench-agree` passes) are copied
  in: the last run in each file;
- a benchmark with no result file keeps the block RESULTS.md held, so one
  benchmark run alone regenerates its own block and leaves the others;
- blocks named `kept:...` are written by hand (figures measured elsewhere,
  or by scripts that only print) and copied as they are; one named
  `kept:NAME` is dropped once a block NAME is generated.

No history: each run replaces the figures it measured (git log has the
earlier ones).
"""

import argparse
import csv
import os
import re
import sys

# The C benchmarks, in the order a reader meets the pieces.
HARNESS_ORDER = [
    "profbuf_bench", "scaling_bench", "stacktab_bench", "trace_bench",
    "tracemem_bench", "sigprof_bench", "sample_cost_bench",
    "unwind_bench", "symbolize_bench",
]

# Scripts with their own report: block name, file under RESULTS, how it
# is produced, and whether a file holds one run ("whole") or appends runs
# ("last": the last `## ` section is the latest run).
SCRIPTS = [
    ("prof_overhead", "prof_overhead.md", "make bench-prof (bench/prof_overhead.sh)", "last"),
    ("launch_overhead", "launch_overhead.md", "make bench-prof (bench/launch_overhead.sh)", "last"),
    ("http_overhead", "http_overhead.md", "make bench-prof (bench/http_overhead.sh)", "last"),
    ("lttng", "lttng.md", "make bench-lttng (bench/lttng_bench.sh)", "last"),
    ("agree", os.path.join("agree", "agree.md"), "make bench-agree (bench/perf_agree.py)", "whole"),
]

INTRO = """# Benchmark results

The current figure of every benchmark. Each figure is measured beside
its anchor in the same process run (cases interleaved repetition by
repetition), because these machines are shared and noisy; the ratio is
ours / anchor (lower is better for ns/op, higher for Mop/s) and the goal
is a bound on it. Medians are given with the run's [min-max].

This file is written by `bench/results_md.py` from `make bench`'s output
(`bench/results/`, not committed): a re-run replaces the figures it
measured. Blocks marked "kept by hand" hold figures that no result file
here holds (printed by scripts that write none, or not measured again
since this file was first generated), with their machine and date; a
run of the benchmark replaces its block. Earlier figures are in `git log -p bench/RESULTS.md`. The curves
(`make bench-plot`) go to `bench/results/*.png`.
"""

BLOCK_RE = re.compile(r"^<!-- begin (\S+) -->\n(.*?)^<!-- end \1 -->\n",
                      re.S | re.M)
WHY_RE = re.compile(r"<!-- why -->\n(.*?)<!-- /why -->\n", re.S)
ABOUT_RE = re.compile(r"<!-- about -->\n(.*?)<!-- /about -->\n", re.S)


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def old_blocks(text):
    """The blocks of the RESULTS.md there was, in order: [(name, body)]."""
    return [(m.group(1), m.group(2)) for m in BLOCK_RE.finditer(text or "")]


def split_cells(line):
    cells = line.strip().strip("|").split("|")
    return [c.strip() for c in cells]


def parse_latest(md, csv_text):
    """bench/harness.c's latest.md and latest.csv: {program: run}, the last
    run of each.  The rows come from the CSV, which names each row's
    program (two benchmarks run at once interleave their lines); a run
    ends where a row repeats.  The run line and the notes come from the
    program's last section of the Markdown."""
    progs = {}
    cur = None
    for line in (md or "").splitlines():
        if line.startswith("## "):
            cur = {"name": line[3:].strip(), "info": None, "rows": [],
                   "notes": []}
            progs[cur["name"]] = cur
            continue
        if cur is None or not line.strip() or line.startswith("|"):
            continue
        if cur["info"] is None:
            cur["info"] = line.strip()
        else:
            cur["notes"].append(line.strip())
    runs = {}
    for r in csv.DictReader((csv_text or "").splitlines()):
        try:
            key = (r["case"], r["ours"], r["anchor"])
            row = [r["case"], r["unit"], r["ours"],
                   "%.2f [%.2f-%.2f]" % (float(r["ours_median"]),
                                         float(r["ours_min"]),
                                         float(r["ours_max"])),
                   r["anchor"],
                   "%.2f [%.2f-%.2f]" % (float(r["anchor_median"]),
                                         float(r["anchor_min"]),
                                         float(r["anchor_max"])),
                   "%.3f" % float(r["ratio"]), r["goal"].replace(" ", ""),
                   r["met"], r["note"]]
        except (KeyError, ValueError, TypeError):
            continue
        run = runs.setdefault(r["program"], [])
        if not run or key in run[-1]:
            run.append({})
        run[-1][key] = row
    for name, run in runs.items():
        prog = progs.setdefault(name, {"name": name, "info": None,
                                       "rows": [], "notes": []})
        prog["rows"] = list(run[-1].values())
    return progs


def run_facts(info):
    """(date, machine, compiler, options) from a harness run line."""
    parts = [p.strip() for p in (info or "").split(";")]
    date = parts[0][:10] if parts else "?"
    machine = "?"
    compiler = "?"
    if len(parts) >= 4:
        machine = "%s, %s" % (parts[1], parts[2])
        compiler = parts[3]
    options = "; ".join(parts[4:])
    return date, machine, compiler, options


def median_of(cell, unit):
    return "%s %s" % (cell.split(" [")[0], unit)


def harness_block(prog, old_body):
    date, machine, compiler, options = run_facts(prog["info"])
    out = []
    out.append("## %s\n" % prog["name"])
    out.append("`build/bench/%s` (`make bench`), %s.\n" % (
        prog["name"], prog["info"] or "no run line"))
    out.append("| case | ours | anchor | ours, median [min-max] | anchor, median [min-max] "
               "| ratio | goal | met | machine | compiler | date | note |")
    out.append("|---|---|---|--:|--:|--:|---|---|---|---|---|---|")
    unmet = []
    for case, unit, ours, ov, anchor, av, ratio, goal, met, note in prog["rows"]:
        if goal == ">=0.00":  # the harness's information rows
            goal, met = "info", "info"
        out.append("| %s | %s | %s | %s %s | %s %s | %s | %s | %s | %s | %s | %s | %s |" % (
            case, ours, anchor, ov, unit, av, unit, ratio, goal,
            {"yes": "yes", "info": "-"}.get(met, "**no**"), machine,
            compiler, date,
            note))
        if met not in ("yes", "info"):
            unmet.append("%s, %s against %s (%s, goal %s)" % (
                case, ours, anchor, ratio, goal))
    out.append("")
    if prog["notes"]:
        out.append("\n\n".join(prog["notes"]) + "\n")
    m = ABOUT_RE.search(old_body or "")
    if m:
        out.append("<!-- about -->\n%s<!-- /about -->\n" % m.group(1))
    if unmet:
        out.append("Not met in this run: %s.\n" % "; ".join(unmet))
        m = WHY_RE.search(old_body or "")
        why = m.group(1) if m else "Why: not explained yet.\n"
        out.append("<!-- why -->\n%s<!-- /why -->\n" % why)
    return "\n".join(out)


def last_section(text):
    """The last `## ` section of a file that appends runs."""
    starts = [m.start() for m in re.finditer(r"^## ", text, re.M)]
    return text[starts[-1]:] if starts else text


def demote(text, levels):
    return re.sub(r"^(#+) ", lambda m: "#" * (len(m.group(1)) + levels) + " ",
                  text, flags=re.M)


def script_facts(body):
    """(date, machine, compiler) from a script's report, "?" where it
    does not say: the date from its heading, the machine and compiler
    from a line "- kernel: K; CPU: C; nproc: N; compiler...: X"."""
    m = re.search(r"\d{4}-\d\d-\d\d", body.split("\n", 1)[0])
    date = m.group(0) if m else "?"
    m = re.search(r"CPU: ([^;\n]+); nproc: (\d+)", body)
    machine = "%s, %s CPUs" % (m.group(1).strip(), m.group(2)) if m else "?"
    m = re.search(r"compiler[^:\n]*: ([^;\n]+)", body)
    compiler = m.group(1).strip() if m else "?"
    return date, machine, compiler


HARNESS_HEAD = ["case", "unit", "ours", "median [min-max]", "anchor",
                "median [min-max]", "ratio", "goal", "met", "note"]


def uniform(rest, date, machine, compiler):
    """A table in the harness's columns, rewritten in this file's: the
    machine, compiler and date on every row."""
    out = []
    head = None
    for line in rest.split("\n"):
        if not line.startswith("|"):
            head = None
            out.append(line)
            continue
        cells = split_cells(line)
        if cells == HARNESS_HEAD:
            head = cells
            out.append("| case | ours | anchor | ours, median [min-max] | "
                       "anchor, median [min-max] | ratio | goal | met | "
                       "machine | compiler | date | note |")
            out.append("|---|---|---|--:|--:|--:|---|---|---|---|---|---|")
            continue
        if head is None:
            out.append(line)
            continue
        if set("".join(cells)) <= set("-:"):
            continue
        case, unit, ours, ov, anchor, av, ratio, goal, met, note = (
            cells + [""] * 10)[:10]
        out.append("| %s | %s | %s | %s %s | %s %s | %s | %s | %s | %s | %s "
                   "| %s | %s |" % (case, ours, anchor, ov, unit, av, unit,
                                    ratio, goal,
                                    "yes" if met == "yes" else "**no**",
                                    machine, compiler, date, note))
    return "\n".join(out)


def script_block(name, rel, how, kind, text, old_body):
    body = last_section(text) if kind == "last" else text
    lines = body.strip("\n").split("\n")
    title = re.sub(r"^#+ ", "", lines[0]) if lines and lines[0].startswith("#") else ""
    rest = "\n".join(lines[1:] if title else lines).strip("\n")
    date, machine, compiler = script_facts(body.strip("\n"))
    rest = uniform(rest, date, machine, compiler)
    out = ["## %s\n" % name,
           "From `bench/results/%s`, written by `%s`%s. Machine: %s; "
           "compiler: %s; date: %s.\n" % (rel, how,
                                         ": " + title if title else "",
                                         machine, compiler, date),
           demote(rest, 1 if kind == "last" else 2) + "\n"]
    m = ABOUT_RE.search(old_body or "")
    if m:
        out.append("<!-- about -->\n%s<!-- /about -->\n" % m.group(1))
    if re.search(r"not met|mixed|\*\*no\*\*", rest):
        m = WHY_RE.search(old_body or "")
        why = m.group(1) if m else "Why: not explained yet.\n"
        out.append("<!-- why -->\n%s<!-- /why -->\n" % why)
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default="bench/results")
    ap.add_argument("--out", default="bench/RESULTS.md")
    ap.add_argument("--agree", action="store_true",
                    help="take RESULTS/agree/agree.md too (make bench-agree)")
    args = ap.parse_args()

    old = old_blocks(read(args.out))
    old_by = dict(old)
    new = {}
    latest = parse_latest(read(os.path.join(args.results, "latest.md")),
                          read(os.path.join(args.results, "latest.csv")))
    if latest:
        for name, prog in latest.items():
            if prog["rows"]:
                new[name] = harness_block(prog, old_by.get(name))
    for name, rel, how, kind in SCRIPTS:
        if name == "agree" and not args.agree:
            continue
        text = read(os.path.join(args.results, rel))
        if text and text.strip():
            new[name] = script_block(name, rel, how, kind, text,
                                     old_by.get(name) or
                                     old_by.get("kept:" + name))

    # Generated blocks in their order, then every other block there was,
    # in its old order; kept:NAME goes once NAME is there.
    order = HARNESS_ORDER + sorted(n for n in new if n not in HARNESS_ORDER
                                   and n not in [s[0] for s in SCRIPTS])
    order += [s[0] for s in SCRIPTS]
    names = []
    for n in order:
        if n in new or n in old_by:
            names.append(n)
        elif "kept:" + n in old_by:
            names.append("kept:" + n)
    names += [n for n, _ in old if n not in names]
    have = set(n for n in names if not n.startswith("kept:"))
    names = [n for n in names
             if not (n.startswith("kept:") and n[5:] in have)]

    parts = [INTRO]
    for n in names:
        body = new[n] if n in new else old_by[n]
        parts.append("<!-- begin %s -->\n%s%s<!-- end %s -->\n" % (
            n, body, "" if body.endswith("\n") else "\n", n))
    text = "\n".join(parts)
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, args.out)
    print("results_md: wrote %s: %d blocks, %d from this run (%s)" % (
        args.out, len(names), len(new), ", ".join(sorted(new)) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
