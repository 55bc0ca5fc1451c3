#!/usr/bin/env bash
# Session 45, second call on a warm H200 after 2026-12-11-s45-next.sh (whose gpu-check left the
# build in build/; a fresh machine builds it first, ~110 s): the static/dynamic cutovers that were
# measured elsewhere or on other inputs, on the H200 the issues name.
#   1. deepseek-v3 fp8_block128 and bf16 at 1-16 tokens, both paths, uniform routing: their
#      cutovers (4 and 2 tokens) were measured on the old "uniform" rows, which are "biased" now
#      (session 44: the correction bias skewed them), and session 44's H100 had the static path
#      1.2% ahead at 8 tokens on fp8 with the new rows.
#   2. the 4-bit cutovers of session 44 (H100 only): qwen3-235b int4 and gpt-oss-120b mxfp4 at
#      64-512 tokens, kimi-k2 int4 at 64, 256 and 512, both paths.
# Every group repeats its row options (each --then group starts from the defaults).
# Prediction: as the H100's. deepseek-v3 fp8 static ahead at 4 and level at 8; bf16 static ahead
# at 2, behind from 4; the 4-bit static path 1.5-3x ahead to 256 tokens, level at 512 on
# qwen3-235b int4.
# Device (carry [".deps"], ~6-8 min): SERVEKIT_COMMIT=<sha> BUDGET_S=470 bash bench/runs/2026-12-12-s45-h200-cutover.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-470}
B=build
work_dir cutover
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
row_opts=(--routing uniform --path both --peer off --check-tokens 8)
t=$(($(left) - 10))
timeout $t "$B/servekit" bench moe \
  --preset deepseek-v3 --quant fp8_block128 --tokens 1,2,4,8,16 "${row_opts[@]}" \
  --then --preset deepseek-v3 --quant bf16 --tokens 1,2,4,8 "${row_opts[@]}" \
  --then --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 64,128,256,384,512 "${row_opts[@]}" \
  --then --preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 64,128,256,512 "${row_opts[@]}" \
  --then --preset kimi-k2 --quant int4_w4a16 --tokens 64,256,512 "${row_opts[@]}" \
  --max-seconds $((t - 15)) --commit "${SERVEKIT_COMMIT:-unknown}" --out "$OUT/cutover.json" \
  >"$OUT/cutover.log" 2>&1
say "cutover rc=$?"
grep -E '^(deepseek|qwen|gpt|kimi)' "$OUT/cutover.log" | tee -a "$W/$WORK_NAME.txt"
say done
