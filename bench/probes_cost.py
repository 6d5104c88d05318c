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
                if g.get("type") in ("tracepoint", "raw_tracepoint", "tracing") and g.get("run_cnt"):
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


class ThreadCpu:
    """The CPU time (user and system) of a process's threads, by name (`reqlife-worker-0` and
    the like counted as `worker`), polled from /proc every 0.1 s while it runs (the last
    reading of each thread before it ends), and of nginx's workers over the same span: where
    the CPU of a saturated run goes, per request."""

    TCK = os.sysconf("SC_CLK_TCK")

    def __init__(self):
        self.last, self.stop = {}, threading.Event()
        self.nginx = [self.nginx_cpu(), None]
        self.thread, self.pid = None, None

    @staticmethod
    def cpu(stat):
        f = stat.rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / ThreadCpu.TCK

    @staticmethod
    def nginx_cpu():
        pids = subprocess.run(["pgrep", "-f", "nginx: worker"], capture_output=True,
                              text=True).stdout.split()
        total = 0.0
        for p in pids:
            try:
                with open(f"/proc/{p}/stat") as f:
                    total += ThreadCpu.cpu(f.read())
            except OSError:
                pass
        return total

    def follow(self, pid):
        self.pid = pid
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()

    def poll(self):
        while not self.stop.is_set():
            try:
                tids = os.listdir(f"/proc/{self.pid}/task")
            except OSError:
                tids = []
            for t in tids:
                try:
                    with open(f"/proc/{self.pid}/task/{t}/stat") as f:
                        s = f.read()
                except OSError:
                    continue
                name = s[s.index("(") + 1:s.rindex(")")].rstrip("0123456789").rstrip("-")
                self.last[t] = (name.removeprefix("reqlife-"), self.cpu(s))
            time.sleep(0.1)

    def end(self):
        self.stop.set()
        if self.thread:
            self.thread.join()
        self.nginx[1] = self.nginx_cpu()

    def per_request(self, n):
        """µs a request: nginx's workers, and reqlife's threads by name (its main thread,
        which only calibrates and reports, left out)."""
        by = {"nginx": (self.nginx[1] - self.nginx[0])}
        for name, cpu in self.last.values():
            if name in ("worker", "join", "turns", "collect", "probes"):
                by[name] = by.get(name, 0.0) + cpu
        return {k: v / n * 1e6 for k, v in by.items()}


def bpf_stats_on():
    """Turns the kernel's BPF run-time statistics on; False where it cannot (no bpftool, not
    root)."""
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        return subprocess.run(["bpftool", "version"], capture_output=True).returncode == 0
    except OSError:
        return False


def run(a, url, out, args, reqlife=None, bpf=None, cpu=None):
    cmd = ["taskset", "-c", a.client_cpu, reqlife or a.reqlife, "run", "-t", "1", "-d", f"{a.seconds}s",
           "--quiet", "-o", out, *args, url]

    def go():
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if cpu is not None:
            cpu.follow(p.pid)
        _, err = p.communicate()
        if cpu is not None:
            cpu.end()
        return p.returncode, err

    if bpf is not None:
        with bpf:
            rc, err = go()
    else:
        rc, err = go()
    if rc != 0:
        raise SystemExit(f"reqlife failed ({rc}): {err.strip()}")
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
        cpus = {k: [] for k in kinds}
        stats = bpf_stats_on()
        if not stats:
            print("(no BPF run time: bpftool missing, or not root)", file=sys.stderr)
        for i in range(a.rounds):
            for k, (extra, build) in kinds.items():
                bpf = BpfTime() if stats and extra else None
                cpu = ThreadCpu()
                v = run(a, url, out, closed + extra, build, bpf, cpu)
                got[k].append(rate(v))
                shares[k].append(joined(v))
                cpus[k].append(cpu.per_request(v["summary"]["requests"]["total"]))
                print(f"  {k}: CPU a request: " + ", ".join(
                    f"{name} {us:.2f} us" for name, us in sorted(cpus[k][-1].items())
                    if us >= 0.01), flush=True)
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

        def cpu_median(k, name):
            return statistics.median(c.get(name, 0.0) for c in cpus[k])

        for k in kinds:
            if k == "none":
                continue
            m = statistics.median(got[k])
            print(f"saturated, {k}: median {m:.0f} req/s against {base:.0f} without: "
                  f"{m / base - 1:+.1%}; joined: median {statistics.median(shares[k]):.1%}"
                  + (f"; BPF median {statistics.median(bpf_ns[k]):.0f} ns a request" if bpf_ns[k] else ""))
            # Where the CPU went, per request (medians): nginx's core, and the client's, whose
            # part for the probes is reqlife's own reading and joining of the events beside
            # the kernel's work in its worker. nginx alone saturated (a client to spare)
            # would serve 1 / its CPU a request: its capacity against without the probes.
            srv, srv0 = cpu_median(k, "nginx"), cpu_median("none", "nginx")
            own = {n: cpu_median(k, n) for n in ("worker", "join", "turns")}
            print(f"  CPU a request, medians: nginx {srv:.2f} us against {srv0:.2f} without "
                  f"(nginx alone saturated: {srv0 / srv - 1:+.1%}); reqlife worker "
                  f"{own['worker']:.2f} us against {cpu_median('none', 'worker'):.2f}, "
                  f"join {own['join']:.2f} us, turns {own['turns']:.2f} us", flush=True)
        return 0

    return against_nginx(a.server_cpu, measure)


if __name__ == "__main__":
    sys.exit(main())
