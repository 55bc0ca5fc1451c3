#!/usr/bin/env bash
# RAN in session 23 (3254f56): docs/perf-notes.md, twenty-third pass.
# Session 23, the check of fp8_block128's 128x256 tile (sm90_blockwise_halves.cuh) as the
# compiled tile, in one device call:
#   1. scripts/gpu-check.sh with BENCH_SET=none: build, the whole GPU suite, CPU suite,
#      compute-sanitizer (OUT/check/)
#   2. issue 3's rows with their cuBLAS peers, 32 tokens checked against the CPU reference
#      (OUT/issue3.json, .log)
#   3. the 64-row/128-row tile crossover of deepseek-v3 fp8_block128 re-measured against the new
#      128-row tile (it was measured against 128x128: 26 rows per group, gemm_tile_config.h):
#      512, 768, 1024, 1536 tokens (17, 26, 35, 53 rows per group), SERVEKIT_GEMM_TILE=small
#      vs large (OUT/s23-check/)
#   4. where qwen3-30b-a3b bf16's time goes at 2048 and 8192 tokens: the forward cut after each
#      pass (SERVEKIT_DIAG_DYNAMIC_STOP=0..5, OUT/s23-check/)
# Device (carry [".deps"], ~9.5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s23-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-585}
work_dir s23-check
OUT="$OUT/check" BENCH_SET=none BUDGET_S=380 BUILD_DIR=$B scripts/gpu-check.sh
say "check done"
LEFT=$(left)
((LEFT > 60)) && timeout $((LEFT - 110)) "$B/servekit" bench moe \
  --preset deepseek-v3 --quant fp8_block128 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --then --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --then --preset mixtral-8x7b --quant bf16 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --then --preset deepseek-v3 --quant bf16 --tokens 8192 --routing uniform --check-tokens 32 \
  --max-seconds $((LEFT - 150)) --commit "${SERVEKIT_COMMIT:-unknown}" \
  --out "$OUT/issue3.json" >"$OUT/issue3.log" 2>&1
say "bench rc=$?"
grep -E '^(deepseek|qwen|mixtral)' "$OUT/issue3.log"
DS="--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic"
for t in small large; do
  # shellcheck disable=SC2086
  bench_row "ds-$t" SERVEKIT_GEMM_TILE=$t -- $DS --tokens 512,768,1024,1536
done
for stop in 0 1 2 3 4 5; do
  bench_row "q30-stop$stop" SERVEKIT_DIAG_DYNAMIC_STOP=$stop -- --preset qwen3-30b-a3b --quant bf16 \
    --routing uniform --path dynamic --tokens 2048,8192
done
say "done"
