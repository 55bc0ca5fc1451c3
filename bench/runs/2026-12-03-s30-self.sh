#!/usr/bin/env bash
# RAN in session 30 at d9a2094 (ab/2026-12-03-s30-self, what came back: the rest was over the
# file-count limit): correct (GPU suite 139/139, memcheck clean), slower at one token; the code
# is now bench/runs/self-route.patch (apply it to run this again).
# Session 30, call 2: GEMM1 routes a one-token call itself (static_self_route.h). Stages: build;
# the new GPU test, then the static and layer GPU tests; rows, static path, self-route off / on
# (SERVEKIT_STATIC_SELF_ROUTE=0 / 1), two rounds, on the presets it reaches (qwen3-235b int4 and
# bf16, gpt-oss mxfp4, qwen3-30b bf16; kimi-k2 int4, DeepSeek-V3 routing with one group, the
# biased keys, one round); the stamps
# of qwen3-235b int4 at 1 token both ways; memcheck of the new test; then the whole GPU suite
# with what is left.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s30-self.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row
BUDGET_S=${BUDGET_S:-580}
WORK_NAME=s30-self
W=$OUT/$WORK_NAME  # straight into OUT: a cut call still brings back what ran
mkdir -p "$W"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv >"$W/gpu.txt" 2>&1
build_dev "$W/build.log"
grep -c "warning" "$W/build.log" | sed 's/^/build warnings: /' >>"$W/$WORK_NAME.txt"
say "build done"
T=$B/servekit_gpu_tests
timeout 120 "$T" --gtest_filter='MoECuda.StaticSelfRoutedGemm1' >"$W/test-self.log" 2>&1
say "self-route test rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/test-self.log" | tr '\n' ' ')"
grep -E "Failure|Expected|Which is|rel|SCOPED|Trace" "$W/test-self.log" | head -30 >>"$W/$WORK_NAME.txt"
timeout 200 "$T" --gtest_filter='*StaticMoECuda*:MoECuda.*:*RoutePlan*' >"$W/test-static.log" 2>&1
say "static + layer tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/test-static.log" | tr '\n' ' ')"
grep -E "^\[  FAILED" "$W/test-static.log" | head -20 >>"$W/$WORK_NAME.txt"
SK="--routing uniform --path static"
SMALL="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8 $SK --then --preset gpt-oss-120b
  --quant mxfp4_w4a16 --tokens 1,8 $SK --then --preset qwen3-30b-a3b --quant bf16 --tokens 1,8 $SK
  --then --preset qwen3-235b-a22b --quant bf16 --tokens 1 $SK"
for round in 1 2; do
  for v in 0 1; do
    # shellcheck disable=SC2086
    bench_row "r$round-self$v" SERVEKIT_STATIC_SELF_ROUTE=$v -- $SMALL
  done
done
for v in 0 1; do
  # shellcheck disable=SC2086
  bench_row "kimi-self$v" SERVEKIT_STATIC_SELF_ROUTE=$v -- \
    --preset kimi-k2 --quant int4_w4a16 --tokens 1,8 $SK
done
for v in 0 1; do
  # shellcheck disable=SC2086
  bench_row "times-self$v" SERVEKIT_STATIC_SELF_ROUTE=$v SERVEKIT_DIAG_STATIC_TIMES=1 -- \
    --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1 $SK
  grep -E "diag-times" "$W/times-self$v.log" | sed "s/^/self$v /" >>"$W/$WORK_NAME.txt"
done
t=$(($(left) - 10))
if ((t > 30)); then
  ((t > 90)) && t=90
  timeout --kill-after=5 $t compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$T" --gtest_filter='MoECuda.StaticSelfRoutedGemm1' >"$W/memcheck.log" 2>&1
  say "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/memcheck.log")"
fi
t=$(($(left) - 10))
if ((t > 60)); then
  timeout --kill-after=10 $t ctest --test-dir "$B" -L gpu --output-on-failure --timeout 120 \
    >"$W/tests.log" 2>&1
  say "gpu suite rc=$? $(grep -E 'tests passed|tests failed' "$W/tests.log")"
  grep -E "\(Failed\)|\(Timeout\)|\*\*\*Failed" "$W/tests.log" | head -20 >>"$W/$WORK_NAME.txt"
fi
say "done"
