#!/usr/bin/env python3
"""The start of an open loop: is the first interval's schedule lag any worse than the rest?

Starts nginx (one worker, pinned to core 0, a 12-byte body) and runs `reqlife run -R RATE -c
CONNS -t 1 --interval 100ms` pinned to core 1, several rounds; with `--before BIN`, an older
binary too, taking turns with the current one. For each run it reads the record's interval
series and prints the first interval's schedule lag p99 and max, the median interval's lag p99,
the run's lag p99/p99.9/max and corrected p99.9. Then the medians over rounds.
Target (issue 14): the first interval's lag p99 no worse than 3x the median interval's + 300 us.

    python3 bench/startup.py [--rate 20000] [--connections 1000] [--rounds 5] [--before BIN]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from nginx import Nginx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_run(binary, port, a):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        cmd = ["taskset", "-c", a.client_cpu, binary, "run", "-R", str(a.rate), "-c",
               str(a.connections), "-t", "1", "-d", f"{a.duration:g}s", "--interval", "100ms",
               "--quiet", "-o", out, f"http://127.0.0.1:{port}/"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0 or not os.path.exists(out):
            print(f"{binary} failed ({p.returncode}): {p.stderr.strip()}", file=sys.stderr)
            return None
        with open(out) as f:
            record = json.load(f)
    lags = [i["latency"]["schedule_lag"] for i in record["intervals"]
            if "schedule_lag" in i["latency"]]
    if not lags:
        return None
    run_lag = record["summary"]["latency"]["schedule_lag"]
    return {
        "first_p99_us": lags[0]["p99_us"],
        "first_max_us": lags[0]["max_us"],
        "median_p99_us": statistics.median(l["p99_us"] for l in lags),
        "lag_p99_us": run_lag["p99_us"],
        "lag_p999_us": run_lag["p999_us"],
        "lag_max_us": run_lag["max_us"],
        "total_p999_us": record["summary"]["latency"]["total"]["p999_us"],
        "warnings": len(record["summary"]["warnings"]),
    }


COLUMNS = ["first_p99_us", "first_max_us", "median_p99_us", "lag_p99_us", "lag_p999_us",
           "lag_max_us", "total_p999_us", "warnings"]


def show(label, row):
    cells = " ".join(f"{row[c]:>13.0f}" for c in COLUMNS)
    print(f"{label:<10} {cells}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--before", help="an older reqlife binary, run in turns with --reqlife")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    a = ap.parse_args()
    for tool in ("nginx", "taskset"):
        if not shutil.which(tool):
            print(f"{tool} is missing: apt-get install -y nginx util-linux", file=sys.stderr)
            return 2
    binaries = [("now", a.reqlife)] + ([("before", a.before)] if a.before else [])
    for _, b in binaries:
        if not os.access(b, os.X_OK):
            print(f"{b} not found: build it first with cargo build --release", file=sys.stderr)
            return 2
    print(f"-R {a.rate} -c {a.connections} -t 1 -d {a.duration:g}s --interval 100ms, "
          f"nginx on core {a.server_cpu}, client on core {a.client_cpu}")
    print(f"{'binary':<10} " + " ".join(f"{c:>13}" for c in COLUMNS))
    runs = {label: [] for label, _ in binaries}
    with Nginx(cpu=a.server_cpu) as port:
        for r in range(a.rounds):
            order = binaries if r % 2 == 0 else list(reversed(binaries))
            for label, b in order:
                row = one_run(b, port, a)
                if row is None:
                    return 1
                runs[label].append(row)
                show(label, row)
    print("medians:")
    for label, rows in runs.items():
        med = {c: statistics.median(r[c] for r in rows) for c in COLUMNS}
        show(label, med)
        bound = 3 * med["median_p99_us"] + 300
        print(f"{'':<10} first interval lag p99 {med['first_p99_us']:.0f} us against the bound "
              f"3 x {med['median_p99_us']:.0f} + 300 = {bound:.0f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
