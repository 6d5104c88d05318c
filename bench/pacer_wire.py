#!/usr/bin/env python3
"""The open-loop pacer's precision as the server sees it: reqlife's own schedule lag beside the
lag of the request packets' kernel timestamps (tcpdump on lo), and its CPU beside wrk2's.

Starts nginx (one worker, pinned to --server-cpu, 0, a 12-byte body). For each rate, --rounds
rounds; in each round every client runs once for --duration seconds, pinned to --client-cpu
(1), one thread and --connections connections, the order reversed every other round:

- reqlife (`run -R RATE -t 1 -c C --json`, its defaults unless --reqlife-args), with tcpdump
  capturing the requests on lo (nanosecond kernel stamps);
- each build of --before (older reqlife binaries: the before figure), the same way;
- wrk2 (`wrk2 -R RATE -t1 -cC --latency`), for its CPU only (it reports no lag).

The wire lag: one thread's requests are due at t0 + n/RATE; with the n-th request packet
stamped at ts(n), its lag is ts(n) - n/RATE - t0, with t0 taken so that the earliest request is
as late as reqlife's own least lag (the packets know no origin). It holds the generator's
lateness and the loopback send, so it is the figure the server sees. Also printed: the
inter-arrival deviation |gap - 1/RATE| of the packets, p50.

Printed per run, then per rate and client the medians over the rounds: reqlife's lag p50/p99,
the wire's lag p50/p99, corrected and uncorrected p50, CPU us per request (user+sys / requests,
wait4), the pacer's spin share; and the ratio of CPU per request to wrk2's.

It measures; it does not judge (exit 0 when it ran, 1 if a client failed, 2 if a tool is
missing).

    python3 bench/pacer_wire.py [--rates 1000,2000,10000,20000] [--rounds 5] [--duration 3]
        [--connections 10] [--before OLD_BINARY ...] [--reqlife-args '--pacer-spin 20']
        [--no-wrk2] [--json-out FILE]
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
from nginx import Nginx  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def quantile(xs, q):
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def capture(port, path):
    """tcpdump of the packets to `port` on lo that carry data, stamped by the kernel."""
    cmd = ["tcpdump", "-i", "lo", "-n", "-tt", "--time-stamp-precision=nano", "-B", "65536",
           "-w", path, f"tcp dst port {port} and (((ip[2:2] - ((ip[0]&0xf)<<2)) - ((tcp[12]&0xf0)>>2)) != 0)"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # tcpdump says "listening on lo" once it captures.
    line = p.stderr.readline().decode()
    if "listening" not in line:
        raise RuntimeError(f"tcpdump: {line.strip()}")
    return p


def stamps(path):
    """The capture's packet times, seconds."""
    out = subprocess.run(["tcpdump", "-r", path, "-n", "-tt", "--time-stamp-precision=nano"],
                         capture_output=True, text=True).stdout
    return [float(line.split(" ", 1)[0]) for line in out.splitlines() if line]


def wire_lag(ts, rate, least_lag_us):
    """The packets' lag, us, from the schedule n/rate, its origin fitted (see the module doc)."""
    gap = 1.0 / rate
    off = [t - n * gap for n, t in enumerate(ts)]
    t0 = min(off) - least_lag_us * 1e-6
    lags = [(o - t0) * 1e6 for o in off]
    dev = [abs((b - a) - gap) * 1e6 for a, b in zip(ts, ts[1:])]
    return lags, dev


