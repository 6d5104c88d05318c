#!/usr/bin/env python3
"""Client CPU per request and added latency: reqlife against wrk, side by side.

Starts nginx (Debian's package) on a free loopback port, one worker answering every request with
the 12-byte body `Hello World!`, pinned to one core (--server-cpu, 0); the clients are pinned to
the other (--client-cpu, 1). Then, taking turns (wrk first in odd rounds, reqlife first in even
ones):

  1. throughput: -t 1 -c 50 (--threads, --connections) for --duration seconds, --rounds
     times each;
  2. latency:    -t 1 -c 1  for --duration seconds, --rounds times each.

Each client is a child of this script, reaped with wait4(): its user+sys CPU time comes from the
kernel's accounting of that one process (all its threads). Printed per round and tool:
requests/s and client CPU microseconds per request at -c 50, p50 latency at -c 1; then the
medians over the rounds and the ratios reqlife/wrk (CPU per request: target <= 1.0; p50 at -c 1:
~1.0, reqlife adds no measurable latency). reqlife runs with its defaults, so it records every
phase (connect, write, wait, read, ...) while it is measured.

It measures; it does not judge: the exit code is 0 whenever it ran (1 if a client failed or its
output could not be read, 2 if a tool is missing).

    python3 bench/client_cpu.py [--rounds 3] [--duration 5] [--threads 1] [--connections 50]
                                [--reqlife target/release/reqlife]
                                [--peer-only] [--server-cpu 0] [--client-cpu 1] [--json-out FILE]
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ churn from a run
from nginx import Nginx  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIME_UNITS_US = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}


class ClientFailed(Exception):
    pass


def run_measured(cmd):
    """Runs cmd to its end; returns (stdout, stderr, exit code, rusage, wall seconds).

    The child's output goes to temporary files (not pipes, so that nothing has to be read while
    it runs) and the child is reaped here with wait4(), whose rusage is that process's own."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        try:
            _, status, ru = os.wait4(p.pid, 0)
        except BaseException:  # Ctrl-C, SIGTERM: do not leave the client running
            p.kill()
            os.waitpid(p.pid, 0)
            p.returncode = -signal.SIGKILL  # reaped here, so Popen must not wait for it again
            raise
        wall = time.monotonic() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                p.returncode, ru, wall)


def to_us(value, unit):
    return float(value) * TIME_UNITS_US[unit]


