#!/usr/bin/env bash
# Device call of 2026-11-30 s4: where the static GEMMs' CTAs spend a one-token (and an
# eight-token) layer, from the global-timer stamps of SERVEKIT_DIAG_STATIC_TIMES
# (docs/static_moe.md), plus the static GPU tests of this tree (the stamps are new code in the
# kernels) and the same rows without the stamps (their cost).
# Run (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-11-30-s4-times.sh
# Output: OUT/times.tgz and OUT/summary.txt.
# Second call: TIMES_LEVEL=2 (every CTA's line), TIMES_GROUPS (';'-separated bench arguments),
# TIMES_NOSTAMPS=0 (no rows without the stamps).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
BUDGET_S=${BUDGET_S:-420}
START=$(date +%s)
left() { echo $((START + BUDGET_S - $(date +%s))); }
W=$(mktemp -d)
finish() {
  tar -czf "$OUT/times.tgz" -C "$W" . 2>/dev/null
  cp "$W/summary.txt" "$OUT/summary.txt" 2>/dev/null
}
trap finish EXIT
mkdir -p "$OUT"
say() { echo "$* at $(($(date +%s) - START))s" | tee -a "$W/summary.txt"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$W/gpu.txt"
env JOBS="$(nproc)" BUILD_DIR=build-dev SERVEKIT_WERROR=OFF scripts/build.sh >"$W/build.log" 2>&1
say "build rc=$?"
timeout 120 build-dev/servekit_gpu_tests --gtest_filter='*Static*:RoutePlanCuda.*' >"$W/tests.log" 2>&1
say "static tests rc=$? $(grep -E 'PASSED|FAILED' "$W/tests.log" | tr '\n' ' ')"
DEFAULT_GROUPS="--preset qwen3-235b-a22b --quant bf16 --tokens 1,8;\
--preset qwen3-30b-a3b --quant bf16 --tokens 1,8;\
--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8;\
--preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 1;\
--preset deepseek-v3 --quant fp8_block128 --tokens 1,8"
IFS=';' read -r -a GROUPS_ <<<"${TIMES_GROUPS:-$DEFAULT_GROUPS}"
LEVELS="${TIMES_LEVEL:-1}"
[[ ${TIMES_NOSTAMPS:-1} == 1 ]] && LEVELS="$LEVELS 0"
for gi in "${!GROUPS_[@]}"; do
  for diag in $LEVELS; do
    (($(left) < 40)) && { say "group $gi diag=$diag skipped (budget)"; continue; }
    # shellcheck disable=SC2086
    SERVEKIT_DIAG_STATIC_TIMES=$diag timeout $(($(left) - 20)) build-dev/servekit bench moe \
      ${GROUPS_[$gi]} --routing uniform --path static --peer off --check-tokens 1 \
      --commit "${SERVEKIT_COMMIT:-unknown}" --out "$W/g$gi-d$diag.json" >"$W/g$gi-d$diag.log" 2>&1
    say "group $gi diag=$diag rc=$?"
  done
done
for f in "$W"/g*-d[12].log; do
  echo "== $f" >>"$W/summary.txt"
  grep -E "^(qwen|gpt|deepseek|kimi)|diag-times" "$f" >>"$W/summary.txt"
  grep -E "^diag-cta" "$f" >"${f%.log}.cta.txt"
done
for f in $(ls "$W"/g*-d0.log 2>/dev/null); do grep -E "^(qwen|gpt|deepseek|kimi)" "$f" | sed 's/^/no-stamps /' >>"$W/summary.txt"; done
cat "$W/summary.txt"
