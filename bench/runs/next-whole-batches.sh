#!/usr/bin/env bash
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
# 1. Here: bash bench/runs/next-whole-batches.sh prepare   (trees ab-main, ab-whole: untracked)
# 2. Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> bash bench/runs/next-whole-batches.sh
# 3. Delete the ab-* folders afterwards. Merge the patch only with its GPU tests passed and the
#    4-bit rows faster; then the full check (gpu-check.sh BENCH_SET=issue4).
# Output: OUT/branches.tgz, OUT/summary.txt, OUT/dyn-trigger.{txt,tgz}.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
if [[ ${1:-} == prepare ]]; then
  for d in ab-main ab-whole; do
    rm -rf "$d" && mkdir "$d" && git archive HEAD | tar -x -C "$d"
  done
  git apply --directory=ab-whole bench/runs/whole-batches.patch || exit 1
  exit 0
fi
[[ -d ab-main && -d ab-whole ]] || { echo "run '$0 prepare' first, here"; exit 1; }
SK="--routing uniform --path static"
TREES="ab-main ab-whole" TEST_TREES="ab-whole" SASS=1 \
  SASS_FORMATS="int4_g128 mxfp4 fp8_block128" TEST_FILTER='*StaticMoECuda*:MoECuda.*' \
  TEST_TIMEOUT=150 BUDGET_S=${BUDGET_S:-460} AB_GROUPS="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8,32 $SK;\
--preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 1,8,32 $SK;\
--preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32 $SK;\
--preset kimi-k2 --quant int4_w4a16 --tokens 1,8,32 $SK;\
--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 128 --routing one --path static;\
--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8,32 $SK;\
--preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 1,8,32 $SK" \
  bash bench/runs/ab-trees.sh
# Then, on main's tree, the late route trigger on the dynamic path (perf-notes, eighteenth pass,
# Next 3): the same rows with SERVEKIT_DIAG_ROUTE_EARLY_TRIGGER=0 and =1, interleaved, into
# OUT/dyn-trigger.tgz (JSONs) and OUT/dyn-trigger.txt.
OUT=${OUT:-$PWD/out}
D=$(mktemp -d)
for round in 1 2; do
  for early in 0 1; do
    for pq in "qwen3-30b-a3b bf16" "deepseek-v3 fp8_block128"; do
      read -r pr q <<<"$pq"
      f="$D/r$round-$pr-early$early"
      SERVEKIT_DIAG_ROUTE_EARLY_TRIGGER=$early timeout 60 ab-main/build/servekit bench moe \
        --preset "$pr" --quant "$q" --tokens 1,8,32 --routing uniform --path dynamic --peer off \
        --check-tokens 1 --commit "ab-main-early$early" --out "$f.json" >"$f.log" 2>&1
      echo "r$round $pr early=$early rc=$? $(python3 -c "import json,sys; print(' '.join('%d:%.1f' % (r['tokens'], r['us']) for r in json.load(open(sys.argv[1]))['rows']))" "$f.json" 2>/dev/null)" |
        tee -a "$OUT/dyn-trigger.txt"
    done
  done
done
tar -czf "$OUT/dyn-trigger.tgz" -C "$D" .

