#!/usr/bin/env bash
# SUPERSEDED, do not run: session 27 merged a different swap-AB tile (256x144 cooperative,
# grouped_gemm_bf16_swap.cu) and session 35 the ping-pong 128x144 one; this patch no longer applies.
# Prepared in session 26, never run (compiled for sm_90a on the CPU machine: the 64x144x16
# wgmma, 0 bytes of spill, 168 registers). Run bench/runs/next-balanced.sh first: if balanced
# routing is not much faster than uniform on qwen3-30b at 2048 tokens, padding is not the cost
# and this tile cannot help.
# The swap-AB bf16 tile (bench/runs/bf16-swap-ab.patch): D_gᵀ = W_g · X_gᵀ with a 128 (weights) x
# 144 (tokens) cooperative tile, cluster 2x1, in place of bf16's 64-row tile, so
# SERVEKIT_GEMM_TILE=small picks it. A group of 128 +- 11 rows (qwen3-30b at 2048 tokens) fills
# one 144-token tile instead of 1.5 128-row tiles on average (bench/tools/padding_sim.py: 1.47x
# -> 1.2x the rows); no fused activation on it (the layer runs the pass).
#   1. apply the patch, build; GroupedGemmCuda.BF16SmallM (the swap tile against the CPU
#      reference, N = 3712 with an odd number of 128-row weight tiles) and the layer tests under
#      SERVEKIT_GEMM_TILE=small (MoECuda.*; the tile-per-run test expects the 64-row tile and
#      fails by design under the patch)
#   2. rows, two rounds: qwen3-30b bf16 2048,8192 and mixtral 2048, SERVEKIT_GEMM_TILE=small
#      (swap, pass) / large (128x256, fused) / large with SERVEKIT_DYNAMIC_FUSED_ACT=0 (pass)
# Device (carry [".deps"], ~6 min): bash bench/runs/next-swap-ab.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-480}
work_dir next-swap-ab
git apply bench/runs/bf16-swap-ab.patch 2>/dev/null || patch -p1 <bench/runs/bf16-swap-ab.patch ||
  { say "patch does not apply"; exit 1; }
build_dev "$W/build.log"
say "build done"
timeout 120 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.BF16SmallM:GroupedGemmCuda.BF16' \
  >"$W/tests-gemm.log" 2>&1
say "gemm tests rc=$? $(grep -E '^\[ +(OK|FAILED) +\]' "$W/tests-gemm.log" | tr '\n' ' ')"
SERVEKIT_GEMM_TILE=small timeout 150 "$B/servekit_gpu_tests" --gtest_filter='MoECuda.*' \
  >"$W/tests-layer.log" 2>&1
say "layer tests (small = swap) rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests-layer.log" | tr '\n' ' ')"
ROWS=("q30 --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192"
  "mix --preset mixtral-8x7b --quant bf16 --tokens 2048")
for rep in 1 2; do
  for row in "${ROWS[@]}"; do
    read -r tag args <<<"$row"
    # shellcheck disable=SC2086
    bench_row "$tag-swap-$rep" SERVEKIT_GEMM_TILE=small -- $args --routing uniform --path dynamic
    # shellcheck disable=SC2086
    bench_row "$tag-large-$rep" SERVEKIT_GEMM_TILE=large -- $args --routing uniform --path dynamic
    # shellcheck disable=SC2086
    bench_row "$tag-largepass-$rep" SERVEKIT_GEMM_TILE=large SERVEKIT_DYNAMIC_FUSED_ACT=0 -- $args \
      --routing uniform --path dynamic
  done
done
say "done"
