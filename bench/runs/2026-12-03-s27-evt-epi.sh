#!/usr/bin/env bash
# Session 27, call 4: two A/Bs in one pair of builds (they touch different formats).
#   base: the head.  ab: the head + bench/runs/fp8-group-alpha-evt.patch (fp8_per_tensor's
#   per-group alpha through our EVT leaf, no producer-warp handshakes) built with
#   -DSERVEKIT_DIAG_SWAP_EPI_N=48 (the bf16 swap-AB tile's epilogue in 128x48 subtiles, 6 a tile,
#   instead of the builder's 128x16, 18 a tile; ptxas on the CPU machine: 168 registers, 0 spill,
#   4 mainloop stages kept).
#   1. both builds in parallel (8 jobs each; ab in a copy of the tree)
#   2. on ab: the GEMM tests, the swap and fused-activation layer tests, the token counts, the
#      cuBLAS peer tests
#   3. rows, two rounds, base / ab: fp8_per_tensor qwen3-30b 2048,8192 and mixtral 2048; bf16 (the
#      swap tile) qwen3-30b 2048, qwen3-235b 2048, gpt-oss-120b 4096
# Device (carry [".deps"], ~6 min): bash bench/runs/2026-12-03-s27-evt-epi.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-440}
work_dir s27-evt-epi
AB=/tmp/ab-tree
copy_tree "$AB" bench/runs/fp8-group-alpha-evt.patch
(cd "$AB" && env JOBS=8 BUILD_DIR=build-ab SERVEKIT_WERROR=OFF scripts/build.sh \
  -DCMAKE_CUDA_FLAGS=-DSERVEKIT_DIAG_SWAP_EPI_N=48 >"$W/build-ab.log" 2>&1; echo $? >"$W/build-ab.rc") &
env JOBS=8 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
say "base build done"
wait
say "ab build rc=$(cat "$W/build-ab.rc")"
ABB=$AB/build-ab
timeout 130 "$ABB/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.*:MoECuda.SwapTileMatchesReference:MoECuda.FusedActivationMatchesThePass:MoECuda.TokenCounts:CublasPeer*' \
  >"$W/tests-ab.log" 2>&1
say "ab tests rc=$? $(grep -cE '^\[ +OK \]' "$W/tests-ab.log") ok, $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests-ab.log" | tr '\n' ' ')"
ROWS=("p30 --preset qwen3-30b-a3b --quant fp8_per_tensor --tokens 2048,8192"
  "pmix --preset mixtral-8x7b --quant fp8_per_tensor --tokens 2048"
  "q30 --preset qwen3-30b-a3b --quant bf16 --tokens 2048"
  "q235 --preset qwen3-235b-a22b --quant bf16 --tokens 2048"
  "oss --preset gpt-oss-120b --quant bf16 --tokens 4096")
for rep in 1 2; do
  for row in "${ROWS[@]}"; do
    read -r tag args <<<"$row"
    # shellcheck disable=SC2086
    bench_row "$tag-base-$rep" -- $args --routing uniform --path dynamic
    # shellcheck disable=SC2086
    BIN=$ABB/servekit bench_row "$tag-ab-$rep" -- $args --routing uniform --path dynamic
  done
done
say "done"
