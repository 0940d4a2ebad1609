#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""perf_agree.py - does profring-prof agree with perf? (issue 16, part 6)

    python3 bench/perf_agree.py [--build DIR] [--runs N] [--quick] [--hz HZ]
                                [--only NAME,...] [--out DIR]
                                [--kernel charge|drop] [--timer T]

Records real programs with each tool, RUNS times, interleaved (ours, perf,
ours, perf, ...):

    ours  build/tools/profring-prof record -q -F HZ --timer kernel
                                           -o X.pb.gz -- cmd
    perf  perf record -q -e cpu-clock -F HZ -g -o X.data -- cmd

and compares the flat (self) share of every function, on user-space
samples (bench/agree/leaves.py says how functions are keyed across the
two tools and how kernel samples are charged).  For each program it
prints a table (function, ours %, perf %, diff; the mean of each tool's
runs; every function at 0.5% or more in either) and one summary line:

    TVD(ours, perf)   mean total-variation distance over all pairs of one
                      run of ours and one of perf's
    TVD(ours runs)    mean TVD over pairs of our own runs (run-to-run)
    TVD(perf runs)    the same for perf
    goal              TVD(ours, perf) <= TVD(perf runs), and every function
                      at 5% or more (in either tool's mean) within 3 points
    same-shares ref   sqrt((TVD(ours runs)^2 + TVD(perf runs)^2) / 2): about
                      the distance two tools that see the same shares, each
                      with its own run-to-run noise, lie apart; "within"
                      when TVD(ours, perf) is no more than that.  Both
                      tools take about one sample per period of CPU (perf
                      counters, at the rate asked), but a run's CPU time,
                      and so its sample count, varies from run to run on a
                      shared machine, and most of a TVD is the sampling
                      noise of the many functions under 1%: even a
                      profiler that sees exactly what perf sees has
                      TVD(ours, perf) above TVD(perf runs) about half the
                      time, by chance.
    differences       a permutation test of "both tools' runs come from one
                      distribution": the energy statistic (cross TVD less
                      the mean of the two run-to-run TVDs) against the same
                      for every other split of the runs into two groups of
                      those sizes (5 and 5: 252 splits); a small p says the
                      difference is systematic, not noise (4 runs each or
                      more: with 3 and 3, p is 0.1 at the least).

