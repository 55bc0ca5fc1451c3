#!/usr/bin/env bash
# Device call, session 9: the static GPU tests of this tree (it adds the scale-step field that
# SERVEKIT_DIAG_STATIC_ONE_SCALE uses to every scaled format's loads), then where the warps of the
# static GEMMs wait at 8 tokens for int4, mxfp4 and bf16 (ncu warp-state and memory sections,
# PROFILE_SET=stalls of scripts/gpu-profile.sh): why the 4-bit k-loops stream at ~60-66% of the
# read ceiling where bf16 streams at ~91% (stamps of 2026-12-01-s9-times).
# Ran at 56c4e62 (wip/diag-one-scale: main's kernels plus the unused diagnostic). Results:
# bench/results/h200/profiles/2026-12-01-s9-ncu-stalls-{1,2,3}.csv (int4, bf16, mxfp4).
# Run (carry [".deps"], timeout_s 450): bash bench/runs/2026-12-01-s9-stalls.sh
# Output: OUT/tests.log, OUT/profile.log, OUT/ncu-<n>.csv, OUT/ncu-table.txt.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
build_dev "$OUT/build.log"
echo "build done at $(($(date +%s) - START))s" | tee -a "$OUT/profile.log"
timeout 100 "$B/servekit_gpu_tests" --gtest_filter='*Static*:MoECuda*' >"$OUT/tests.log" 2>&1
echo "GPU tests rc=$? $(grep -E 'PASSED|FAILED' "$OUT/tests.log" | tr '\n' ' ') at $(($(date +%s) - START))s" |
  tee -a "$OUT/profile.log"
PROFILE_SET=stalls BUDGET_S=$((400 - ($(date +%s) - START))) BUILD_DIR="$B" \
  PROFILE_ROWS="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 8 --path static
 --then --preset qwen3-235b-a22b --quant bf16 --tokens 8 --path static
 --then --preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 8 --path static" scripts/gpu-profile.sh
grep -E "^== |rc=|total" "$OUT/profile.log"
