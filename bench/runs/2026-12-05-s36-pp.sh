#!/usr/bin/env bash
# Session 36, call 1: session 35's two prepared qwen3-30b questions in one lease (same commands as
# bench/runs/next-pp-tilek.sh, then bench/runs/next-pp-profile.sh's ncu rows on main's build).
#   1. main (tests off) and the tree built with -DSERVEKIT_DIAG_SWAP_PP_TILE_K=128 (tests on), in
#      parallel; the flagged build's ping-pong swap tile GEMM tests and the layer's swap test
#   2. qwen3-30b bf16 dynamic, uniform: 2048 two rounds, 4096 and 8192 one round, main / k-step 128
#   3. ncu (clocks left alone) of the forward's two CUTLASS kernels: q30-pp (2048, default tile),
#      q30-coop (2048, SERVEKIT_GEMM_SWAP=cooperative), q30-8k (8192)
# Device (carry [".deps"], ~9.5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-05-s36-pp.sh
# Output: OUT/pp.txt, OUT/pp.tgz.
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-575}
work_dir pp
build_beside tk -DSERVEKIT_DIAG_SWAP_PP_TILE_K=128
TKB=$FB
gtest_run tk "$TKB" \
  'GroupedGemmCuda.BF16SwapPingpong*:GroupedGemmCuda.BF16FusedActivationOn64RowInterleave:MoECuda.SwapTileMatchesReference*' 90
Q="--preset qwen3-30b-a3b --quant bf16 --routing uniform --path dynamic"
for row in "t2048-1 2048" "t2048-2 2048" "t4096 4096" "t8192 8192"; do
  read -r tag t <<<"$row"
  # shellcheck disable=SC2086
  bench_row "$tag-main" -- $Q --tokens $t
  # shellcheck disable=SC2086
  BIN=$TKB/servekit bench_row "$tag-tk" -- $Q --tokens $t
done
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
SECTIONS+=" --section WarpStateStats --section LaunchStats --section Occupancy"
NCU="--page details --kernel-name regex:device_kernel --launch-count 2 $SECTIONS"
Q="--preset qwen3-30b-a3b --quant bf16 --path dynamic"  # gpu-profile.sh adds --routing uniform
profile_row q30-pp "$Q --tokens 2048" "$NCU"
profile_row q30-coop "$Q --tokens 2048" "$NCU" SERVEKIT_GEMM_SWAP=cooperative
profile_row q30-8k "$Q --tokens 8192" "$NCU"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv >>"$W/$WORK_NAME.txt" 2>&1
say "done"
