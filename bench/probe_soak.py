#!/usr/bin/env python3
"""A long run with the server's probes (`--server-probes --server-sample N`) against nginx, as
root: does reqlife's memory stay flat, what do the probes cost, and is every probe gone after
the signal that ends it?

nginx (bench/nginx.py: one worker on --server-cpu) starts on a free loopback port; reqlife runs an open loop at
--rate for --duration seconds with the kernel's probes and nginx's
`ngx_http_process_request,ngx_http_finalize_request`, one request in --sample timed; every
--every seconds this samples reqlife's and bpftrace's resident memory. At --duration the run is
ended by --signal (INT or TERM, to its process group, as a terminal or GNU timeout would): the
record it writes gives the probes' counts and cost, and afterwards no bpftrace may be left.

    sudo python3 bench/probe_soak.py --rate 5000 --duration 600 --sample 100 [--every 10]
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nginx import Nginx  # noqa: E402


def rss_kb(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def bpftraces():
    out = subprocess.run(["pgrep", "-x", "bpftrace"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=5000)
    ap.add_argument("--duration", type=int, default=600)
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--signal", choices=["INT", "TERM"], default="INT")
    ap.add_argument("--no-probes", action="store_true", help="the same run without probes: the baseline of its memory")
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target/release/reqlife"))
    ap.add_argument("--server-cpu", default="0")
    a = ap.parse_args()
    if a.rate <= 0 or a.duration <= 0 or a.sample <= 0 or a.every <= 0:
        print("probe_soak: --rate, --duration, --sample and --every must be positive", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("probe_soak: the probes need root", file=sys.stderr)
        return 2
    before = bpftraces()
    with Nginx(cpu=a.server_cpu) as port:
        return soak(a, port, before)


def soak(a, port, before):
    """The run against nginx on `port`, sampled and ended by the signal; 0 when no bpftrace
    is left after it."""
    d = tempfile.mkdtemp(prefix="probe_soak.")
    record = f"{d}/run.json"
    probes = [] if a.no_probes else [
        "--server-fn", "ngx_http_process_request,ngx_http_finalize_request", "--server-sample", str(a.sample)]
    run = subprocess.Popen(
        [a.reqlife, "run", "-R", str(a.rate), "-c", "50", "-t", "1", "-d", f"{a.duration + 60}s", "-q",
         *probes, "-o", record, f"http://127.0.0.1:{port}/"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    rows = []
    start = time.time()
    try:
        while time.time() - start < a.duration:
            time.sleep(a.every)
            tracer = [p for p in bpftraces() if p not in before]
            rows.append((round(time.time() - start), rss_kb(run.pid), rss_kb(tracer[0]) if tracer else None))
            print(f"  {rows[-1][0]:>5} s  reqlife {rows[-1][1]} kB  bpftrace {rows[-1][2]} kB", flush=True)
    finally:
        os.killpg(run.pid, getattr(signal, "SIG" + a.signal))
        err = run.communicate(timeout=60)[1]
    time.sleep(1)
    left = [p for p in bpftraces() if p not in before]
    r = json.load(open(record))
    settled = rows[min(3, len(rows) - 1)]
    print(f"\nreqlife RSS: {settled[1]} kB at {settled[0]} s, {rows[-1][1]} kB at {rows[-1][0]} s, "
          f"max {max(x[1] for x in rows)} kB; bpftrace RSS at the end {rows[-1][2]} kB")
    print(f"requests {r['summary']['requests']['total']}, interrupted {r['interrupted']}, exit {run.returncode}")
    p = r["summary"].get("server_probes")
    if p:
        for name in p["order"]:
            s = p["phases"][name]
            print(f"  {name:<60} count {s['count']:>8}  p50 {s['p50_us']} us  p99 {s['p99_us']} us")
        print(f"cost: {p['cost']}")
        print(f"notes: {p['notes']}")
    print(f"bpftrace left after SIG{a.signal}: {len(left)}")
    if err.strip():
        print("stderr:", err.strip()[-400:])
    return 0 if not left else 1


if __name__ == "__main__":
    sys.exit(main())
