#!/usr/bin/env bash
# Runs every fuzz target for FUZZ_SECONDS (60 by default) with cargo-fuzz (libFuzzer; needs a
# nightly toolchain: `rustup toolchain install nightly`, `cargo install cargo-fuzz`), one
# after the other, and says which found a crash (its input is kept under fuzz/artifacts/).
#   bash fuzz/run.sh                 # 60 s each
#   FUZZ_SECONDS=10 bash fuzz/run.sh http1_response expr
set -uo pipefail
cd "$(dirname "$0")"
seconds=${FUZZ_SECONDS:-60}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(http1_response server_timing template scenario units expr)
fi
failed=()
for t in "${targets[@]}"; do
  echo "== $t: ${seconds}s"
  mkdir -p "corpus/$t"
  if ! cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$seconds" -max_len=4096 \
      2>&1 | tail -n 4; then
    failed+=("$t")
  fi
  # libFuzzer exits non-zero on a crash; tail hides it, so look for the artifact too.
  if compgen -G "artifacts/$t/crash-*" >/dev/null; then
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "crashes in: ${failed[*]} (inputs under fuzz/artifacts/)"
  exit 1
fi
echo "no crash in ${targets[*]}"
