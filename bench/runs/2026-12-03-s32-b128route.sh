#!/usr/bin/env bash
# Session 32: fp8_block128's task list and input in the route + plan launch, now that the routing
# warp builds one token's tasks alone (thirty-first pass). Session 15 measured that move +3.0 /
# +3.7 / +1.6 us on deepseek-v3 at 1 / 8 / 32 tokens with the CTA-wide task build, unexplained.
# Switch: SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS = 0 (planner, default) / 1 (route + plan at one
# token) / 2 (up to 32 tokens). With the tasks in the route launch the shared W13 prefetch
# defaults off (its default follows where the tasks are built), so mode 2 runs with it forced
# on too. Stages: build; StaticFp8InputPreparation (modes 1 and 2 give the planner's bits), the
# route + plan, static and layer tests under mode 2 (every block128 static case through the route
# launch); rows deepseek-v3 fp8_block128 static at 1 / 8 / 32 tokens, modes 0 / 2 / 2 + prefetch,
# two rounds; stamps at one token, modes 0 and 2.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s32-b128route.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-560}
work_dir b128route
build_dev "$W/build.log"
say "build done"
T=$B/servekit_gpu_tests
timeout 120 "$T" --gtest_filter='MoECuda.StaticFp8InputPreparation' >"$W/test-prep.log" 2>&1
say "input-prep test rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/test-prep.log" | tr '\n' ' ')"
grep -E "Failure|Expected|Which is|SCOPED|Trace|ROUTE_TASKS" "$W/test-prep.log" | head -20 >>"$W/$WORK_NAME.txt"
SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS=2 timeout 200 "$T" \
  --gtest_filter='RoutePlanCuda.*:*StaticMoECuda*:MoECuda.*' >"$W/test-static.log" 2>&1
say "mode 2: route + plan, static and layer tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/test-static.log" | tr '\n' ' ')"
grep -E "^\[  FAILED" "$W/test-static.log" | head -20 >>"$W/$WORK_NAME.txt"
ROWS="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32 --routing uniform --path static"
for round in 1 2; do
  # shellcheck disable=SC2086
  bench_row "r$round-mode0" SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS=0 -- $ROWS
  # shellcheck disable=SC2086
  bench_row "r$round-mode2" SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS=2 -- $ROWS
  # shellcheck disable=SC2086
  bench_row "r$round-mode2-pf" SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS=2 SERVEKIT_STATIC_SHARED_PREFETCH=1 -- $ROWS
done
for m in 0 2; do
  bench_row "times-mode$m" SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS=$m SERVEKIT_DIAG_STATIC_TIMES=1 -- \
    --preset deepseek-v3 --quant fp8_block128 --tokens 1 --routing uniform --path static
  grep -E "diag-times" "$W/times-mode$m.log" | sed "s/^/mode$m /" >>"$W/$WORK_NAME.txt"
done
say "done"
