#!/usr/bin/env python3
"""HTTP/1.1 pipelining: reqlife --pipeline N against wrk with its pipeline.lua, side by side.

Starts nginx (one worker on --server-cpu, 0, the 12-byte body `Hello World!`); the clients run
one thread on --client-cpu (1), -c --connections (50), for --duration seconds, --rounds times
each, taking turns (the order reversed every other round), at each depth of --depths:

  wrk      wrk -t1 -cC -dDs --latency -H 'User-Agent: reqlife/V' -s pipeline.lua URL -- N
           (wrk's scripts/pipeline.lua: N requests concatenated, sent together, the next N once
           all N are answered; with reqlife's User-Agent, so that both send the same bytes)
  reqlife  reqlife run -t 1 -c C -d Ds --pipeline N --json URL   (the same batches)

Each client is reaped with wait4(): its CPU is its own user+sys time. Printed per run, then per
depth the medians over the rounds of requests/s and CPU microseconds per request, and the ratio
reqlife/wrk of the medians (the engine issue's target: <= 0.8).

It measures; it does not judge: exit 0 whenever it ran (1 if a client failed or its output was
not understood, 2 if a tool is missing).

    python3 bench/pipeline_cpu.py [--depths 1,16] [--connections 50] [--rounds 3] [--duration 5]
        [--reqlife target/release/reqlife] [--server-cpu 0] [--client-cpu 1] [--json-out FILE]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no bench/__pycache__ churn from a run
from client_cpu import against_nginx, reqlife_figures, take_turns, wrk_figures  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# wrk's scripts/pipeline.lua, with the depth as the script's argument.
PIPELINE_LUA = """
init = function(args)
   local r = {}
   local depth = tonumber(args[1]) or 1
   for i = 1, depth do
      r[i] = wrk.format()
   end
   req = table.concat(r)
end

request = function()
   return req
end
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depths", default="1,16", help="pipeline depths, comma-separated (1,16)")
    ap.add_argument("--connections", type=int, default=50, help="connections (50)")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each client per depth (3)")
    ap.add_argument("--duration", type=int, default=5, help="whole seconds per run (5)")
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--server-cpu", default="0", help="core for nginx (0)")
    ap.add_argument("--client-cpu", default="1", help="core for the clients (1)")
    ap.add_argument("--json-out", metavar="FILE", help="write every figure to FILE as JSON")
    a = ap.parse_args()
    try:
        depths = [int(d) for d in a.depths.split(",")]
    except ValueError:
        ap.error(f"--depths {a.depths}: expected whole numbers such as 1,16")
    if any(d < 1 for d in depths) or a.rounds < 1 or a.duration < 1 or a.connections < 1:
        ap.error("--depths, --rounds, --duration and --connections must be at least 1")
    missing = [t for t in ("nginx", "wrk", "taskset") if not shutil.which(t)]
    if missing:
        print(f"missing: {', '.join(missing)}; install them with: apt-get install -y nginx wrk",
              file=sys.stderr)
        return 2
    if not (os.path.isfile(a.reqlife) and os.access(a.reqlife, os.X_OK)):
        print(f"no reqlife binary at {a.reqlife}: build it first: cargo build --release",
              file=sys.stderr)
        return 2
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        lua.write(PIPELINE_LUA)
        lua.flush()
        return against_nginx(a.server_cpu, lambda port: measure(a, port, depths, lua.name))


def measure(a, port, depths, lua):
    url = f"http://127.0.0.1:{port}/"
    # reqlife's request carries `User-Agent: reqlife/VERSION`; wrk's gets the same.
    version = subprocess.run([a.reqlife, "--version"], capture_output=True, text=True,
                             check=True).stdout.split()[-1]
    agent = f"User-Agent: reqlife/{version}"
    pin = ["taskset", "-c", a.client_cpu]
    c, d = a.connections, a.duration
    print(f"nginx on 127.0.0.1:{port} (1 worker, core {a.server_cpu}); clients on core "
          f"{a.client_cpu}, -t 1 -c {c}, {a.rounds} round(s) of {d} s per client and depth",
          flush=True)
    runs = []
    for depth in depths:
        wrk = pin + ["wrk", "-t1", f"-c{c}", f"-d{d}s", "--latency", "-H", agent, "-s", lua,
                     url, "--", str(depth)]
        reqlife = pin + [a.reqlife, "run", "-t", "1", "-c", str(c), "-d", f"{d}s", "--quiet",
                         "--json", "--pipeline", str(depth), url]
        print(f"\ndepth {depth}:\n  {' '.join(wrk)}\n  {' '.join(reqlife)}", flush=True)
        tools = [("wrk", wrk, wrk_figures), ("reqlife", reqlife, reqlife_figures)]
        runs += take_turns(tools, a.rounds, lambda f: f"p50 {f['p50_us']:.0f} us", depth=depth)

    print(f"\nmedians over {a.rounds} round(s):")
    print(f"  {'depth':>5}  {'wrk req/s':>10} {'reqlife req/s':>13}  {'wrk us/req':>10} "
          f"{'reqlife us/req':>14}  {'ratio':>5}")
    for depth in depths:
        def med(tool, key):
            return statistics.median(r[key] for r in runs
                                     if r["tool"] == tool and r["depth"] == depth)
        wc, rc = med("wrk", "cpu_us_per_req"), med("reqlife", "cpu_us_per_req")
        print(f"  {depth:>5}  {med('wrk', 'rps'):>10.0f} {med('reqlife', 'rps'):>13.0f}  "
              f"{wc:>10.3f} {rc:>14.3f}  {rc / wc:>5.2f}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(runs, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
