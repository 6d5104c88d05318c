#!/usr/bin/env python3
"""WebSocket messages per second and client CPU per message: reqlife against a Go client
(bench/ws_peer, gorilla/websocket) and k6 (its k6/websockets API, when a k6 binary is found),
side by side, against one Go echo server.

The echo server (bench/ws_peer/echo: gorilla/websocket, a goroutine per connection, each data
message copied back as it came) runs pinned to --server-cpu (0); the clients run pinned to
--client-cpu (1), one at a time. The Go programs are built into --build-dir (/tmp/reqlife-ws-bench)
when missing or older than their sources (Go is needed then, and the Go module proxy for
gorilla/websocket the first time).

Closed loop, for each case of --cases (CONNECTIONS:MESSAGE_BYTES, default 10:16,50:16,10:1024),
--rounds rounds, in each every client once for --duration seconds, the order reversed every
other round:

  ws-peer   ws_peer -url URL -c C -d Ds -data MSG     (N connections, one message in flight each)
  k6        k6 run bench/ws_k6.js with C VUs, one connection each, sending on every reply
  reqlife   reqlife run -t 1 -c C -d Ds --data MSG --quiet --json URL

MSG is a text message of MESSAGE_BYTES 'x's, the same for all. Each client is reaped with
wait4(): its user+sys CPU is that one process's own (all its threads); that CPU over the run's
wall time is printed as the client's busy share of its core, and the echo server's CPU over each
run (/proc/PID/stat) as the server's. Near 100%, that side was the limit; both well below,
neither was, and messages/s says more about the machine's other work than about the clients.
CPU per message is the figure to judge.

Open loop (--rate R, default 10000; 0 skips it): --rate-connections (10) connections at R
messages/s in all, reqlife `run -R R -t 1 -c C` and `ws_peer -rate R -c C`, --rounds rounds in
turn: CPU per message at a fixed rate, and the corrected p50/p99 (from each message's due time).
k6 has no open loop over one WebSocket connection (its arrival-rate executors start iterations,
that is connections, not messages): the row is reqlife and ws-peer only. ws-peer paces with Go's
timers (time.Sleep), coarser than reqlife's pacer: its messages leave in small bursts, late by up
to about a millisecond, and its corrected latency shows it.

Printed: a line per run, then per case the medians (messages/s, CPU µs per message with its user
and sys parts, the server's busy share, p50) and the ratios reqlife / each peer of the medians
(CPU per message: below 1.0 reqlife spends less; messages/s).

It measures; it does not judge: exit 0 whenever it ran (1 if a client failed or its output was
not understood, 2 if something is missing).

    python3 bench/websocket.py [--rounds 5] [--duration 5] [--cases 10:16,50:16,10:1024]
        [--rate 10000] [--rate-connections 10] [--reqlife target/release/reqlife]
        [--k6 PATH | --no-k6] [--build-k6] [--server-cpu 0] [--client-cpu 1] [--json-out FILE]
"""

import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ churn from a run
from client_cpu import ClientFailed, run_client  # noqa: E402
from nginx import warn_busy_kernel_threads  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
PEER_SRC = os.path.join(BENCH, "ws_peer")
K6_SCRIPT = os.path.join(BENCH, "ws_k6.js")
K6_MODULE = "go.k6.io/k6@v1.8.1"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def go_env(build_dir):
    """Go's caches under build_dir, so that nothing lands in the home directory."""
    env = dict(os.environ)
    env.update(GOPATH=os.path.join(build_dir, "go"), GOCACHE=os.path.join(build_dir, "gocache"),
               GOMODCACHE=os.path.join(build_dir, "gomodcache"), GOFLAGS="-buildvcs=false")
    return env


def find_go():
    return shutil.which("go") or ("/usr/local/go/bin/go"
                                  if os.access("/usr/local/go/bin/go", os.X_OK) else None)


