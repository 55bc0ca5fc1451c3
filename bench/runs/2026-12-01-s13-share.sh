#!/usr/bin/env bash
# Device call 5 of 2026-12-01 s13 (the branch was dropped after it, slower; its change is
# described in docs/perf-notes.md, thirteenth pass): wip/slot-share (the upper half of the grid gets upper_share
# percent of a lower CTA's work, since each SM's schedulers favour the lower-numbered of its two
# CTAs; 4-bit row cost 8) against main, in one call:
#   1. bench/runs/ab-trees.sh: both trees built, the branch's static / MoE / route-plan GPU
#      tests, the A/B rows (4-bit and fp8 at 8 / 32 tokens);
#   2. on the branch's build: SERVEKIT_STATIC_UPPER_SHARE = 100 / 85 / 95 on kimi-k2 int4 at 32 tokens,
#      95 on qwen3-235b bf16 (default 100 there), and the per-CTA stamps of kimi-k2 at 32.
# Prepare here:
#   for b in main wip/slot-share; do d=ab-${b##*/}; rm -rf $d; mkdir $d; git archive $b | tar -x -C $d; done
# Run (carry [".deps"]): bash bench/runs/2026-12-01-s13-share.sh
# Output: OUT/branches.tgz + OUT/summary.txt (ab-trees.sh), OUT/sweep.tgz + OUT/sweep.txt.
# (Switched to prelude.sh's bench_row after the call ran: the same commands.)
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, bench_row
BUDGET_S=${BUDGET_S:-560}
SK="--routing uniform --path static"
OUT=$OUT TREES="ab-main ab-slot-share" TEST_TREES="ab-slot-share" \
  TEST_FILTER='*Static*:MoECuda*:RoutePlanCuda.*' TEST_TIMEOUT=100 GROUP_TIMEOUT=60 \
  BUDGET_S=${AB_BUDGET_S:-330} \
  AB_GROUPS="--preset kimi-k2 --quant int4_w4a16 --tokens 8,32 $SK;\
--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8,32 $SK;\
--preset deepseek-v3 --quant fp8_block128 --tokens 8,32 $SK;\
--preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 8,32 $SK" \
  bash bench/runs/ab-trees.sh >"$OUT/ab.log" 2>&1
work_dir sweep
BIN=ab-slot-share/build/servekit
SERVEKIT_COMMIT=slot-share
[[ -x $BIN ]] || { say "no branch build"; exit 1; }
for sh in 100 85 95; do
  bench_row "kimi-sh$sh" SERVEKIT_STATIC_UPPER_SHARE=$sh -- --preset kimi-k2 --quant int4_w4a16 --tokens 32 $SK
done
bench_row q235-bf16-sh95 SERVEKIT_STATIC_UPPER_SHARE=95 -- --preset qwen3-235b-a22b --quant bf16 --tokens 8,32 $SK
bench_row stamps SERVEKIT_DIAG_STATIC_TIMES=2 -- --preset kimi-k2 --quant int4_w4a16 --tokens 32 $SK
grep -E "diag-times" "$W/stamps.log" >>"$W/sweep.txt" 2>/dev/null
cat "$W/sweep.txt"
