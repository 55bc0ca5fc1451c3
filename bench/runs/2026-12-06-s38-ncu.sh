#!/usr/bin/env bash
# Session 38, a follow-up on the machine call 1 (2026-12-06-s38-check.sh) left warm, with its
# build in build/: ncu (clocks left alone) of qwen3-30b's two CUTLASS kernels at 2048 tokens, the
# default tiles (ping-pong swap on the flat producer): the sections of session 36's prepared
# profile (bench/runs/2026-12-05-s36-pp.sh, step 3), which never ran. Then 8192 if time is left.
# Device (warm, carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-06-s38-ncu.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-150}
B=build
work_dir ncu-s38
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
SECTIONS+=" --section WarpStateStats --section LaunchStats --section Occupancy"
NCU="--page details --kernel-name regex:device_kernel --launch-count 2 $SECTIONS"
Q="--preset qwen3-30b-a3b --quant bf16 --path dynamic"  # gpu-profile.sh adds --routing uniform
profile_row q30-pp "$Q --tokens 2048" "$NCU"
profile_row q30-8k "$Q --tokens 8192" "$NCU"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv >>"$W/$WORK_NAME.txt" 2>&1
say done
