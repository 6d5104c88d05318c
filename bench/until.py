#!/usr/bin/env python3
"""How long `--until` takes, and that it stops only when precise (issue 48, point 2).

1. Against nginx (one worker, pinned to --server-cpu, 0), or with --server random:MS the embedded
   target's /random/MS (a delay drawn from the exponential distribution of mean MS ms), the client pinned to --client-cpu (1),
   one thread, --connections (4), an open loop at --rate (2000) req/s, --runs (3) runs of
   `--until p99:5%` (--target) with a cap of --cap (60) seconds: each run's length, how it
   ended, its p99 and interval, and the half-width the record gives (the issue: well before the
   cap, the half-width within 5%).
2. Against the embedded target's /drift/20 (a delay that grows by a tenth of 20 ms each second),
   `--until p50:5%` with a cap of --drift-cap (20) seconds, at --drift-rate (20) req/s: it must
   run to the cap and say it did not converge.

Prints each run's figures and the medians. It measures; it does not judge: exit 0 whenever it
ran (1 if a client failed, 2 if a tool is missing).

    python3 bench/until.py [--rate 2000] [--target p99:5%] [--cap 60] [--runs 3]
        [--reqlife target/release/reqlife]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ churn from a run
from client_cpu import against_server  # noqa: E402
from soak import free_port  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(a, url, rate, cap, target, out):
    cmd = ["taskset", "-c", a.client_cpu, a.reqlife, "run", "-R", str(rate), "-c",
           str(a.connections), "-t", "1", "-d", f"{cap}s", "--until", target, "--quiet", "-o", out,
           url]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"reqlife failed ({p.returncode}): {p.stderr.strip()}")
    with open(out) as f:
        return json.load(f)


def describe(r):
    s = r["summary"]
    u = s["until"]
    t = u["targets"][0]
    name = t["target"].split(":")[0]
    key = {"p50": "p50", "p90": "p90", "p99": "p99", "p99.9": "p999", "p99.99": "p9999"}[name]
    total = s["latency"]["total"]
    return (f"{s['duration_s']:.2f}s, {r['stop_reason']}, converged {u['converged']}, "
            f"{name} {total[key + '_us']} us {total[key + '_ci_us']} "
            f"half-width {t.get('half_width_pct')}% (met {t['met']})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--target", default="p99:5%")
    ap.add_argument("--cap", type=int, default=60, help="seconds")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--drift-rate", type=int, default=20)
    ap.add_argument("--drift-cap", type=int, default=20, help="seconds")
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--server", default="nginx",
                    help="nginx, or random:MS: the embedded target's /random/MS (an exponential "
                         "delay of mean MS ms; give enough --connections)")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    a = ap.parse_args()
    if not os.access(a.reqlife, os.X_OK):
        print(f"{a.reqlife} not found: build it first (cargo build --release)", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="reqlife-until-")
    rec = os.path.join(tmp, "r.json")

    def steady(url):
        took = []
        for i in range(a.runs):
            r = run(a, url, a.rate, a.cap, a.target, rec)
            took.append(r["summary"]["duration_s"])
            print(f"{a.server} run {i + 1}, {a.rate} req/s, --until {a.target}, cap {a.cap}s: {describe(r)}",
                  flush=True)
        print(f"median length: {statistics.median(took):.2f}s of a {a.cap}s cap")
        return 0

    code = against_server(a.server, a.server_cpu, a.reqlife, steady)
    if code != 0:
        return code
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", a.server_cpu, a.reqlife, "serve", "--addr",
                               f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        r = run(a, f"http://127.0.0.1:{port}/drift/20", a.drift_rate, a.drift_cap, "p50:5%", rec)
        print(f"/drift/20, {a.drift_rate} req/s, --until p50:5%, cap {a.drift_cap}s: {describe(r)}")
    finally:
        server.terminate()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
