#!/usr/bin/env bash
# Prepared for a device call (not yet run): fp8_block128's input quantized by the route + plan
# launch, in CTAs beside the routing one (wip/fused-xquant), so no planner runs before GEMM1 at
# up to 32 tokens. The planner added ~4 us to deepseek-v3's one-token prefix (perf-notes, "Third
# pass": 13.2 -> 17.4 us) and GEMM1's CTAs wait ~24 us at one token (stamps, "Fourth pass").
# Prediction: 2-4 us off deepseek-v3 fp8_block128 at 1, 8 and 32 tokens; other formats level.
# Prepare: for b in main wip/fused-xquant; do d=ab-${b##*/}; rm -rf $d; mkdir $d;
#   git archive $b | tar -x -C $d; done
# Run (carry [".deps"], timeout_s 600): bash bench/runs/next-fused-xquant.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export TREES="ab-main ab-fused-xquant"
export TEST_FILTER='RoutePlanCuda.*:PlanCuda.*:*Static*:MoECuda*' TEST_TIMEOUT=240
G1="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32 --routing uniform --path static"
G2="--preset qwen3-30b-a3b --quant bf16 --tokens 1,8 --routing uniform --path static"
export AB_GROUPS="$G1;$G2;$G1"
export BUDGET_S=${BUDGET_S:-560}
exec bash bench/runs/ab-trees.sh
