#!/usr/bin/env bash
# Ran in session 18 (ab/2026-12-02-s18-3ctas-*): 15-25% slower than main on every int4 row,
# both variants; dropped (docs/perf-notes.md, eighteenth pass). Kept as the record of the call.
# Prepared in session 17 (compile-checked for sm_90a, CPU suite 388/388 with it; not GPU-run):
# int4 with 128-column groups at three CTAs per SM (bench/runs/int4-3ctas.patch; docs/perf-notes.md,
# seventeenth pass): __launch_bounds__(256, 3), a 4-deep ring (8 at two CTAs), a 60 KB activation
# window (96), kStaticMaxCtasPerSm 3 for the workspace, and a step-major k-block for tasks of more
# than one token tile (the k-block-major one needs 16 A registers live). ptxas: 80 registers,
# GEMM1 106 / 180 bytes of spills, GEMM2 24 / 48 (main: 128 registers, none).
# Second tree (bench/runs/int4-3ctas-outlined.patch, the first plus this): static_finish_unit as a
# __noinline__ call for the three-CTA kernels, the accumulators by value. ptxas with the finish
# taken out has no spills at all, so the spills sit where the fix-up / epilogue / combine meet the
# ring's next batch; out of line: GEMM1 46 / 124 bytes (106 / 180 inline), GEMM2 64 / 108 (24 /
# 48), plus 8 / 16-20 in the called function. Which placement keeps the k-loop clean is for the
# SASS (SASS=1 brings it back; `zcat sass-<tree>-int4_g128.txt.gz | bench/sass_loops.py` prints
# each k-loop's HMMA / LDL / STL counts).
# Prediction: the 4-bit k-loop issues at ~56% with 4 warps per scheduler (fourteenth pass); 6 warps
# should hide more of its latency: up to -20% on the int4 rows at 8 and 32 tokens if the spills
# stay out of the one-token-tile loop, level or slower if they do not (SASS=1 counts the
# LDL / STL per kernel); the one-expert row (4 token tiles: the step-major path) may lose.
# Against it: bytes in flight per SM drop from 64 KB (16 warps x 8 x 512) to 48 KB (24 x 4 x 512),
# and the tenth pass's loads-only diagnostic (no decode, no mma) was already 1.61x the floor at 8
# tokens with ~40 instructions of bookkeeping per k-block, so the gain is bounded by the
# decode + mma share (198.8 -> 164.7 us there).
# 1. Here (the device's .git is stale, so the trees travel as untracked folders):
#      bash bench/runs/next-int4-3ctas.sh prepare
# 2. Device call (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha> bash bench/runs/next-int4-3ctas.sh
# 3. Delete the ab-* folders afterwards (`git add -A` would commit them). Merge the patch only
#    with its GPU tests passed and the int4 rows faster.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [[ ${1:-} == prepare ]]; then
  for d in ab-main ab-3ctas ab-3ctas-ol; do
    rm -rf "$d" && mkdir "$d" && git archive HEAD | tar -x -C "$d"
  done
  git apply --directory=ab-3ctas bench/runs/int4-3ctas.patch || exit 1
  git apply --directory=ab-3ctas-ol bench/runs/int4-3ctas-outlined.patch || exit 1
  exit 0
fi
[[ -d ab-main && -d ab-3ctas && -d ab-3ctas-ol ]] || { echo "run '$0 prepare' first, here"; exit 1; }
SK="--routing uniform --path static"
TREES="ab-main ab-3ctas ab-3ctas-ol" TEST_TREES="ab-3ctas ab-3ctas-ol" SASS=1 SASS_FORMATS=int4_g128 \
  TEST_FILTER='*StaticMoECuda*:MoECuda.*' TEST_TIMEOUT=150 \
  BUDGET_S=${BUDGET_S:-560} AB_GROUPS="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8,32 $SK;\
--preset kimi-k2 --quant int4_w4a16 --tokens 1,8,32 $SK;\
--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 128 --routing one --path static;\
--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8,32 $SK" \
  bash bench/runs/ab-trees.sh
