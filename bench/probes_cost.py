#!/usr/bin/env python3
"""What the kernel's probes cost nginx's requests, measured in the run (issue 49, point 2).

nginx (one worker, pinned to --server-cpu, 0), the client pinned to --client-cpu (1), one
thread, release build, as root (the probes need it):
1. nginx's capacity: a closed loop of --connections (10) without probes, --seconds (10), and
   with `--server-probes-cost`;
2. open loops at 50% and 90% of the latter (beyond it the halves' latency is the client's
   queue), --open-connections (32), with `--server-probes-cost` (half
   of the connections traced, half not, at the same load): each half's p50, and the traced
   half's difference at p50 and p90 with its 95% interval, from the record;
3. saturated: the closed loop of 1 with --server-probes, with --server-probes-cost, and
   without probes, in turns, --rounds (3) times: throughput of each against without (the aim
   of issue 49: a loss of 15% at most), and the share of the requests joined; with
   --before BIN, that build's probed runs too, in the same turns (before and after side by
   side). --saturated-only skips 1 and 2. With bpftool, as root: each probed run's BPF
   programs' own run time a request, and each program's time a hit and hits a request (the
   kernel's bpf_stats_enabled, turned on): what the probes cost the machine per hit, which
   the machine's noise on a throughput hides.

Prints each run's figures and the medians. It measures; it does not judge: exit 0 whenever it
ran (1 if a client failed, 2 if a tool is missing).

    sudo python3 bench/probes_cost.py [--seconds 10] [--rounds 3] [--reqlife target/release/reqlife]
        [--before OLD_BUILD] [--saturated-only]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ churn from a run
from client_cpu import against_nginx  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class BpfTime:
    """The BPF programs' own run time while a command runs (the kernel's `bpf_stats_enabled`,
    read with `bpftool prog show` every 0.3 s: the last reading of each program before bpftrace
    unloads it), by program name: [ns, runs]. What the probes' programs cost per hit, which the
    machine's noise on a throughput hides."""

    def __init__(self):
        self.last, self.stop = {}, threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)

    def poll(self):
        while not self.stop.is_set():
            p = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True)
            try:
                progs = json.loads(p.stdout or "[]")
            except ValueError:
                progs = []
            for g in progs:
                if g.get("type") == "tracepoint" and g.get("run_cnt"):
                    self.last[g["id"]] = (g.get("name", "?"), g.get("run_time_ns", 0), g["run_cnt"])
            time.sleep(0.3)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *_):
        self.stop.set()
        self.thread.join()

    def by_name(self):
        by = {}
        for name, ns, runs in self.last.values():
            b = by.setdefault(name, [0, 0])
            b[0] += ns
            b[1] += runs
        return by


def bpf_stats_on():
    """Turns the kernel's BPF run-time statistics on; False where it cannot (no bpftool, not
    root)."""
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        return subprocess.run(["bpftool", "version"], capture_output=True).returncode == 0
    except OSError:
        return False


def run(a, url, out, args, reqlife=None, bpf=None):
    cmd = ["taskset", "-c", a.client_cpu, reqlife or a.reqlife, "run", "-t", "1", "-d", f"{a.seconds}s",
           "--quiet", "-o", out, *args, url]
    if bpf is not None:
        with bpf:
            p = subprocess.run(cmd, capture_output=True, text=True)
    else:
        p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"reqlife failed ({p.returncode}): {p.stderr.strip()}")
    with open(out) as f:
        return json.load(f)


def rate(v):
    return v["summary"]["throughput_rps"]


def joined(v):
    """The share of the requests joined to their server phases, or None without probes."""
    j = (v["summary"].get("server_probes") or {}).get("joining")
    return j["joined"] / j["requests"] if j and j["requests"] else None


