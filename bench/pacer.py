#!/usr/bin/env python3
"""The open-loop pacer's precision: schedule lag and achieved rate at fixed rates.

Starts nginx (one worker, pinned to core 0, a 12-byte body) and runs `reqlife run -R RATE`
pinned to core 1 (-t 1 -c 50) for each rate, several rounds, twice: with the precise timer
(timerfd, the default) and with tokio's 1 ms timer (--pacer-timer coarse), which is about as
coarse as wrk2's pacing; both with reqlife's default --pacer-slack, or the one given. Prints, per rate and timer, the medians over rounds of the schedule lag
p50/p99/p99.9/max (how late each request left after its due time, waiting for a busy connection
excluded) and of the achieved rate as a share of the offered one.
Target: lag p99 <= 100 us at 50,000 req/s, achieved within 0.5% of offered.

    python3 bench/pacer.py [--rates 10000,25000,50000] [--rounds 3] [--duration 5]
                           [--pacer-slack D]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

from nginx import Nginx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_run(reqlife, port, rate, duration, coarse, cpu, slack):
    cmd = ["taskset", "-c", cpu, reqlife, "run", "-R", str(rate), "-d", f"{duration:g}s",
           "-t", "1", "-c", "50", "--quiet", "--json", f"http://127.0.0.1:{port}/"]
    if coarse:
        cmd[-1:-1] = ["--pacer-timer", "coarse"]
    if slack is not None:
        cmd[-1:-1] = ["--pacer-slack", slack]
    p = subprocess.run(cmd, capture_output=True, text=True)
    j = json.loads(p.stdout)
    lag = j["latency"]["schedule_lag"]
    return {"lag_p50_us": lag["p50_us"], "lag_p99_us": lag["p99_us"], "lag_p999_us": lag["p999_us"],
            "lag_max_us": lag["max_us"], "achieved_share": j["throughput_rps"] / rate,
            "errors": j["requests"]["errors"], "warnings": j["warnings"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="10000,25000,50000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--pacer-slack", help="reqlife's --pacer-slack (its default if not given)")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    for tool in ("nginx", "taskset"):
        if not shutil.which(tool):
            print(f"{tool} is missing: apt-get install -y nginx util-linux", file=sys.stderr)
            return 2
    if not os.access(a.reqlife, os.X_OK):
        print(f"{a.reqlife} not found: build it first with cargo build --release", file=sys.stderr)
        return 2
    rates = [int(r) for r in a.rates.split(",")]
    results = {}
    with Nginx(cpu=a.server_cpu) as port:
        for rate in rates:
            for coarse in (False, True):
                runs = [one_run(a.reqlife, port, rate, a.duration, coarse, a.client_cpu,
                                a.pacer_slack)
                        for _ in range(a.rounds)]
                med = {k: statistics.median(r[k] for r in runs)
                       for k in ("lag_p50_us", "lag_p99_us", "lag_p999_us", "lag_max_us", "achieved_share")}
                timer = "tokio 1 ms" if coarse else "timerfd"
                results[f"{rate}/{timer}"] = {"median": med, "runs": runs}
                print(f"{rate:>6} req/s  {timer:10}  lag p50 {med['lag_p50_us']:>8.1f} us  "
                      f"p99 {med['lag_p99_us']:>8.1f} us  p99.9 {med['lag_p999_us']:>8.1f} us  "
                      f"max {med['lag_max_us']:>8.1f} us  achieved {100 * med['achieved_share']:.3f}%",
                      flush=True)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
