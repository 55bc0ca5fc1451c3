#!/usr/bin/env bash
# Session 55, 2026-12-07-s55-order.sh's tests with no build on the device: six failed starts left
# too little device time for the ~140 s build, so the GPU test binary built on the CPU machine
# (sm_90a, nvcc 13.0, at 6edb452 with README and docs edits only after it) travels in carry
# (build-carry/servekit_gpu_tests, 48 MB; .deps is not needed):
#   1. MoECuda.ForwardsOnTwoStreamsAreOrdered;
#   2. its disabled twin with the order off, alone in its own process (it races on purpose);
#   3. the static and layer GPU tests, with what is left.
# Device (carry ["build-carry"]): BUDGET_S=<s> bash bench/runs/2026-12-07-s55-order-prebuilt.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-200}
B=build-carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
work_dir_out s55-order
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
gtest_run order "$B" 'MoECuda.ForwardsOnTwoStreamsAreOrdered' 120
timeout 90 "$B/servekit_gpu_tests" --gtest_also_run_disabled_tests \
  --gtest_filter='MoECuda.DISABLED_ForwardsOnTwoStreamsRaceUnordered' >"$W/tests-race.log" 2>&1
say "race (order off) rc=$? $(grep -hE '^unordered|^\[  (PASSED|FAILED) ' "$W/tests-race.log" | tr '\n' ' ')"
(($(left) > 30)) && gtest_run layer "$B" '*StaticMoECuda*:MoECuda*:MoELayer*:RoutePlanCuda.*' $(($(left) - 5))
say done
