#!/usr/bin/env python3
"""Client memory per open connection, reqlife against wrk (issue 18: at most 6 KB per idle
connection at 10,000 connections).

Starts nginx (one worker on core 0, worker_connections above N) and, for each N, runs on
core 1 with the open-file limit raised for the client:

  reqlife open    reqlife run -c N -t 1 -R RATE -d D  (N connections kept open, nearly idle)
  reqlife closed  reqlife run -c N -t 1 -d D          (every connection busy, closed loop)
  wrk             wrk -c N -t 1 -d D                  (wrk has no rate: always closed loop)

Each client's peak resident set (ru_maxrss of the finished process) is reported, with the
most connections it had open at once (its sockets, counted in /proc while it runs), the
peak per connection, and the marginal figure: (peak at N - peak at BASE connections) /
(N - BASE), the memory each further connection costs without the process's fixed part.

    python3 bench/idle_connections.py [--connections 1000,10000] [--duration 10] [--rate 10]
        [--reqlife target/release/reqlife] [--before OLD_BINARY]
        [--clients reqlife-open,reqlife-closed,wrk]

`--before OLD_BINARY`: the reqlife clients run with that build too (`before-open`,
`before-closed`), side by side with the new one against the same nginx.
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time

from nginx import Nginx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = 10


def sockets(pid):
    """The open sockets of `pid` (None once it is gone)."""
    try:
        return sum(1 for fd in os.listdir(f"/proc/{pid}/fd")
                   if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"))
    except OSError:
        return None


def nofile_for(n):
    """A preexec function raising the soft open-file limit for n connections (to the hard one)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n + 1000
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)

    def raise_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    return raise_limit


def command(client, n, a, url):
    if client == "wrk":
        return [a.wrk, "-c", str(n), "-t", "1", "-d", f"{a.duration}s", "--timeout", "5s", url]
    binary = a.before if client.startswith("before") else a.reqlife
    cmd = [binary, "run", "-c", str(n), "-t", "1", "-d", f"{a.duration}s", "--quiet"]
    if client.endswith("-open"):
        cmd += ["-R", str(a.rate)]
    return cmd + [url]


def measure(client, n, a, url):
    """(peak RSS KiB, most sockets open at once, exit status) of one bounded run."""
    p = subprocess.Popen(["taskset", "-c", a.client_cpu] + command(client, n, a, url),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         preexec_fn=nofile_for(n))
    most = 0
    deadline = time.time() + a.duration + 60
    while True:
        # wait4 on our own child: its rusage carries the peak RSS.
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            break
        if time.time() > deadline:
            p.kill()
        s = sockets(p.pid)
        if s is not None:
            most = max(most, s)
        time.sleep(0.2)
    err = p.stderr.read().decode(errors="replace").strip()
    if p.returncode != 0 and err:
        print(f"  {client} -c {n}: exit {p.returncode}: {err[-300:]}", file=sys.stderr)
    return usage.ru_maxrss, most, p.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connections", default="1000,10000")
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--rate", type=int, default=10)
    ap.add_argument("--clients", default="reqlife-open,reqlife-closed,wrk")
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--wrk", default=shutil.which("wrk") or "wrk")
    ap.add_argument("--before", metavar="OLD_BINARY", help="an older reqlife build to run too")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    a = ap.parse_args()
    clients = a.clients.split(",")
    if a.before:
        if not os.access(a.before, os.X_OK):
            print(f"{a.before} not found", file=sys.stderr)
            return 2
        clients = [c.replace("reqlife", "before") for c in clients if c.startswith("reqlife")] + clients
    if any(c.startswith("reqlife") for c in clients) and not os.access(a.reqlife, os.X_OK):
        print(f"{a.reqlife} not found: build it first with cargo build --release", file=sys.stderr)
        return 2
    counts = [int(c) for c in a.connections.split(",")]
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and max(counts) + 200 > hard:
        print(f"the hard open-file limit ({hard}) is too low for {max(counts)} connections",
              file=sys.stderr)
        return 2
    print(f"{'client':<16}{'N':>7}{'open':>7}{'peak RSS':>12}{'per conn':>11}{'marginal':>11}")
    # worker_connections well above N: with just N + 100, nginx at 10,000 connections closed
    # the last few hundred as soon as it accepted them (and every reconnect of theirs).
    room = 2 * max(counts) + 100
    if hard != resource.RLIM_INFINITY:
        room = min(room, hard - 200)
    with Nginx(cpu=a.server_cpu, connections=room) as port:
        url = f"http://127.0.0.1:{port}/"
        for client in clients:
            base, _, _ = measure(client, BASE, a, url)
            for n in counts:
                peak, most, code = measure(client, n, a, url)
                flag = "" if code == 0 and most >= n else f"  (exit {code}, {most} sockets open)"
                print(f"{client:<16}{n:>7}{most:>7}{peak / 1024:>9.1f} MB{peak / n:>8.2f} KB"
                      f"{(peak - base) / (n - BASE):>8.2f} KB{flag}", flush=True)
    print(f"\nKB = KiB; marginal: (peak at N - peak at {BASE} connections) / (N - {BASE})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
