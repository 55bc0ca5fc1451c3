#!/usr/bin/env bash
# Device call, session 8, after the last kernel-free change (exec.path=auto builds only the static
# path when its capacity stays within the cutover): the layer GPU tests (MoECuda.*, including
# PathDecidesTheWeightCopies with the four cases) and the README's main program on the GPU.
# Run (carry [".deps"], timeout_s 300): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-11-30-s8-verify2.sh
# Output: OUT/tests.txt, OUT/verify2.log.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
build_dev "$OUT/verify2.log"
echo "build done at $(($(date +%s) - START))s" | tee "$OUT/tests.txt"
timeout 120 "$B/servekit_gpu_tests" --gtest_filter='MoECuda.*' >>"$OUT/verify2.log" 2>&1
echo "GPU tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/verify2.log" | tr '\n' ' ') at $(($(date +%s) - START))s" | tee -a "$OUT/tests.txt"
grep -E '^\[  FAILED|^\[       OK|Failure|Expected|Which is' "$OUT/verify2.log" | head -30 >>"$OUT/tests.txt"
timeout 60 "$B/servekit" moe --preset qwen3-30b-a3b --tokens 8 --quant bf16 --device auto --check \
  >>"$OUT/tests.txt" 2>&1
echo "main program rc=$? at $(($(date +%s) - START))s" | tee -a "$OUT/tests.txt"
cat "$OUT/tests.txt"
