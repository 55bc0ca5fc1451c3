#!/usr/bin/env bash
# Session 28, call 2: the row gather by cp.async (sm90_row_gather.cuh after call 1's one-row TMA
# loads measured 27 ns a load: 3.9 us per 144-row k-step per SM, the layer 1.6-2x slower).
# SERVEKIT_DYNAMIC_GEMM_GATHER=1 (default) against =0 (the gather kernel's copy); one build.
#   1. GPU tests: every GroupedGemmCuda test (BF16RowGather on the three bf16 tiles, bit for bit
#      against the copy), the layer's gather-against-copy test, the unaligned-input errors, swap /
#      fused-activation / token-count / graph layer tests
#   2. rows, two rounds, gather 1 / 0: qwen3-30b bf16 2048,8192, mixtral 2048, qwen3-235b 2048,
#      deepseek-v3 bf16 8192
# Device (carry [".deps"], ~7 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s28-gather2.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-500}
work_dir s28-gather2
build_dev "$W/build.log"
say "build done"
grep -E "spill|warning" "$W/build.log" | head -5 | tee -a "$W/$WORK_NAME.txt"
timeout 180 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.*:MoECuda.GemmRowGatherMatchesTheCopy:MoECuda.RejectsUnalignedHiddenAndOut:MoECuda.SwapTileMatchesReference:MoECuda.FusedActivationMatchesThePass:MoECuda.TokenCounts:MoECuda.*Graph*' \
  >"$W/tests.log" 2>&1
say "tests rc=$? $(grep -cE '^\[ +OK \]' "$W/tests.log") ok, $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \]|Failure|error' "$W/tests.log" | head -20 | tee -a "$W/$WORK_NAME.txt"
ROWS=("q30 --preset qwen3-30b-a3b --tokens 2048,8192"
  "mix --preset mixtral-8x7b --tokens 2048"
  "q235 --preset qwen3-235b-a22b --tokens 2048"
  "ds --preset deepseek-v3 --tokens 8192")
for rep in 1 2; do
  for row in "${ROWS[@]}"; do
    read -r tag args <<<"$row"
    # shellcheck disable=SC2086
    bench_row "$tag-gather-$rep" SERVEKIT_DYNAMIC_GEMM_GATHER=1 -- $args --quant bf16 \
      --routing uniform --path dynamic
    # shellcheck disable=SC2086
    bench_row "$tag-copy-$rep" SERVEKIT_DYNAMIC_GEMM_GATHER=0 -- $args --quant bf16 \
      --routing uniform --path dynamic
  done
done
say "done"