def open_loops(a, url, out, closed):
    """Steps 1 and 2: the capacity, and the halves' difference at 50% and 90% of it."""
    capacity = rate(run(a, url, out, closed))
    print(f"capacity (closed loop -c {a.connections}, no probes): {capacity:.0f} req/s", flush=True)
    # The open loops are shares of the capacity with the probes on (half of the
    # connections traced): beyond it, both halves' latency is the client's queue.
    capacity = rate(run(a, url, out, closed + ["--server-probes-cost"]))
    print(f"capacity with --server-probes-cost: {capacity:.0f} req/s", flush=True)
    for share in (0.5, 0.9):
        r = int(capacity * share)
        v = run(a, url, out, ["-R", str(r), "-c", str(a.open_connections), "--interval",
                              "500ms", "--server-probes-cost"])
        m = v["summary"]["server_probes"]["cost"]["measured"]
        t, u = m["traced"], m["untraced"]
        gaps = "; ".join(f"{g['percentile']} {g['diff_us']:+.2f} us {g['ci_us']}"
                         for g in m["gaps"])
        print(f"{share:.0%} ({r} req/s, achieved {rate(v):.0f}): traced {t['connections']} "
              f"conns {t['requests']} req p50 {t['p50_us']} us p90 {t['p90_us']} us; untraced "
              f"{u['connections']} conns {u['requests']} req p50 {u['p50_us']} us p90 "
              f"{u['p90_us']} us; traced - untraced: {gaps}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--connections", type=int, default=10, help="the closed loop's")
    ap.add_argument("--open-connections", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--before", help="an earlier build: its probed runs in the same turns")
    ap.add_argument("--saturated-only", action="store_true", help="only the saturated rounds")
    a = ap.parse_args()
    if not os.access(a.reqlife, os.X_OK):
        print(f"{a.reqlife} not found: build it first (cargo build --release)", file=sys.stderr)
        return 2
    out = os.path.join(tempfile.mkdtemp(prefix="reqlife-probes-cost-"), "r.json")

    def measure(port):
        url = f"http://127.0.0.1:{port}/"
        closed = ["-c", str(a.connections)]
        if not a.saturated_only:
            open_loops(a, url, out, closed)
        kinds = {"none": ([], None), "probes": (["--server-probes"], None),
                 "half": (["--server-probes-cost"], None)}
        if a.before:
            kinds["probes (before)"] = (["--server-probes"], a.before)
            kinds["half (before)"] = (["--server-probes-cost"], a.before)
        got = {k: [] for k in kinds}
        shares = {k: [] for k in kinds}
        bpf_ns = {k: [] for k in kinds}
        stats = bpf_stats_on()
        if not stats:
            print("(no BPF run time: bpftool missing, or not root)", file=sys.stderr)
        for i in range(a.rounds):
            for k, (extra, build) in kinds.items():
                bpf = BpfTime() if stats and extra else None
                v = run(a, url, out, closed + extra, build, bpf)
                got[k].append(rate(v))
                shares[k].append(joined(v))
                if bpf is not None:
                    n = v["summary"]["requests"]["total"]
                    by = bpf.by_name()
                    bpf_ns[k].append(sum(t for t, _ in by.values()) / n)
                    print(f"  {k}: BPF {bpf_ns[k][-1]:.0f} ns a request; " + ", ".join(
                        f"{name} {t / runs:.0f} ns x{runs / n:.2f}"
                        for name, (t, runs) in sorted(by.items())), flush=True)
            print(f"round {i + 1}: " + ", ".join(
                f"{k} {got[k][-1]:.0f} req/s" + (f" ({shares[k][-1]:.1%} joined)"
                                                 if shares[k][-1] is not None else "")
                for k in kinds), flush=True)
        if not a.rounds:
            return 0
        base = statistics.median(got["none"])
        for k in kinds:
            if k == "none":
                continue
            m = statistics.median(got[k])
            print(f"saturated, {k}: median {m:.0f} req/s against {base:.0f} without: "
                  f"{m / base - 1:+.1%}; joined: median {statistics.median(shares[k]):.1%}"
                  + (f"; BPF median {statistics.median(bpf_ns[k]):.0f} ns a request" if bpf_ns[k] else ""))
        return 0

    return against_nginx(a.server_cpu, measure)


if __name__ == "__main__":
    sys.exit(main())
