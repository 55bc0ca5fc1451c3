#!/usr/bin/env bash
# Session 28, call 1: bf16 GEMM1 reading the token rows through the plan's row index with
# one-row TMA loads (sm90_row_gather.cuh, SERVEKIT_DYNAMIC_GEMM_GATHER=1, the default) against the
# gathered copy written by the gather kernel (=0); one build, the switch read at construction.
#   1. the TMA probe of session 27 (bench/tools/tma_rowgather.cu: do one-row loads land where a
#      box load puts them, and at what rate), beside the build
#   2. GPU tests: every GroupedGemmCuda test (BF16RowGather on the three bf16 tiles), the layer's
#      gather-against-copy test, swap / fused-activation / token-count layer tests
#   3. rows, two rounds, gather 1 / 0: qwen3-30b bf16 2048,8192, mixtral 2048, qwen3-235b 2048,
#      deepseek-v3 bf16 8192
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s28-gather.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-540}
work_dir s28-gather
(nvcc -O3 -arch=sm_90a -o "$W/tma_rowgather" bench/tools/tma_rowgather.cu >"$W/probe-build.log" 2>&1 &&
  timeout 90 "$W/tma_rowgather" >"$W/tma_rowgather.txt" 2>&1; echo $? >"$W/probe.rc") &
build_dev "$W/build.log"
say "build done"
wait
say "probe rc=$(cat "$W/probe.rc" 2>/dev/null)"
cat "$W/tma_rowgather.txt" 2>/dev/null | tee -a "$W/$WORK_NAME.txt"
timeout 170 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.*:MoECuda.GemmRowGatherMatchesTheCopy:MoECuda.SwapTileMatchesReference:MoECuda.FusedActivationMatchesThePass:MoECuda.TokenCounts' \
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
