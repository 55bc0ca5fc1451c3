#!/usr/bin/env bash
# Session 19: warp_top_k's slot loop not unrolled (src/cuda/kernels/routing/warp_topk.cuh).
# The fine-interval profile of the route + plan kernel (profiles/2026-12-02-s19-route-fine-*:
# deepseek-v3, one token) puts ~62% of its samples in the one routing warp's serial phase (the
# other 31 warps at the barrier) and most of that warp's own samples on no_inst: its ~950
# instructions run once each with the code cold. nvcc unrolled the runtime slot loop, one
# ~55-instruction copy per selected expert; with `#pragma unroll 1` the later slots run from the
# instruction cache. Bit-identical (the same operations in the same order).
# Prediction: -1 to -3 us on deepseek-v3 at 1 and 8 tokens if instruction fetch is the cost;
# qwen3-30b (softmax, E = 128) level or better.
# 1. Here: bash bench/runs/next-topk-roll.sh prepare   (ab-main = HEAD, ab-roll = the working
#    tree's warp_topk.cuh)
# 2. Device (carry [".deps"], ~2.5 min): bash bench/runs/next-topk-roll.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
if [[ ${1:-} == prepare ]]; then
  for d in ab-main ab-roll; do
    rm -rf "$d" && mkdir "$d" && git archive HEAD | tar -x -C "$d"
  done
  cp src/cuda/kernels/routing/warp_topk.cuh ab-roll/src/cuda/kernels/routing/warp_topk.cuh
  exit 0
fi
[[ -d ab-main && -d ab-roll ]] || { echo "run '$0 prepare' first, here"; exit 1; }
SK="--routing uniform --path static"
TREES="ab-main ab-roll" TEST_TREES="ab-roll" TEST_FILTER='RoutingCuda.*:RoutePlanCuda.*:PlanCuda.*' \
  TEST_TIMEOUT=20 GROUP_TIMEOUT=40 BUDGET_S=${BUDGET_S:-190} AB_GROUPS="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 $SK;\
--preset qwen3-30b-a3b --quant bf16 --tokens 1,8 $SK" \
  bash bench/runs/ab-trees.sh
