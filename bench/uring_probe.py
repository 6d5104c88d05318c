#!/usr/bin/env python3
"""Client CPU per HTTP/1.1 request with epoll and with io_uring: the `uring_probe` modes against
wrk, to judge whether an io_uring backend could lower reqlife's CPU per request.

`bench/uring_probe/` is a small standalone client (not reqlife): one thread, N keep-alive
connections in a closed loop, one request in flight on each, driven by one of its modes:

  epoll                level-triggered epoll, recv into one shared buffer, send (wrk's calls
                       less its two epoll_ctl per request);
  uring                io_uring, one single-shot recv per connection into its own buffer, sends
                       that post no completion unless they fail, one submit_and_wait(1) per turn;
  uring-bufring        the same with one multishot recv per connection into a registered
                       buffer ring (provided buffers);
  uring-defer, uring-bufring-defer
                       the two above on a ring set up with SINGLE_ISSUER | DEFER_TASKRUN |
                       COOP_TASKRUN.

A MODE+fixed name in --clients runs MODE with the sockets registered as fixed files.

nginx (via nginx.py) runs on --server-cpu (0); every client is pinned to --client-cpu (1) and runs
--duration seconds at -c --connections, taking turns for --rounds rounds (the given order in odd
rounds, reversed in even ones): wrk (`-t1 -cN -dDs --latency`), each probe mode, and reqlife
(`run -t 1 -cN`) with --reqlife BIN. Each client is reaped with wait4(), so its CPU is its own
user+sys time, setup included. Printed per run: requests/s, CPU us per request, the probe's own
loop figures (CPU per request without setup, system calls it counted per request) and the load
average; then the medians, the ratios to wrk's medians and, after one short run of each client
under `strace -c -f` (--strace-duration, 0 to skip), the system calls per request by name. With
--perf SECONDS, one run of each client under `perf record` more: the share of its CPU samples in
user space, syscall entry and exit, epoll, io_uring, the scheduler and the rest of the kernel
(TCP/IP on loopback, nginx's receive side included).

The machine is shared: quote medians and the load average next to them. Move DAMON's kdamond off
the client core before a run (nginx.py warns about it).

    (cd bench/uring_probe && cargo build --release)
    python3 bench/uring_probe.py [--rounds 3] [--duration 5] [--connections 50]
        [--clients wrk,epoll,uring,...] [--probe PATH] [--reqlife BIN] [--strace-duration 2]
        [--perf SECONDS] [--json-out FILE]

It measures and never judges: exit code 0 when it ran, 1 if a client failed, 2 if a tool or the
probe binary is missing.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no bench/__pycache__ churn from a run
from client_cpu import (against_nginx, reqlife_figures, run_client, take_turns,  # noqa: E402
                        wrk_figures)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = os.path.join(ROOT, "bench", "uring_probe", "target", "release", "uring_probe")
MODES = ("epoll", "uring", "uring-bufring", "uring-defer", "uring-bufring-defer")
DEFAULT_CLIENTS = ("wrk",) + MODES

# Kernel symbol families for --perf, first match wins; the rest is TCP/IP, skbs, softirqs.
PERF_CATEGORIES = (
    ("user", r"^\[\.\]"),
    ("io_uring", r"^\[k\] (__)?io_|^\[k\] (fget|fput|llist_)"),
    ("epoll", r"^\[k\] (ep_|do_epoll|__x64_sys_epoll|sock_poll)"),
    ("syscall", r"^\[k\] (do_syscall_64|entry_SYSCALL|syscall_|__x64_sys_|x64_sys_call|"
                r"exit_to_user|__sys_sendto|__sys_recvfrom|__check_object_size|__rseq|"
                r"(__)?fdget)"),
    ("sched", r"^\[k\] (finish_task_switch|(__)?schedule|pick_next|dequeue_|enqueue_|"
              r"try_to_wake_up|ttwu_|update_curr|psi_|__switch_to|switch_mm)"),
)


def loadavg():
    """The 1, 5 and 15-minute load averages."""
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def probe_figures(out):
    """The probe's `key=value` line."""
    line = next(x for x in reversed(out.splitlines()) if x.startswith("mode="))
    kv = dict(p.split("=", 1) for p in line.split())
    requests, seconds = int(kv["requests"]), float(kv["seconds"])
    return {"requests": requests, "rps": requests / seconds, "p50_us": None,
            "errors": int(kv["non_2xx"]), "loop_cpu_us_per_req": float(kv["us_per_req"]),
            "loop_syscalls_per_req": float(kv["syscalls_per_req"])}


def parse_probe(out):
    try:
        return probe_figures(out)
    except StopIteration:
        raise ValueError("no 'mode=' line")


def strace_counts(path):
    """strace -c's table: {syscall: calls}."""
    counts = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) in (5, 6) and re.match(r"^[\d.]+$", parts[0]) and parts[-1] != "total":
                counts[parts[-1]] = int(parts[3])
    return counts


