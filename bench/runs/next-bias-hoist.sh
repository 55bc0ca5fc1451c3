#!/usr/bin/env bash
# Session 19: the split routing's bias load issued with the logit load (route_expert_row,
# src/cuda/kernels/routing/route_kernel.cuh). The per-instruction profile of the route + plan
# kernel at the finest sampling interval (bench/runs/next-carveout.sh, ncu-route-1: deepseek-v3,
# one token) put all of the split phase's long-scoreboard samples on two instructions: the
# first use of the logit and the first use of the bias. In the PTX the bias load came after the
# sigmoid, whose divide has an out-of-line slow path: two DRAM round trips one after the other.
# Now both loads come first (PTX: the two ld.global.f32 adjacent). Bit-identical by construction.
# Prediction: one cold round trip less, -0.5 to -1 us on the biased routers' rows (deepseek-v3,
# kimi-k2) at 1 and 8 tokens (the split runs up to 128 (token, 32-expert row) pairs); nothing else.
# 1. Here: bash bench/runs/next-bias-hoist.sh prepare   (trees ab-main = HEAD, ab-hoist = the
#    working tree's route_kernel.cuh; untracked)
# 2. Device (carry [".deps"], ~7 min): bash bench/runs/next-bias-hoist.sh
# 3. Delete the ab-* folders. Merge if the routing GPU tests pass and the rows are not slower.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
if [[ ${1:-} == prepare ]]; then
  for d in ab-main ab-hoist; do
    rm -rf "$d" && mkdir "$d" && git archive HEAD | tar -x -C "$d"
  done
  cp src/cuda/kernels/routing/route_kernel.cuh ab-hoist/src/cuda/kernels/routing/route_kernel.cuh
  exit 0
fi
[[ -d ab-main && -d ab-hoist ]] || { echo "run '$0 prepare' first, here"; exit 1; }
SK="--routing uniform --path static"
TREES="ab-main ab-hoist" TEST_TREES="ab-hoist" TEST_FILTER='RoutingCuda.*:RoutePlanCuda.*:PlanCuda.*' \
  TEST_TIMEOUT=100 BUDGET_S=${BUDGET_S:-420} AB_GROUPS="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 $SK;\
--preset kimi-k2 --quant int4_w4a16 --tokens 1,8 $SK;\
--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 $SK" \
  bash bench/runs/ab-trees.sh
