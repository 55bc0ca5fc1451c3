#!/usr/bin/env bash
# Device call, session 10: which pipe the 4-bit static GEMMs fill at 8 tokens. The diagnostic
# builds of this session (SERVEKIT_DIAG_STATIC_CONSUME, wip/diag-consume) put the int4 decode at
# ~28 us of 199 and the mma at ~6; the bias-by-mma branch (fewer FMA-pipe instructions, more
# tensor work) was 15% slower. Hypothesis: the integer pipe (LOP3 / SHF / address arithmetic, 16
# lanes per scheduler) is what the k-loop saturates. ncu's ComputeWorkloadAnalysis (per-pipe
# utilisation), InstructionStats and WarpStateStats (stall reasons) in the raw page, both GEMMs of
# the first forward, for int4, mxfp4 and bf16 (control) at 8 tokens.
# Ran at ba3b1ca (main with the chain2 k-loop). Results:
# bench/results/h200/profiles/2026-12-01-s10-ncu-pipes-{1,2,3}.csv (int4, mxfp4, bf16).
# Run (carry [".deps"], timeout_s 420): bash bench/runs/2026-12-01-s10-pipes.sh
# Output: OUT/profile.log, OUT/ncu-<n>.csv (raw metrics).
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
env JOBS="$(nproc)" BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  >"$OUT/build.log" 2>&1 || { tail -n 40 "$OUT/build.log"; exit 1; }
echo "build done at $(($(date +%s) - START))s" | tee -a "$OUT/profile.log"
NCU_ARGS="--page raw --section ComputeWorkloadAnalysis --section InstructionStats
 --section WarpStateStats --kernel-name regex:static_gemm --launch-count 2" \
  BUDGET_S=$((330 - ($(date +%s) - START))) BUILD_DIR="$B" \
  PROFILE_ROWS="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 8 --path static
 --then --preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 8 --path static
 --then --preset qwen3-235b-a22b --quant bf16 --tokens 8 --path static" scripts/gpu-profile.sh
grep -E "^== |rc=|total" "$OUT/profile.log"
