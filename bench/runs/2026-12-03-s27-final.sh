#!/usr/bin/env bash
# Session 27, the check of main with bf16's swap-AB tile (256 weight rows x 144 tokens, picked per
# run by choose_gemm_tile) and the 128x64 epilogue subtile of the bf16 128x256 tile:
#   1. scripts/gpu-check.sh with BENCH_SET=none: build, the whole GPU suite, CPU suite,
#      compute-sanitizer (OUT/check/)
#   2. issue 3's rows with their cuBLAS peers, 32 tokens checked against the CPU reference
#      (OUT/issue3.json, .log)
#   3. the per-run pick (auto) against the 128-row tile forced (SERVEKIT_GEMM_TILE=large), two
#      rounds, on the rows where the pick is the swap tile: qwen3-30b 2048, qwen3-235b 2048,
#      gpt-oss-120b 4096,8192, deepseek-v3 8192 (bf16)
# Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s27-final.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-565}
work_dir s27-final
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
grep -E '^(deepseek|qwen|mixtral)' "$OUT/issue3.log" | tee -a "$W/s27-final.txt"
ROWS=("q30 --preset qwen3-30b-a3b --tokens 2048"
  "q235 --preset qwen3-235b-a22b --tokens 2048"
  "oss --preset gpt-oss-120b --tokens 4096,8192"
  "ds --preset deepseek-v3 --tokens 8192")
for rep in 1 2; do
  for row in "${ROWS[@]}"; do
    read -r tag args <<<"$row"
    # shellcheck disable=SC2086
    bench_row "$tag-auto-$rep" -- $args --quant bf16 --routing uniform --path dynamic
    # shellcheck disable=SC2086
    bench_row "$tag-large-$rep" SERVEKIT_GEMM_TILE=large -- $args --quant bf16 --routing uniform \
      --path dynamic
  done
done
say "done"
