#!/usr/bin/env bash
# Device call 1 of 2026-12-01 s13: wip/weighted-sk (the cost-weighted stream-K partition, and
# the ring kernel's cut-units-first order) against main, in one call:
#   1. bench/runs/ab-trees.sh: both trees built, the static / MoE / route-plan GPU tests of both
#      (main's static_cta_start was not GPU-run yet), the A/B rows;
#   2. on the branch's build: SERVEKIT_STATIC_ROW_COST = 0 3 5 8 on deepseek-v3 fp8_block128
#      8 / 32 tokens (0 = the uniform partition), SERVEKIT_STATIC_CUT_FIRST=0 on qwen3-235b bf16,
#      and the CTA stamps (SERVEKIT_DIAG_STATIC_TIMES=1) of deepseek-v3 fp8 at 32 tokens.
# Prepare here:
#   for b in main wip/weighted-sk; do d=ab-${b##*/}; rm -rf $d; mkdir $d; git archive $b | tar -x -C $d; done
# Run (carry [".deps"]): bash bench/runs/2026-12-01-s13-weighted.sh
# Output: OUT/branches.tgz + OUT/summary.txt (ab-trees.sh), OUT/sweep.tgz + OUT/sweep.txt.
# (Switched to prelude.sh's bench_row after the call ran: the same commands.)
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, bench_row
BUDGET_S=${BUDGET_S:-560}
SK="--routing uniform --path static"
OUT=$OUT TREES="ab-main ab-weighted-sk" TEST_TREES="ab-main ab-weighted-sk" \
  TEST_FILTER='*Static*:MoECuda*:RoutePlanCuda.*' TEST_TIMEOUT=100 GROUP_TIMEOUT=60 \
  BUDGET_S=${AB_BUDGET_S:-430} \
  AB_GROUPS="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32 $SK;\
--preset kimi-k2 --quant int4_w4a16 --tokens 8,32 $SK;\
--preset qwen3-235b-a22b --quant bf16 --tokens 1,8,32 $SK;\
--preset deepseek-v3 --quant fp8_block128 --tokens 8,32 --routing skewed --path static;\
--preset qwen3-30b-a3b --quant bf16 --tokens 8,32 $SK" \
  bash bench/runs/ab-trees.sh >"$OUT/ab.log" 2>&1
work_dir sweep
BIN=ab-weighted-sk/build/servekit
SERVEKIT_COMMIT=weighted-sk
[[ -x $BIN ]] || { say "no branch build"; exit 1; }
for rc in 0 3 5 8; do
  bench_row "rc$rc" SERVEKIT_STATIC_ROW_COST=$rc -- --preset deepseek-v3 --quant fp8_block128 --tokens 8,32 $SK
done
bench_row align0 SERVEKIT_STATIC_ALIGN=0 -- --preset deepseek-v3 --quant fp8_block128 --tokens 1 $SK
bench_row align0b SERVEKIT_STATIC_ALIGN=0 -- --preset qwen3-235b-a22b --quant bf16 --tokens 1 $SK
bench_row cut0 SERVEKIT_STATIC_CUT_FIRST=0 -- --preset qwen3-235b-a22b --quant bf16 --tokens 1,8,32 $SK
bench_row stamps SERVEKIT_DIAG_STATIC_TIMES=1 -- --preset deepseek-v3 --quant fp8_block128 --tokens 32 $SK
grep -E "diag-times" "$W/stamps.log" >>"$W/sweep.txt" 2>/dev/null
cat "$W/sweep.txt"
