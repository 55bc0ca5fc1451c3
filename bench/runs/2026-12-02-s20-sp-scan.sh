#!/usr/bin/env bash
# Session 20, one device call for the two A/Bs prepared in session 19 (docs/perf-notes.md,
# nineteenth pass, Next): on a working tree with bench/runs/shared-prefetch.patch applied,
#   1. bench/runs/next-shared-prefetch.sh (build, static GPU tests, deepseek-v3 and kimi-k2 rows
#      under SERVEKIT_STATIC_SHARED_PREFETCH=0|1|2), then
#   2. bench/runs/group-scan.patch on the same tree, an incremental rebuild, the routing GPU
#      tests, and deepseek-v3 static rows at shared prefetch 0, to set against step 1's sp0 rows
#      (same lease, same binary but for the routing kernels), then the step-1 tree's rows again.
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha>+sp bash bench/runs/2026-12-02-s20-sp-scan.sh
# Output: OUT/shared-prefetch.{txt,tgz}, OUT/group-scan.{txt,tgz}.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
BUDGET_S=330 bash bench/runs/next-shared-prefetch.sh
source bench/runs/prelude.sh
START=$T0
BUDGET_S=570
work_dir group-scan
git apply bench/runs/group-scan.patch || { say "group-scan.patch does not apply"; exit 1; }
build_dev "$W/build.log"
say "build (+group scan) done"
timeout 60 "$B/servekit_gpu_tests" --gtest_filter='RoutingCuda.*:RoutePlanCuda.*:PlanCuda.*' \
  >"$W/tests.log" 2>&1
say "routing GPU tests rc=$? $(grep -E 'PASSED|FAILED' "$W/tests.log" | tr '\n' ' ')"
DS="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 --routing uniform --path static"
for round in 1 2; do
  # shellcheck disable=SC2086
  bench_row "r$round-deepseek-scan" SERVEKIT_STATIC_SHARED_PREFETCH=0 -- $DS
done
git apply -R bench/runs/group-scan.patch && build_dev "$W/build-back.log" && say "rebuilt without the scan"
# shellcheck disable=SC2086
bench_row "r3-deepseek-noscan" SERVEKIT_STATIC_SHARED_PREFETCH=0 -- $DS
# shellcheck disable=SC2086
git apply bench/runs/group-scan.patch && build_dev "$W/build-again.log" && bench_row "r3-deepseek-scan" SERVEKIT_STATIC_SHARED_PREFETCH=0 -- $DS
say "done"
