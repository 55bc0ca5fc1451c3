#!/usr/bin/env bash
# Prepared in session 23, not GPU-run: why the idle warp group (bench/runs/fp8-idle-wg.patch)
# made deepseek-v3 fp8_block128 at 8192 tokens ~9% slower than the new scale producer alone
# (docs/perf-notes.md, twenty-third pass). ncu sections of the 8192-token forward's GEMM1 under
# SERVEKIT_DIAG_FP8_IDLE=2 (new producer, no idling) and 0 (idling), clocks left alone:
# SpeedOfLight, ComputeWorkloadAnalysis (tensor pipe), WarpStateStats (the consumer warps'
# stalls), MemoryWorkloadAnalysis, and SourceCounters (local memory in the producer warps).
# Then the same rows at 1024 tokens, where idling won 3.5%.
# 1. Here: git apply bench/runs/fp8-idle-wg.patch   (uncommitted: the device copies the tree)
# 2. Device (carry [".deps"], ~5 min): SERVEKIT_COMMIT=<sha>+idle bash bench/runs/next-idle-profile.sh
# 3. git checkout the patched files afterwards.
# Output: OUT/idle-profile.txt, OUT/idle-profile/ (ncu-m0-*/, ncu-m2-*/).
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, profile_row
BUDGET_S=${BUDGET_S:-330}
work_dir idle-profile
grep -q kDiagIdleMode src/cuda/kernels/gemm/sm90_blockwise_halves.cuh ||
  { say "the patch is not applied"; exit 1; }
build_dev "$W/build.log"
say "build done"
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats"
SECTIONS+=" --section MemoryWorkloadAnalysis --section SourceCounters"
for t in 8192 1024; do
  for m in 2 0; do
    profile_row "m$m-$t" "--preset deepseek-v3 --quant fp8_block128 --tokens $t --path dynamic" \
      "--page details --kernel-name regex:device_kernel --launch-count 1 $SECTIONS" \
      SERVEKIT_DIAG_FP8_IDLE=$m
  done
done
say "done"
