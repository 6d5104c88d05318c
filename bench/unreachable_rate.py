#!/usr/bin/env python3
"""An open-loop rate the connections cannot carry, against the closed loop on the same connections.

Issue 46: at a rate its connections could not carry, the open loop queued every request due and
its thread, busy queueing, sent less than half of what the closed loop sent on the same
connections (`-R 200k -c 2`: 8.9k req/s against 20k). Now the connections take the requests due
straight from the schedule, as a closed loop takes its next one: the rate sent should be the
closed loop's.

Starts nginx (one worker, pinned to --server-cpu, 0, a 12-byte body). In each of --rounds rounds,
every client runs once for --duration seconds, pinned to --client-cpu (1), one thread and
--connections (2) connections: `reqlife run -c C -t 1` (the closed loop) and `reqlife run -R RATE
-c C -t 1` (--rate, 1M: far beyond what 2 connections carry); with --reqlife-before, an older
build the same two ways. The order is reversed every other round; each client is reaped with
wait4(), its CPU its own.

Printed per run (requests/s, CPU us per request, peak RSS), then the medians over the rounds and,
per build, the ratio open/closed of the medians' requests/s (1.0: the open loop sends as fast as
the closed loop; issue 46's target: no less) and of their CPU per request. The peak RSS is
ru_maxrss, which counts this script's own resident memory at the fork (some 10 MB).

It measures; it does not judge: exit 0 whenever it ran (1 if a client failed or its output was
not understood, 2 if a tool is missing).

    python3 bench/unreachable_rate.py [--rate 1M] [--connections 2] [--rounds 3] [--duration 3]
        [--reqlife target/release/reqlife] [--reqlife-before OLD_BINARY] [--json-out FILE]
"""

import argparse
import json
import os
import statistics
import sys

sys.dont_write_bytecode = True  # no bench/__pycache__ churn from a run
from client_cpu import against_nginx, reqlife_figures, take_turns  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", default="1M", help="the open loop's rate (-R), beyond what the connections carry")
    ap.add_argument("--connections", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=3, help="seconds per run")
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--reqlife-before", default=None, help="an older build, measured alike")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--json-out", default=None)
    a = ap.parse_args()
    builds = [("now", a.reqlife)] + ([("before", a.reqlife_before)] if a.reqlife_before else [])
    for _, path in builds:
        if not os.access(path, os.X_OK):
            print(f"{path} not found: build it first (cargo build --release)", file=sys.stderr)
            return 2

    def measure(port):
        url = f"http://127.0.0.1:{port}/"
        tools = []
        for build, path in builds:
            base = ["taskset", "-c", a.client_cpu, path, "run", "-t", "1", "-c", str(a.connections),
                    "-d", f"{a.duration}s", "--quiet", "--json"]
            tools.append((f"{build} closed", base + [url], reqlife_figures))
            tools.append((f"{build} -R {a.rate}", base + ["-R", a.rate, url], reqlife_figures))
        for _, cmd, _ in tools:
            print("  " + " ".join(cmd))
        runs = take_turns(tools, a.rounds, lambda f: f"peak RSS {f['max_rss_kib'] / 1024:.1f} MB")
        medians = {}
        print(f"\nmedians of {a.rounds} rounds ({a.connections} connections, one thread, {a.duration} s):")
        for name, _, _ in tools:
            mine = [r for r in runs if r["tool"] == name]
            med = {k: statistics.median(r[k] for r in mine) for k in ("rps", "cpu_us_per_req", "max_rss_kib")}
            medians[name] = med
            print(f"  {name:18} {med['rps']:>9.0f} req/s  {med['cpu_us_per_req']:>7.2f} us CPU/req  "
                  f"peak RSS {med['max_rss_kib'] / 1024:.1f} MB")
        ratios = {}
        for build, _ in builds:
            closed, open_ = medians[f"{build} closed"], medians[f"{build} -R {a.rate}"]
            ratios[build] = {"rps": open_["rps"] / closed["rps"],
                             "cpu_us_per_req": open_["cpu_us_per_req"] / closed["cpu_us_per_req"]}
            print(f"  {build}: -R {a.rate} / closed loop: {ratios[build]['rps']:.2f}x the requests/s, "
                  f"{ratios[build]['cpu_us_per_req']:.2f}x the CPU per request")
        if a.json_out:
            with open(a.json_out, "w") as f:
                json.dump({"runs": runs, "medians": medians, "ratios": ratios}, f, indent=1)
        return 0

    return against_nginx(a.server_cpu, measure)


if __name__ == "__main__":
    sys.exit(main())
