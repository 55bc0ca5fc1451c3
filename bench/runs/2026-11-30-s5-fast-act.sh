#!/usr/bin/env bash
# 2026-11-30 s5: A/B of two small changes against main, on one GPU, with the whole GPU suite run
# on the tree that has both:
#   wip/fast-act       the activation sigmoids with __expf / __fdividef (activation_math.cuh):
#                      the dynamic path's activation pass was ~40 us of qwen3-30b's 512 us at
#                      2048 tokens, with ~30 instructions per element
#   wip/combine-batch  (on wip/fast-act) the static fused combine issues 4 slots' loads together
# Prepare here: for b in main wip/fast-act wip/combine-batch; do d=ab-${b##*/}; rm -rf $d;
#   mkdir $d; git archive $b | tar -x -C $d; done
# Run (carry [".deps"], timeout_s 600): bash bench/runs/2026-11-30-s5-fast-act.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export TREES="ab-main ab-fast-act ab-combine-batch"
export TEST_TREES="ab-combine-batch" TEST_FILTER='*' TEST_TIMEOUT=200
export AB_GROUPS="--preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192 --routing uniform --path dynamic;\
--preset qwen3-30b-a3b --quant bf16 --tokens 1,8,32 --routing uniform --path static;\
--preset mixtral-8x7b --quant bf16 --tokens 2048,8192 --routing uniform --path dynamic;\
--preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 1,8 --routing uniform --path static;\
--preset qwen3-235b-a22b --quant bf16 --tokens 1,8 --routing uniform --path static;\
--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 --routing uniform --path static"
export BUDGET_S=${BUDGET_S:-560}
exec bash bench/runs/ab-trees.sh