def wrk_figures(out):
    """wrk --latency's report: requests, requests/s, p50 (us), errors."""
    m = re.search(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m|h)\b", out, re.M)
    if not m:
        raise ValueError("no 'N requests in T' line")
    n = int(m.group(1))
    m = re.search(r"^Requests/sec:\s+([\d.]+)", out, re.M)
    if not m:
        raise ValueError("no 'Requests/sec:' line")
    rps = float(m.group(1))
    m = re.search(r"^\s*50%\s+([\d.]+)(us|ms|s|m|h)\s*$", out, re.M)
    if not m:
        raise ValueError("no '50%' line in the latency distribution")
    p50 = to_us(m.group(1), m.group(2))
    errors = 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errors += sum(int(g) for g in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        errors += int(m.group(1))
    return {"requests": n, "rps": rps, "p50_us": p50, "errors": errors}


def reqlife_figures(out):
    """reqlife --json's summary; the key paths read here are the contract."""
    j = json.loads(out)
    errors = j["requests"].get("errors", 0) + j["requests"].get("non_2xx_3xx", 0)
    # The summary lists every client phase; the ones this run timed have a count.
    phases = sorted(k for k, v in j["latency"].get("phases", {}).items() if v.get("count", 0) > 0)
    return {"requests": int(j["requests"]["total"]), "rps": float(j["throughput_rps"]),
            "p50_us": float(j["latency"]["total"]["p50_us"]), "errors": errors,
            "phases": phases}


def run_client(tool, cmd, parse):
    out, err, code, ru, wall = run_measured(cmd)
    if code != 0:
        raise ClientFailed(f"{tool} exited with {code}: {' '.join(cmd)}\n"
                           f"--- stdout ---\n{out}\n--- stderr ---\n{err}")
    try:
        fig = parse(out)
    except (ValueError, KeyError, TypeError, json.JSONDecodeError) as e:
        raise ClientFailed(f"{tool}'s output not understood ({e!r}): {' '.join(cmd)}\n"
                           f"--- stdout ---\n{out}\n--- stderr ---\n{err}")
    if fig["requests"] <= 0:
        raise ClientFailed(f"{tool} made no requests: {' '.join(cmd)}\n--- stdout ---\n{out}\n"
                           f"--- stderr ---\n{err}")
    cpu = ru.ru_utime + ru.ru_stime
    fig.update({"cpu_user_s": ru.ru_utime, "cpu_sys_s": ru.ru_stime, "cpu_s": cpu,
                "cpu_us_per_req": cpu / fig["requests"] * 1e6, "wall_s": wall,
                "max_rss_kib": ru.ru_maxrss, "vol_ctx_switches": ru.ru_nvcsw,
                "invol_ctx_switches": ru.ru_nivcsw, "command": cmd})
    return fig


def take_turns(tools, rounds, describe, **fields):
    """Runs each client of tools ((name, command, parser)) once per round, in turns (the given
    order in odd rounds, reversed in even ones); each run's figures get `fields`, its round and
    tool, and a line: the tool, requests/s, CPU per request, then describe(figures). Returns
    the runs."""
    runs = []
    for r in range(1, rounds + 1):
        for name, cmd, parse in (tools if r % 2 else list(reversed(tools))):
            time.sleep(0.2)  # let the previous client's connections close
            fig = run_client(name, cmd, parse)
            fig.update(fields, round=r, tool=name)
            runs.append(fig)
            warn = f"  ({fig['errors']} errors!)" if fig["errors"] else ""
            print(f"  round {r} {name:14} {fig['rps']:>8.0f} req/s  {fig['cpu_us_per_req']:>6.2f} us "
                  f"CPU/req  {describe(fig)}{warn}", flush=True)
    return runs


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="runs of each tool per phase (3)")
    ap.add_argument("--duration", type=int, default=5, help="whole seconds per client run (5)")
    ap.add_argument("--connections", type=int, default=50,
                    help="connections of the throughput phase (50)")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads of each client in the throughput phase (1); all of them on "
                         "--client-cpu")
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"),
                    help="the reqlife binary (target/release/reqlife under the repository)")
    ap.add_argument("--server-cpu", default="0", help="core for nginx (0)")
    ap.add_argument("--client-cpu", default="1", help="core for the clients (1)")
    ap.add_argument("--peer-only", action="store_true", help="run only wrk (no reqlife needed)")
    ap.add_argument("--json-out", metavar="FILE", help="write every figure to FILE as JSON")
    a = ap.parse_args()
    if a.rounds < 1 or a.duration < 1 or a.connections < 1 or a.threads < 1:
        ap.error("--rounds, --duration, --connections and --threads must be at least 1")
    if a.threads > a.connections:
        ap.error(f"--threads {a.threads} is more than --connections {a.connections}: "
                 "each thread needs a connection")

    missing = [t for t in ("nginx", "wrk", "taskset") if not shutil.which(t)]
    if missing:
        print(f"missing: {', '.join(missing)}; install them with: apt-get install -y nginx wrk"
              + (" util-linux" if "taskset" in missing else ""), file=sys.stderr)
        return 2
    if not a.peer_only and not (os.path.isfile(a.reqlife) and os.access(a.reqlife, os.X_OK)):
        print(f"no reqlife binary at {a.reqlife}: build it first: cargo build --release",
              file=sys.stderr)
        return 2
    allowed = os.sched_getaffinity(0)
    for opt, cpu in (("--server-cpu", a.server_cpu), ("--client-cpu", a.client_cpu)):
        if not cpu.isdigit() or int(cpu) not in allowed:
            print(f"{opt} {cpu}: not one of the cores this script may use "
                  f"({','.join(map(str, sorted(allowed)))})", file=sys.stderr)
            return 2
    if a.server_cpu == a.client_cpu:
        print(f"warning: server and client share core {a.server_cpu}", file=sys.stderr)

    return against_nginx(a.server_cpu, lambda port: measure(a, port))


