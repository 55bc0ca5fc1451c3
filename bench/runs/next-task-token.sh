#!/usr/bin/env bash
# Prepared for a device call (not yet run): every static task carries its first row's token
# (wip/task-token, StaticTask::token0), so GEMM1 stages a one-row task (the decode case) with one
# dependent L2 round trip (task -> x) instead of two (task -> row_token -> x), at every unit of
# every CTA: right after the dependency release (all CTAs) and at each unit boundary (the CTAs
# with two units finish their k-loops 3-5 us later at one token, perf-notes "Fourth pass").
# Prediction: 1-2 us off the one-token rows, up to ~1% at 8 tokens; level where tasks have more
# rows. The route + plan launch reads one row_token per task more (one round trip, unloaded).
# Prepare: for b in main wip/task-token; do d=ab-${b##*/}; rm -rf $d; mkdir $d;
#   git archive $b | tar -x -C $d; done
# Run (carry [".deps"], timeout_s 600): bash bench/runs/next-task-token.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export TREES="ab-main ab-task-token"
export TEST_FILTER='RoutePlanCuda.*:PlanCuda.*:*Static*' TEST_TIMEOUT=150
G1="--preset qwen3-30b-a3b --quant bf16 --tokens 1,8,32 --routing uniform --path static"
G2="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8 --routing uniform --path static"
G3="--preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 1,8 --routing uniform --path static"
G4="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 --routing uniform --path static"
export AB_GROUPS="$G1;$G2;$G3;$G1;$G4"
export BUDGET_S=${BUDGET_S:-560}
exec bash bench/runs/ab-trees.sh
