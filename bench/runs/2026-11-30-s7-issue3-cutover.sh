#!/usr/bin/env bash
# Device call, session 7: the static/dynamic cutover between 8 and 32 tokens on the presets whose
# dynamic path the 64-row tile made faster at 32 tokens (2026-11-30-issue4-s7.json), then the
# issue-3 benchmark set. No tests: the full check of this code passed in the call before
# (2026-11-30-issue4-s7.json, 122/122 GPU tests).
# Run (carry [".deps"], timeout_s 600): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-11-30-s7-issue3-cutover.sh
# Output: OUT/cutover.json, OUT/cutover.log, and gpu-check's files for BENCH_SET=issue3.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
B=build-dev
START=$(date +%s)
mkdir -p "$OUT"
BENCH_SET=none RUN_TESTS=0 BUDGET_S=300 BUILD_DIR=$B OUT=$OUT bash scripts/gpu-check.sh
timeout 170 "$B/servekit" bench moe --preset qwen3-30b-a3b --quant bf16 --tokens 8,12,16,20,24,32 \
  --routing uniform --path both --peer off --check-tokens 1 \
  --then --preset qwen3-235b-a22b --quant bf16 --tokens 8,12,16,24,32 --routing uniform \
  --path both --peer off --check-tokens 1 \
  --then --preset deepseek-v3 --quant fp8_block128 --tokens 8,16,24,32 --routing uniform \
  --path both --peer off --check-tokens 1 \
  --max-seconds 140 --commit "${SERVEKIT_COMMIT:-unknown}" --out "$OUT/cutover.json" \
  >"$OUT/cutover.log" 2>&1
tail -n 40 "$OUT/cutover.log"
LEFT=$((START + 585 - $(date +%s)))
BENCH_SET=issue3 RUN_TESTS=0 BUDGET_S=$LEFT BUILD_DIR=$B OUT=$OUT bash scripts/gpu-check.sh
