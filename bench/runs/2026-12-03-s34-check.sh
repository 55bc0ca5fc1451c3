#!/usr/bin/env bash
# Session 34, call 2: the check of main with the swap-AB tile's fused activation.
#   1. scripts/gpu-check.sh with BENCH_SET=none: build, the whole GPU suite, CPU suite,
#      compute-sanitizer (its files in the tarball, check/)
#   2. issue 3's rows with their cuBLAS peers, 32 tokens checked against the CPU reference
#      (OUT/issue3.json, .log)
# Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s34-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-575}
work_dir s34-check
OUT="$W/check" BENCH_SET=none BUDGET_S=380 BUILD_DIR=$B scripts/gpu-check.sh >"$W/check.log" 2>&1
say "check rc=$?"
cat "$W/check/summary.txt" >>"$W/$WORK_NAME.txt" 2>/dev/null
LEFT=$(left)
((LEFT > 60)) && timeout $((LEFT - 10)) "$B/servekit" bench moe \
  --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --then --preset mixtral-8x7b --quant bf16 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --then --preset deepseek-v3 --quant fp8_block128 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --then --preset deepseek-v3 --quant bf16 --tokens 8192 --routing uniform --check-tokens 32 \
  --max-seconds $((LEFT - 40)) --commit "${SERVEKIT_COMMIT:-unknown}" \
  --out "$OUT/issue3.json" >"$OUT/issue3.log" 2>&1
say "bench rc=$?"
grep -E '^(deepseek|qwen|mixtral)' "$OUT/issue3.log" | tee -a "$W/s34-check.txt"
say "done"
