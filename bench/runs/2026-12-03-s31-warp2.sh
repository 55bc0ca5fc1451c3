#!/usr/bin/env bash
# Session 31, call 3: the one-token plan and task build on the routing warp
# (one_cta_plan.cuh: one_token_plan_warp; SERVEKIT_DIAG_ROUTE_ONE_TOKEN_WARP=0 runs the CTA-wide
# passes), now with the partition tables written by the whole CTA and the other warps waiting
# (call 2, 2026-12-03-s31-warp.sh, had warp 0 write them too and the other warps exit at once:
# ~1.3 us slower). Stages: build; the route + plan tests, then the static and layer GPU tests;
# one-token rows, static path, switch 0 / 1, two rounds (kimi-k2 and deepseek-v3 one); the prefix
# stamps of qwen3-235b int4 both ways; memcheck of the route + plan test; the bf16 ring kernel's
# per-CTA stamps at 8 tokens. One text file and one tarball come back.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s31-warp2.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-560}
work_dir s31-warp2
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv >"$W/gpu.txt" 2>&1
build_dev "$W/build.log"
say "build done"
T=$B/servekit_gpu_tests
timeout 150 "$T" --gtest_filter='RoutePlanCuda.*' >"$W/test-route.log" 2>&1
say "route + plan tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/test-route.log" | tr '\n' ' ')"
grep -E "Failure|Expected|Which is|SCOPED|Trace|FAILED" "$W/test-route.log" | head -30 >>"$W/$WORK_NAME.txt"
timeout 200 "$T" --gtest_filter='*StaticMoECuda*:MoECuda.*' >"$W/test-static.log" 2>&1
say "static + layer tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/test-static.log" | tr '\n' ' ')"
grep -E "^\[  FAILED" "$W/test-static.log" | head -20 >>"$W/$WORK_NAME.txt"
SK="--routing uniform --path static"
SMALL="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1 $SK --then --preset gpt-oss-120b
  --quant mxfp4_w4a16 --tokens 1 $SK --then --preset qwen3-30b-a3b --quant bf16 --tokens 1 $SK
  --then --preset qwen3-235b-a22b --quant bf16 --tokens 1 $SK"
for round in 1 2; do
  for v in 0 1; do
    # shellcheck disable=SC2086
    bench_row "r$round-warp$v" SERVEKIT_DIAG_ROUTE_ONE_TOKEN_WARP=$v -- $SMALL
  done
done
for v in 0 1; do
  # shellcheck disable=SC2086
  bench_row "big-warp$v" SERVEKIT_DIAG_ROUTE_ONE_TOKEN_WARP=$v -- --preset kimi-k2 \
    --quant int4_w4a16 --tokens 1 $SK --then --preset deepseek-v3 --quant fp8_block128 --tokens 1,8 $SK
done
for v in 0 1; do
  # shellcheck disable=SC2086
  bench_row "times-warp$v" SERVEKIT_DIAG_ROUTE_ONE_TOKEN_WARP=$v SERVEKIT_DIAG_STATIC_TIMES=1 -- \
    --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1 $SK
  grep -E "diag-times" "$W/times-warp$v.log" | sed "s/^/warp$v /" >>"$W/$WORK_NAME.txt"
done
t=$(($(left) - 10))
if ((t > 30)); then
  ((t > 90)) && t=90
  timeout --kill-after=5 $t compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$T" --gtest_filter='RoutePlanCuda.OneCtaBuildsTheStaticTaskList' >"$W/memcheck.log" 2>&1
  say "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/memcheck.log")"
fi
# The bf16 ring kernel's per-CTA stamps at 8 tokens (SM ids: do the two CTAs of an SM finish
# apart, as the register-ring kernels' do? docs/perf-notes.md, thirteenth pass), for the notes.
bench_row "ring-cta-t8" SERVEKIT_DIAG_STATIC_TIMES=2 -- --preset qwen3-235b-a22b --quant bf16 \
  --tokens 8 $SK
say "done"
