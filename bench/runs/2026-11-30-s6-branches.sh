#!/usr/bin/env bash
# Ran in session 6 (results: bench/results/h200/ab/2026-11-30-s6-branches-*): wip/fused-xquant, wip/task-token and the two
# together (wip/xquant-token) against main in ONE device call, instead of one call per
# branch (one startup and one build step fewer). The GPU
# tests run on the combined tree only (it holds both changes).
# Prepare: for b in main wip/fused-xquant wip/task-token wip/xquant-token; do d=ab-${b##*/};
#   rm -rf $d; mkdir $d; git archive $b | tar -x -C $d; done
# Run (carry [".deps"], timeout_s 600): bash bench/runs/2026-11-30-s6-branches.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export TREES="ab-main ab-fused-xquant ab-task-token ab-xquant-token"
export TEST_TREES="ab-xquant-token"
export TEST_FILTER='RoutePlanCuda.*:PlanCuda.*:*Static*:MoECuda*' TEST_TIMEOUT=200
G1="--preset qwen3-30b-a3b --quant bf16 --tokens 1,8 --routing uniform --path static"
G2="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32 --routing uniform --path static"
G3="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8 --routing uniform --path static"
export AB_GROUPS="$G1;$G2;$G3;$G1"
export BUDGET_S=${BUDGET_S:-570}
exec bash bench/runs/ab-trees.sh
