#!/usr/bin/env python3
"""Resident memory of a long run at a steady rate: it must stay flat.

Starts nginx (one worker, core 0) and runs `reqlife run -R RATE -d DURATION` on core 1,
sampling the client's resident set size (VmRSS) every few seconds. Prints the RSS over time,
its growth after the first 30 s, and the size of what the run legitimately keeps per interval
(the compressed interval snapshots, measured as the record's interval series in bytes). Target:
the growth is no more than the snapshots' size.

    python3 bench/memory.py [--rate 5000] [--duration 600] [--every 10]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from nginx import Nginx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=5000)
    ap.add_argument("--duration", type=int, default=600)
    ap.add_argument("--every", type=float, default=10.0)
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    a = ap.parse_args()
    if not os.access(a.reqlife, os.X_OK):
        print(f"{a.reqlife} not found: build it first with cargo build --release", file=sys.stderr)
        return 2
    out = os.path.join(tempfile.mkdtemp(prefix="reqlife-mem-"), "run.json")
    with Nginx(cpu="0") as port:
        p = subprocess.Popen(["taskset", "-c", "1", a.reqlife, "run", "-R", str(a.rate), "-d", f"{a.duration}s",
                              "-c", "20", "-t", "1", "--quiet", "-o", out, f"http://127.0.0.1:{port}/"],
                             stdout=subprocess.DEVNULL)
        start = time.time()
        samples = []
        while p.poll() is None:
            r = rss_kib(p.pid)
            if r is not None:
                samples.append((time.time() - start, r))
                print(f"{samples[-1][0]:>7.1f} s  RSS {r:>8} KiB", flush=True)
            time.sleep(a.every)
    rec = json.load(open(out))
    snap_bytes = rec["summary"]["generator"]["interval_snapshot_bytes"]
    # Steady state: from 30 s to the last sample taken while still sending (the samples after
    # the duration show the end-of-run merge and report, reported apart).
    steady = [r for t, r in samples if 30 <= t <= a.duration - a.every / 2]
    tail = [r for t, r in samples if t > a.duration - a.every / 2]
    growth = (steady[-1] - steady[0]) if len(steady) >= 2 else 0
    print()
    print(f"requests {rec['summary']['requests']['total']}, {len(rec['intervals'])} intervals")
    print(f"RSS at 30 s: {steady[0] if steady else 'n/a'} KiB, at the end of sending: "
          f"{steady[-1] if steady else 'n/a'} KiB: growth {growth} KiB")
    if tail:
        print(f"RSS while merging and reporting at the end: {max(tail)} KiB")
    print(f"interval snapshots kept (compressed histograms and their containers): {snap_bytes / 1024:.0f} KiB "
          f"({snap_bytes / max(1, len(rec['intervals'])):.0f} bytes per interval)")
    print(f"growth within the snapshots' size: {'yes' if growth * 1024 <= snap_bytes else 'NO'} "
          f"(ratio {growth * 1024 / max(1, snap_bytes):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
