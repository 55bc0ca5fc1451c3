#!/usr/bin/env bash
# Session 22, the check of the token-major gather and the activation pass's reciprocal
# quantization in one device call:
#   1. scripts/gpu-check.sh with BENCH_SET=none: build, the whole GPU suite, CPU suite,
#      compute-sanitizer (OUT/check/)
#   2. racecheck of the dynamic path's row kernels (the gather's shared slot table): tiny preset,
#      fp8_block128 and bf16, dynamic path
#   3. issue 3's rows with their cuBLAS peers, 32 tokens checked against the CPU reference:
#      deepseek-v3 fp8_block128 2048 + 8192, qwen3-30b-a3b bf16 2048 + 8192, mixtral-8x7b bf16
#      2048 + 8192, deepseek-v3 bf16 8192 (OUT/issue3.json, .log)
# Device (carry [".deps"], ~9.5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s22-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev
BUDGET_S=${BUDGET_S:-570}
OUT="$OUT/check" BENCH_SET=none BUDGET_S=420 BUILD_DIR=$B scripts/gpu-check.sh
echo "check done at $(($(date +%s) - START))s"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
timeout 40 "$SAN" --tool racecheck --error-exitcode 1 "$B/servekit" bench moe --preset tiny \
  --quant fp8_block128,bf16 --tokens 40 --routing uniform --path dynamic --repeats 1 --warmup 0 \
  --check-tokens 8 --threads 4 --peer off >"$OUT/racecheck-dynamic.log" 2>&1
echo "racecheck dynamic rc=$? at $(($(date +%s) - START))s"
grep -E "RACECHECK SUMMARY" "$OUT/racecheck-dynamic.log"
LEFT=$((START + BUDGET_S - $(date +%s)))
((LEFT > 60)) && timeout $((LEFT - 10)) "$B/servekit" bench moe \
  --preset deepseek-v3 --quant fp8_block128 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --then --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --then --preset mixtral-8x7b --quant bf16 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --then --preset deepseek-v3 --quant bf16 --tokens 8192 --routing uniform --check-tokens 32 \
  --max-seconds $((LEFT - 40)) --commit "${SERVEKIT_COMMIT:-unknown}" \
  --out "$OUT/issue3.json" >"$OUT/issue3.log" 2>&1
echo "bench rc=$? at $(($(date +%s) - START))s"
grep -E '^(deepseek|qwen|mixtral)' "$OUT/issue3.log"
echo "done at $(($(date +%s) - START))s"
