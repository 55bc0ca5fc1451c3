#!/usr/bin/env bash
# Prepared in session 26, not run yet (compiled for sm_90a on the CPU machine: 0 spill).
# fp8_per_tensor's epilogue without the handshakes (bench/runs/fp8-group-alpha-evt.patch): its
# per-group alpha through our own EVT leaf (sm90_group_scalar.cuh, read by the math warps, no
# producer load) instead of the ptr-array LinearCombination. The same change gave bf16 and
# fp8_block128 -0.9 to -1.9% (perf-notes, twenty-sixth pass). The bits should not change
# (alpha * acc, one multiply, rounded to bf16, as before).
#   1. build main (build-base), apply the patch, build again (build-dev: only the GEMM units)
#   2. on build-dev: GroupedGemmCuda.FP8PerTensor (against the CPU reference), the layer and peer
#      tests of the format (MoECuda.*, CublasPeer*)
#   3. rows, two rounds, base / evt: qwen3-30b fp8_per_tensor 2048,8192, mixtral fp8_per_tensor 2048
# Device (carry [".deps"], ~6 min): bash bench/runs/next-fp8pt-evt.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-480}
work_dir next-fp8pt-evt
env JOBS="$(nproc)" BUILD_DIR=build-base SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  >"$W/build-base.log" 2>&1 || { tail -n 40 "$W/build-base.log"; exit 1; }
git apply bench/runs/fp8-group-alpha-evt.patch 2>/dev/null || patch -p1 <bench/runs/fp8-group-alpha-evt.patch ||
  { say "patch does not apply"; exit 1; }
build_dev "$W/build.log"
say "builds done"
timeout 200 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.FP8PerTensor:MoECuda.*:CublasPeer*' \
  >"$W/tests.log" 2>&1
say "tests rc=$? $(grep -cE '^\[ +OK \]' "$W/tests.log") ok, $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
ROWS=("q30 --preset qwen3-30b-a3b --quant fp8_per_tensor --tokens 2048,8192"
  "mix --preset mixtral-8x7b --quant fp8_per_tensor --tokens 2048")
for rep in 1 2; do
  for row in "${ROWS[@]}"; do
    read -r tag args <<<"$row"
    # shellcheck disable=SC2086
    BIN=build-base/servekit bench_row "$tag-base-$rep" -- $args --routing uniform --path dynamic
    # shellcheck disable=SC2086
    bench_row "$tag-evt-$rep" -- $args --routing uniform --path dynamic
  done
done
say "done"
