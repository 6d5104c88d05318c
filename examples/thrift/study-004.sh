#!/usr/bin/env bash
# Study 004's table (a Thrift client with and without a connection pool, at parallelism 100,
# 200 and 500, against a server that sleeps 500 ms per call), reproduced with reqlife against
# Apache Thrift's Python server (examples/thrift/echo_server.py; `pip install thrift`).
#
#   bash examples/thrift/study-004.sh                 # sleep 500 ms, 5 bursts per row
#   SLEEP_MS=50 BURSTS=3 LEVELS="100 200" bash examples/thrift/study-004.sh
#
# Each row is one command: `--burst P` fires P calls at once (the study's parallelism), waits
# for every reply, pauses, repeats; `--connection-policy new` opens a connection per call (the
# study's "without pool"), `reuse` keeps the burst's P connections (its "with pool": the first
# burst opens them, so `--warmup`-like, only that burst's calls show a connect). The study's
# "response time = time to create clients + blocked waiting" is reqlife's connect + wait.
# Needs a reqlife binary (REQLIFE, default: cargo run). Traffic stays on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/../.."
SLEEP_MS=${SLEEP_MS:-500}
BURSTS=${BURSTS:-5}
LEVELS=${LEVELS:-100 200 500}
REQLIFE=${REQLIFE:-cargo run -q --}
out=$(mktemp -d)
python3 examples/thrift/echo_server.py request >"$out/echo.bin"
python3 examples/thrift/echo_server.py serve --sleep-ms "$SLEEP_MS" >"$out/server.txt" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 50); do
  grep -q listening "$out/server.txt" 2>/dev/null && break
  sleep 0.1
done
port=$(awk '{print $2}' "$out/server.txt")
echo "            total (ms)       | connect (ms)             | wait (ms)         |"
echo "policy  P    mean   p90   p99 |  mean   p90   p99 (count) |  mean   p90   p99 | errors"
for policy in new reuse; do
  for p in $LEVELS; do
    $REQLIFE run "tcp://127.0.0.1:$port" --payload-file "$out/echo.bin" --seqid-offset 16 \
      --burst "$p" --bursts "$BURSTS" --burst-interval 10ms --connection-policy "$policy" \
      --timeout 30s --json >"$out/run.json" 2>/dev/null || true
    python3 - "$policy" "$p" "$out/run.json" <<'EOF'
import json, sys
policy, p, path = sys.argv[1:]
s = json.load(open(path))
ph = s["latency"]["phases"]
ms = lambda x: "-" if x is None else f"{x / 1000:.0f}"
cols = lambda r: f"{ms(r['mean_us']):>5} {ms(r['p90_us']):>5} {ms(r['p99_us']):>5}"
errors = sum(s["errors"].values())
print(f"{policy:<7} {p:<4} {cols(s['latency']['total'])} | {cols(ph['connect'])} ({ph['connect']['count']:>5}) |"
      f" {cols(ph['wait'])} | {errors}")
EOF
  done
done
