#!/usr/bin/env bash
# Prepared for the next device call (not yet run): the two branches of 2026-11-30 s4 that go
# after the one-token tails the CTA stamps found (docs/perf-notes.md, "Fourth pass"), against
# main, on one GPU:
#   wip/defer-fixup       a cut first unit's hand-over at the end of the CTA's range, with the
#                         last unit's (one fence, two concurrent atomics)
#   wip/route-plan-smem   the one-CTA route + plan reads its ids and the task list its offsets
#                         from shared copies
# Prepare here (untracked folders travel with the tree; the device's .git is stale):
#   for b in main wip/defer-fixup wip/route-plan-smem; do d=ab-${b##*/}; rm -rf $d; mkdir $d;
#     git archive $b | tar -x -C $d; done
# Run (carry [".deps"], timeout_s 600): bash bench/runs/2026-11-30-s5-tail-branches.sh
# Delete the ab-* folders afterwards. Merge a branch only if its GPU tests pass and its
# one-token rows are faster; then run the full scripts/gpu-check.sh on the merge.
set -uo pipefail
cd "$(dirname "$0")/../.."
export TREES=${TREES:-"ab-main ab-defer-fixup ab-route-plan-smem"}
export AB_GROUPS=${AB_GROUPS:-"--preset qwen3-30b-a3b --quant bf16 --tokens 1,8,32 --routing uniform --path static;\
--preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 1,8 --routing uniform --path static;\
--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8 --routing uniform --path static;\
--preset qwen3-235b-a22b --quant bf16 --tokens 1,8 --routing uniform --path static;\
--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 --routing uniform --path static"}
export BUDGET_S=${BUDGET_S:-570}
exec bash bench/runs/ab-trees.sh
