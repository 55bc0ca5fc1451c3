#!/usr/bin/env bash
# 2026-11-30 s5, second call: main against wip/fast-act alone, the dynamic rows repeated and
# interleaved (the first call's mixtral rows moved 4-6% between trees whose dynamic code was
# identical), plus the activation pass's own GPU test on wip/fast-act.
# Prepare: for b in main wip/fast-act; do d=ab-${b##*/}; rm -rf $d; mkdir $d;
#   git archive $b | tar -x -C $d; done
# Run (carry [".deps"]): bash bench/runs/2026-11-30-s5-fast-act-repeat.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export TREES="ab-main ab-fast-act"
export TEST_FILTER='MoEQuantCuda.*:MoECuda.NaN*' TEST_TIMEOUT=60
G1="--preset mixtral-8x7b --quant bf16 --tokens 2048 --routing uniform --path dynamic"
G2="--preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192 --routing uniform --path dynamic"
export AB_GROUPS="$G1;$G2;$G1;$G2;$G1"
export BUDGET_S=${BUDGET_S:-300}
exec bash bench/runs/ab-trees.sh
