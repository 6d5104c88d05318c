#!/usr/bin/env python3
"""What making every slow request findable costs (issue 34): client CPU per request of
`--trace-context` (a traceparent rendered into every request) and of `--log-requests` (a CSV row
per request, streamed by a writer thread), against the same run without them; and a 10 s open
loop at 10,000 req/s with the log, whose rows must equal the record's requests with the peak RSS
of the same run without the log.

nginx (Debian's package, one worker on --server-cpu) answers `Hello World!`; reqlife runs on
--client-cpu. The variants take turns in each round (the order rotates); printed: per variant the
median over the rounds of requests/s and CPU µs per request, and the ratio to the plain run.

    python3 bench/findable.py [--rounds 5] [--duration 5] [--connections 50]
                              [--reqlife target/release/reqlife] [--server-cpu 0] [--client-cpu 1]
                              [--before OLD_BINARY]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile

sys.dont_write_bytecode = True
from client_cpu import run_measured  # noqa: E402
from nginx import Nginx  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def reqlife_run(a, port, extra, tmp, binary=None):
    out = os.path.join(tmp, "run.json")
    cmd = ["taskset", "-c", a.client_cpu, binary or a.reqlife, "run", f"http://127.0.0.1:{port}/",
           "-q", "-o", out] + extra
    stdout, stderr, code, ru, wall = run_measured(cmd)
    if code != 0:
        sys.exit(f"reqlife failed ({code}): {stderr}")
    rec = json.load(open(out))
    n = rec["summary"]["requests"]["total"]
    cpu_us = (ru.ru_utime + ru.ru_stime) * 1e6
    return rec, n, cpu_us / n, n / rec["summary"]["duration_s"], ru.ru_maxrss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=int, default=5)
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--reqlife", default=os.path.join(ROOT, "target/release/reqlife"))
    p.add_argument("--server-cpu", default="0")
    p.add_argument("--client-cpu", default="1")
    p.add_argument("--before", help="an older reqlife binary: its plain run as one more variant")
    a = p.parse_args()
    tmp = tempfile.mkdtemp()
    log = os.path.join(tmp, "log.csv")
    closed = ["-t", "1", "-c", str(a.connections), "-d", f"{a.duration}s"]
    variants = {
        "plain": [],
        "trace-context": ["--trace-context"],
        "log-requests": ["--log-requests", log],
        "both": ["--trace-context", "--log-requests", log],
    }
    if a.before:
        variants["before: plain"] = []
    figures = {k: ([], []) for k in variants}
    with Nginx(cpu=a.server_cpu) as port:
        for r in range(a.rounds):
            names = list(variants)
            names = names[r % len(names):] + names[: r % len(names)]
            for name in names:
                binary = a.before if name.startswith("before") else None
                _, n, cpu, rps, _ = reqlife_run(a, port, closed + variants[name], tmp, binary)
                figures[name][0].append(rps)
                figures[name][1].append(cpu)
                print(f"round {r + 1} {name:14} {rps:9.0f} req/s {cpu:6.2f} us CPU/req", flush=True)
        base = statistics.median(figures["plain"][1])
        print(f"\nclosed loop -t 1 -c {a.connections}, medians of {a.rounds} rounds:")
        for name, (rps, cpu) in figures.items():
            m = statistics.median(cpu)
            print(f"  {name:14} {statistics.median(rps):9.0f} req/s {m:6.2f} us CPU/req"
                  f"  {m / base:5.3f}x plain  (+{m - base:5.2f} us)")
        # The log of a 10 s open loop at 10k req/s: every request a row, memory flat.
        open_loop = ["-R", "10000", "-d", "10s", "-c", "20", "-t", "1"]
        rec, n, _, _, rss_log = reqlife_run(a, port, open_loop + ["--trace-context", "--log-requests", log], tmp)
        rows = sum(1 for _ in open(log)) - 1
        _, _, _, _, rss_plain = reqlife_run(a, port, open_loop, tmp)
        print(f"\nopen loop -R 10000 -d 10s: {n} requests, {rows} rows in the log "
              f"(record: {rec['request_log']['rows']} rows, {rec['request_log']['dropped']} dropped), "
              f"{os.path.getsize(log) / 1e6:.1f} MB; peak RSS {rss_log / 1024:.1f} MiB with the log, "
              f"{rss_plain / 1024:.1f} MiB without")


if __name__ == "__main__":
    main()
