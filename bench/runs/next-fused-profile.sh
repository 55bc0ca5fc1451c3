#!/usr/bin/env bash
# Prepared in session 25, not GPU-run: where the fused GEMM1 epilogue's time goes
# (docs/perf-notes.md, twenty-fifth pass: the fused GEMM1 is 16-287 us slower than the plain
# GEMM1, which writes H1 by TMA, so the fusion recovers only a quarter of the activation pass).
# ncu on the forward's first CUTLASS kernel (GEMM1), with the fusion on (1) and off (0), clocks
# left alone: SpeedOfLight, WarpStateStats (the math warps' stalls: long scoreboard or
# LG throttle on the direct stores, barrier, math), MemoryWorkloadAnalysis (L2 store sectors
# against the bytes of A2), SourceCounters (local memory of the 48-144 bytes of spill).
# Rows: qwen3-30b-a3b bf16 2048 and deepseek-v3 fp8_block128 8192.
# Device (carry [".deps"], ~5 min): bash bench/runs/next-fused-profile.sh
# Output: OUT/fused-profile.txt, OUT/fused-profile.tgz (ncu-f<0|1>-<row>/).
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, profile_row
BUDGET_S=${BUDGET_S:-330}
work_dir fused-profile
build_dev "$W/build.log"
say "build done"
SECTIONS="--section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis"
SECTIONS+=" --section SourceCounters"
ROWS=("q30 --preset qwen3-30b-a3b --quant bf16 --tokens 2048 --path dynamic"
  "dsf8 --preset deepseek-v3 --quant fp8_block128 --tokens 8192 --path dynamic")
for row in "${ROWS[@]}"; do
  read -r tag args <<<"$row"
  for f in 1 0; do
    profile_row "f$f-$tag" "$args" \
      "--page details --kernel-name regex:device_kernel --launch-count 1 $SECTIONS" \
      SERVEKIT_DYNAMIC_FUSED_ACT=$f
  done
done
say "done"
