#!/usr/bin/env bash
# Session 40, call 2, on the machine call 1 (2026-12-06-s39-h200.sh) left warm with main built in
# build/ (tests on; a fresh machine builds it first, ~100 s):
#   1. issue 3's rows at main with their cuBLAS peers, 32 tokens checked (OUT/issue3.json, .log)
#   2. the GPU tests call 1 did not run (everything but GroupedGemmCuda.* and MoECuda.*), so that
#      with call 1 the whole suite has run at the k-step-128 default
#   3. ncu (clocks left alone) of qwen3-30b's two GEMMs at 2048 and 8192 tokens, as session 39's
#      H100 profile (bench/runs/2026-12-06-s38-ncu.sh's sections)
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-06-s40-follow.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-560}
B=build
work_dir s40-follow
EXTRA=(-DSERVEKIT_TESTS=ON)
[[ -f /usr/include/gtest/gtest.h ]] || EXTRA+=(-DGTEST_ROOT="$PWD/.deps/gtest")
env JOBS=16 BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh "${EXTRA[@]}" >"$W/build.log" 2>&1 ||
  { say "build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
say "build done"
issue3_rows
gtest_run rest $B "${TESTS:--GroupedGemmCuda.*:MoECuda.*}" $(($(left) > 330 ? 250 : $(left) - 80))
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
SECTIONS+=" --section WarpStateStats --section LaunchStats --section Occupancy"
NCU="--page details --kernel-name regex:device_kernel --launch-count 2 $SECTIONS"
Q="--preset qwen3-30b-a3b --quant bf16 --path dynamic"  # gpu-profile.sh adds --routing uniform
profile_row q30-2k "$Q --tokens 2048" "$NCU"
profile_row q30-8k "$Q --tokens 8192" "$NCU"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv >>"$W/$WORK_NAME.txt" 2>&1
say done
