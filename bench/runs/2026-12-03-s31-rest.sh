#!/usr/bin/env bash
# Session 31, call 5: the GPU tests that call the route + plan kernel and that call 3 did not run
# on the final one-token path (AllFormats/MoECudaQuant: the layer in every format; CublasPeer),
# within what was left of the budget (the whole suite no longer fit after a refused start).
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s31-rest.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, say, left
BUDGET_S=${BUDGET_S:-200}
work_dir s31-rest
build_dev "$W/build.log"
say "build done"
timeout --kill-after=5 $(($(left) - 5)) "$B/servekit_gpu_tests" \
  --gtest_filter='AllFormats/MoECudaQuant*:CublasPeer*:PlanCuda*:RoutingCuda*' >"$W/tests.log" 2>&1
say "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED" "$W/tests.log" | head -20 >>"$W/$WORK_NAME.txt"
