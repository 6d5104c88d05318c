#!/usr/bin/env python3
"""How good are the percentiles' 95% intervals (issue 48): coverage over short runs, and the same
data through scipy.

Starts nginx (one worker, pinned to --server-cpu, 0), or with --server random:MS the embedded
target, whose /random/MS route answers after a delay drawn from the exponential distribution of
mean MS ms (a latency distribution that does not change from run to run), then, the client pinned to --client-cpu (1),
one thread, --connections (4) connections, an open loop at --rate (2000) req/s:
1. one long run (--long seconds, 30): its p99 stands for the server's;
2. --short (10) short runs (--short-seconds, 5; intervals of --interval, 200ms): each one's p99 interval (`p99_ci_us`) holds the
   long run's p99 or not: the share that does is the coverage (95% is the aim; issue 48 asks for
   at least 70% of 10 runs), their half-widths against p99 (issue 48: a median under a quarter),
   and the long run's own half-width (narrower than a short one's);
3. --datasets (20) runs with `--log-requests` and one interval (so the interval kept is the order
   statistics'): scipy.stats.quantile_test(totals, p=P).confidence_interval() of the per-request
   log's totals against the record's interval, for p50, p90 and p99, in histogram buckets
   (HdrHistogram's 0.1%: the percentiles' own precision; issue 48: within one bucket).

Prints each run's figures, then the coverage, the median half-width share, the largest distance
from scipy in buckets. It measures; it does not judge: exit 0 whenever it ran (1 if a client
failed, 2 if a tool is missing: scipy, nginx, the binary).

    python3 bench/precision.py [--rate 2000] [--long 30] [--short 10] [--short-seconds 5]
        [--datasets 20] [--server nginx|random:MS] [--reqlife target/release/reqlife] [--json-out FILE]
"""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no bench/__pycache__ churn from a run
from client_cpu import against_server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = {"p50": (0.5, "p50_ci_us", "p50_us"), "p90": (0.9, "p90_ci_us", "p90_us"),
         "p99": (0.99, "p99_ci_us", "p99_us")}


def run(a, url, seconds, out, extra=None):
    # The intervals (batch means' batches) are --interval long, but where a run asks its own.
    extra = extra or ["--interval", a.interval]
    cmd = ["taskset", "-c", a.client_cpu, a.reqlife, "run", "-R", str(a.rate), "-c",
           str(a.connections), "-t", "1", "-d", f"{seconds}s", "--quiet", "-o", out, *extra, url]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"reqlife failed ({p.returncode}): {p.stderr.strip()}")
    with open(out) as f:
        return json.load(f)["summary"]["latency"]["total"]


def totals_ns(path):
    with open(path) as f:
        return [int(r["total_ns"]) for r in csv.DictReader(f) if r.get("total_ns")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--long", type=int, default=30, help="seconds of the long run")
    ap.add_argument("--short", type=int, default=10, help="short runs")
    ap.add_argument("--short-seconds", type=int, default=5)
    ap.add_argument("--interval", default="200ms", help="the runs' --interval: batch means' batches")
    ap.add_argument("--datasets", type=int, default=20, help="runs compared with scipy")
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--server", default="nginx",
                    help="nginx, or random:MS: the embedded target's /random/MS (an exponential "
                         "delay of mean MS ms, a distribution that stays the same all run long; "
                         "give enough --connections: rate x 1.1 x MS / 1000 are in flight)")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--json-out", default=None)
    a = ap.parse_args()
    try:
        import numpy as np
        from scipy import stats
    except ImportError:
        print("scipy is not installed (pip install scipy)", file=sys.stderr)
        return 2
    if not os.access(a.reqlife, os.X_OK):
        print(f"{a.reqlife} not found: build it first (cargo build --release)", file=sys.stderr)
        return 2

    def measure(url):
        tmp = tempfile.mkdtemp(prefix="reqlife-precision-")
        rec = os.path.join(tmp, "r.json")
        long = run(a, url, a.long, rec)
        truth = long["p99_us"]
        lo, hi = long["p99_ci_us"]
        print(f"long run {a.long}s: p99 {truth} us, interval [{lo}, {hi}] "
              f"(half-width {(hi - lo) / 2 / truth:.1%} of p99)")
        held, halves = 0, []
        for i in range(a.short):
            t = run(a, url, a.short_seconds, rec)
            lo, hi = t["p99_ci_us"]
            inside = lo is not None and hi is not None and lo <= truth <= hi
            held += inside
            if lo is not None and hi is not None:
                halves.append((hi - lo) / 2 / t["p99_us"])
            method = "batch means" if "p99" in (t.get("ci_batches") or {}).get("percentiles", []) \
                else "order statistics"
            print(f"short {i + 1}: p99 {t['p99_us']} us [{lo}, {hi}] {method}: "
                  f"{'holds' if inside else 'misses'} {truth}")
        worst = 0.0
        for i in range(a.datasets):
            log = os.path.join(tmp, "log.csv")
            t = run(a, url, a.short_seconds, rec,
                    ["--log-requests", log, "--interval", f"{a.short_seconds + 1}s"])
            x = np.array(totals_ns(log), dtype=float) / 1000.0
            line = []
            for name, (p, ci_key, _) in NAMES.items():
                ci = stats.quantile_test(x, q=0, p=p).confidence_interval(0.95)
                ours = t[ci_key]
                for theirs, mine in ((ci.low, ours[0]), (ci.high, ours[1])):
                    if np.isnan(theirs) or mine is None:
                        if not (np.isnan(theirs) and mine is None):
                            worst = max(worst, float("inf"))
                        continue
                    # In HdrHistogram buckets of 0.1% (3 significant digits).
                    worst = max(worst, abs(mine - theirs) / (theirs * 0.001))
                line.append(f"{name} scipy [{ci.low:.3f}, {ci.high:.3f}] ours {ours}")
            print(f"data set {i + 1} ({len(x)} totals): " + "; ".join(line))
        cover = held / a.short
        median_half = statistics.median(halves) if halves else None
        print(f"\ncoverage of the long run's p99: {held}/{a.short} ({cover:.0%})")
        if median_half is not None:
            print(f"median half-width of a short run's p99 interval: {median_half:.1%} of p99")
        print(f"largest distance from scipy over {a.datasets} data sets: {worst:.2f} buckets of 0.1%")
        if a.json_out:
            with open(a.json_out, "w") as f:
                json.dump({"coverage": cover, "held": held, "short": a.short,
                           "median_half_width_share": median_half, "scipy_buckets_max": worst}, f)
        return 0

    return against_server(a.server, a.server_cpu, a.reqlife, measure)


if __name__ == "__main__":
    sys.exit(main())
