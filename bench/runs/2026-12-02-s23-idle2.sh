#!/usr/bin/env bash
# RAN in session 23; the change lost and was reverted (bench/runs/fp8-idle-wg.patch keeps it).
# Session 23, second A/B of the idle warp group (the first, 2026-12-02-s23-idle.sh, measured the
# change 13% slower at 8192 tokens and level at 1024, where nearly every routed tile idles one
# warp group). Now one binary, SERVEKIT_DIAG_FP8_IDLE: 0 the new scale producer and the idle
# warp group (which now decides before the k-loop and leaves the loop as it was), 1 CUTLASS's
# scale producer and no idling (the tree before), 2 the new scale producer without idling.
#   1. build; GroupedGemmCuda.* and MoECuda.* under mode 0 (OUT/s23-idle2/tests.log)
#   2. deepseek-v3 fp8_block128 dynamic at 1024, 2048, 8192 tokens, modes 0 / 1 / 2, two rounds
# Device (carry [".deps"], ~5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s23-idle2.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-320}
work_dir s23-idle2
build_dev "$W/build.log"
say "build done"
timeout 60 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.*:MoECuda.*' >"$W/tests.log" 2>&1
say "GPU tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \]' "$W/tests.log" | head -20
DS="--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic"
for round in 1 2; do
  for m in 0 1 2; do
    # shellcheck disable=SC2086
    bench_row "r$round-m$m" SERVEKIT_DIAG_FP8_IDLE=$m -- $DS --tokens 1024,2048,8192
  done
done
say "done"
