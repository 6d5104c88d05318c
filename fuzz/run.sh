#!/usr/bin/env bash
# Runs every fuzz target for FUZZ_SECONDS (60 by default) with cargo-fuzz (libFuzzer; needs a
# nightly toolchain: `rustup toolchain install nightly`, `cargo install cargo-fuzz`), one
# after the other, and says which found a crash (its input is kept under fuzz/artifacts/).
#   bash fuzz/run.sh                 # 60 s each
#   FUZZ_SECONDS=10 bash fuzz/run.sh http1_response expr
# Exit status: 0 no crash; 1 a target found a crash (a new file under fuzz/artifacts/TARGET/);
# 2 the fuzzer could not be run (no nightly, no cargo-fuzz, a build failure): never reported as
# a crash.
set -uo pipefail
cd "$(dirname "$0")"
seconds=${FUZZ_SECONDS:-60}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(http1_response server_timing template scenario units expr framed_reply sse hpack h2_frames
    ws_frames ws_match ws_deflate ws_upgrade)
fi
if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz/run.sh: no nightly toolchain (rustup toolchain install nightly); nothing was fuzzed" >&2
  exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz/run.sh: cargo-fuzz is not installed (cargo install cargo-fuzz); nothing was fuzzed" >&2
  exit 2
fi
# libFuzzer's findings: crashes, and also leaks, timeouts and out-of-memory inputs.
findings() {
  compgen -G "artifacts/$1/crash-*"
  compgen -G "artifacts/$1/leak-*"
  compgen -G "artifacts/$1/timeout-*"
  compgen -G "artifacts/$1/oom-*"
}
crashed=()
broken=()
for t in "${targets[@]}"; do
  echo "== $t: ${seconds}s"
  mkdir -p "corpus/$t"
  # Only a finding written by this run counts (earlier ones stay under artifacts/).
  before=$(findings "$t" | sort)
  log=$(mktemp)
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$seconds" -max_len=4096 \
    >"$log" 2>&1
  status=$?
  after=$(findings "$t" | sort)
  new=$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after") | sed '/^$/d')
  if [ -n "$new" ]; then
    crashed+=("$t")
    tail -n 4 "$log"
    printf '   new finding: %s\n' $new
  elif [ "$status" -ne 0 ]; then
    # A non-zero exit without a new artifact: the build or the fuzzer itself failed.
    broken+=("$t")
    echo "   $t did not run to the end (exit $status, no crash input written); its log:"
    tail -n 20 "$log" | sed 's/^/   | /'
  else
    tail -n 4 "$log"
  fi
  rm -f "$log"
done
if [ ${#crashed[@]} -gt 0 ]; then
  echo "crashes in: ${crashed[*]} (inputs under fuzz/artifacts/)"
fi
if [ ${#broken[@]} -gt 0 ]; then
  echo "could not fuzz: ${broken[*]} (not crashes: see the logs above)"
fi
if [ ${#crashed[@]} -gt 0 ]; then
  exit 1
fi
if [ ${#broken[@]} -gt 0 ]; then
  exit 2
fi
echo "no crash in ${targets[*]}"