def perf_categories(path):
    """perf report's symbols of one recording, summed per PERF_CATEGORIES family (percent)."""
    rep = subprocess.run(["perf", "report", "-i", path, "--no-children", "--sort", "sym",
                          "--stdio", "-g", "none"], capture_output=True, text=True)
    shares = {name: 0.0 for name, _ in PERF_CATEGORIES}
    shares["kernel, rest"] = 0.0
    for line in rep.stdout.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(.*)", line)
        if not m:
            continue
        pct, sym = float(m.group(1)), m.group(2)
        name = next((n for n, rx in PERF_CATEGORIES if re.search(rx, sym)), "kernel, rest")
        shares[name] += pct
    return shares


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="runs of each client (3)")
    ap.add_argument("--duration", type=int, default=5, help="whole seconds per run (5)")
    ap.add_argument("--connections", type=int, default=50, help="connections per client (50)")
    ap.add_argument("--clients", default=",".join(DEFAULT_CLIENTS),
                    help="wrk, probe modes (MODE or MODE+fixed), reqlife; comma-separated "
                         f"({','.join(DEFAULT_CLIENTS)})")
    ap.add_argument("--probe", default=PROBE, help="the uring_probe binary "
                    "(bench/uring_probe/target/release/uring_probe)")
    ap.add_argument("--reqlife", metavar="BIN", help="run this reqlife binary too")
    ap.add_argument("--strace-duration", type=int, default=2,
                    help="seconds of the one strace -c run per client (2; 0: none)")
    ap.add_argument("--perf", type=int, default=0, metavar="SECONDS",
                    help="one perf record run per client of that many seconds (0: none)")
    ap.add_argument("--server-cpu", default="0", help="core for nginx (0)")
    ap.add_argument("--client-cpu", default="1", help="core for the clients (1)")
    ap.add_argument("--json-out", metavar="FILE", help="write every figure to FILE as JSON")
    a = ap.parse_args()
    if a.rounds < 1 or a.duration < 1 or a.connections < 1:
        ap.error("--rounds, --duration and --connections must be at least 1")
    clients = [c.strip() for c in a.clients.split(",") if c.strip()]
    if a.reqlife and "reqlife" not in clients:
        clients.append("reqlife")
    for c in clients:
        if c not in ("wrk", "reqlife") and c.removesuffix("+fixed") not in MODES:
            ap.error(f"--clients: unknown client {c!r}")
    if "reqlife" in clients and not a.reqlife:
        ap.error("--clients reqlife needs --reqlife BIN")

    tools = ["nginx", "taskset"] + (["wrk"] if "wrk" in clients else [])
    tools += (["strace"] if a.strace_duration else []) + (["perf"] if a.perf else [])
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        print(f"missing: {', '.join(missing)}", file=sys.stderr)
        return 2
    binaries = ([a.probe] if any(c not in ("wrk", "reqlife") for c in clients) else [])
    binaries += [a.reqlife] if a.reqlife else []
    for b in binaries:
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            print(f"no binary at {b}: build it first (cd bench/uring_probe && cargo build "
                  f"--release)", file=sys.stderr)
            return 2

    return against_nginx(a.server_cpu, lambda port: measure(a, port, clients))


