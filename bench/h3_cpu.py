#!/usr/bin/env python3
"""HTTP/3 client CPU per request: reqlife --http3 against h2load's HTTP/3 when the installed
h2load has it, and against reqlife's own HTTP/2 path, side by side.

reqlife's embedded target (`reqlife serve --http3`: HTTPS with HTTP/2 over TCP and HTTP/3 over
UDP on one port number, a self-signed certificate, the 12-byte `/` route) runs pinned to one
core (--server-cpu, 0); the clients run in turn on the other (--client-cpu, 1), each with 10
connections of 10 streams on one thread for --duration seconds, --rounds times, alternating
their order:

  reqlife --http3   -c 10 --streams 10 -t 1 --insecure
  reqlife --http2   -c 10 --streams 10 -t 1 --insecure  (HTTP/2 over TLS, the same server)
  h2load --npn-list h3 -c 10 -m 10 -t 1                  (only if this h2load speaks HTTP/3:
                                                          Debian's is built without QUIC)

Each client is reaped with wait4(): its user+sys CPU is its own. Prints requests/s and client
CPU microseconds per request per round, the medians, and the ratios: reqlife HTTP/3 / reqlife
HTTP/2 (what QUIC costs this client per request), and reqlife / h2load over HTTP/3 when h2load
ran. It measures; it does not judge: exit 0 whenever it ran (1 if a client failed, 2 if
something is missing).

    python3 bench/h3_cpu.py [--rounds 3] [--duration 5] [--reqlife target/release/reqlife]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ churn from a run
from client_cpu import ClientFailed, run_client, run_measured  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def reqlife_figures(out):
    j = json.loads(out)
    if j["requests"]["errors"]:
        raise ValueError(f"{j['requests']['errors']} errors")
    return {"requests": j["requests"]["ok"], "rps": j["throughput_rps"]}


def h2load_figures(out):
    m = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out)
    t = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", out)
    if not m or not t:
        raise ValueError("no 'requests:' or 'finished in' line")
    return {"requests": int(m.group(1)), "rps": float(t.group(3))}


def h2load_speaks_h3(url):
    """Whether the installed h2load completes one HTTP/3 request (Debian's has no QUIC)."""
    if not shutil.which("h2load"):
        return False
    out, _, code, _, _ = run_measured(["h2load", "--npn-list", "h3", "-n", "1", "-c", "1", url])
    return code == 0 and re.search(r"requests: 1 total, 1 started, 1 done, 1 succeeded", out)


def start_server(reqlife, cpu):
    """`reqlife serve --http3` on a free port, pinned to `cpu`; (process, port)."""
    p = subprocess.Popen(["taskset", "-c", cpu, reqlife, "serve", "--http3", "--addr", "127.0.0.1:0"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    line = p.stdout.readline()
    m = re.search(r"https://127\.0\.0\.1:(\d+)/", line)
    if not m:
        p.kill()
        raise ClientFailed(f"reqlife serve did not say where it listens: {line!r}")
    time.sleep(0.2)
    return p, int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="runs of each client (3)")
    ap.add_argument("--duration", type=int, default=5, help="whole seconds per client run (5)")
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    a = ap.parse_args()
    if not shutil.which("taskset"):
        print("taskset is missing: apt-get install -y util-linux", file=sys.stderr)
        return 2
    if not os.access(a.reqlife, os.X_OK):
        print(f"{a.reqlife} not found: build it first with cargo build --release", file=sys.stderr)
        return 2
    server, port = start_server(a.reqlife, a.server_cpu)
    try:
        return measure(a, f"https://127.0.0.1:{port}/")
    except ClientFailed as e:
        print(e, file=sys.stderr)
        return 1
    finally:
        server.terminate()
        server.wait()


def measure(a, url):
    pin = ["taskset", "-c", a.client_cpu]
    load = ["-c", "10", "--streams", "10", "-t", "1", "-d", f"{a.duration}s", "--insecure",
            "--quiet", "--json"]
    clients = [
        ("reqlife-h3", pin + [a.reqlife, "run", "--http3"] + load + [url], reqlife_figures),
        ("reqlife-h2", pin + [a.reqlife, "run", "--http2"] + load + [url], reqlife_figures),
    ]
    if h2load_speaks_h3(url):
        clients.append(("h2load-h3", pin + ["h2load", "--npn-list", "h3", "-c", "10", "-m", "10",
                                            "-t", "1", "-D", str(a.duration), url], h2load_figures))
    else:
        print("h2load: not installed or built without HTTP/3 (QUIC): reqlife's HTTP/3 is "
              "compared with its own HTTP/2 path only", flush=True)
    rows = {name: [] for name, _, _ in clients}
    for r in range(a.rounds):
        for name, cmd, parse in (clients if r % 2 == 0 else clients[::-1]):
            fig = run_client(name, cmd, parse)
            rows[name].append(fig)
            print(f"round {r + 1} {name:11} {fig['rps']:>10.0f} req/s  "
                  f"{fig['cpu_us_per_req']:>7.2f} us CPU/req", flush=True)
    med = {name: (statistics.median(f["rps"] for f in figs),
                  statistics.median(f["cpu_us_per_req"] for f in figs))
           for name, figs in rows.items()}
    print()
    for name, (rps, us) in med.items():
        print(f"  median {name:11} {rps:>10.0f} req/s  {us:>7.2f} us CPU/req")
    print(f"  ratio reqlife HTTP/3 / HTTP/2 CPU per request: "
          f"{med['reqlife-h3'][1] / med['reqlife-h2'][1]:.3f}")
    if "h2load-h3" in med:
        print(f"  ratio reqlife/h2load HTTP/3 CPU per request: "
              f"{med['reqlife-h3'][1] / med['h2load-h3'][1]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
