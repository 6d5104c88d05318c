#!/usr/bin/env python3
"""What an interval close costs the run, and what a long series costs in memory.

Two loads against nginx (one worker, core 0), the client on core 1, each --rounds times per
binary (binaries take turns, round by round):

  lag:    run -R 20000 -t 1 -c 100 -d 10s: each interval's schedule lag max (the worst, the
          median and the least: a cost paid at every interval close lifts the least), the run's
          lag p99.9 and p99.
  series: run -R 2000 -t 1 -c 20 --interval 10ms -d 30s -o FILE (3,000 intervals): peak RSS
          (GNU time's maximum resident set), the record's size, lag p99, intervals kept.

Prints one line per run and the medians per binary. Figures, never pass/fail.

    python3 bench/intervals.py --bin before=/opt/reqlife-before --bin after=target/release/reqlife
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from nginx import Nginx


def run(binary, args, port, out):
    """The record, the peak RSS in KiB and the record's size. The peak is GNU time's: the
    ru_maxrss of a child forked from this script would count this script's own memory (Linux
    keeps the high-water mark across exec)."""
    peak = out + ".maxrss"
    cmd = ["/usr/bin/time", "-f", "%M", "-o", peak, "taskset", "-c", "1", binary, "run", *args, "--quiet",
           "-o", out, f"http://127.0.0.1:{port}/"]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rec = json.load(open(out))
    return rec, int(open(peak).read().split()[-1]), os.path.getsize(out)


def lag_of(rec):
    """The run's lag, and each interval's lag max: the worst, the median and the least (a cost
    paid at every interval close lifts the least one)."""
    lag = rec["summary"]["latency"].get("schedule_lag", {})
    maxes = [i["latency"]["schedule_lag"]["max_us"] for i in rec["intervals"] if "schedule_lag" in i["latency"]]
    return {"interval_lag_max_us": max(maxes, default=0),
            "interval_lag_max_median_us": statistics.median(maxes) if maxes else None,
            "interval_lag_max_least_us": min(maxes, default=None),
            "lag_p999_us": lag.get("p999_us"), "lag_p99_us": lag.get("p99_us"),
            "rps": rec["summary"]["throughput_rps"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, help="NAME=PATH (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", choices=["lag", "series"], default=None)
    a = ap.parse_args()
    bins = [b.split("=", 1) for b in a.bin]
    tmp = tempfile.mkdtemp(prefix="reqlife-intervals-")
    loads = {
        "lag": ["-R", "20000", "-t", "1", "-c", "100", "-d", "10s"],
        "series": ["-R", "2000", "-t", "1", "-c", "20", "--interval", "10ms", "-d", "30s"],
    }
    figures = {}
    with Nginx(cpu="0") as port:
        for r in range(a.rounds):
            order = bins if r % 2 == 0 else list(reversed(bins))
            for name, path in order:
                for load, args in loads.items():
                    if a.only and load != a.only:
                        continue
                    out = os.path.join(tmp, f"{name}-{load}-{r}.json")
                    rec, maxrss_kib, size = run(path, args, port, out)
                    f = lag_of(rec)
                    if load == "series":
                        f = {"peak_rss_mb": round(maxrss_kib / 1024, 1), "record_mb": round(size / 1e6, 2),
                             "lag_p99_us": f["lag_p99_us"], "intervals": len(rec["intervals"]),
                             "snapshot_bytes": rec["summary"]["generator"]["interval_snapshot_bytes"]}
                    print(f"round {r + 1} {name:>8} {load:>6}: {f}", flush=True)
                    for k, v in f.items():
                        figures.setdefault((name, load, k), []).append(v)
    print("\nmedians:")
    for (name, load, k), vs in sorted(figures.items()):
        vs = [v for v in vs if v is not None]
        if vs:
            print(f"  {name:>8} {load:>6} {k:>20}: {statistics.median(vs)}  (of {vs})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
