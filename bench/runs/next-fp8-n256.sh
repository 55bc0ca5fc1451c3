#!/usr/bin/env bash
# RAN in session 23 (f8abd86 + the patch; ab/2026-12-02-s23-n256-*): n256 won and became the
# compiled fp8_block128 tile, so the patch no longer applies to main; it stays as the record.
# Prepared in session 22 (compiled for sm_90a here: 168 registers, no spill, no C7517; not
# GPU-run, so a patch: bench/runs/fp8-n256.patch; docs/perf-notes.md, twenty-second pass, Next 1).
# fp8_block128's 128-row grouped-GEMM tile widened to 128x256 with the default 1x2 cluster,
# promoting each k-tile's wgmma result in two 128-column halves
# (src/cuda/kernels/gemm/sm90_blockwise_halves.cuh), against the default 128x128, one binary
# (SERVEKIT_DIAG_FP8_TILE=n256|n128). Per CTA and k-tile the L2 serves 8 KB of A + 32 KB of B
# for 4 M MACs instead of 8 + 16 for 2 M (-17% bytes per MAC) with all 132 SMs busy (session
# 22's 1x4 cluster saved as much per CTA but left 12 SMs idle). The cost: each warp group waits
# for a half's wgmma before promoting it (the other group's wgmma can run meanwhile).
# Prediction: deepseek-v3 fp8_block128 dynamic at 8192 tokens -3 to +6% (GEMM1 ncu 4.71 ms ->
# 4.3-4.6); at 2048 tokens level or worse (fewer, longer tiles).
# 1. Here: git apply bench/runs/fp8-n256.patch   (uncommitted: the device copies the tree)
# 2. Device (carry [".deps"], ~7 min): SERVEKIT_COMMIT=<sha>+n256 bash bench/runs/next-fp8-n256.sh
# 3. If GroupedGemmCuda.FP8Block128N256 passes and n256 wins at 8192: make it the compiled
#    fp8_block128 tile (compiled_tile_config, gemm_tile_config.h) and drop the extra TU; else
#    git checkout the files and keep the patch as the record.
# Output: OUT/fp8-n256.txt, OUT/fp8-n256/ (rows, logs, tests.log, ncu-n128/, ncu-n256/).
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row,
# profile_row
BUDGET_S=${BUDGET_S:-480}
work_dir fp8-n256
W="$OUT/fp8-n256" && mkdir -p "$W"  # rows land under OUT even if the lease ends mid-call
[[ -f src/cuda/grouped_gemm_fp8_block128_n256.cu ]] || { say "the patch is not applied"; exit 1; }
build_dev "$W/build.log"
say "build done"
timeout 90 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.*' >"$W/tests.log" 2>&1
say "GEMM tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
grep -q '^\[  FAILED  \]' "$W/tests.log" && { say "a GEMM test failed: no rows"; exit 1; }
DS="--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic --tokens 2048,8192"
for round in 1 2; do
  for t in n128 n256; do
    # shellcheck disable=SC2086
    bench_row "r$round-ds-$t" SERVEKIT_DIAG_FP8_TILE=$t -- $DS
  done
done
# The two GEMMs of the first 8192-token forward under ncu (clocks left alone).
METRICS=gpu__time_duration.sum,lts__t_sectors.avg.pct_of_peak_sustained_elapsed
METRICS+=,dram__bytes_read.sum,dram__bytes_write.sum,sm__cycles_elapsed.avg.per_second
METRICS+=,launch__grid_size,launch__registers_per_thread
for t in n128 n256; do
  profile_row "$t" "--preset deepseek-v3 --quant fp8_block128 --tokens 8192 --path dynamic" \
    "--page raw --kernel-name regex:device_kernel --launch-count 2 --metrics $METRICS" \
    SERVEKIT_DIAG_FP8_TILE=$t
done
say "done"
