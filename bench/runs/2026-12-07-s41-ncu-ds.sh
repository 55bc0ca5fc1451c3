#!/usr/bin/env bash
# Session 41, call 4: the flat producer on both swap tiles is the default now (calls 2-3:
# GEMM and layer tests, memcheck, and the other 114 GPU tests passed on that build on an H100).
#   an H200: issues 3 and 4's rows (bench/runs/2026-12-06-s40-h200-rows.sh, BENCH_SET=issues)
#   anything else: build main (tests off), then ncu (clocks left alone) of deepseek-v3's two
#     grouped GEMMs at 8192 tokens, bf16 (cooperative swap tile, flat) and fp8_block128, with the
#     sections of session 38's qwen3-30b profile: what bounds the rows of issue 3's TFLOP/s targets
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s41-ncu-ds.sh
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo "card: $name"
case $name in
  *H200*) exec bash "$(dirname "$0")/2026-12-06-s40-h200-rows.sh" ;;
esac
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-480}
B=build
work_dir ncu-ds
env JOBS="$(nproc)" BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  >"$W/build.log" 2>&1 || { say "build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
say "built"
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
SECTIONS+=" --section WarpStateStats --section LaunchStats --section Occupancy"
NCU="--page details --kernel-name regex:device_kernel --launch-count 2 $SECTIONS"
profile_row ds-bf16 "--preset deepseek-v3 --quant bf16 --path dynamic --tokens 8192" "$NCU"
profile_row ds-fp8 "--preset deepseek-v3 --quant fp8_block128 --path dynamic --tokens 8192" "$NCU"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv >>"$W/$WORK_NAME.txt" 2>&1
say done
