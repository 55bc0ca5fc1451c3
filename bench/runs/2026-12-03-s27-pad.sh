#!/usr/bin/env bash
# Session 27, call 1: what tile padding costs qwen3-30b and whether the swap-AB tile recovers it.
# Two builds in parallel (8 jobs each): build-dev at the tree as carried (the head, with the bf16
# 128x64 epilogue subtile as default) and build-swap, a copy of the tree with
# bench/runs/bf16-swap-ab.patch applied (SERVEKIT_GEMM_TILE=small picks the 128 x 144 swap-AB tile).
#   1. uniform vs balanced routing (every expert T*K/E rows +-1: no padding) on qwen3-30b bf16 2048,
#      8192 and mixtral 2048, two rounds (bench/runs/next-balanced.sh's rows)
#   2. the swap tile against the CPU reference (GroupedGemmCuda.BF16SmallM, .BF16)
#   3. swap (pass) / 128x256 fused / 128x256 pass, qwen3-30b 2048,8192 two rounds, mixtral 2048 one
#   4. with what is left: the layer tests under SERVEKIT_GEMM_TILE=small on the swap build
# Device (carry [".deps"], ~9 min): bash bench/runs/2026-12-03-s27-pad.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-550}
work_dir s27-pad
SW=/tmp/swap-tree
copy_tree "$SW" bench/runs/bf16-swap-ab.patch
(cd "$SW" && env JOBS=8 BUILD_DIR=build-swap SERVEKIT_WERROR=OFF scripts/build.sh >"$W/build-swap.log" 2>&1;
  echo $? >"$W/build-swap.rc") &
env JOBS=8 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
say "build-dev done"
wait
say "build-swap rc=$(cat "$W/build-swap.rc")"
SWB=$SW/build-swap/servekit
for rep in 1 2; do
  for r in uniform balanced; do
    bench_row "q30-$r-$rep" -- --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192 --routing $r \
      --path dynamic
  done
done
for r in uniform balanced; do
  bench_row "mix-$r" -- --preset mixtral-8x7b --quant bf16 --tokens 2048 --routing $r --path dynamic
done
timeout 90 "$SW/build-swap/servekit_gpu_tests" \
  --gtest_filter='GroupedGemmCuda.BF16SmallM:GroupedGemmCuda.BF16' >"$W/tests-gemm.log" 2>&1
say "swap gemm tests rc=$? $(grep -E '^\[ +(OK|FAILED) +\]' "$W/tests-gemm.log" | tr '\n' ' ')"
for rep in 1 2; do
  BIN=$SWB bench_row "q30-swap-$rep" SERVEKIT_GEMM_TILE=small -- --preset qwen3-30b-a3b --quant bf16 \
    --tokens 2048,8192 --routing uniform --path dynamic
  BIN=$SWB bench_row "q30-large-$rep" SERVEKIT_GEMM_TILE=large -- --preset qwen3-30b-a3b --quant bf16 \
    --tokens 2048,8192 --routing uniform --path dynamic
done
BIN=$SWB bench_row "q30-largepass" SERVEKIT_GEMM_TILE=large SERVEKIT_DYNAMIC_FUSED_ACT=0 -- \
  --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192 --routing uniform --path dynamic
BIN=$SWB bench_row "mix-swap" SERVEKIT_GEMM_TILE=small -- --preset mixtral-8x7b --quant bf16 \
  --tokens 2048 --routing uniform --path dynamic
BIN=$SWB bench_row "mix-large" SERVEKIT_GEMM_TILE=large -- --preset mixtral-8x7b --quant bf16 \
  --tokens 2048 --routing uniform --path dynamic
t=$(($(left) - 10))
if ((t > 30)); then
  SERVEKIT_GEMM_TILE=small timeout $t "$SW/build-swap/servekit_gpu_tests" --gtest_filter='MoECuda.*' \
    >"$W/tests-layer.log" 2>&1
  say "swap layer tests rc=$? $(grep -cE '^\[       OK' "$W/tests-layer.log") ok, failed: $(grep -E '^\[  FAILED  \] [A-Z]' "$W/tests-layer.log" | tr '\n' ' ')"
fi
say "done"
