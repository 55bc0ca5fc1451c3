#!/usr/bin/env bash
# Session 22, the dynamic path's row kernels (token-major gather, activation pass) at three
# register budgets, one binary, one lease (SERVEKIT_DIAG_ROW_OCC: 0 = ptxas's default, 64 / 72
# registers; 1 = __launch_bounds__(256, 1), 96 registers, no spill; 4 = activation >= 4 CTAs per
# SM (64 registers) and gather >= 5 (48 registers), both with spills), and the H200's HBM under
# read-only, write-only and 1:N read:write streams (bench/tools/membw.cu). The gather call put
# both kernels at ~2.1-2.3 TB/s moved (ncu: gather 677 MB in 298.6 us, 48% occupancy; activation
# 750 MB in 351.6 us, 34%), against the copy ceiling of 4.30 (BENCH.md).
# Prediction: the write probe says whether ~1.8 TB/s of writes is near what HBM takes; occupancy
# moves each kernel by < 15% (~0.5% of the 8192-token layer).
# RAN at eb83f34 (one lease): the default budgets were best at 8192 tokens; the switch was removed
# after (ab/2026-12-02-s22-rowocc-*, docs/perf-notes.md twenty-second pass).
# Device (carry [".deps"], ~6 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s22-rowocc.sh
# Output: OUT/rowocc.txt, OUT/rowocc/ (rows, logs, membw.txt, ncu-*/).
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-420}
work_dir rowocc
W="$OUT/rowocc" && mkdir -p "$W"  # rows land under OUT even if the lease ends mid-call
nvcc -O3 -arch=sm_90a -o "$W/membw" bench/tools/membw.cu && timeout 60 "$W/membw" >"$W/membw.txt" 2>&1
say "membw rc=$?"
cat "$W/membw.txt"
rm -f "$W/membw"
build_dev "$W/build.log"
say "build done"
timeout 60 "$B/servekit_gpu_tests" --gtest_filter='MoEQuantCuda.*' >"$W/tests.log" 2>&1
say "tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
DS="--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic --tokens 2048,8192"
for round in 1 2; do
  for occ in 0 1 4; do
    # shellcheck disable=SC2086
    bench_row "r$round-occ$occ" SERVEKIT_DIAG_ROW_OCC=$occ -- $DS
  done
done
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size
METRICS+=,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
METRICS+=,smsp__issue_active.avg.pct_of_peak_sustained_active
for occ in 1 4; do
  (($(left) < 50)) && { say "ncu occ$occ skipped (budget)"; continue; }
  SERVEKIT_DIAG_ROW_OCC=$occ OUT="$W/ncu-occ$occ" BUDGET_S=$(($(left) - 10)) BUILD_DIR=$B \
    PROFILE_ROWS="--preset deepseek-v3 --quant fp8_block128 --tokens 8192 --path dynamic" \
    NCU_ARGS="--page raw --kernel-name regex:scatter_tokens|activation_rows --launch-count 2 --metrics $METRICS" \
    scripts/gpu-profile.sh >/dev/null 2>&1
  say "ncu occ$occ rc=$?"
done
say "done"
