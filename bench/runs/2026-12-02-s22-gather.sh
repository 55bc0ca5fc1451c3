#!/usr/bin/env bash
# Session 22: the token-major gather (each token's row loaded and quantized once, stored to its
# K + S permuted rows; src/cuda/kernels/quant/gather_rows.cuh) against the row-major one
# (SERVEKIT_DIAG_GATHER=rows), one binary, one lease. Session 21's stop rows put the row-major
# gather at ~681 us of deepseek-v3 fp8_block128's 9.5 ms at 8192 tokens (stop2 - stop1).
# Prediction (docs/perf-notes.md, twenty-second pass): ~150-200 us, the layer 4-6% faster;
# bf16 rows less (no quantization to save, only the re-reads).
# RAN at 455019e (the tree with both switches; 05c22c9 removed them): results ab/2026-12-02-s22-gather-*.
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s22-gather.sh
# Output: OUT/gather.txt, OUT/gather/ (rows, logs, tests.log, ncu-*/).
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-560}
work_dir gather
W="$OUT/gather" && mkdir -p "$W"  # rows land under OUT even if the lease ends mid-call
build_dev "$W/build.log"
say "build done"
timeout 200 "$B/servekit_gpu_tests" \
  --gtest_filter='MoEQuantCuda.*:MoECuda*:CombineCuda.*:PlanCuda.*:RoutePlanCuda.*' \
  >"$W/tests.log" 2>&1
say "tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
DS="--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic --tokens 2048,8192"
for round in 1 2; do
  for g in rows tokens; do
    # shellcheck disable=SC2086
    bench_row "r$round-ds-$g" SERVEKIT_DIAG_GATHER=$g -- $DS
  done
done
for g in rows tokens; do
  bench_row "q30-$g" SERVEKIT_DIAG_GATHER=$g -- --preset qwen3-30b-a3b --quant bf16 \
    --routing uniform --path dynamic --tokens 2048,8192
done
# The gather alone, graph-timed: the forward cut after route + plan and after the gather.
for stop in 1 2; do
  # shellcheck disable=SC2086
  bench_row "stop$stop" SERVEKIT_DIAG_DYNAMIC_STOP=$stop -- ${DS/2048,8192/8192}
done
# The activation pass quantizing by a reciprocal (SERVEKIT_DIAG_ACT_RCP=1) against the
# division per element: the whole row, and the pass alone as stop4 - stop3.
# shellcheck disable=SC2086
bench_row "ds-rcp" SERVEKIT_DIAG_ACT_RCP=1 -- $DS
for rcp in 0 1; do
  for stop in 3 4; do
    # shellcheck disable=SC2086
    bench_row "stop$stop-rcp$rcp" SERVEKIT_DIAG_ACT_RCP=$rcp SERVEKIT_DIAG_DYNAMIC_STOP=$stop \
      -- ${DS/2048,8192/8192}
  done
done
# The row kernels under ncu (first forward of the 8192-token row): time, DRAM bytes both ways,
# issue and occupancy, so the activation pass (~390 us, ~2.3x its DRAM bytes) can be read too.
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size
METRICS+=,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
METRICS+=,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second
METRICS+=,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active
for g in tokens rows; do
  (($(left) < 60)) && { say "ncu $g skipped (budget)"; continue; }
  SERVEKIT_DIAG_GATHER=$g OUT="$W/ncu-$g" BUDGET_S=$(($(left) - 10)) BUILD_DIR=$B \
    PROFILE_ROWS="--preset deepseek-v3 --quant fp8_block128 --tokens 8192 --path dynamic" \
    NCU_ARGS="--page raw --kernel-name regex:scatter_tokens|gather_rows|activation_rows|combine_rows --launch-count 3 --metrics $METRICS" \
    scripts/gpu-profile.sh >/dev/null 2>&1
  say "ncu $g rc=$?"
done
say "done"
