#!/usr/bin/env bash
# Prepared in session 17 (compile-checked for sm_90a; not GPU-run): does GEMM1 (or the planner),
# launched at the start of the one-CTA route + plan kernel and resident while it routes, slow the
# routing down? Session 17's prefix stamps put entry -> routed at 10.0 us for kimi-k2 and 4.1-4.4
# us for the qwen3 presets at one token inside the layer, where the routing alone (graph-timed,
# SERVEKIT_DIAG_STATIC_STOP, session 15) left less. SERVEKIT_DIAG_ROUTE_LATE_TRIGGER=1 moves
# the route + plan kernel's pdl_trigger from its start to the end of its routing (docs/static_moe.md).
# Prediction: if the resident CTAs cost the routing time, entry -> routed shrinks by up to a few us
# and the layer gains that minus whatever of GEMM1's launch the plan + tasks (3.6-7.6 us) no longer
# hide; if not, the rows are level or a little slower.
# 0. Here: git apply bench/runs/late-trigger.patch (uncommitted: the device copies the tree;
#    compile-checked for sm_90a, CPU suite 388/388 with it; the switch's docs/static_moe.md lines
#    are in the patch). Merge the patch if its tests pass, whatever the rows say (off by default).
# Run (carry [".deps"]): SERVEKIT_COMMIT=<sha>+late bash bench/runs/next-late-trigger.sh (~5 min)
#   1. build; the route-plan and static GPU tests with the switch on (the late trigger runs there);
#   2. rows with the switch off / on, interleaved, two rounds, and the prefix stamps of both.
# Output: OUT/late.tgz, OUT/late.txt.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
grep -q late_trigger src/cuda/plan.cu || { echo "apply bench/runs/late-trigger.patch first"; exit 1; }
BUDGET_S=${BUDGET_S:-420}
work_dir late
build_dev "$W/build.log"
say "build done"
SERVEKIT_DIAG_ROUTE_LATE_TRIGGER=1 timeout 150 $B/servekit_gpu_tests \
  --gtest_filter='RoutePlanCuda.*:*Static*' >"$W/tests.log" 2>&1
say "tests (late trigger) rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/tests.log" | tr '\n' ' ')"
SK="--routing uniform --path static --tokens 1,8"
PRESETS=("kimi-k2 int4_w4a16" "qwen3-235b-a22b bf16" "qwen3-30b-a3b bf16" "deepseek-v3 fp8_block128")
for round in 1 2; do
  for pq in "${PRESETS[@]}"; do
    read -r pr q <<<"$pq"
    for late in 0 1; do
      bench_row "r$round-$pr-late$late" SERVEKIT_DIAG_ROUTE_LATE_TRIGGER=$late -- --preset "$pr" --quant "$q" $SK
    done
  done
done
for pq in "${PRESETS[@]:0:3}"; do
  read -r pr q <<<"$pq"
  for late in 0 1; do
    bench_row "stamps-$pr-late$late" SERVEKIT_DIAG_ROUTE_LATE_TRIGGER=$late SERVEKIT_DIAG_STATIC_TIMES=1 \
      -- --preset "$pr" --quant "$q" $SK
    grep -E "diag-times (route|planner)" "$W/stamps-$pr-late$late.log" | sed "s/^/$pr late$late /" >>"$W/late.txt"
  done
done
cat "$W/late.txt"
