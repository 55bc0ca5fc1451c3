#!/usr/bin/env bash
# 2026-11-30 s5, third call: mixtral 2048 three times with wip/fast-act run *before* main in each
# pair (the second call ran main first and mixtral's compute-bound rows drift upward within a
# pair), to tell the code from the order. Prepare as in 2026-11-30-s5-fast-act-repeat.sh.
# Run (carry [".deps"], timeout_s 200): bash bench/runs/2026-11-30-s5-fast-act-order.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
G="--preset mixtral-8x7b --quant bf16 --tokens 2048 --routing uniform --path dynamic"
TREES="ab-fast-act ab-main" TEST_FILTER='MoEQuantCuda.ActivationMatchesReference' TEST_TIMEOUT=30 \
  BUDGET_S=${BUDGET_S:-170} AB_GROUPS="$G;$G;$G" exec bash bench/runs/ab-trees.sh
