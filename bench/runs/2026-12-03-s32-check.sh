#!/usr/bin/env bash
# Session 32, last call: the whole GPU suite at the new default (fp8_block128's tasks and input in
# the route + plan launch at one token), deepseek-v3 fp8_block128 static rows at 1 / 8 / 32
# tokens, new default against SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS=0 (the old default: planner,
# shared prefetch on), two rounds; memcheck of the input-preparation test; deepseek-v3 both
# paths at 1 / 8 / 32 tokens last (the cutover's view). One text file and one tarball come back.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s32-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-480}
work_dir s32-check
build_dev "$W/build.log"
say "build done"
timeout --kill-after=10 240 ctest --test-dir "$B" -L gpu --output-on-failure --timeout 120 \
  >"$W/ctest-gpu.log" 2>&1
say "whole GPU suite rc=$? $(grep -E 'tests passed|tests failed' "$W/ctest-gpu.log")"
grep -E "\(Failed\)|\*\*\*" "$W/ctest-gpu.log" | head -20 >>"$W/$WORK_NAME.txt"
ROWS="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32 --routing uniform --path static"
for round in 1 2; do
  # shellcheck disable=SC2086
  bench_row "r$round-new" -- $ROWS
  # shellcheck disable=SC2086
  bench_row "r$round-mode0" SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS=0 -- $ROWS
done
t=$(($(left) - 40))
if ((t > 30)); then
  ((t > 90)) && t=90
  timeout --kill-after=5 $t compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$B/servekit_gpu_tests" --gtest_filter='MoECuda.StaticFp8InputPreparation' >"$W/memcheck.log" 2>&1
  say "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/memcheck.log")"
fi
bench_row "both-paths" -- --preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32 \
  --routing uniform --path both
say "done"