def run_reqlife(binary, extra, port, rate, a):
    with tempfile.TemporaryDirectory() as d:
        pcap = os.path.join(d, "req.pcap")
        dump = capture(port, pcap)
        cmd = ["taskset", "-c", a.client_cpu, binary, "run", "-R", str(rate), "-d", f"{a.duration}s",
               "-t", "1", "-c", str(a.connections), "--quiet", "--json"] + extra + [
               f"http://127.0.0.1:{port}/"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = p.communicate()
        time.sleep(0.2)
        dump.send_signal(signal.SIGINT)
        dump.wait()
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {err.strip()[-300:]}")
        j = json.loads(out)
        ts = stamps(pcap)
    lag = j["latency"]["schedule_lag"]
    n = j["requests"]["total"]
    # The first `n` packets: the requests still in flight at the end are not recorded.
    wl, dev = wire_lag(ts[:n], rate, lag["min_us"] or 0.0)
    return {
        "requests": n, "packets": len(ts),
        "lag_p50": lag["p50_us"], "lag_p99": lag["p99_us"],
        "wire_p50": quantile(wl, 0.5), "wire_p99": quantile(wl, 0.99),
        "gap_dev_p50": quantile(dev, 0.5),
        "total_p50": j["latency"]["total"]["p50_us"], "unc_p50": j["latency"]["uncorrected"]["p50_us"],
        "spin": max(j["generator"].get("pacer_spin", [0.0]) or [0.0]),
    }


def timed(cmd):
    """Runs `cmd`, reaped with wait4: (stdout, CPU seconds)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = p.stdout.read()
    p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise RuntimeError(f"{' '.join(cmd)}: status {status}")
    return out, ru.ru_utime + ru.ru_stime


def run_reqlife_cpu(binary, extra, port, rate, a):
    """The same run without the capture, for its CPU (tcpdump shares the machine)."""
    cmd = ["taskset", "-c", a.client_cpu, binary, "run", "-R", str(rate), "-d", f"{a.duration}s",
           "-t", "1", "-c", str(a.connections), "--quiet", "--json"] + extra + [f"http://127.0.0.1:{port}/"]
    out, cpu = timed(cmd)
    n = json.loads(out)["requests"]["total"]
    return cpu * 1e6 / max(n, 1)


def run_wrk2(port, rate, a):
    cmd = ["taskset", "-c", a.client_cpu, a.wrk2, f"-R{rate}", "-t1", f"-c{a.connections}",
           f"-d{a.duration}s", "--latency", f"http://127.0.0.1:{port}/"]
    out, cpu = timed(cmd)
    m = re.search(r"^\s*(\d+) requests in", out, re.M)
    n = int(m.group(1)) if m else 0
    return cpu * 1e6 / max(n, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="1000,2000,10000,20000")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=3)
    ap.add_argument("--connections", type=int, default=10)
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--reqlife-args", default="", help="extra flags for this build's runs")
    ap.add_argument("--before", action="append", default=[], metavar="BINARY")
    ap.add_argument("--wrk2", default="wrk2")
    ap.add_argument("--no-wrk2", action="store_true")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    for tool in ["tcpdump", "nginx", "taskset"] + ([] if a.no_wrk2 else [a.wrk2]):
        if not shutil.which(tool) and not os.path.exists(tool):
            print(f"pacer_wire.py: {tool} is missing (apt-get install tcpdump nginx; wrk2: see bench/README.md)", file=sys.stderr)
            return 2
    clients = [("this", a.reqlife, shlex.split(a.reqlife_args))] + [
        (f"before{i}" if len(a.before) > 1 else "before", b, []) for i, b in enumerate(a.before)]
    results = {}
    with Nginx(cpu=a.server_cpu) as port:
        for rate in [int(r) for r in a.rates.split(",")]:
            for rnd in range(a.rounds):
                order = clients if rnd % 2 == 0 else clients[::-1]
                for name, binary, extra in order:
                    try:
                        f = run_reqlife(binary, extra, port, rate, a)
                        f["cpu_us"] = run_reqlife_cpu(binary, extra, port, rate, a)
                    except Exception as e:  # noqa: BLE001
                        print(f"pacer_wire.py: {name}: {e}", file=sys.stderr)
                        return 1
                    results.setdefault((rate, name), []).append(f)
                    print(f"{rate:>6} {name:>8} round {rnd}: lag p50 {f['lag_p50']:.1f} p99 {f['lag_p99']:.1f} | wire p50 {f['wire_p50']:.1f} p99 {f['wire_p99']:.1f} gap dev p50 {f['gap_dev_p50']:.1f} | total p50 {f['total_p50']:.1f} unc p50 {f['unc_p50']:.1f} | cpu/req {f['cpu_us']:.2f} spin {100*f['spin']:.2f}%", flush=True)
                if not a.no_wrk2:
                    results.setdefault((rate, "wrk2"), []).append({"cpu_us": run_wrk2(port, rate, a)})
    print("\nmedians (us; cpu us per request; spin: share of a core):")
    summary = {}
    for (rate, name), runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        summary[f"{rate} {name}"] = med
    for key, med in summary.items():
        rate = key.split()[0]
        wrk2 = summary.get(f"{rate} wrk2", {}).get("cpu_us")
        ratio = f" ({med['cpu_us'] / wrk2:.2f}x wrk2)" if wrk2 and "lag_p50" in med else ""
        if "lag_p50" in med:
            print(f"  {key:>14}: lag p50 {med['lag_p50']:.1f} p99 {med['lag_p99']:.1f}; wire p50 {med['wire_p50']:.1f} p99 {med['wire_p99']:.1f}; corrected p50 {med['total_p50']:.1f} uncorrected {med['unc_p50']:.1f}; cpu/req {med['cpu_us']:.2f}{ratio}; spin {100*med['spin']:.2f}%")
        else:
            print(f"  {key:>14}: cpu/req {med['cpu_us']:.2f}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"args": vars(a), "medians": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
