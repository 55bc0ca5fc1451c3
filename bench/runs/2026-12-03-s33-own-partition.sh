#!/usr/bin/env bash
# Session 33; ran at b336a7d (ab/2026-12-03-s33-own-partition): level, not merged, main reverted
# to the tables (docs/perf-notes.md, thirty-third pass); the change is bench/runs/own-partition.patch,
# which this script now applies. At one token the GEMMs partition their steps themselves (no tables written by the
# prefix; SERVEKIT_STATIC_ONE_TOKEN_TABLES=0) against the tables (1, the default): the stamps of
# ab/2026-12-03-s33-prefetch-stamps put ~2.3 us (5.4 with fp8_block128's shared prefetch running)
# between the plan warp's offsets and the prefix's last write, part of it the tables' code.
# Stages: build; the new test, then the route + plan, static and layer GPU tests; one-token rows,
# static path, tables 1 / 0, two rounds (deepseek-v3's second round with the stamps); memcheck of
# the new test. One text file and one tarball come back.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha>+own bash bench/runs/2026-12-03-s33-own-partition.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-560}
work_dir own-partition
if ! grep -q uniform_align src/cuda/kernels/static/static_params.h; then
  patch -p1 <bench/runs/own-partition.patch >"$W/patch.log" 2>&1 || { say "patch failed"; exit 1; }
fi
build_dev "$W/build.log"
say "build done"
T=$B/servekit_gpu_tests
timeout 120 "$T" --gtest_filter='MoECuda.StaticOneTokenPartitionWithoutTables' >"$W/test-new.log" 2>&1
say "new test rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/test-new.log" | tr '\n' ' ')"
grep -E "Failure|Expected|Which is|SCOPED|Trace|rel_l2" "$W/test-new.log" | head -20 >>"$W/$WORK_NAME.txt"
timeout 200 "$T" --gtest_filter='RoutePlanCuda.*:*StaticMoECuda*:MoECuda.*' >"$W/test-static.log" 2>&1
say "route + plan, static and layer tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/test-static.log" | tr '\n' ' ')"
grep -E "^\[  FAILED" "$W/test-static.log" | head -20 >>"$W/$WORK_NAME.txt"
SK="--tokens 1 --routing uniform --path static"
SMALL="--preset qwen3-235b-a22b --quant int4_w4a16,bf16 $SK --then --preset qwen3-30b-a3b --quant bf16
  $SK --then --preset gpt-oss-120b --quant mxfp4_w4a16 $SK"
for round in 1 2; do
  for v in 1 0; do
    # shellcheck disable=SC2086
    bench_row "r$round-small-tables$v" SERVEKIT_STATIC_ONE_TOKEN_TABLES=$v -- $SMALL
    stamps=""
    ((round == 2)) && stamps=SERVEKIT_DIAG_STATIC_TIMES=1
    # shellcheck disable=SC2086
    bench_row "r$round-ds-tables$v" SERVEKIT_STATIC_ONE_TOKEN_TABLES=$v $stamps -- \
      --preset deepseek-v3 --quant fp8_block128 $SK
    grep -E "diag-times" "$W/r$round-ds-tables$v.log" | sed "s/^/r$round-ds-tables$v /" >>"$W/$WORK_NAME.txt"
  done
done
for v in 1 0; do
  # shellcheck disable=SC2086
  bench_row "kimi-tables$v" SERVEKIT_STATIC_ONE_TOKEN_TABLES=$v -- --preset kimi-k2 --quant int4_w4a16 $SK
done
t=$(($(left) - 10))
if ((t > 30)); then
  ((t > 90)) && t=90
  timeout --kill-after=5 $t compute-sanitizer --tool memcheck --error-exitcode 1 "$T" \
    --gtest_filter='MoECuda.StaticOneTokenPartitionWithoutTables' >"$W/memcheck.log" 2>&1
  say "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/memcheck.log" | tr '\n' ' ')"
else
  say "memcheck skipped (budget)"
fi
say "done"
