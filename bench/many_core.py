#!/usr/bin/env python3
"""Issue 18's table on a many-core machine: reqlife against wrk, h2load and wrk2, side by side.

nginx runs with one worker per core of --server-cpu (8-15), every client pinned to --client-cpu
(0-7). Each case runs its clients in turns (the order reversed every other round), --rounds
times for --duration seconds; each client is reaped with wait4(), so its CPU (user + sys) and
peak RSS are its own. Cases (--cases, all by default):

  h1-c50      HTTP/1.1 -t 1 -c 50                wrk          reqlife [before]
  h1-t8-c400  HTTP/1.1 -t 8 -c 400               wrk          reqlife [before]
  h1-t8-c10k  HTTP/1.1 -t 8 -c 10000             wrk          reqlife
  https-c50   HTTPS/1.1 -t 1 -c 50               wrk          reqlife [before]
  new-conn    a new connection per request, -t 1 -c 50 (wrk: Connection: close; reqlife:
              --no-keepalive) [before]
  h2-tls      HTTP/2 over TLS -t 1 -c 10 -m 10   h2load       reqlife, --h2-coalesce 10ms [before]
  h2c         the same without TLS
  open-loop   -t 2 -c 200 -R --rate (100000)     wrk2         reqlife, --pacer-spin 0 [before]

Prints a line per run and, per case, the medians (requests/s, CPU us per request with its user
and sys parts, peak RSS) and the ratios to the peer. `--budget S` skips the cases that would
not end within S seconds of the start (a lent machine's time is short). `--json-out FILE` keeps
every run. It reports, it does not judge: exit 0 when it ran, 2 on bad arguments or a missing
tool, 130 when interrupted (Ctrl-C, SIGTERM; the cases that ended are kept in --json-out).

    python3 bench/many_core.py [--server-cpu 8-15] [--client-cpu 0-7] [--rounds 3]
        [--duration 4] [--before OLD_BINARY] [--cases h1-c50,h2-tls] [--budget 420]
        [--json-out FILE]
"""

import argparse
import json
import os
import re
import resource
import shutil
import signal
import statistics
import sys
import time

sys.dont_write_bytecode = True
from client_cpu import ClientFailed, reqlife_figures, take_turns, wrk_figures  # noqa: E402
from nginx import Nginx  # noqa: E402
from open_loop_cpu import wrk2_figures  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ["h1-c50", "h1-t8-c400", "h1-t8-c10k", "https-c50", "new-conn", "h2-tls", "h2c",
         "open-loop"]


def h2load_figures(out):
    m = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored", out)
    t = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", out)
    if not m or not t:
        raise ValueError("cannot read h2load's output")
    return {"requests": int(m.group(2)), "rps": float(t.group(3)), "p50_us": None,
            "errors": int(m.group(3)) + int(m.group(4))}


def cases(a):
    """name -> (server kind, nginx worker_connections, [(tool, argv without pin, parser)])."""
    d = str(a.duration)

    def rl(binary, url_kind, *extra):
        return [binary, "run", "-d", f"{d}s", "--quiet", "--json", *extra, url_kind]

    def with_before(tools, make):
        if a.before:
            name, _, binary = a.before.rpartition("=")
            tools.append((name or "before", make(binary), reqlife_figures))
        return tools

    def h1(t, c, scheme="http", extra_wrk=(), extra_rl=(), before=True):
        def make(b):
            return rl(b, scheme, "-t", str(t), "-c", str(c), *extra_rl)
        tools = [("wrk", ["wrk", "-t", str(t), "-c", str(c), "-d", f"{d}s", "--latency",
                          *extra_wrk, scheme], wrk_figures),
                 ("reqlife", make(a.reqlife), reqlife_figures)]
        return with_before(tools, make) if before else tools

    def h2(scheme):
        def make(b, *extra):
            return rl(b, scheme, "--http2", "-t", "1", "-c", "10", "--streams", "10",
                      "--insecure", *extra)
        tools = [("h2load", ["h2load", "-t", "1", "-c", "10", "-m", "10", "-D", d, scheme],
                  h2load_figures),
                 ("reqlife", make(a.reqlife), reqlife_figures),
                 ("coalesce", make(a.reqlife, "--h2-coalesce", "10ms"), reqlife_figures)]
        return with_before(tools, make)

    rate = str(a.rate)

    def open_loop():
        def make(b, *extra):
            return rl(b, "http", "-t", "2", "-c", "200", "-R", rate, *extra)
        tools = [("wrk2", ["wrk2", "-t", "2", "-c", "200", "-R", rate, "-d", f"{d}s",
                           "--latency", "http"], wrk2_figures),
                 ("reqlife", make(a.reqlife), reqlife_figures),
                 ("no-spin", make(a.reqlife, "--pacer-spin", "0"), reqlife_figures)]
        return with_before(tools, make)

    return {
        "h1-c50": ("plain", 4096, h1(1, 50)),
        "h1-t8-c400": ("plain", 4096, h1(8, 400)),
        "h1-t8-c10k": ("plain", 20000, h1(8, 10000, extra_wrk=["--timeout", "10s"],
                                          before=False)),
        "https-c50": ("tls", 4096, h1(1, 50, scheme="https", extra_rl=["--insecure"])),
        "new-conn": ("plain", 4096, h1(1, 50, extra_wrk=["-H", "Connection: close"],
                                       extra_rl=["--no-keepalive"])),
        "h2-tls": ("tls", 4096, h2("https")),
        "h2c": ("h2c", 4096, h2("http")),
        "open-loop": ("plain", 4096, open_loop()),
    }


