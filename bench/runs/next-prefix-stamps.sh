#!/usr/bin/env bash
# Prepared in session 16 (compile-checked for sm_90a, CPU test StaticDiag.* 4/4; not GPU-run):
# global-timer stamps in CTA 0 of the prefix kernels, the one-CTA route + plan (entry, dependency
# released, routed, planned, tasks done) and the static planner (entry, released, tasks done),
# printed by SERVEKIT_DIAG_STATIC_TIMES next to the GEMMs' stamps, in us from GEMM1's release
# (bench/runs/prefix-stamps.patch: static_prefix_stamp, StaticTaskBuild / StaticPlanParams
# ::diag_prefix, static_diag_format's prefix lines). Purpose: docs/perf-notes.md, sixteenth pass,
# Next 1 -- which part of the 12-20 us one-token prefix is left after the split routing.
# 1. Here: git apply bench/runs/prefix-stamps.patch   (uncommitted: the device copies the tree)
# 2. Device (carry [".deps"], ~5 min): SERVEKIT_COMMIT=<sha>+stamps bash bench/runs/next-prefix-stamps.sh
#    builds, runs the static / route-plan GPU tests (the patch touches both kernels), then the
#    rows with the stamps (level 1) and without (level 0: the patch's cost when off, expected nil).
# 3. If the tests pass and the level-0 rows match main's: commit the patch (it is then GPU-tested);
#    else git checkout the files.
set -uo pipefail
cd "$(dirname "$0")/../.."
grep -q "static_prefix_stamp" src/cuda/kernels/static/static_device.cuh ||
  { echo "apply bench/runs/prefix-stamps.patch first"; exit 1; }
TIMES_GROUPS=${TIMES_GROUPS:-"--preset deepseek-v3 --quant fp8_block128 --tokens 1,8;\
--preset kimi-k2 --quant int4_w4a16 --tokens 1,8;\
--preset qwen3-235b-a22b --quant bf16 --tokens 1,8;\
--preset qwen3-30b-a3b --quant bf16 --tokens 1,8"} BUDGET_S=${BUDGET_S:-480} \
  bash bench/runs/2026-11-30-s4-times.sh
