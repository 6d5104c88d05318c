#!/usr/bin/env python3
"""The open loop's cost and precision: reqlife at several --pacer-slack values and wrk2, side by side.

Starts nginx (one worker, pinned to --server-cpu, 0, a 12-byte body). For each rate, --rounds
rounds; in each round every client runs once for --duration seconds, pinned to --client-cpu (1),
at the same rate, one thread and the same connections: wrk2 (`wrk2 -R RATE -t1 -cC -dDs
--latency`), reqlife `run -R RATE -t 1 -c C --pacer-slack S` for each slack of --slacks, and,
with --reqlife-before, an older reqlife build (no --pacer-slack flag) for a before/after figure;
with --woken SLACKS, this build again with --pacer-naps off (its thread woken by every
response, as before it slept through them) at those slacks.
The order of the clients is reversed every other round. Each client is reaped with wait4(): its
CPU is its own user+sys time.

Printed per run, then per rate the medians over the rounds: CPU microseconds per request
(user+sys / requests), reqlife's schedule lag p50/p99/p99.9 (how late each request left after
its due time: the pacer's precision; --json's latency.schedule_lag), the corrected latency
p50/p99 of both (from the due time; wrk2's --latency distribution is its corrected one), and the
ratios reqlife/wrk2 of the medians (CPU per request, corrected p50).

It measures; it does not judge: exit 0 whenever it ran (1 if a client failed or its output was
not understood, 2 if a tool is missing).

    python3 bench/open_loop_cpu.py [--rates 20000,50000] [--slacks 0,25us,50us,100us,200us]
        [--connections 100] [--rounds 3] [--duration 5] [--reqlife target/release/reqlife]
        [--reqlife-before OLD_BINARY [--before-slacks 50us,1ms]] [--woken 50us] [--wrk2 wrk2] [--json-out FILE]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import sys

sys.dont_write_bytecode = True  # no bench/__pycache__ churn from a run
from client_cpu import against_nginx, take_turns, to_us  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wrk2_figures(out):
    """wrk2 --latency's report: requests, requests/s, corrected p50/p99 (us), errors."""
    m = re.search(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m|h)\b", out, re.M)
    if not m:
        raise ValueError("no 'N requests in T' line")
    fig = {"requests": int(m.group(1)), "errors": 0}
    m = re.search(r"^Requests/sec:\s+([\d.]+)", out, re.M)
    if not m:
        raise ValueError("no 'Requests/sec:' line")
    fig["rps"] = float(m.group(1))
    for key, pct in (("p50_us", "50.000"), ("p99_us", "99.000")):
        m = re.search(rf"^\s*{pct}%\s+([\d.]+)(us|ms|s|m|h)\s*$", out, re.M)
        if not m:
            raise ValueError(f"no '{pct}%' line in the latency distribution")
        fig[key] = to_us(m.group(1), m.group(2))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        fig["errors"] += sum(int(g) for g in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        fig["errors"] += int(m.group(1))
    return fig


def reqlife_figures(out):
    """reqlife --json's summary: requests, rate, corrected p50/p99, schedule lag."""
    j = json.loads(out)
    lag = j["latency"]["schedule_lag"]
    total = j["latency"]["total"]
    return {"requests": int(j["requests"]["total"]), "rps": float(j["throughput_rps"]),
            "errors": j["requests"].get("errors", 0) + j["requests"].get("non_2xx_3xx", 0),
            "p50_us": total["p50_us"], "p99_us": total["p99_us"],
            "lag_p50_us": lag["p50_us"], "lag_p99_us": lag["p99_us"],
            "lag_p999_us": lag["p999_us"]}


def clients(a, url, rate):
    """(name, command, parser) of every client measured at `rate`."""
    pin = ["taskset", "-c", a.client_cpu]
    c, d = str(a.connections), f"{a.duration}s"
    out = [("wrk2", pin + [a.wrk2, "-R", str(rate), "-t1", f"-c{c}", f"-d{d}", "--latency", url],
            wrk2_figures)]
    if a.reqlife_before and a.before_slacks:
        for s in a.before_slacks.split(","):
            out.append((f"before {s}", pin + [a.reqlife_before, "run", "-R", str(rate), "-t", "1",
                                              "-c", c, "-d", d, "--pacer-slack", s, "--quiet",
                                              "--json", url], reqlife_figures))
    elif a.reqlife_before:
        out.append(("before", pin + [a.reqlife_before, "run", "-R", str(rate), "-t", "1", "-c", c,
                                     "-d", d, "--quiet", "--json", url], reqlife_figures))
    for s in a.slacks.split(","):
        out.append((f"slack {s}", pin + [a.reqlife, "run", "-R", str(rate), "-t", "1", "-c", c,
                                         "-d", d, "--pacer-slack", s, "--quiet", "--json", url],
                    reqlife_figures))
    # The same build with its thread woken by each response (--pacer-naps off): the figure
    # before the open loop slept through responses.
    for s in filter(None, (a.woken or "").split(",")):
        out.append((f"woken {s}", pin + [a.reqlife, "run", "-R", str(rate), "-t", "1", "-c", c,
                                         "-d", d, "--pacer-slack", s, "--pacer-naps", "off",
                                         "--quiet", "--json", url], reqlife_figures))
    return out


KEYS = ("cpu_us_per_req", "rps", "lag_p50_us", "lag_p99_us", "lag_p999_us", "p50_us", "p99_us")


def fmt(x, spec=">9.1f"):
    return f"{'-':>9}" if x is None else format(x, spec)


def measure_rate(a, url, rate):
    tools = clients(a, url, rate)
    print(f"\n{rate} req/s, -t 1 -c {a.connections}, {a.duration} s per run", flush=True)
    runs = take_turns(tools, a.rounds, lambda fig: (
        f"lag p99 {fmt(fig.get('lag_p99_us'), '.1f')} us  corrected p50 "
        f"{fig['p50_us']:.0f} us p99 {fig['p99_us']:.0f} us"), rate=rate)
    medians = {}
    for name, _, _ in tools:
        mine = [x for x in runs if x["tool"] == name]
        medians[name] = {k: statistics.median(x[k] for x in mine) if k in mine[0] else None
                         for k in KEYS}
    print(f"\n  medians of {a.rounds} round(s) at {rate} req/s (CPU: user+sys per request):")
    print(f"  {'client':14} {'req/s':>9} {'CPU us/req':>10} {'lag p50':>9} {'lag p99':>9} "
          f"{'lag p99.9':>9} {'corr p50':>9} {'corr p99':>9} {'CPU/wrk2':>9} {'p50/wrk2':>9}")
    wk = medians["wrk2"]
    for name, m in medians.items():
        print(f"  {name:14} {m['rps']:>9.0f} {m['cpu_us_per_req']:>10.2f} "
              f"{fmt(m['lag_p50_us'])} {fmt(m['lag_p99_us'])} {fmt(m['lag_p999_us'])} "
              f"{m['p50_us']:>9.0f} {m['p99_us']:>9.0f} "
              f"{m['cpu_us_per_req'] / wk['cpu_us_per_req']:>9.2f} "
              f"{m['p50_us'] / wk['p50_us']:>9.3f}", flush=True)
    return runs, medians


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="20000,50000")
    ap.add_argument("--slacks", default="0,25us,50us,100us,200us",
                    help="--pacer-slack values, comma-separated")
    ap.add_argument("--connections", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5, help="whole seconds per run (5)")
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--reqlife-before", metavar="BINARY",
                    help="also an older reqlife build (run without --pacer-slack)")
    ap.add_argument("--before-slacks", metavar="SLACKS",
                    help="run --reqlife-before at these --pacer-slack values (a build that has it)")
    ap.add_argument("--woken", metavar="SLACKS",
                    help="also reqlife with --pacer-naps off (woken by each response) at these "
                         "--pacer-slack values, comma-separated")
    ap.add_argument("--wrk2", default="wrk2", help="the wrk2 binary (wrk2 on the PATH)")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--json-out", metavar="FILE")
    a = ap.parse_args()
    if a.rounds < 1 or a.duration < 1 or a.connections < 1:
        ap.error("--rounds, --duration and --connections must be at least 1")
    missing = [t for t in ("nginx", "taskset", a.wrk2) if not shutil.which(t)]
    if missing:
        print(f"missing: {', '.join(missing)} (wrk2 is giltene/wrk2, built from source)",
              file=sys.stderr)
        return 2
    for b in filter(None, (a.reqlife, a.reqlife_before)):
        if not os.access(b, os.X_OK):
            print(f"no reqlife binary at {b}: build it first: cargo build --release",
                  file=sys.stderr)
            return 2

    doc = {"config": vars(a), "rates": {}}

    def measure(port):
        url = f"http://127.0.0.1:{port}/"
        print(f"nginx on {url} (1 worker, core {a.server_cpu}); clients on core {a.client_cpu}")
        for rate in (int(r) for r in a.rates.split(",")):
            runs, medians = measure_rate(a, url, rate)
            doc["rates"][rate] = {"runs": runs, "medians": medians}
        return 0

    code = against_nginx(a.server_cpu, measure)
    if code:
        return code
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"\nfigures written to {a.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
