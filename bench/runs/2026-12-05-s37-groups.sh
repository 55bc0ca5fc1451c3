#!/usr/bin/env bash
# Session 37, call 1: what a group switch costs the grouped GEMMs (docs/perf-notes.md,
# thirty-seventh pass), and session 35's ncu question on qwen3-30b's GEMMs.
#   1. main built with tests (every core); GroupedGemmCuda.* (the new BGroupStride among them)
#   2. bench/tools/gemm_groups.cpp: the same tiles in 128 groups on one weight matrix, in one group,
#      and in 128 groups on their own weights; swap tile auto (qwen3-30b: ping-pong), then the
#      cooperative one; one run under ncu (--once) for the kernels' clocks and stalls
#   3. ncu (clocks left alone) of qwen3-30b's forward at 2048 tokens, default tiles
# Device (carry [".deps"], ~6 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-05-s37-groups.sh
# Output: OUT/groups.txt, OUT/groups.tgz.
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-540}
work_dir groups
env JOBS="$(nproc)" BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
say "build done"
gtest_run main "$B" 'GroupedGemmCuda.*' 150
gemm_probe_build "$W/gemm_groups" "$B"
for swap in auto cooperative; do
  SERVEKIT_GEMM_TILE=swap SERVEKIT_GEMM_SWAP=$swap timeout 120 "$W/gemm_groups" >"$W/probe-$swap.txt" 2>&1
  say "probe swap=$swap rc=$?"
  cat "$W/probe-$swap.txt" | tee -a "$W/$WORK_NAME.txt"
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
SECTIONS+=" --section WarpStateStats --section LaunchStats --section Occupancy"
if (($(left) > 150)); then
  SERVEKIT_GEMM_TILE=swap timeout $(($(left) - 100)) "$NCU" --clock-control none --page details \
    --kernel-name regex:device_kernel --launch-count 6 $SECTIONS "$W/gemm_groups" --once \
    >"$W/ncu-probe.txt" 2>&1
  say "ncu probe rc=$?"
fi
Q="--preset qwen3-30b-a3b --quant bf16 --path dynamic"  # gpu-profile.sh adds --routing uniform
profile_row q30-pp "$Q --tokens 2048" "--page details --kernel-name regex:device_kernel --launch-count 2 $SECTIONS"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv >>"$W/$WORK_NAME.txt" 2>&1
say "done"
