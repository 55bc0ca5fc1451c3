#!/usr/bin/env bash
# Ran in session 19 (ab/2026-12-02-s19-{whole,switches}-*): whole batches 2-6.5% slower on the
# 4-bit rows (dropped); the block128 switch level (not merged); the dynamic trigger A/B level.
# Prepared in session 18 (compile-checked for sm_90a, CPU suite 388/388 with it; not GPU-run):
# the register-ring k-loop's whole batches (bench/runs/whole-batches.patch; docs/perf-notes.md,
# eighteenth pass). When a batch's kDepth k-blocks are all computed (live tile, inside the unit's
# range) and all refilled (the next batch has kDepth k-blocks), the one-token-tile k-loop runs an
# unguarded copy of the batch: no per-slot compute guard (VIADD, 2 ISETP, PLOP3), no branch
# around each mma (BSSY / BRA / BSYNC, WARPSYNC + NOP) and unpredicated refills (StaticAlways).
# Other batches (a CTA's first, a unit's last when the next unit is short or absent) and the
# several-token-tile loop (kNts = 0: with it too, ptxas spilled 28-48 bytes on int4 g128) keep
# the guarded path. SERVEKIT_DIAG_STATIC_NO_WHOLE_BATCHES=1 turns it off (same bits: the new
# check in MatchesHostOnDequantizedWeights). ptxas: int4 g128 GEMM1 / GEMM2 4 / 8 and 8 / 12
# bytes of spills (main: none); mxfp4, fp8_block128, int4 g32 none.
# Prediction: ~7-9 of ~75 instructions per int4 k-block go; as with wip/issue-pred (7 fewer:
# -1.5% int4 at 32 tokens, -4.4% mxfp4 at 8) expect -1 to -4% on the 4-bit rows at 8 and 32
# tokens, less on fp8_block128 (more bytes per k-block), nothing at 1 token (GEMMs' ramp-bound)
# unless the spills sit in the loop (SASS=1: `zcat sass-ab-whole-int4_g128.txt.gz |
# bench/sass_loops.py` counts each loop's LDL / STL).
# Second, on the same tree and off unless set (bench/runs/block128-in-route.patch):
# SERVEKIT_DIAG_STATIC_BLOCK128_IN_ROUTE=1 builds fp8_block128's task list and quantizes x in the
# one-CTA route + plan launch (as every other format does) instead of launching its planner.
# Session 15 measured that +3 / +3.7 / +1.6 us on deepseek-v3 at 1 / 8 / 32 tokens, unexplained,
# with the start trigger (GEMM1's CTAs resident and loading beside the preparing CTAs). With the
# late trigger the preparing CTAs run before GEMM1 launches. Prediction: -2 to -4 us at 1 and 8
# tokens (the planner's task list and hand-over, ~6.7 us after the routing, less the task list's
# ~3 us inside the route + plan kernel); if still slower, the CTAs were not the reason.
# 1. Here: bash bench/runs/next-whole-batches.sh prepare   (trees ab-main, ab-whole: untracked)
# 2. Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> bash bench/runs/next-whole-batches.sh
# 3. Delete the ab-* folders afterwards. Merge whole-batches.patch only with its GPU tests passed
#    and the 4-bit rows faster; block128-in-route.patch if its switch wins (then as the default);
#    then the full check (gpu-check.sh BENCH_SET=issue4).
# Output: OUT/branches.tgz, OUT/summary.txt, OUT/switches.{txt,tgz}.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
if [[ ${1:-} == prepare ]]; then
  for d in ab-main ab-whole; do
    rm -rf "$d" && mkdir "$d" && git archive HEAD | tar -x -C "$d"
  done
  git apply --directory=ab-whole bench/runs/whole-batches.patch || exit 1
  git apply --directory=ab-whole bench/runs/block128-in-route.patch || exit 1
  exit 0
fi
[[ -d ab-main && -d ab-whole ]] || { echo "run '$0 prepare' first, here"; exit 1; }
SK="--routing uniform --path static"
TREES="ab-main ab-whole" TEST_TREES="ab-whole" SASS=1 \
  SASS_FORMATS="int4_g128 mxfp4 fp8_block128" TEST_FILTER='*StaticMoECuda*:MoECuda.*' \
  TEST_TIMEOUT=150 BUDGET_S=${BUDGET_S:-420} AB_GROUPS="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8,32 $SK;\
--preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 1,8,32 $SK;\
--preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32 $SK;\
--preset kimi-k2 --quant int4_w4a16 --tokens 1,8,32 $SK;\
--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 128 --routing one --path static" \
  bash bench/runs/ab-trees.sh
# Then two switches on ab-whole's build (both default off, so its rows above are main's prefix):
# the late route trigger on the dynamic path (perf-notes, eighteenth pass, Next 3:
# SERVEKIT_DIAG_ROUTE_EARLY_TRIGGER=0/1, qwen3-30b bf16, two rounds) and fp8_block128's task list
# and x quantization in the route + plan launch (bench/runs/block128-in-route.patch:
# SERVEKIT_DIAG_STATIC_BLOCK128_IN_ROUTE=0/1, deepseek-v3 static; with early=1 too, the dynamic
# rows of the same run give deepseek-v3's trigger A/B). Into OUT/switches.{txt,tgz}.
OUT=${OUT:-$PWD/out}
D=$(mktemp -d)
row() {  # TAG EARLY IN_ROUTE ARGS...
  local tag=$1 early=$2 inroute=$3
  shift 3
  SERVEKIT_DIAG_ROUTE_EARLY_TRIGGER=$early SERVEKIT_DIAG_STATIC_BLOCK128_IN_ROUTE=$inroute \
    timeout 90 ab-whole/build/servekit bench moe "$@" --routing uniform --peer off \
    --check-tokens 1 --commit "ab-whole-early$early-inroute$inroute" --out "$D/$tag.json" \
    >"$D/$tag.log" 2>&1
  echo "$tag rc=$? $(python3 -c "import json,sys; print(' '.join('%s/%d:%.1f' % (r['path'], r['tokens'], r['us']) for r in json.load(open(sys.argv[1]))['rows']))" "$D/$tag.json" 2>/dev/null)" |
    tee -a "$OUT/switches.txt"
}
for round in 1 2; do
  for early in 0 1; do
    row "r$round-qwen3-30b-dyn-early$early" $early 0 --preset qwen3-30b-a3b --quant bf16 \
      --tokens 1,8,32 --path dynamic
  done
done
row deepseek-both-base 0 0 --preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32 --path both
row deepseek-static-inroute 0 1 --preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32 \
  --path static
row deepseek-both-early 1 0 --preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32 --path both
tar -czf "$OUT/switches.tgz" -C "$D" .