Both sample the kernel too where they may (perf as root or at
perf_event_paranoid 1 or less; our --timer kernel the same, else its
counters are user mode only, as perf's then are): a period that ends in a
system call or a page fault is then charged, by both, where the program
entered the kernel.  --timer thread (our default engine, user mode only)
shows what that changes: the time of such a period goes to the thread's
next sample in user mode instead (profring-prof(1), --timer).

The programs: python3.11 on bench/agree/work.py, xz -9 -T1 on generated
text, sqlite3 on bench/agree/query.sql, xz -9 -T2 (two compressing threads
and a reading one), bench/agree/recurse.cc (-O2 -fno-omit-frame-pointer;
recursion thousands of frames deep).  About 4 minutes on a 2-core machine
with the default 5 runs; --quick: 2 runs and smaller inputs, under a minute.
--kernel drop: perf's kernel samples dropped instead of charged to their
user-space frame (bench/agree/leaves.py).

Exits 0 with a "skipped:" line when perf, go or the profiler is missing, or
kernel.perf_event_paranoid is above 2 and it does not run as root.  Raw
data (profiles, perf.data, per-run shares as JSON, the report as agree.md)
goes to --out (bench/results/agree).
"""
import argparse
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "agree"))
import leaves  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GOAL_FN_SHARE = 0.05
GOAL_FN_POINTS = 3.0
SHOW_SHARE = 0.005


def gen_text(path, size):
    """Deterministic semi-compressible text: lines of words drawn from a
    5000-word vocabulary, a number and a random hex word (xz -9 gets it to
    about 37%)."""
    r = random.Random(16)
    words = ["".join(r.choice("abcdefghijklmnopqrstuvwxyz")
                     for _ in range(r.randint(2, 10))) for _ in range(5000)]
    done = 0
    with open(path, "w") as f:
        while done < size:
            line = "%s %d %08x\n" % (" ".join(r.choices(words, k=12)),
                                     r.randint(0, 99999), r.getrandbits(32))
            f.write(line)
            done += len(line)


def python311():
    if os.access("/usr/bin/python3.11", os.X_OK):
        return "/usr/bin/python3.11"
    return shutil.which("python3.11")


def programs(args, work):
    """(name, argv, stdin path or None, reason it cannot run or None)."""
    mb = 2 if args.quick else 4
    text = os.path.join(work, "text-%dm" % mb)
    if not os.path.exists(text):
        gen_text(text, mb * 1000 * 1000)
    recurse = os.path.join(work, "recurse")
    src = os.path.join(HERE, "agree", "recurse.cc")
    cxx_err = None
    if not os.path.exists(recurse) or \
            os.path.getmtime(recurse) < os.path.getmtime(src):
        cxx = shutil.which("g++") or shutil.which("c++")
        if not cxx:
            cxx_err = "no g++"
        else:
            subprocess.run([cxx, "-O2", "-fno-omit-frame-pointer", "-o",
                            recurse, src], check=True)
    py = python311()
    xz, sq = shutil.which("xz"), shutil.which("sqlite3")
    return [
        ("python3.11", [py or "python3.11",
                        os.path.join(HERE, "agree", "work.py"),
                        "15" if args.quick else "45"], None,
         None if py else "no python3.11"),
        ("xz -9 -T1", [xz or "xz", "-9", "-T1", "-c", text], None,
         None if xz else "no xz (apt-get install xz-utils)"),
        ("sqlite3", [sq or "sqlite3", ":memory:"],
         os.path.join(HERE, "agree", "query.sql"),
         None if sq else "no sqlite3 (apt-get install sqlite3)"),
        ("xz -9 -T2", [xz or "xz", "-9", "-T2", "--block-size=1MiB", "-c",
                       text], None, None if xz else "no xz"),
        ("c++ recursion", [recurse, "3" if args.quick else "10"], None,
         cxx_err),
    ]


def run_one(tool, argv, stdin, out, args):
    if tool == "ours":
        cmd = [args.prof, "record", "-q", "-F", str(args.hz), "--timer",
               args.timer, "-o", out, "--"] + argv
    else:
        cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(args.hz),
               "-g", "-o", out, "--"] + argv
    t0 = time.monotonic()
    with open(stdin or os.devnull, "rb") as fin:
        r = subprocess.run(cmd, stdin=fin, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=600)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(cmd), r.returncode,
                                                 r.stderr.strip()[-500:]))
    return wall


def tvd(p, q):
    return 0.5 * sum(abs(p.get(k, 0) - q.get(k, 0)) for k in set(p) | set(q))


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def mean_shares(runs):
    keys = set().union(*runs)
    return {k: mean(r.get(k, 0) for r in runs) for k in keys}


def energy_p(runs, n):
    """The permutation p of the energy statistic of runs[:n] against
    runs[n:]: the share of the splits of runs into groups of n and the
    rest whose statistic is at least the observed one (the observed split
    among them)."""
    d = {(i, j): tvd(runs[i], runs[j])
         for i, j in itertools.combinations(range(len(runs)), 2)}

    def stat(a):
        b = [i for i in range(len(runs)) if i not in a]
        return (mean(d[min(i, j), max(i, j)] for i in a for j in b) -
                (mean(d[p] for p in itertools.combinations(a, 2)) +
                 mean(d[p] for p in itertools.combinations(b, 2))) / 2)

    obs = stat(tuple(range(n)))
    splits = list(itertools.combinations(range(len(runs)), n))
    return mean(stat(a) >= obs - 1e-12 for a in splits)


def compare(name, ours, perf):
    """The table and summary of one program; ours and perf are lists of
    leaves.Shares, one per run."""
    po = [s.shares() for s in ours]
    pp = [s.shares() for s in perf]
    mo, mp = mean_shares(po), mean_shares(pp)
    cross = mean(tvd(a, b) for a in po for b in pp)
    self_o = mean(tvd(a, b) for a, b in itertools.combinations(po, 2))
    self_p = mean(tvd(a, b) for a, b in itertools.combinations(pp, 2))
    # Two tools seeing the same shares, each with its own sampling noise,
    # would lie about this far apart (independent errors add in squares).
    same = ((self_o ** 2 + self_p ** 2) / 2) ** 0.5
    rows, outside = [], []
    for k in sorted(set(mo) | set(mp), key=lambda k: -max(mo.get(k, 0),
                                                           mp.get(k, 0))):
        a, b = 100 * mo.get(k, 0), 100 * mp.get(k, 0)
        if max(a, b) < 100 * SHOW_SHARE:
            continue
        fname = leaves.key_name(k, *perf, *ours)
        rows.append((fname, a, b, a - b))
        if max(a, b) >= 100 * GOAL_FN_SHARE and abs(a - b) > GOAL_FN_POINTS:
            outside.append((fname, a, b, a - b))
    met = cross <= self_p and not outside
    p_same = energy_p(po + pp, len(po))
    charged = mean(s.charged / s.total for s in perf if s.total)
    dropped = mean(s.dropped / s.total for s in perf if s.total)
    lines = ["### %s" % name, "",
             "| function | ours % | perf % | diff |", "|---|--:|--:|--:|"]
    lines += ["| `%s` | %.2f | %.2f | %+.2f |" % r for r in rows]
    lines += ["",
              "samples per run: ours %s, perf %s (CPU ms profiled: ours "
              "%s, perf %s; perf's kernel samples: %.1f%% charged to their "
              "user frame, %.1f%% dropped)" % (
                  "/".join(str(s.samples) for s in ours),
                  "/".join(str(s.samples) for s in perf),
                  "/".join("%.0f" % (sum(s.weight.values()) / 1e6)
                           for s in ours),
                  "/".join("%.0f" % (sum(s.weight.values()) / 1e6)
                           for s in perf), 100 * charged, 100 * dropped)]
    noise = cross <= same and not outside
    summary = ("%-14s TVD(ours,perf) %.3f  TVD(ours runs) %.3f  "
               "TVD(perf runs) %.3f  goal %s  |  same-shares ref %.3f: "
               "%s" % (name, cross, self_o, self_p,
                       "met" if met else "NOT met", same,
                       "within" if cross <= same else "beyond"))
    summary += "  |  differences p %.3f" % p_same
    if outside:
        summary += "; functions >=5%% outside +-3 points: %s" % ", ".join(
            "%s (%.1f vs %.1f)" % (f, a, b) for f, a, b, _ in outside)
    lines += ["", summary, ""]
    return lines, summary, {
        "program": name, "tvd_cross": cross, "tvd_ours": self_o,
        "tvd_perf": self_p, "same_ref": same, "met": met, "noise": noise,
        "p_same": p_same,
        "outside": outside, "rows": rows}


def skip(reason):
    print("perf_agree: skipped: %s" % reason)
    sys.exit(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--only", default="")
    ap.add_argument("--kernel", choices=("charge", "drop"), default="charge")
    ap.add_argument("--timer", default="kernel",
                    choices=("kernel", "thread", "posix", "process"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "agree"))
    args = ap.parse_args()
    runs = args.runs or (2 if args.quick else 5)
    if runs < 2:
        ap.error("--runs must be 2 or more (run-to-run distances)")
    args.prof = os.path.join(args.build, "tools", "profring-prof")
    if not os.access(args.prof, os.X_OK):
        skip("no %s (make first)" % args.prof)
    if not shutil.which("perf"):
        skip("no perf (apt-get install linux-perf)")
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            paranoid = int(f.read())
    except (OSError, ValueError):
        skip("cannot read kernel.perf_event_paranoid")
    if paranoid > 2 and os.geteuid() != 0:
        skip("kernel.perf_event_paranoid is %d (> 2): perf cannot sample "
             "user space" % paranoid)
    if not shutil.which("go"):
        skip("no go (go tool pprof reads our profiles)")
    os.makedirs(args.out, exist_ok=True)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    t_start = time.monotonic()
    report = ["# profring-prof against perf: flat shares", "",
              "`python3 bench/perf_agree.py %s` (%d runs per tool, %d Hz), "
              "%s" % (" ".join(sys.argv[1:]), runs, args.hz,
                      time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())),
              ""]
    summaries, data = [], []
    for name, argv, stdin, why in programs(args, args.out):
        if only and not any(o in name for o in only):
            continue
        if why:
            summaries.append("%-14s skipped: %s" % (name, why))
            continue
        tag = name.replace(" ", "_").replace("+", "x")
        ours, perf, walls = [], [], {"ours": [], "perf": []}
        for i in range(runs):
            for tool in ("ours", "perf"):
                out = os.path.join(args.out, "%s.%s.%d.%s" % (
                    tag, tool, i, "pb.gz" if tool == "ours" else "data"))
                walls[tool].append(run_one(tool, argv, stdin, out, args))
                sh = (leaves.read_ours(out) if tool == "ours" else
                      leaves.read_perf(out, args.kernel))
                (ours if tool == "ours" else perf).append(sh)
                with open(out + ".json", "w") as f:
                    json.dump({"%s|%s|%x" % k if isinstance(k[2], int) else
                               "|".join(map(str, k)): w
                               for k, w in sh.weight.items()}, f, indent=0)
        lines, summary, d = compare(name, ours, perf)
        d["wall_s"] = walls
        d["argv"] = argv
        lines.insert(2, "`%s%s`; wall per run: ours %s s, perf %s s" % (
            " ".join(argv), " < " + stdin if stdin else "",
            "/".join("%.1f" % w for w in walls["ours"]),
            "/".join("%.1f" % w for w in walls["perf"])))
        lines.insert(3, "")
        print("\n".join(lines), flush=True)
        report += lines
        summaries.append(summary)
        data.append(d)
    report += ["## Summary", "", "```"] + summaries + ["```", ""]
    print("## Summary (%.0f s)" % (time.monotonic() - t_start))
    print("\n".join(summaries))
    with open(os.path.join(args.out, "agree.md"), "w") as f:
        f.write("\n".join(report))
    with open(os.path.join(args.out, "agree.json"), "w") as f:
        json.dump(data, f, indent=1)
    print("perf_agree: wrote %s" % os.path.join(args.out, "agree.md"))


if __name__ == "__main__":
    main()
