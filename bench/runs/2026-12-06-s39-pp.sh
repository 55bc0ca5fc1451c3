#!/usr/bin/env bash
# Session 39, call 2 (on the machine call 1 left warm, main's build in build/): session 36's
# prepared qwen3-30b questions (bench/runs/2026-12-05-s36-pp.sh, never run), with main taken from
# call 1's build instead of a second build of it:
#   1. the tree built with -DSERVEKIT_DIAG_SWAP_PP_TILE_K=128 (k-steps of 128 on the ping-pong
#      swap tile: 3 stages instead of 6), tests on, every core; its ping-pong swap GEMM tests and
#      the layer's swap test
#   2. qwen3-30b bf16 dynamic, uniform: 2048 two rounds, 4096 and 8192 one round, main / k-step 128
#   3. ncu (clocks left alone) of the forward's two CUTLASS kernels on main: q30-pp (2048),
#      q30-8k (8192), then q30-coop (2048, SERVEKIT_GEMM_SWAP=cooperative) if time is left
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-06-s39-pp.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-575}
B=build
work_dir pp-s39
FLAG=-DSERVEKIT_DIAG_SWAP_PP_TILE_K=128
copy_tree /tmp/tk-tree
(cd /tmp/tk-tree && env JOBS="$(nproc)" BUILD_DIR=build-tk SERVEKIT_WERROR=OFF scripts/build.sh \
  "-DCMAKE_CUDA_FLAGS=$FLAG" "-DCMAKE_CXX_FLAGS=$FLAG" >"$W/build-tk.log" 2>&1
  echo $? >"$W/build-tk.rc") &
[[ -x $B/servekit ]] || env JOBS=4 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh \
  -DSERVEKIT_TESTS=OFF >"$W/build.log" 2>&1 || { say "main build failed"; tail -n 20 "$W/build.log"; exit 1; }
wait
say "main $([[ -x $B/servekit ]] && echo ready), tk build rc=$(cat "$W/build-tk.rc")"
grep -E " error" "$W/build-tk.log" | head -n 10 >>"$W/$WORK_NAME.txt"
TKB=/tmp/tk-tree/build-tk
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
profile_row q30-8k "$Q --tokens 8192" "$NCU"
profile_row q30-coop "$Q --tokens 2048" "$NCU" SERVEKIT_GEMM_SWAP=cooperative
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv >>"$W/$WORK_NAME.txt" 2>&1
say done
