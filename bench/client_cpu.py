#!/usr/bin/env python3
"""Client CPU per request and added latency: reqlife against wrk, side by side.

Starts nginx (Debian's package) on a free loopback port with one worker answering a 12-byte
body, pins it to one core and the client to the other, and runs wrk and reqlife in turn
(alternating which goes first) with 1 thread and 50 connections, then with 1 connection.
Prints requests/s, client CPU microseconds per request (user+sys of the client process divided
by its requests) and p50 at one connection, per round and as medians, with the ratios
reqlife/wrk. It measures; it does not judge: the exit code is 0 whenever it ran.

    python3 bench/client_cpu.py [--rounds 3] [--duration 5] [--reqlife target/release/reqlife]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

from nginx import Nginx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def run_measured(cmd):
    """Runs cmd; returns (stdout, stderr, cpu seconds of the child)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()  # reads until EOF; the child has exited or closed its pipes
    # communicate() reaps the child with waitpid; its rusage is then in RUSAGE_CHILDREN.
    return out.decode(), err.decode(), p.returncode


def cpu_of(cmd):
    before = os.times()
    out, err, code = run_measured(cmd)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return out, err, code, cpu


UNITS = {"us": 1.0, "ms": 1000.0, "s": 1e6}


def wrk_figures(out):
    m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
    if not m:
        raise ValueError("cannot read wrk's request count")
    n = int(m.group(1))
    secs = float(m.group(2)) * (1e-3 if m.group(3) == "ms" else 1.0)
    p50 = None
    m = re.search(r"^\s*50%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    if m:
        p50 = float(m.group(1)) * UNITS[m.group(2)]
    return n, n / secs, p50


def reqlife_figures(out):
    j = json.loads(out)
    return j["requests"]["total"], j["throughput_rps"], j["latency"]["total"]["p50_us"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per client run")
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--peer-only", action="store_true", help="run only wrk")
    ap.add_argument("--json-out", help="write every figure to this file")
    a = ap.parse_args()

    for tool in ("nginx", "wrk", "taskset"):
        if not shutil.which(tool):
            print(f"{tool} is missing: apt-get install -y nginx wrk util-linux", file=sys.stderr)
            return 2
    if not a.peer_only and not os.access(a.reqlife, os.X_OK):
        print(f"{a.reqlife} not found: build it first with cargo build --release", file=sys.stderr)
        return 2

    with Nginx(cpu=a.server_cpu) as port:
        return measure(a, port)


def measure(a, port):
    url = f"http://127.0.0.1:{port}/"
    d = a.duration
    pin = ["taskset", "-c", a.client_cpu]

    def wrk(c):
        return pin + ["wrk", "-t1", f"-c{c}", f"-d{d:g}s", "--latency", url]

    def reqlife(c):
        return pin + [a.reqlife, "run", "-t", "1", "-c", str(c), "-d", f"{d:g}s", "--quiet", "--json", url]

    tools = [("wrk", wrk, wrk_figures)]
    if not a.peer_only:
        tools.append(("reqlife", reqlife, reqlife_figures))
    rows = []
    for r in range(a.rounds):
        order = tools if r % 2 == 0 else list(reversed(tools))
        for name, cmd, parse in order:
            out, err, code, cpu = cpu_of(cmd(a.connections))
            try:
                n, rps, _ = parse(out)
            except (ValueError, KeyError, json.JSONDecodeError) as e:
                print(f"{name} output not understood ({e}):\n{out}\n{err}", file=sys.stderr)
                return 1
            out1, err1, _, _ = cpu_of(cmd(1))
            try:
                _, _, p50 = parse(out1)
            except (ValueError, KeyError, json.JSONDecodeError) as e:
                print(f"{name} -c 1 output not understood ({e}):\n{out1}\n{err1}", file=sys.stderr)
                return 1
            rows.append({"round": r + 1, "tool": name, "requests": n, "rps": rps,
                         "cpu_s": cpu, "cpu_us_per_req": cpu / n * 1e6, "p50_c1_us": p50})
            print(f"round {r + 1} {name:8} {rps:>12.0f} req/s  {cpu / n * 1e6:>6.2f} us CPU/req"
                  f"  p50 at -c 1: {p50 if p50 is not None else float('nan'):>7.1f} us", flush=True)

    print()
    print(f"medians over {a.rounds} rounds (-t 1 -c {a.connections}, {d:g} s each; p50 with -c 1):")
    med = {}
    for name, _, _ in tools:
        mine = [x for x in rows if x["tool"] == name]
        med[name] = {k: statistics.median(x[k] for x in mine if x[k] is not None)
                     for k in ("rps", "cpu_us_per_req", "p50_c1_us")}
        m = med[name]
        print(f"  {name:8} {m['rps']:>12.0f} req/s  {m['cpu_us_per_req']:>6.2f} us CPU/req  p50 {m['p50_c1_us']:>7.1f} us")
    if "reqlife" in med:
        cpu_ratio = med["reqlife"]["cpu_us_per_req"] / med["wrk"]["cpu_us_per_req"]
        p50_ratio = med["reqlife"]["p50_c1_us"] / med["wrk"]["p50_c1_us"]
        print(f"  ratio reqlife/wrk: CPU per request {cpu_ratio:.3f} (target <= 1.0), "
              f"p50 at -c 1 {p50_ratio:.3f}")
        med["ratios"] = {"cpu_per_request": cpu_ratio, "p50_c1": p50_ratio}
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"rows": rows, "medians": med}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
