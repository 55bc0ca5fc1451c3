#!/usr/bin/env bash
# RAN in session 22 (H200, one lease): the 1x4 cluster lost (8192 tokens 9648.1 / 9631.2 us against
# 9528.8 / 9523.7 for 1x2; 120 CTAs instead of 132); results ab/2026-12-02-s22-c4-*, docs/perf-notes.md
# twenty-second pass. The patch stays as the record.
# Prepared in session 21 (compile-checked for sm_90a here; not GPU-run, so a patch:
# bench/runs/fp8-cluster4.patch; docs/perf-notes.md, twenty-first pass, lever 1 and Next 1).
# fp8_block128's 128-row grouped-GEMM tile with a 1x4 cluster (A multicast to four N-neighbours)
# against the default 1x2, one binary (SERVEKIT_DIAG_FP8_CLUSTER=4|2). ncu put GEMM1 at 86% of L2
# throughput at 8192 tokens; per CTA and k-tile the L2 serves 8 KB of A + 16 KB of B with 1x2
# and 4 + 16 with 1x4 (-17%). Prediction: deepseek-v3 fp8_block128 dynamic at 8192 tokens 3-8%
# faster if L2 bounds it and four-CTA clusters still fill the GPU (the runner asks
# cudaOccupancyMaxActiveClusters; a GPC of 18 SMs holds four clusters of four and leaves two SMs
# idle, which costs up to ~6%).
# 1. Here: git apply bench/runs/fp8-cluster4.patch   (uncommitted: the device copies the tree)
# 2. Device (carry [".deps"], ~9.5 min): SERVEKIT_COMMIT=<sha>+c4 bash bench/runs/next-fp8-cluster4.sh
# 3. If the GEMM tests pass and 4 wins at 2048 and 8192: make 1x4 the compiled tile's cluster
#    (compiled_tile_config, gemm_tile_config.h), drop the extra TU; else git checkout the files.
# Output: OUT/fp8-cluster4.txt, OUT/fp8-cluster4.tgz (rows, the stop rows, logs, ncu-c2/, ncu-c4/).
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-560}
work_dir fp8-cluster4
W="$OUT/fp8-cluster4" && mkdir -p "$W"  # rows land under OUT even if the lease ends mid-call
[[ -f src/cuda/grouped_gemm_fp8_block128_cluster4.cu ]] || { say "the patch is not applied"; exit 1; }
build_dev "$W/build.log"
say "build done"
timeout 60 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.*' >"$W/tests.log" 2>&1
say "GEMM tests rc=$? $(grep -E 'PASSED|FAILED' "$W/tests.log" | tr '\n' ' ')"
DS="--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic --tokens 2048,8192"
for round in 1 2; do
  for c in 2 4; do
    # shellcheck disable=SC2086
    bench_row "r$round-ds-c$c" SERVEKIT_DIAG_FP8_CLUSTER=$c -- $DS
  done
done
# Where the 8192-token layer's time goes, graph-timed (perf-notes, twenty-first pass: the GEMMs
# took ~7.2 of its 9.35 ms under ncu): the forward cut after pass 1..5 (route + plan, gather,
# GEMM1, activation, GEMM2; SERVEKIT_DIAG_DYNAMIC_STOP, output garbage by design, so these rows
# fail their check), default cluster.
for stop in 1 2 3 4 5; do
  # shellcheck disable=SC2086
  bench_row "stop$stop" SERVEKIT_DIAG_DYNAMIC_STOP=$stop -- ${DS/2048,8192/8192}
done
# What each moves through L2 and DRAM, and the SM clock under the load (ncu, first forward's two
# grouped GEMMs of the 8192-token row; clocks left alone).
METRICS=gpu__time_duration.sum,lts__t_sectors.avg.pct_of_peak_sustained_elapsed
METRICS+=,dram__bytes_read.sum,sm__cycles_elapsed.avg.per_second,launch__grid_size
for c in 2 4; do
  (($(left) < 60)) && { say "ncu c$c skipped (budget)"; continue; }
  SERVEKIT_DIAG_FP8_CLUSTER=$c OUT="$W/ncu-c$c" BUDGET_S=$(($(left) - 10)) BUILD_DIR=$B \
    PROFILE_ROWS="--preset deepseek-v3 --quant fp8_block128 --tokens 8192 --path dynamic" \
    NCU_ARGS="--page raw --kernel-name regex:device_kernel --launch-count 2 --metrics $METRICS" \
    scripts/gpu-profile.sh >/dev/null 2>&1
  say "ncu c$c rc=$?"
done
say "done"