def summarize(name, runs):
    tools = list(dict.fromkeys(r["tool"] for r in runs))
    med = {}
    for t in tools:
        rs = [r for r in runs if r["tool"] == t]
        med[t] = {k: statistics.median(r[k] for r in rs)
                  for k in ("rps", "cpu_us_per_req", "max_rss_kib")}
        med[t]["user"] = statistics.median(r["cpu_user_s"] / r["requests"] * 1e6 for r in rs)
        med[t]["sys"] = statistics.median(r["cpu_sys_s"] / r["requests"] * 1e6 for r in rs)
        med[t]["errors"] = sum(r["errors"] for r in rs)
    peer = tools[0]
    print(f"\n{name}: medians of {len(runs) // len(tools)} rounds")
    for t in tools:
        m = med[t]
        ratio = m["cpu_us_per_req"] / med[peer]["cpu_us_per_req"]
        rps = m["rps"] / med[peer]["rps"]
        print(f"  {t:9} {m['rps']:>10.0f} req/s  {m['cpu_us_per_req']:>6.2f} us CPU/req "
              f"(user {m['user']:.2f}, sys {m['sys']:.2f})  peak RSS {m['max_rss_kib'] / 1024:.1f} MiB"
              f"  CPU {ratio:.3f}x, req/s {rps:.3f}x {peer}"
              + (f"  ({m['errors']} errors)" if m["errors"] else ""), flush=True)
    return med


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server-cpu", default="8-15")
    ap.add_argument("--client-cpu", default="0-7")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--rate", type=int, default=100000, help="the open loop's rate (100000)")
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--before", metavar="[NAME=]OLD_BINARY",
                    help="another reqlife build, run in the same rounds as NAME (before)")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--budget", type=float, default=0, help="seconds; 0: no bound")
    ap.add_argument("--json-out", metavar="FILE")
    a = ap.parse_args()
    if a.rounds < 1 or a.duration < 1 or a.budget < 0:
        print(f"--rounds and --duration must be at least 1 and --budget at least 0 (got "
              f"{a.rounds}, {a.duration}, {a.budget:g})", file=sys.stderr)
        return 2
    chosen = a.cases.split(",")
    unknown = [c for c in chosen if c not in CASES]
    if unknown:
        print(f"unknown case {unknown[0]!r}: valid are {', '.join(CASES)}", file=sys.stderr)
        return 2
    all_cases = cases(a)
    needed = {"nginx", "taskset", "openssl"} | {t[1][0] for c in chosen for t in all_cases[c][2]
                                               if not t[1][0].startswith("/")}
    missing = sorted(t for t in needed if not shutil.which(t))
    binaries = [a.reqlife] + ([a.before.rpartition("=")[2]] if a.before else [])
    missing += [b for b in binaries if not os.access(b, os.X_OK)]
    if missing:
        print(f"missing: {', '.join(missing)}", file=sys.stderr)
        return 2
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    result = {"server_cpu": a.server_cpu, "client_cpu": a.client_cpu, "cases": {}}

    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    start = time.monotonic()
    try:
        for name in chosen:
            measure_case(a, name, all_cases[name], start, result)
    except KeyboardInterrupt:
        print(f"\ninterrupted; nginx stopped; the {len(result['cases'])} cases that ended are kept"
              + (f" in {a.json_out}" if a.json_out else ""), file=sys.stderr)
        return 130
    print(f"\ntook {time.monotonic() - start:.0f} s")
    return 0


def measure_case(a, name, case, start, result):
    """Runs one case's clients in turns against its own nginx; adds its runs and medians to
    `result` (written to --json-out at once)."""
    kind, conns, tools = case
    cost = len(tools) * a.rounds * (a.duration + 1.5) + 3
    if a.budget and time.monotonic() - start + cost > a.budget:
        print(f"\n{name}: skipped (about {cost:.0f} s, beyond --budget)", flush=True)
        return
    print(f"\n{name}:", flush=True)
    with Nginx(cpu=a.server_cpu, tls_h2=kind == "tls", h2c=kind == "h2c",
               connections=conns) as port:
        url = f"{'https' if kind == 'tls' else 'http'}://127.0.0.1:{port}/"
        pinned = [(t, ["taskset", "-c", a.client_cpu]
                   + [url if x in ("http", "https") else x for x in cmd], p)
                  for t, cmd, p in tools]
        try:
            runs = take_turns(pinned, a.rounds, lambda f: f"peak RSS {f['max_rss_kib']} KiB",
                              case=name)
        except ClientFailed as e:
            print(f"{name}: a client failed: {str(e)[:1500]}", flush=True)
            return
    result["cases"][name] = {"runs": runs, "medians": summarize(name, runs)}
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(result, f, indent=1)

if __name__ == "__main__":
    sys.exit(main())
