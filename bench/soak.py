#!/usr/bin/env python3
"""A soak run: the embedded target (`reqlife serve`) under a steady open-loop rate for a long
time, watching that neither process grows.

Every --every seconds it samples, for the server and the client: resident memory (VmRSS),
open file descriptors (/proc/PID/fd) and threads (/proc/PID/status). At the end it prints the
first sample after the warm-up (--settle), the last one, the maximum and the growth, and the
client's own summary (requests, errors, latency). A flat run has growth near zero for
descriptors and threads and a memory growth no larger than the interval snapshots the client
keeps by design (`summary.generator.interval_snapshot_bytes`).

    python3 bench/soak.py --rate 5000 --duration 600 [--every 10] [--settle 30]
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def sample(pid):
    """(rss_kb, fds, threads) of a live process, or None."""
    try:
        status = open(f"/proc/{pid}/status").read()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss = int(fields["VmRSS"].split()[0])
    threads = int(fields["Threads"].strip())
    return rss, fds, threads


def report(name, rows, settle_index):
    if not rows:
        print(f"  {name}: no samples")
        return
    base = rows[min(settle_index, len(rows) - 1)]
    last = rows[-1]
    print(f"  {name:<7} {'':>8} {'RSS kB':>10} {'fds':>6} {'threads':>8}")
    for label, r in (("settled", base), ("last", last)):
        print(f"  {'':<7} {label:>8} {r[1]:>10} {r[2]:>6} {r[3]:>8}")
    mx = (max(r[1] for r in rows), max(r[2] for r in rows), max(r[3] for r in rows))
    print(f"  {'':<7} {'max':>8} {mx[0]:>10} {mx[1]:>6} {mx[2]:>8}")
    print(f"  {'':<7} {'growth':>8} {last[1] - base[1]:>10} {last[2] - base[2]:>6} {last[3] - base[3]:>8}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=5000)
    ap.add_argument("--duration", type=int, default=600, help="seconds")
    ap.add_argument("--every", type=float, default=10.0)
    ap.add_argument("--settle", type=float, default=30.0, help="seconds before the baseline sample")
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    a = ap.parse_args()
    if not os.access(a.reqlife, os.X_OK):
        print(f"{a.reqlife} not found: build it first with cargo build --release", file=sys.stderr)
        return 2
    port = free_port()
    server = subprocess.Popen([a.reqlife, "serve", "--addr", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    client = subprocess.Popen([a.reqlife, "run", "-R", str(a.rate), "-d", f"{a.duration}s",
                               "-c", str(a.connections), "-t", "1", "--quiet", "--json",
                               f"http://127.0.0.1:{port}/"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    print(f"soak: {a.rate} req/s for {a.duration} s against the embedded target on port {port}",
          flush=True)
    start = time.time()
    rows = {"server": [], "client": []}
    try:
        while client.poll() is None:
            t = time.time() - start
            for name, p in (("server", server), ("client", client)):
                s = sample(p.pid)
                if s:
                    rows[name].append((t,) + s)
            if rows["client"]:
                r = rows["client"][-1]
                print(f"  {t:7.0f} s  client RSS {r[1]} kB fds {r[2]} threads {r[3]}; "
                      f"server RSS {rows['server'][-1][1]} kB fds {rows['server'][-1][2]} "
                      f"threads {rows['server'][-1][3]}", flush=True)
            time.sleep(a.every)
        out, err = client.communicate()
    finally:
        server.terminate()
        server.wait(timeout=10)
    settle_index = int(a.settle / a.every)
    print()
    for name in ("client", "server"):
        report(name, rows[name], settle_index)
    try:
        j = json.loads(out)
        print()
        print(f"  client: {j['requests']['total']} requests, {j['requests']['errors']} errors, "
              f"{j['throughput_rps']:.0f} req/s, p50 {j['latency']['total']['p50_us']} us, "
              f"p99 {j['latency']['total']['p99_us']} us; interval snapshots kept "
              f"{j['generator']['interval_snapshot_bytes']} bytes")
    except (ValueError, KeyError) as e:
        print(f"client output not understood ({e}): {out[:500]} {err[:500]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
