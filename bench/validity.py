#!/usr/bin/env python3
"""Does the record's arrival test (issue 48, the verdict on the load) say what scipy says?

--datasets (20) open-loop runs with `--arrival poisson` against the embedded target, one thread,
--connections (4) connections, --seconds (3) each, at rates taken in turn from --rates (200 to
20000 req/s: the highest ones push this client off its schedule, so that both verdicts occur),
each with `--log-requests`. For each run:
1. the per-request log's send instants (`start_ns`) in order: the first 1,000 gaps between them
   are the record's sample (`arrivals.gaps_ns`, checked equal); those longer than the client's
   resolution (the pacer's slack and the schedule lag's p50, from the record), less it, through
   `scipy.stats.anderson(x, 'expon')`: A² over the 5% critical value rejects;
2. the record's `validity` arrivals check: its A², critical value and state (fail or pass).
Prints each run's figures and the count of runs where scipy's verdict and the record's agree (and
where A² agrees within 1e-6), and, for what the sample stands for, scipy's verdict on all the
run's gaps beyond the resolution. It measures; it does not judge: exit 0 whenever it ran (1 if a run
failed, 2 if scipy or the binary is missing).

    python3 bench/validity.py [--datasets 20] [--seconds 3] [--rates 200,500,...]
        [--reqlife target/release/reqlife] [--json-out FILE]
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GAPS = 1000  # recorder::sends::GAPS


def anderson(x):
    from scipy import stats
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy 1.17 warns of the critical values' deprecation
        r = stats.anderson(x, "expon")
    return float(r.statistic), float(r.critical_values[2])


def beyond(gaps, slack_ns):
    return [g - slack_ns for g in gaps if g - slack_ns > 0]


def one(a, i, rate, tmp):
    log, out = os.path.join(tmp, f"log{i}.csv"), os.path.join(tmp, f"r{i}.json")
    cmd = [a.reqlife, "run", "-R", str(rate), "--arrival", "poisson", "--seed", str(4800 + i),
           "-c", str(a.connections), "-t", "1", "-d", f"{a.seconds}s", "--quiet",
           "--log-requests", log, "-o", out]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"reqlife failed ({p.returncode}): {p.stderr.strip()}")
    with open(out) as f:
        r = json.load(f)
    with open(log) as f:
        starts = sorted(int(row["start_ns"]) for row in csv.DictReader(f))
    gaps = [b - s for s, b in zip(starts, starts[1:])]
    # The client's resolution (analysis::validity::resolution_ns): the slack and the lag's p50.
    slack_ns = r["config"]["pacer_slack_s"] * 1e9 + r["summary"]["latency"]["schedule_lag"]["p50_us"] * 1e3
    check = next(c for c in r["validity"]["checks"] if c["check"] == "arrivals")
    a2, crit = anderson(beyond(gaps[:GAPS], slack_ns))
    a2_all, crit_all = anderson(beyond(gaps, slack_ns))
    return {
        "rate": rate,
        "same_sample": r.get("arrivals", {}).get("gaps_ns") == gaps[:GAPS],
        "scipy_a2": a2, "scipy_critical": crit, "scipy_rejects": a2 > crit,
        "record_a2": check.get("figure"), "record_critical": check.get("limit"),
        "record_state": check["state"],
        "all_gaps": len(gaps), "scipy_all_rejects": a2_all > crit_all,
        "lag_p99_us": r["summary"]["latency"]["schedule_lag"]["p99_us"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", type=int, default=20)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--rates", default="200,500,1000,2000,5000,10000,20000")
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target/release/reqlife"))
    ap.add_argument("--json-out")
    a = ap.parse_args()
    try:
        import scipy  # noqa: F401
    except ImportError:
        print("scipy is missing: pip install scipy", file=sys.stderr)
        return 2
    if not os.access(a.reqlife, os.X_OK):
        print(f"no binary at {a.reqlife}: cargo build --release", file=sys.stderr)
        return 2
    rates = [int(r) for r in a.rates.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.datasets):
            row = one(a, i, rates[i % len(rates)], tmp)
            rows.append(row)
            print(f"{i + 1:2d}. {row['rate']:6d} req/s  lag p99 {row['lag_p99_us']:9.1f}us  "
                  f"scipy A² {row['scipy_a2']:8.3f} / {row['scipy_critical']:.3f} "
                  f"{'reject' if row['scipy_rejects'] else 'accept'}  record A² "
                  f"{row['record_a2'] if row['record_a2'] is not None else float('nan'):8.3f} "
                  f"{row['record_state']:14s} same sample {row['same_sample']}  "
                  f"all {row['all_gaps']} gaps: {'reject' if row['scipy_all_rejects'] else 'accept'}",
                  flush=True)
    agree = sum((r["record_state"] == "fail") == r["scipy_rejects"] for r in rows)
    close = sum(r["record_a2"] is not None and abs(r["record_a2"] - r["scipy_a2"]) < 1e-6 for r in rows)
    same = sum(r["same_sample"] for r in rows)
    rejects = sum(r["scipy_rejects"] for r in rows)
    whole = sum(r["scipy_all_rejects"] == r["scipy_rejects"] for r in rows)
    print(f"\nverdicts agree with scipy's on {agree} of {len(rows)} data sets "
          f"({rejects} rejected by scipy); A² within 1e-6 on {close}; the record's sample is the "
          f"log's first {GAPS} gaps on {same}; the first {GAPS} gaps' verdict is the whole run's "
          f"on {whole}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
