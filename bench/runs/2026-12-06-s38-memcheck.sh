#!/usr/bin/env bash
# Session 38, call 2: call 1's memcheck of the flat producer's GEMM tests stopped at an
# out-of-bounds read of the fp8_block128 weight scales (CUTLASS's blockwise producer, N = 2880);
# 286a31c gives those scales a tail (kBlockScaleTailFloats). On a fresh build (tests on):
#   1. compute-sanitizer memcheck of BGroupStride, the ping-pong swap tile's tests (the flat
#      producer) and every fp8_block128 GEMM test
#   2. without the sanitizer: every GroupedGemmCuda test and the layer's odd-size (N = 2880 and
#      2 * 1856 on fp8_block128), fused-activation and swap tests, with
#      what is left
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-06-s38-memcheck.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-300}
work_dir memcheck-s38
B=build
EXTRA=(-DSERVEKIT_TESTS=ON)
[[ -f /usr/include/gtest/gtest.h ]] || EXTRA+=(-DGTEST_ROOT="$PWD/.deps/gtest")
env JOBS="$(nproc)" BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh "${EXTRA[@]}" >"$W/build.log" 2>&1 ||
  { say "build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
say "build done"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout $(($(left) - 60)) "$SAN" --tool memcheck --error-exitcode 1 $B/servekit_gpu_tests \
  --gtest_filter='GroupedGemmCuda.BGroupStride:GroupedGemmCuda.BF16SwapPingpong*:GroupedGemmCuda.FP8Block128*' \
  >"$W/memcheck.log" 2>&1
say "memcheck rc=$? $(grep -cE '^\[ +OK \]' "$W/memcheck.log") ok, $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED) ' "$W/memcheck.log" | tr '\n' ' ')"
grep -E "Invalid|Access to|^\[  FAILED" "$W/memcheck.log" | head -n 10 >>"$W/$WORK_NAME.txt"
(($(left) > 25)) && gtest_run plain $B 'GroupedGemmCuda.*:MoECuda.OddSizes:MoECuda.FusedActivationMatchesThePass:MoECuda.SwapTileMatchesReference' $(($(left) - 10))
say done