def build_go_programs(build_dir):
    """Builds ws_peer and ws_echo into build_dir when missing or older than their sources;
    returns their paths, or None (the reason printed) when Go is missing or the build failed."""
    peer, echo = os.path.join(build_dir, "ws_peer"), os.path.join(build_dir, "ws_echo")
    sources = [os.path.join(d, f) for d, _, fs in os.walk(PEER_SRC) for f in fs]
    newest = max(os.path.getmtime(s) for s in sources)
    stale = [(b, pkg) for b, pkg in ((peer, "."), (echo, "./echo"))
             if not os.path.exists(b) or os.path.getmtime(b) < newest]
    if stale:
        go = find_go()
        if not go:
            print("Go is missing (needed to build bench/ws_peer): install it, or put the built "
                  f"ws_peer and ws_echo in {build_dir}", file=sys.stderr)
            return None
        os.makedirs(build_dir, exist_ok=True)
        for binary, pkg in stale:
            print(f"building {binary} (go build {pkg} in bench/ws_peer)", flush=True)
            p = subprocess.run([go, "build", "-o", binary, pkg], cwd=PEER_SRC,
                               env=go_env(build_dir))
            if p.returncode != 0:
                print(f"go build {pkg} failed", file=sys.stderr)
                return None
    return peer, echo


def find_k6(a):
    if a.no_k6:
        return None
    if a.k6:
        return a.k6 if os.access(a.k6, os.X_OK) else None
    built = os.path.join(a.build_dir, "go", "bin", "k6")
    home = os.path.join(os.path.expanduser("~"), "go", "bin", "k6")
    return shutil.which("k6") or next((p for p in (built, home) if os.access(p, os.X_OK)), None)


def build_k6(build_dir):
    go = find_go()
    if not go:
        print("Go is missing: cannot build k6", file=sys.stderr)
        return None
    print(f"building k6: go install {K6_MODULE} (GOPATH {build_dir}/go; several minutes)",
          flush=True)
    start = time.monotonic()
    p = subprocess.run([go, "install", K6_MODULE], env=go_env(build_dir), timeout=3600)
    print(f"  go install exited with {p.returncode} after {time.monotonic() - start:.0f} s")
    k6 = os.path.join(build_dir, "go", "bin", "k6")
    return k6 if p.returncode == 0 and os.access(k6, os.X_OK) else None


