#!/usr/bin/env bash
# Session 26, last device call (carry [".deps"], ~7 min): the check of main with the epilogue
# fusion without loads (bf16 and fp8_block128; the staged fused store of the second call dropped):
#   1. scripts/gpu-check.sh with BENCH_SET=none: build, the whole GPU suite, CPU suite,
#      compute-sanitizer (OUT/check/)
#   2. issue 3's rows with their cuBLAS peers, 32 tokens checked against the CPU reference
#      (OUT/issue3.json, .log)
#   3. the fused activation against the pass at this head (two rounds): qwen3-30b bf16 2048,8192,
#      deepseek-v3 fp8_block128 8192; then qwen3-30b's forward cut after each pass (stop 0..5)
# Device: SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s26-final.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-560}
work_dir s26-final
OUT="$OUT/check" BENCH_SET=none BUDGET_S=360 BUILD_DIR=$B scripts/gpu-check.sh
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
grep -E '^(deepseek|qwen|mixtral)' "$OUT/issue3.log" | tee -a "$W/s26-final.txt"
ROWS=("q30 --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192"
  "dsf8 --preset deepseek-v3 --quant fp8_block128 --tokens 8192")
for row in "${ROWS[@]}"; do
  read -r tag args <<<"$row"
  for rep in 1 2; do
    # shellcheck disable=SC2086
    bench_row "$tag-fused-$rep" -- $args --routing uniform --path dynamic
    # shellcheck disable=SC2086
    bench_row "$tag-pass-$rep" SERVEKIT_DYNAMIC_FUSED_ACT=0 -- $args --routing uniform --path dynamic
  done
done
for stop in 0 1 2 3 4 5; do
  bench_row "q30-stop$stop" SERVEKIT_DIAG_DYNAMIC_STOP=$stop -- --preset qwen3-30b-a3b --quant bf16 \
    --routing uniform --path dynamic --tokens 2048,8192
done
say "done"
