#!/usr/bin/env bash
# Session 35, call 5: bf16's ping-pong swap tile (qwen3-30b's GEMMs) with a 4x1 cluster, the token
# tile multicast to four weight tiles instead of two (-DSERVEKIT_DIAG_SWAP_PP_CLUSTER_M=4,
# gemm_tile_config.h), against main's 2x1. At 2048 tokens each expert's 144-token tile is read by
# its 12 (GEMM1) or 16 (GEMM2) weight tiles; four-CTA clusters fit fewer SMs (session 22: 120 of
# 132 for the fp8 tile), so this is a measurement before any default.
#   1. main (tests off) and the flagged tree (tests on) built in parallel, 8 jobs each
#   2. on the flagged build: the ping-pong swap tile's GEMM tests (weight tiles past N: I = 1408
#      pads 22 tiles to 24) and the layer's swap tests
#   3. qwen3-30b bf16 dynamic, uniform: 2048 two rounds, 8192 one round, main / flagged
# Device (carry [".deps"], ~4.5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s35-pp-cluster4.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, work_dir, bench_row, build_beside
BUDGET_S=${BUDGET_S:-280}
work_dir s35-pp-cluster4
build_beside c4 -DSERVEKIT_DIAG_SWAP_PP_CLUSTER_M=4
C4B=$FB
timeout 90 "$C4B/servekit_gpu_tests" \
  --gtest_filter='GroupedGemmCuda.BF16SwapPingpong*:GroupedGemmCuda.BF16FusedActivationOn64RowInterleave:MoECuda.SwapTileMatchesReference*' \
  >"$W/tests-c4.log" 2>&1
say "c4 tests rc=$? $(grep -cE '^\[ +OK \]' "$W/tests-c4.log") ok, $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests-c4.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure" "$W/tests-c4.log" | head -n 20 >>"$W/$WORK_NAME.txt"
Q="--preset qwen3-30b-a3b --quant bf16 --routing uniform --path dynamic"
for row in "t2048-1 2048" "t2048-2 2048" "t8192 8192"; do
  read -r tag t <<<"$row"
  # shellcheck disable=SC2086
  bench_row "$tag-main" -- $Q --tokens $t
  # shellcheck disable=SC2086
  BIN=$C4B/servekit bench_row "$tag-c4" -- $Q --tokens $t
done
say "done"
