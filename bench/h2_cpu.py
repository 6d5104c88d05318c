#!/usr/bin/env python3
"""HTTP/2 client CPU per request: reqlife against h2load, side by side.

nginx (one worker, core 0) serves HTTPS with HTTP/2 and a 12-byte body; h2load
(`-c 10 -m 10 -t 1`) and reqlife (`--http2 -c 10 --streams 10 -t 1 --insecure`) run in turn on
core 1 for --duration seconds, --rounds times, alternating which goes first. Prints requests/s
and client CPU µs per request (user+sys of the finished client / its requests, and each), medians and the
ratio reqlife/h2load (issue 18: target <= 0.8, gate 1.0). `--h2c`: the same over HTTP/2
without TLS (nginx `listen ... http2` on plain TCP, prior knowledge). `--before OLD_BINARY`:
an older reqlife build runs too, in the same rounds (`before`). `--coalesce D`: reqlife also
runs with `--h2-coalesce D` (`coalesce`).

    python3 bench/h2_cpu.py [--rounds 3] [--duration 5] [--h2c] [--before OLD_BINARY] [--coalesce 10ms]
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


def cpu_of(cmd):
    before = os.times()
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = os.times()
    user = after.children_user - before.children_user
    return p.stdout, p.stderr, (user, after.children_system - before.children_system)


def h2load_count(out):
    m = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", out)
    t = re.search(r"finished in ([\d.]+)(m?s)", out)
    if not m or not t:
        raise ValueError("cannot read h2load's output")
    secs = float(t.group(1)) * (1e-3 if t.group(2) == "ms" else 1.0)
    return int(m.group(2)), int(m.group(2)) / secs


def reqlife_count(out):
    j = json.loads(out)
    return j["requests"]["ok"], j["throughput_rps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--before", help="an older reqlife build, run in the same rounds")
    ap.add_argument("--h2c", action="store_true", help="HTTP/2 without TLS")
    ap.add_argument("--coalesce", help="also run reqlife with --h2-coalesce COALESCE (e.g. 10ms)")
    a = ap.parse_args()
    for tool in ("nginx", "h2load", "openssl", "taskset"):
        if not shutil.which(tool):
            print(f"{tool} is missing: apt-get install -y nginx nghttp2-client openssl util-linux", file=sys.stderr)
            return 2
    if not os.access(a.reqlife, os.X_OK):
        print(f"{a.reqlife} not found: build it first with cargo build --release", file=sys.stderr)
        return 2
    with Nginx(cpu="0", tls_h2=not a.h2c, h2c=a.h2c) as port:
        url = f"{'http' if a.h2c else 'https'}://127.0.0.1:{port}/"
        pin = ["taskset", "-c", "1"]

        def reqlife(binary, *extra):
            return pin + [binary, "run", "--http2", "-c", "10", "--streams", "10", "-t", "1",
                          "-d", f"{a.duration}s", "--insecure", "--quiet", "--json", *extra, url]

        tools = [
            ("h2load", pin + ["h2load", "-c", "10", "-m", "10", "-t", "1", "-D", str(a.duration), url], h2load_count),
            ("reqlife", reqlife(a.reqlife), reqlife_count),
        ]
        if a.before:
            tools.append(("before", reqlife(a.before), reqlife_count))
        if a.coalesce:
            tools.append(("coalesce", reqlife(a.reqlife, "--h2-coalesce", a.coalesce), reqlife_count))
        rows = []
        for r in range(a.rounds):
            for name, cmd, parse in (tools if r % 2 == 0 else tools[::-1]):
                out, err, (user, sys_) = cpu_of(cmd)
                cpu = user + sys_
                try:
                    n, rps = parse(out)
                except (ValueError, KeyError, json.JSONDecodeError) as e:
                    print(f"{name} output not understood ({e}):\n{out}\n{err}", file=sys.stderr)
                    return 1
                per = lambda x: x / max(n, 1) * 1e6
                rows.append((name, rps, per(cpu), per(user), per(sys_)))
                print(f"round {r + 1} {name:8} {rps:>10.0f} req/s  {per(cpu):>6.2f} us CPU/req"
                      f" (user {per(user):.2f}, sys {per(sys_):.2f})", flush=True)
    med = {name: [statistics.median(x[i] for x in rows if x[0] == name) for i in (1, 2, 3, 4)]
           for name, _, _ in tools}
    print()
    for name, (rps, us, user, sys_) in med.items():
        print(f"  median {name:8} {rps:>10.0f} req/s  {us:>6.2f} us CPU/req (user {user:.2f}, sys {sys_:.2f})")
    for name in med:
        if name != "h2load":
            print(f"  ratio {name}/h2load CPU per request: {med[name][1] / med['h2load'][1]:.3f} (target <= 0.8)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