def against_nginx(server_cpu, measure):
    """Runs `measure(port)` against nginx on core `server_cpu`; the exit status is what it
    returns, 1 when a client failed (`ClientFailed`), 130 when interrupted. SIGTERM and SIGHUP
    unwind like Ctrl-C, so that nginx and a running client are stopped."""
    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    try:
        with Nginx(cpu=server_cpu) as port:
            return measure(port)
    except ClientFailed as e:
        print(e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted; nginx stopped", file=sys.stderr)
        return 130


def against_server(spec, server_cpu, reqlife, measure):
    """Runs `measure(url)` against the server `spec` names, on core `server_cpu`: `nginx` (its
    `/`), or `random:MS`, the embedded target (`reqlife serve`) at its `/random/MS` route, a delay
    drawn from the exponential distribution of mean MS milliseconds: a latency distribution known
    in advance that stays the same all run long. Exit status as `against_nginx`'s."""
    if spec == "nginx":
        return against_nginx(server_cpu, lambda port: measure(f"http://127.0.0.1:{port}/"))
    kind, _, mean = spec.partition(":")
    if kind != "random" or not mean:
        raise SystemExit(f"--server {spec}: expected nginx or random:MS (e.g. random:10)")
    from soak import free_port
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", server_cpu, reqlife, "serve", "--addr",
                               f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        return measure(f"http://127.0.0.1:{port}/random/{mean}")
    except ClientFailed as e:
        print(e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted; the server stopped", file=sys.stderr)
        return 130
    finally:
        server.terminate()
        server.wait()


def measure(a, port):
    url = f"http://127.0.0.1:{port}/"
    d = a.duration
    pin = ["taskset", "-c", a.client_cpu]

    def threads(c):
        # The latency phase (one connection) runs one thread.
        return a.threads if c == a.connections else 1

    def wrk(c):
        return pin + ["wrk", f"-t{threads(c)}", f"-c{c}", f"-d{d}s", "--latency", url]

    def reqlife(c):
        return pin + [a.reqlife, "run", "-t", str(threads(c)), "-c", str(c), "-d", f"{d}s",
                      "--quiet", "--json", url]

    tools = [("wrk", wrk, wrk_figures)]
    if not a.peer_only:
        tools.append(("reqlife", reqlife, reqlife_figures))
    names = [t[0] for t in tools]

    print(f"nginx on 127.0.0.1:{port} (1 worker, core {a.server_cpu}); clients on core "
          f"{a.client_cpu}; {a.rounds} round(s) of {d} s per tool and phase", flush=True)
    for name, cmd, _ in tools:
        print(f"  {name:8} {' '.join(cmd(a.connections))}")
        print(f"  {'':8} {' '.join(cmd(1))}")

    runs = []  # one dict per client run
    for phase, conns in (("throughput", a.connections), ("latency", 1)):
        print(f"\n{phase} phase: -t {threads(conns)} -c {conns}", flush=True)
        for r in range(1, a.rounds + 1):
            order = tools if r % 2 == 1 else list(reversed(tools))
            for name, cmd, parse in order:
                time.sleep(0.2)  # let the previous client's connections close
                fig = run_client(name, cmd(conns), parse)
                fig.update({"phase": phase, "connections": conns, "round": r, "tool": name})
                runs.append(fig)
                warn = f"  ({fig['errors']} errors!)" if fig["errors"] else ""
                print(f"  round {r} {name:8} {fig['rps']:>10.0f} req/s  "
                      f"{fig['cpu_us_per_req']:>6.3f} us CPU/req  "
                      f"(user {fig['cpu_user_s']:.3f} s + sys {fig['cpu_sys_s']:.3f} s "
                      f"/ {fig['requests']} req)  p50 {fig['p50_us']:.1f} us{warn}", flush=True)

    def pick(phase, name, r):
        return next(x for x in runs if x["phase"] == phase and x["tool"] == name and x["round"] == r)

    print(f"\nper round (req/s and CPU/request at -t {a.threads} -c {a.connections}, p50 at -c 1):")
    head = f"  {'round':>6}  {'tool':8} {'req/s':>10} {'CPU us/req':>11} {'p50 c=1 us':>11}"
    print(head)
    print("  " + "-" * (len(head) - 2))
    for r in range(1, a.rounds + 1):
        for name in names:
            t, l = pick("throughput", name, r), pick("latency", name, r)
            print(f"  {r:>6}  {name:8} {t['rps']:>10.0f} {t['cpu_us_per_req']:>11.3f} "
                  f"{l['p50_us']:>11.1f}")

    medians = {}
    for name in names:
        th = [x for x in runs if x["tool"] == name and x["phase"] == "throughput"]
        la = [x for x in runs if x["tool"] == name and x["phase"] == "latency"]
        medians[name] = {
            "rps": statistics.median(x["rps"] for x in th),
            "cpu_us_per_req": statistics.median(x["cpu_us_per_req"] for x in th),
            "p50_us_c50": statistics.median(x["p50_us"] for x in th),
            "p50_us_c1": statistics.median(x["p50_us"] for x in la),
            "rps_c1": statistics.median(x["rps"] for x in la),
            "cpu_us_per_req_c1": statistics.median(x["cpu_us_per_req"] for x in la),
        }
    print("  " + "-" * (len(head) - 2))
    for name in names:
        m = medians[name]
        print(f"  {'median':>6}  {name:8} {m['rps']:>10.0f} {m['cpu_us_per_req']:>11.3f} "
              f"{m['p50_us_c1']:>11.1f}")

    ratios = None
    if "reqlife" in medians:
        rl, wk = medians["reqlife"], medians["wrk"]
        ratios = {
            "cpu_per_request": rl["cpu_us_per_req"] / wk["cpu_us_per_req"],
            "rps": rl["rps"] / wk["rps"],
            "p50_c1": rl["p50_us_c1"] / wk["p50_us_c1"],
            "p50_c1_diff_us": rl["p50_us_c1"] - wk["p50_us_c1"],
        }
        verdict = "met" if ratios["cpu_per_request"] <= 1.0 else "NOT met"
        at = f"-t {a.threads} -c {a.connections}"
        print("\nratios reqlife/wrk (of the medians):")
        print(f"  CPU per request at {at}: {ratios['cpu_per_request']:>6.3f}  "
              f"(target <= 1.0: {verdict})")
        rps_goal = ""
        if a.threads > 1:
            rps_goal = f"  (target >= 1.0 with threads: {'met' if ratios['rps'] >= 1.0 else 'NOT met'})"
        print(f"  requests/s at {at}:      {ratios['rps']:>6.3f}{rps_goal}")
        print(f"  p50 at -t 1 -c 1:{'':{len(at) + 4}}{ratios['p50_c1']:>6.3f}  "
              f"({ratios['p50_c1_diff_us']:+.1f} us; target ~1.0, no added latency)")
        phases = sorted({p for x in runs if x["tool"] == "reqlife" for p in x.get("phases", [])})
        print(f"  reqlife recorded the phases: {', '.join(phases) or '(none reported)'}")
    errs = sum(x["errors"] for x in runs)
    if errs:
        print(f"\nwarning: {errs} errors in all; the figures above include them", file=sys.stderr)

    if a.json_out:
        doc = {
            "config": {"rounds": a.rounds, "duration_s": d, "connections": a.connections,
                       "server_cpu": a.server_cpu, "client_cpu": a.client_cpu, "url": url,
                       "reqlife": None if a.peer_only else os.path.abspath(a.reqlife),
                       "peer_only": a.peer_only},
            "runs": runs, "medians": medians, "ratios": ratios,
        }
        with open(a.json_out, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"\nfigures written to {a.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