def measure(a, port, clients):
    url = f"http://127.0.0.1:{port}/"
    n = a.connections

    def command(name, seconds):
        """The client's command line, unpinned, and its output's parser."""
        if name == "wrk":
            return ["wrk", "-t1", f"-c{n}", f"-d{seconds}s", "--latency", url], wrk_figures
        if name == "reqlife":
            return ([a.reqlife, "run", "-t", "1", "-c", str(n), "-d", f"{seconds}s", "--quiet",
                     "--json", url], reqlife_figures)
        mode = name.removesuffix("+fixed")
        cmd = [a.probe, "--mode", mode, "--addr", f"127.0.0.1:{port}", "--connections", str(n),
               "--duration", str(seconds)]
        return cmd + (["--fixed-files"] if name.endswith("+fixed") else []), parse_probe

    pin = ["taskset", "-c", a.client_cpu]
    print(f"nginx on 127.0.0.1:{port} (1 worker, core {a.server_cpu}); clients on core "
          f"{a.client_cpu}; {a.rounds} round(s) of {a.duration} s each; load average "
          f"{' '.join(map(str, loadavg()))}", flush=True)
    for name in clients:
        print(f"  {name:22} {' '.join(pin + command(name, a.duration)[0])}")

    def describe(fig):
        fig["loadavg"] = loadavg()
        loop = ""
        if "loop_cpu_us_per_req" in fig:
            loop = (f"loop {fig['loop_cpu_us_per_req']:.2f} us/req, "
                    f"{fig['loop_syscalls_per_req']:.3f} syscalls/req  ")
        return (f"(user {fig['cpu_user_s']:.2f} s + sys {fig['cpu_sys_s']:.2f} s)  {loop}"
                f"load {fig['loadavg'][0]:.2f}")

    tools = [(name, pin + command(name, a.duration)[0], command(name, a.duration)[1])
             for name in clients]
    print()
    runs = take_turns(tools, a.rounds, describe)

    medians = {}
    for name in clients:
        mine = [x for x in runs if x["tool"] == name]
        m = {"rps": statistics.median(x["rps"] for x in mine),
             "cpu_us_per_req": statistics.median(x["cpu_us_per_req"] for x in mine),
             "load_1min": [min(x["loadavg"][0] for x in mine),
                           max(x["loadavg"][0] for x in mine)]}
        if "loop_cpu_us_per_req" in mine[0]:
            m["loop_cpu_us_per_req"] = statistics.median(x["loop_cpu_us_per_req"] for x in mine)
            m["loop_syscalls_per_req"] = statistics.median(x["loop_syscalls_per_req"]
                                                           for x in mine)
        medians[name] = m

    traced = {}
    if a.strace_duration:
        print(f"\nstrace -c -f, one {a.strace_duration} s run per client (its rates are "
              f"strace's, not the figures above):", flush=True)
        with tempfile.TemporaryDirectory(prefix="uring-probe-") as tmp:
            for name in clients:
                cmd, parse = command(name, a.strace_duration)
                path = os.path.join(tmp, "strace.txt")
                fig = run_client(name, pin + ["strace", "-c", "-f", "-o", path] + cmd, parse)
                calls = strace_counts(path)
                total = sum(calls.values())
                per = {k: v / fig["requests"] for k, v in
                       sorted(calls.items(), key=lambda kv: -kv[1])}
                traced[name] = {"requests": fig["requests"], "syscalls": total,
                                "per_req": total / fig["requests"], "by_name_per_req": per,
                                "loadavg": loadavg()}
                top = ", ".join(f"{k} {v:.3f}" for k, v in per.items() if v >= 0.005)
                print(f"  {name:22} {total / fig['requests']:>6.3f} syscalls/req  "
                      f"({fig['requests']} req; {top})", flush=True)

    perfed = {}
    if a.perf:
        print(f"\nperf record, one {a.perf} s run per client: share of its CPU samples",
              flush=True)
        cats = [c for c, _ in PERF_CATEGORIES] + ["kernel, rest"]
        print(f"  {'client':22} " + " ".join(f"{c:>12}" for c in cats))
        with tempfile.TemporaryDirectory(prefix="uring-probe-") as tmp:
            for name in clients:
                cmd, parse = command(name, a.perf)
                path = os.path.join(tmp, "perf.data")
                run_client(name, ["perf", "record", "-q", "-o", path, "--"] + pin + cmd, parse)
                perfed[name] = perf_categories(path)
                print(f"  {name:22} "
                      + " ".join(f"{perfed[name][c]:>11.1f}%" for c in cats), flush=True)

    wrk = medians.get("wrk")
    print(f"\nmedians of {a.rounds} round(s), -c {n}; ratios to wrk's medians:")
    head = (f"  {'client':22} {'req/s':>9} {'CPU us/req':>10} {'/wrk':>6} {'req/s /wrk':>10} "
            f"{'loop us/req':>11} {'syscalls/req':>12} {'(own count)':>11} {'load 1 min':>11}")
    print(head)
    print("  " + "-" * (len(head) - 2))
    for name in clients:
        m = medians[name]
        ratio = m["cpu_us_per_req"] / wrk["cpu_us_per_req"] if wrk else None
        m["cpu_ratio_to_wrk"] = ratio
        m["rps_ratio_to_wrk"] = m["rps"] / wrk["rps"] if wrk else None
        sc = traced.get(name, {}).get("per_req")
        m["strace_syscalls_per_req"] = sc
        load = f"{m['load_1min'][0]:.2f}-{m['load_1min'][1]:.2f}"
        print(f"  {name:22} {m['rps']:>9.0f} {m['cpu_us_per_req']:>10.3f} "
              f"{fmt(ratio, '6.3f')} {fmt(m['rps_ratio_to_wrk'], '10.3f')} "
              f"{fmt(m.get('loop_cpu_us_per_req'), '11.3f')} {fmt(sc, '12.3f')} "
              f"{fmt(m.get('loop_syscalls_per_req'), '11.3f')} {load:>11}")
    print("  (CPU us/req: the client's user+sys from wait4, setup included; loop us/req: the "
          "probe's own, without setup;\n   syscalls/req: strace -c -f run; own count: the "
          "probe's count of its loop's calls, median run)")
    errs = sum(x["errors"] for x in runs)
    if errs:
        print(f"\nwarning: {errs} errors in all; the figures above include them", file=sys.stderr)

    if a.json_out:
        doc = {"config": {"rounds": a.rounds, "duration_s": a.duration, "connections": n,
                          "server_cpu": a.server_cpu, "client_cpu": a.client_cpu, "url": url,
                          "clients": clients, "probe": os.path.abspath(a.probe),
                          "reqlife": a.reqlife and os.path.abspath(a.reqlife)},
               "runs": runs, "medians": medians, "strace": traced, "perf": perfed}
        with open(a.json_out, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"\nfigures written to {a.json_out}")
    return 0


def fmt(x, spec):
    width = int(re.match(r"\d+", spec).group())
    return f"{'-':>{width}}" if x is None else format(x, spec)


if __name__ == "__main__":
    sys.exit(main())
