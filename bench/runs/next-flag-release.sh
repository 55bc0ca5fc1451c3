#!/usr/bin/env bash
# Prepared in session 31; run in session 32 at f571d85+flag (ab/2026-12-03-s32-flag): correct,
# 0.2-1.0 us slower, not merged (docs/perf-notes.md, thirty-second pass).
# The flag release (bench/runs/flag-release.patch; docs/perf-notes.md, thirty-first pass, Next 1):
# GEMM1 waits for the route + plan launch's CTAs to publish their writes (a counter with
# release / acquire semantics) instead of that grid's completion, 1.3-1.8 us after its last
# stamp. Stages: apply the patch; build; the new GPU test first (a hang there is a flag bug:
# 120 s cap), then the route + plan, static and layer tests; rows at 1 / 8 / 32 tokens, static
# path, SERVEKIT_STATIC_FLAG_RELEASE=0 / 1, two rounds; the stamps of qwen3-235b int4 at one token
# both ways; memcheck of the new test. One text file and one tarball come back.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha>+flag bash bench/runs/next-flag-release.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-560}
work_dir flag-release
patch -p1 <bench/runs/flag-release.patch >"$W/patch.log" 2>&1 || { say "patch failed"; exit 1; }
build_dev "$W/build.log"
say "build done"
T=$B/servekit_gpu_tests
timeout 120 "$T" --gtest_filter='MoECuda.StaticFlagReleaseGivesTheSameBits' >"$W/test-flag.log" 2>&1
say "flag test rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/test-flag.log" | tr '\n' ' ')"
grep -E "Failure|Expected|Which is|SCOPED|Trace|replay|eager" "$W/test-flag.log" | head -20 >>"$W/$WORK_NAME.txt"
timeout 200 "$T" --gtest_filter='RoutePlanCuda.*:*StaticMoECuda*:MoECuda.*' >"$W/test-static.log" 2>&1
say "route + plan, static and layer tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/test-static.log" | tr '\n' ' ')"
grep -E "^\[  FAILED" "$W/test-static.log" | head -20 >>"$W/$WORK_NAME.txt"
SK="--routing uniform --path static"
ROWS="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8,32 $SK --then --preset gpt-oss-120b
  --quant mxfp4_w4a16 --tokens 1,8 $SK --then --preset qwen3-30b-a3b --quant bf16 --tokens 1,8 $SK
  --then --preset qwen3-235b-a22b --quant bf16 --tokens 1,8 $SK"
for round in 1 2; do
  for v in 0 1; do
    # shellcheck disable=SC2086
    bench_row "r$round-flag$v" SERVEKIT_STATIC_FLAG_RELEASE=$v -- $ROWS
  done
done
for v in 0 1; do
  # shellcheck disable=SC2086
  bench_row "kimi-flag$v" SERVEKIT_STATIC_FLAG_RELEASE=$v -- --preset kimi-k2 --quant int4_w4a16 \
    --tokens 1,8 $SK
done
for v in 0 1; do
  # shellcheck disable=SC2086
  bench_row "times-flag$v" SERVEKIT_STATIC_FLAG_RELEASE=$v SERVEKIT_DIAG_STATIC_TIMES=1 -- \
    --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1 $SK
  grep -E "diag-times" "$W/times-flag$v.log" | sed "s/^/flag$v /" >>"$W/$WORK_NAME.txt"
done
t=$(($(left) - 10))
if ((t > 30)); then
  ((t > 120)) && t=120
  timeout --kill-after=5 $t compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$T" --gtest_filter='MoECuda.StaticFlagReleaseGivesTheSameBits' >"$W/memcheck.log" 2>&1
  say "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/memcheck.log")"
fi
say "done"
