#!/usr/bin/env bash
# Session 26, first device call: the check of main at 206a7b2 (the fused GEMM1 activation on by
# default since e562794, never through the whole suite and the peer rows together):
#   1. scripts/gpu-check.sh with BENCH_SET=none: build, the whole GPU suite, CPU suite,
#      compute-sanitizer (OUT/check/)
#   2. issue 3's rows with their cuBLAS peers, 32 tokens checked against the CPU reference
#      (OUT/issue3.json, .log)
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s26-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-585}
work_dir s26-check
OUT="$OUT/check" BENCH_SET=none BUDGET_S=380 BUILD_DIR=$B scripts/gpu-check.sh
say "check done"
LEFT=$(left)
((LEFT > 60)) && timeout $((LEFT - 10)) "$B/servekit" bench moe \
  --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --then --preset mixtral-8x7b --quant bf16 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --then --preset deepseek-v3 --quant fp8_block128 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --then --preset deepseek-v3 --quant bf16 --tokens 8192 --routing uniform --check-tokens 32 \
  --max-seconds $((LEFT - 40)) --commit "${SERVEKIT_COMMIT:-unknown}" \
  --out "$OUT/issue3.json" >"$OUT/issue3.log" 2>&1
say "bench rc=$?"
grep -E '^(deepseek|qwen|mixtral)' "$OUT/issue3.log" | tee -a "$W/s26-check.txt"
say "done"
