#!/usr/bin/env bash
# Session 16's A/B (bench/results/h200/ab/2026-12-01-s16-acq-*): main (38c1a65) against the
# acq_rel hand-overs (wip/acqrel, 92c7b44), the split routing for every method (wip/split-route,
# 5dcacc7) and both (wip/both, 8e9b1c0), GPU tests on the tree with both.
# The branches lived for that session only; their changes are on main as 34d90b1 and 845fccf
# (the split restricted to the biased methods there). To repeat with other trees, prepare here
#   for b in main wip/x; do d=ab-${b##*/}; rm -rf $d; mkdir $d; git archive $b | tar -x -C $d; done
# and run on the device (carry [".deps"], ~7 min for four trees); delete ab-* afterwards.
set -uo pipefail
cd "$(dirname "$0")/../.."
SK="--routing uniform --path static"
TREES=${TREES:-"ab-main ab-acqrel ab-split-route ab-both"} TEST_TREES=${TEST_TREES:-ab-both} \
  TEST_FILTER='RoutingCuda.*:PlanCuda.*:RoutePlanCuda.*:*Static*:MoECuda*' TEST_TIMEOUT=200 \
  BUDGET_S=575 AB_GROUPS="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32 $SK;\
--preset qwen3-235b-a22b --quant bf16 --tokens 1,8,32 $SK;--preset kimi-k2 --quant int4_w4a16 --tokens 1,8 $SK;\
--preset qwen3-30b-a3b --quant bf16 --tokens 1,8,32 $SK" bash bench/runs/ab-trees.sh
