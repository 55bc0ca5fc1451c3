#!/usr/bin/env bash
# Session 44, call 3 (any card): the default pair pick "auto" (the host's pick without a shared
# expert, the device's with one) and the bench's Poisson-like "uniform" rows.
#   1. build with tests; the GPU tests of the pick: the GEMM tests naming the pair or the device
#      pick, and every layer test (MoECuda, MoECudaQuant: shared experts, skewed routing, odd sizes).
#   2. issue 3's rows with the cuBLAS peer (issue3_rows; deepseek-v3 now uniform = Poisson-like).
#   3. the 4-bit cutover past the 32 tokens measured so far (uniform, --peer off, 8 tokens
#      checked): qwen3-235b int4 and gpt-oss-120b mxfp4 at 64-512 tokens on both paths, kimi-k2
#      int4 at 64-256 on the static path (call 2 measured its dynamic path: 10168.9 us at 128
#      tokens, 5.76 of the floor: the dynamic path runs 4-bit weights dequantized to bf16).
#   4. deepseek-v3 bf16 and fp8_block128 at 8192 tokens, "biased" (the old uniform inputs), with
#      the peer: the rows comparable with sessions 1-43's.
# Prediction: tests pass; deepseek-v3 bf16 8192 uniform ~12.3 ms on an H100 (call 2's device pick),
# biased ~15.5 ms; fp8 uniform ~9.05 ms, biased ~9.48 ms; the rest as call 1 (s44-check). 4-bit:
# the static path reads a quarter of the dynamic path's weight bytes, so it should stay ahead to
# 256 tokens at least (kimi-k2 at 128: ~3 ms static against 10.2 ms).
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha> BUDGET_S=430 bash bench/runs/2026-12-06-s44-final.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-430}
B=build
work_dir final
nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tee -a "$W/$WORK_NAME.txt"
build_tests "$W/build.log"
gtest_run pick "$B" 'GroupedGemmCuda.*Pair*:MoECuda.*:AllFormats/MoECudaQuant.*:Presets.*' 130
issue3_rows
t=$(($(left) - 50))
((t > 40)) && timeout $t "$B/servekit" bench moe --routing uniform --peer off --check-tokens 8 \
  --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 64,128,256,512 --path both --check-tokens 8 \
  --then --preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 64,128,256,512 --path both --check-tokens 8 \
  --then --preset kimi-k2 --quant int4_w4a16 --tokens 64,128,256 --path static --check-tokens 8 \
  --max-seconds $((t - 15)) --commit "${SERVEKIT_COMMIT:-unknown}" --out "$OUT/cutover4.json" \
  >"$OUT/cutover4.log" 2>&1
say "cutover4 rc=$?"
grep -E '^(qwen|gpt|kimi)' "$OUT/cutover4.log" | tee -a "$W/$WORK_NAME.txt"
t=$(($(left) - 10))
((t > 40)) && timeout $t "$B/servekit" bench moe --preset deepseek-v3 --quant bf16,fp8_block128 \
  --tokens 8192 --routing biased --check-tokens 32 --max-seconds $((t - 15)) \
  --commit "${SERVEKIT_COMMIT:-unknown}" --out "$OUT/biased.json" >"$OUT/biased.log" 2>&1
say "biased rc=$?"
grep -E '^deepseek' "$OUT/biased.log" | tee -a "$W/$WORK_NAME.txt"
say done
