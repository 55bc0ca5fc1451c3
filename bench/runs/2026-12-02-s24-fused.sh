#!/usr/bin/env bash
# RAN in session 24 (39959c6): every fused run hung; docs/perf-notes.md, twenty-fourth pass.
# Session 24, first call: GEMM1's activation in the 128x256 tile's epilogue
# (kernels/gemm/sm90_act_epilogue.cuh, SERVEKIT_DYNAMIC_FUSED_ACT, default on).
#   1. build; the GEMM, row-kernel, fused-activation and token-count GPU tests (the last runs
#      the fused path at 2048 and 8192 tokens against the CPU reference; OUT/s24-fused/tests.log).
#      The whole suite runs in the next call's full check.
#   2. compute-sanitizer memcheck of fused runs: tiny preset at 512 tokens (~150 rows per group,
#      the 128-row tile), bf16 and fp8_block128, dynamic path
#   3. A/B, one binary, SERVEKIT_DYNAMIC_FUSED_ACT=0 (separate activation pass) vs 1, issue 3's
#      rows: qwen3-30b-a3b and mixtral-8x7b bf16 at 2048 and 8192 tokens, deepseek-v3
#      fp8_block128 at 2048 and 8192, deepseek-v3 bf16 at 8192 (two rounds as the budget allows)
# Device (carry [".deps"], ~9.5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s24-fused.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-585}
work_dir s24-fused
build_dev "$W/build.log"
say "build done"
TESTS='GroupedGemmCuda.*:MoEQuantCuda.*:MoECuda.FusedActivationMatchesThePass:MoECuda.TokenCounts'
timeout 200 "$B/servekit_gpu_tests" --gtest_filter="$TESTS" >"$W/tests.log" 2>&1
say "tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \]' "$W/tests.log" | head -20
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 90 "$SAN" --tool memcheck --error-exitcode 1 "$B/servekit" bench moe --preset tiny \
  --quant bf16,fp8_block128 --tokens 512 --routing uniform --path dynamic --repeats 2 --warmup 1 \
  --check-tokens 8 --threads 4 --peer off >"$W/memcheck-fused.log" 2>&1
say "memcheck fused rc=$? $(grep -E 'ERROR SUMMARY' "$W/memcheck-fused.log" | tr '\n' ' ')"
ROWS=("q30 --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192"
  "mix --preset mixtral-8x7b --quant bf16 --tokens 2048,8192"
  "dsf8 --preset deepseek-v3 --quant fp8_block128 --tokens 2048,8192"
  "dsbf --preset deepseek-v3 --quant bf16 --tokens 8192")
for round in 1 2; do
  for row in "${ROWS[@]}"; do
    read -r tag args <<<"$row"
    for m in 0 1; do
      # shellcheck disable=SC2086
      bench_row "r$round-$tag-f$m" SERVEKIT_DYNAMIC_FUSED_ACT=$m -- $args --routing uniform \
        --path dynamic
    done
  done
done
say "done"