def proc_cpu_s(pid):
    """utime + stime of a process so far, in seconds (clock ticks: 10 ms resolution)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def reqlife_figures(out):
    j = json.loads(out)
    fig = {"requests": int(j["requests"]["total"]), "rps": float(j["throughput_rps"]),
           "errors": int(j["requests"].get("errors", 0)) + int(j["requests"].get("non_2xx_3xx", 0)),
           "p50_us": j["latency"]["total"]["p50_us"], "p99_us": j["latency"]["total"]["p99_us"]}
    lag = j["latency"].get("schedule_lag") or {}
    if lag.get("count"):
        fig["lag_p99_us"] = lag["p99_us"]
    return fig


def peer_figures(out):
    j = json.loads(out)
    return {"requests": int(j["messages"]), "rps": float(j["mps"]), "errors": int(j["errors"]),
            "p50_us": float(j["p50_us"]), "p99_us": float(j["p99_us"])}


def k6_parser(summary_path):
    def parse(_out):
        try:
            with open(summary_path) as f:
                j = json.load(f)
        except FileNotFoundError:
            raise ValueError(f"k6 wrote no summary to {summary_path}")
        os.unlink(summary_path)  # a later run must not read this one's summary
        got, vus = int(j["msgs_received"]), int(j["vus"])
        # k6 counts no reply that comes once close() was called: each connection ends with a
        # message or two unanswered (2 seen on every connection). Errors: the connections that
        # never opened, and any more unanswered messages than that.
        unanswered = int(j["msgs_sent"]) - got
        errors = max(0, vus - int(j["sessions"])) + max(0, unanswered - 2 * vus)
        return {"requests": got, "rps": got / float(j["seconds"]), "errors": errors,
                "p50_us": None, "p99_us": None, "sessions": int(j["sessions"]),
                "unanswered": unanswered}
    return parse


def take_turns(tools, rounds, server_pid, **fields):
    """Runs each client of tools ((name, command, parser)) once per round, in turns (the given
    order in odd rounds, reversed in even ones), with the echo server's CPU over each run.
    Returns the runs."""
    runs = []
    for r in range(1, rounds + 1):
        for name, cmd, parse in (tools if r % 2 else list(reversed(tools))):
            time.sleep(0.3)  # let the previous client's connections close
            s0 = proc_cpu_s(server_pid)
            fig = run_client(name, cmd, parse)
            fig["server_busy"] = (proc_cpu_s(server_pid) - s0) / fig["wall_s"]
            fig["client_busy"] = fig["cpu_s"] / fig["wall_s"]
            fig.update(fields, round=r, tool=name)
            runs.append(fig)
            warn = f"  ({fig['errors']} errors!)" if fig["errors"] else ""
            p50 = "" if fig.get("p50_us") is None else f"  p50 {fig['p50_us']:.0f} us"
            print(f"  round {r} {name:11} {fig['rps']:>9.0f} msg/s  {fig['cpu_us_per_req']:>6.2f} us "
                  f"CPU/msg (user {fig['cpu_user_s'] / fig['requests'] * 1e6:.2f} + sys "
                  f"{fig['cpu_sys_s'] / fig['requests'] * 1e6:.2f})  busy: client "
                  f"{fig['client_busy'] * 100:>3.0f}% server {fig['server_busy'] * 100:>3.0f}%"
                  f"{p50}{warn}", flush=True)
    return runs


KEYS = ("rps", "cpu_us_per_req", "cpu_user_us", "cpu_sys_us", "client_busy", "server_busy",
        "p50_us", "p99_us", "lag_p99_us")


def medians_of(runs, names):
    med = {}
    for name in names:
        mine = [x for x in runs if x["tool"] == name]
        for x in mine:
            x["cpu_user_us"] = x["cpu_user_s"] / x["requests"] * 1e6
            x["cpu_sys_us"] = x["cpu_sys_s"] / x["requests"] * 1e6
        med[name] = {k: statistics.median(x[k] for x in mine)
                     if all(x.get(k) is not None for x in mine) else None for k in KEYS}
    return med


def fmt(x, spec):
    return f"{'-':>{spec.split('.')[0].lstrip('>')}}" if x is None else format(x, spec)


def print_medians(title, med, peers):
    print(f"\n  {title}")
    print(f"  {'client':11} {'msg/s':>9} {'CPU us/msg':>10} {'user':>6} {'sys':>6} "
          f"{'client':>7} {'server':>7} {'p50 us':>8} {'p99 us':>8}")
    for name, m in med.items():
        print(f"  {name:11} {m['rps']:>9.0f} {m['cpu_us_per_req']:>10.2f} {m['cpu_user_us']:>6.2f} "
              f"{m['cpu_sys_us']:>6.2f} {m['client_busy'] * 100:>6.0f}% {m['server_busy'] * 100:>6.0f}% "
              f"{fmt(m['p50_us'], '>8.0f')} "
              f"{fmt(m['p99_us'], '>8.0f')}")
    ratios = {}
    for r in (n for n in med if n.startswith("reqlife")):
        for p in (p for p in peers if p in med):
            ratio = {"cpu_per_message": med[r]["cpu_us_per_req"] / med[p]["cpu_us_per_req"],
                     "messages_per_s": med[r]["rps"] / med[p]["rps"]}
            ratios[f"{r}/{p}"] = ratio
            print(f"  {r + ' / ' + p:22} CPU per message {ratio['cpu_per_message']:.3f}  "
                  f"messages/s {ratio['messages_per_s']:.3f}")
    return ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="runs of each client per case (5)")
    ap.add_argument("--duration", type=int, default=5, help="whole seconds per run (5)")
    ap.add_argument("--cases", default="10:16,50:16,10:1024",
                    help="closed-loop cases, CONNECTIONS:MESSAGE_BYTES, comma-separated")
    ap.add_argument("--rate", type=int, default=10000,
                    help="open-loop row: messages/s in all (10000; 0 skips the row)")
    ap.add_argument("--rate-connections", type=int, default=10)
    ap.add_argument("--rate-bytes", type=int, default=16, help="message size of the open loop")
    ap.add_argument("--rate-slack", default="1ms",
                    help="the open loop also runs reqlife with --pacer-slack RATE_SLACK (1ms: "
                         "messages leave in bursts, as ws-peer's coarse timers send them; '' "
                         "leaves it out)")
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--k6", help="the k6 binary (default: on PATH, BUILD_DIR/go/bin/k6 or "
                                 "~/go/bin/k6)")
    ap.add_argument("--no-k6", action="store_true", help="leave k6 out")
    ap.add_argument("--build-k6", action="store_true",
                    help=f"when no k6 is found, go install {K6_MODULE} into BUILD_DIR/go/bin "
                         "(minutes, about 2 GB of Go caches under BUILD_DIR)")
    ap.add_argument("--build-dir", default="/tmp/reqlife-ws-bench",
                    help="where the Go programs are built (/tmp/reqlife-ws-bench)")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--json-out", metavar="FILE")
    a = ap.parse_args()
    if a.rounds < 1 or a.duration < 1 or a.rate < 0 or a.rate_connections < 1:
        ap.error("--rounds, --duration and --rate-connections must be at least 1, --rate >= 0")
    try:
        cases = [tuple(int(v) for v in c.split(":")) for c in a.cases.split(",") if c]
        if any(len(c) != 2 or c[0] < 1 or c[1] < 1 for c in cases):
            raise ValueError
    except ValueError:
        ap.error(f"--cases {a.cases!r}: expected CONNECTIONS:BYTES[,...], e.g. 10:16,50:16")

    if not shutil.which("taskset"):
        print("missing: taskset (apt-get install -y util-linux)", file=sys.stderr)
        return 2
    if not os.access(a.reqlife, os.X_OK):
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
    built = build_go_programs(a.build_dir)
    if not built:
        return 2
    peer, echo = built
    k6 = find_k6(a)
    if not k6 and a.build_k6 and not a.no_k6:
        k6 = build_k6(a.build_dir)
    if not k6 and not a.no_k6:
        print(f"k6 not found ({a.k6 or 'PATH, ' + a.build_dir + '/go/bin, ~/go/bin'}): comparing "
              f"with ws-peer only (--build-k6 builds it: go install {K6_MODULE})", file=sys.stderr)
    warn_busy_kernel_threads(a.server_cpu)

    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    server = subprocess.Popen(["taskset", "-c", a.server_cpu, echo], stdout=subprocess.PIPE,
                              text=True)
    try:
        line = server.stdout.readline()
        if not line.startswith("listening "):
            print(f"the echo server said {line!r}", file=sys.stderr)
            return 1
        url = f"ws://127.0.0.1:{int(line.split()[1])}/"
        with tempfile.TemporaryDirectory() as tmp:
            return measure(a, url, server.pid, peer, k6, cases, tmp)
    except ClientFailed as e:
        print(e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted; the echo server stopped", file=sys.stderr)
        return 130
    finally:
        server.terminate()
        server.wait()


def measure(a, url, server_pid, peer, k6, cases, tmp):
    pin = ["taskset", "-c", a.client_cpu]
    d = a.duration
    print(f"echo server (Go, gorilla/websocket) on {url}, core {a.server_cpu}; clients on core "
          f"{a.client_cpu}; {a.rounds} round(s) of {d} s per client and case")
    doc = {"config": {k: v for k, v in vars(a).items()}, "url": url, "k6": k6, "cases": [],
           "open_loop": None}
    doc["config"]["cases"] = cases

    for conns, size in cases:
        msg = "x" * size
        summary = os.path.join(tmp, "k6-summary.json")
        tools = [("ws-peer", pin + [peer, "-url", url, "-c", str(conns), "-d", f"{d}s",
                                    "-data", msg], peer_figures)]
        if k6:
            tools.append(("k6", pin + [k6, "run", "--quiet", "--no-usage-report", "--no-color",
                                       "--no-thresholds", "--address", "", "-e", f"WS_URL={url}",
                                       "-e", f"WS_VUS={conns}", "-e", f"WS_SECONDS={d}",
                                       "-e", f"WS_MESSAGE={msg}", "-e", f"WS_SUMMARY={summary}",
                                       K6_SCRIPT], k6_parser(summary)))
        tools.append(("reqlife", pin + [a.reqlife, "run", "-t", "1", "-c", str(conns), "-d",
                                        f"{d}s", "--data", msg, "--quiet", "--json", url],
                      reqlife_figures))
        print(f"\nclosed loop, -c {conns}, {size}-byte text messages:", flush=True)
        for name, cmd, _ in tools:
            shown = [f"{x[:24]}...({len(x)} bytes)" if len(x) > 40 else x for x in cmd]
            print(f"  {name:11} {shlex.join(shown)}")
        runs = take_turns(tools, a.rounds, server_pid, connections=conns, message_bytes=size)
        med = medians_of(runs, [t[0] for t in tools])
        ratios = print_medians(f"medians of {a.rounds} round(s), -c {conns}, {size} B "
                               "(CPU: the client's user+sys per message):",
                               med, ("ws-peer", "k6"))
        doc["cases"].append({"connections": conns, "message_bytes": size, "runs": runs,
                             "medians": med, "ratios": ratios})

    if a.rate:
        c, msg = a.rate_connections, "x" * a.rate_bytes

        def reqlife(*extra):
            return pin + [a.reqlife, "run", "-t", "1", "-c", str(c), "-R", str(a.rate), "-d",
                          f"{d}s", "--data", msg, *extra, "--quiet", "--json", url]

        tools = [("ws-peer", pin + [peer, "-url", url, "-c", str(c), "-d", f"{d}s", "-data", msg,
                                    "-rate", str(a.rate)], peer_figures),
                 ("reqlife", reqlife(), reqlife_figures)]
        if a.rate_slack:
            tools.append((f"reqlife-{a.rate_slack}", reqlife("--pacer-slack", a.rate_slack),
                          reqlife_figures))
        print(f"\nopen loop, {a.rate} msg/s over -c {c}, {a.rate_bytes}-byte text messages "
              "(k6: no open loop over one connection; latency corrected, from the due time):",
              flush=True)
        for name, cmd, _ in tools:
            print(f"  {name:11} {shlex.join(cmd)}")
        runs = take_turns(tools, a.rounds, server_pid, rate=a.rate, connections=c,
                          message_bytes=a.rate_bytes)
        med = medians_of(runs, [t[0] for t in tools])
        ratios = print_medians(f"medians of {a.rounds} round(s) at {a.rate} msg/s:", med,
                               ("ws-peer",))
        for name in (n for n in med if n.startswith("reqlife")):
            if med[name]["lag_p99_us"] is not None:
                print(f"  {name}'s schedule lag p99: {med[name]['lag_p99_us']:.0f} us")
        doc["open_loop"] = {"rate": a.rate, "connections": c, "message_bytes": a.rate_bytes,
                            "runs": runs, "medians": med, "ratios": ratios}

    errs = sum(x["errors"] for part in doc["cases"] + [doc["open_loop"] or {"runs": []}]
               for x in part["runs"])
    if errs:
        print(f"\nwarning: {errs} errors in all; the figures above include them", file=sys.stderr)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"\nfigures written to {a.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
