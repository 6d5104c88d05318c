#!/usr/bin/env python3
"""gRPC client CPU per call: reqlife --grpc against ghz (when it is installed) and against
reqlife's own plain HTTP/2 path sending the same bytes, side by side.

Starts the gRPC test server (tests/data/grpc/grpc_server.py, Python grpcio, which also writes
the descriptor set) on a free loopback port, pinned to core 0 (--server-cpu); the clients run
pinned to core 1 (--client-cpu), in turn (the order reversed every other round), --rounds times, each
making --calls unary Echo calls over --connections connections with 4 concurrent streams each:

  reqlife-grpc  run --grpc reqlife.test.Test/Echo --proto-set echo.pb --data '{"text": "x"}'
  reqlife-h2    run --http2 -m POST --body-file (the same framed message) with the same
                content-type and te headers, to /reqlife.test.Test/Echo: the HTTP/2 path
                without the gRPC layer (no status read, no encoding)
  ghz           ghz --insecure --protoset echo.pb --call reqlife.test.Test.Echo (if found on
                PATH or in ~/go/bin; `go install github.com/bojand/ghz/cmd/ghz@latest`)

Each client is reaped with wait4() (bench/client_cpu.py's take_turns): its user+sys CPU is
that process's own. Printed: calls/s and client CPU µs per call per run, the medians, and the
ratios reqlife-grpc/ghz and reqlife-grpc/reqlife-h2. The Python server is the bottleneck
(one core), so calls/s compares how well each client keeps it busy; CPU per call is the figure
to judge. It measures, it does not judge: exit 0 whenever it ran (1 if a client failed, 2 if
something is missing).

    python3 bench/grpc_cpu.py [--rounds 3] [--calls 20000] [--connections 10]
                              [--reqlife target/release/reqlife] [--ghz PATH]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no bench/__pycache__ churn from a run
from client_cpu import ClientFailed, take_turns  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "tests", "data", "grpc", "grpc_server.py")
METHOD = "reqlife.test.Test/Echo"
# EchoRequest {text: "x"}: field 1, length-delimited, 1 byte; framed: flag 0, length 3.
MESSAGE = b"\x0a\x01x"
FRAMED = b"\x00" + len(MESSAGE).to_bytes(4, "big") + MESSAGE
STREAMS = 4


def reqlife_figures(out):
    j = json.loads(out)
    return {"requests": int(j["requests"]["total"]), "rps": float(j["throughput_rps"]),
            "errors": int(j["requests"]["errors"]) + int(j["requests"]["non_2xx_3xx"]),
            "grpc_ok": int(j.get("grpc_status", {}).get("OK", 0))}


def ghz_figures(out):
    j = json.loads(out)
    codes = j.get("statusCodeDistribution", {})
    calls = int(j["count"])
    return {"requests": calls, "rps": float(j["rps"]), "errors": calls - int(codes.get("OK", 0)),
            "grpc_ok": int(codes.get("OK", 0))}


def find_ghz(given):
    if given:
        return given if os.access(given, os.X_OK) else None
    home = os.path.join(os.path.expanduser("~"), "go", "bin", "ghz")
    return shutil.which("ghz") or (home if os.access(home, os.X_OK) else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=20000, help="calls per client run (20000)")
    ap.add_argument("--connections", type=int, default=10, help="connections (10), 4 streams each")
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--ghz", help="the ghz binary (default: on PATH or ~/go/bin/ghz)")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--json-out", metavar="FILE")
    a = ap.parse_args()
    if a.rounds < 1 or a.calls < 1 or a.connections < 1:
        ap.error("--rounds, --calls and --connections must be at least 1")
    if not shutil.which("taskset"):
        print("missing: taskset (apt-get install -y util-linux)", file=sys.stderr)
        return 2
    if not os.access(a.reqlife, os.X_OK):
        print(f"no reqlife binary at {a.reqlife}: build it first: cargo build --release",
              file=sys.stderr)
        return 2
    if subprocess.run([sys.executable, "-c", "import grpc, grpc_tools"]).returncode != 0:
        print("missing: the Python grpcio and grpcio-tools packages "
              "(pip install grpcio grpcio-tools)", file=sys.stderr)
        return 2
    ghz = find_ghz(a.ghz)
    if not ghz:
        print("ghz not found (go install github.com/bojand/ghz/cmd/ghz@latest): comparing with "
              "reqlife's plain HTTP/2 path only", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        proto_set = os.path.join(tmp, "echo.pb")
        body = os.path.join(tmp, "echo.framed")
        with open(body, "wb") as f:
            f.write(FRAMED)
        server = subprocess.Popen(["taskset", "-c", a.server_cpu, sys.executable, SERVER,
                                   "--descriptor-out", proto_set], stdout=subprocess.PIPE,
                                  text=True)
        try:
            line = server.stdout.readline()
            if not line.startswith("listening "):
                print(f"the gRPC server said {line!r}", file=sys.stderr)
                return 1
            port = int(line.split()[1])
            return measure(a, port, proto_set, body, ghz)
        except ClientFailed as e:
            print(e, file=sys.stderr)
            return 1
        finally:
            server.terminate()
            server.wait()


def measure(a, port, proto_set, body, ghz):
    pin = ["taskset", "-c", a.client_cpu]
    c, n = str(a.connections), str(a.calls)
    url = f"http://127.0.0.1:{port}"
    common = ["-t", "1", "-c", c, "--streams", str(STREAMS), "-n", n, "--quiet", "--json"]
    tools = [
        ("reqlife-grpc", pin + [a.reqlife, "run", "--grpc", METHOD, "--proto-set", proto_set,
                                "--data", '{"text": "x"}'] + common + [url], reqlife_figures),
        ("reqlife-h2", pin + [a.reqlife, "run", "--http2", "-m", "POST", "--body-file", body,
                              "-H", "content-type: application/grpc", "-H", "te: trailers"]
         + common + [f"{url}/{METHOD}"], reqlife_figures),
    ]
    if ghz:
        tools.append(("ghz", pin + [ghz, "--insecure", "--protoset", proto_set, "--call",
                                    METHOD.replace("/", "."), "-d", '{"text": "x"}', "-n", n,
                                    "-c", str(a.connections * STREAMS), "--connections", c,
                                    "--cpus", "1", "-O", "json", f"127.0.0.1:{port}"],
                      ghz_figures))
    print(f"gRPC server on 127.0.0.1:{port} (Python grpcio, core {a.server_cpu}); clients on "
          f"core {a.client_cpu}; {a.rounds} round(s) of {a.calls} calls each", flush=True)
    for name, cmd, _ in tools:
        print(f"  {name:12} {' '.join(cmd)}")
    def describe(fig):
        if fig["tool"] == "reqlife-h2":  # plain HTTP/2 reads no grpc-status
            return f"({fig['requests']} calls, HTTP status {fig['requests'] - fig['errors']} ok)"
        return f"({fig['requests']} calls, {fig['grpc_ok']} OK)"

    runs = take_turns(tools, a.rounds, describe)
    medians = {}
    for name, _, _ in tools:
        mine = [x for x in runs if x["tool"] == name]
        medians[name] = {"rps": statistics.median(x["rps"] for x in mine),
                         "cpu_us_per_call": statistics.median(x["cpu_us_per_req"] for x in mine)}
    print("\nmedians:")
    for name, m in medians.items():
        print(f"  {name:12} {m['rps']:>8.0f} calls/s  {m['cpu_us_per_call']:>7.2f} us CPU/call")
    ratios = {}
    g = medians["reqlife-grpc"]["cpu_us_per_call"]
    for peer in ("ghz", "reqlife-h2"):
        if peer in medians:
            ratios[f"reqlife-grpc/{peer}"] = g / medians[peer]["cpu_us_per_call"]
    print("\nratios of CPU per call (medians):")
    for k, v in ratios.items():
        print(f"  {k:24} {v:6.3f}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"runs": runs, "medians": medians, "ratios": ratios}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
