#!/usr/bin/env bash
# Session 26, fourth device call (carry [".deps"], ~4.5 min; the session's last ~390 s of device
# time). The bf16 128x256 tile's epilogue subtile, 128x32 (the builder's) against 128x64
# (-DSERVEKIT_DIAG_EPI_TILE_N=64, sm90_grouped_gemm.cuh): half the subtiles, so half of GEMM2's
# per-subtile synchronisation around its TMA stores; the kernel's shared memory 215040 -> 232448
# bytes, 4 mainloop stages kept.
#   1. both builds in parallel (build-dev as main, build-e64 with the define)
#   2. the GEMM and layer GPU tests (GroupedGemmCuda.*:MoECuda.*) on build-e64
#   3. rows, two rounds, auto / e64: qwen3-30b bf16 2048,8192, mixtral-8x7b bf16 2048
# Device: bash bench/runs/2026-12-02-s26-epitile.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-290}
work_dir s26-epitile
(env JOBS=8 BUILD_DIR=build-e64 SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=ON \
  -DCMAKE_CUDA_FLAGS=-DSERVEKIT_DIAG_EPI_TILE_N=64 >"$W/build-e64.log" 2>&1; echo "e64 rc=$?" >>"$W/build-e64.log") &
env JOBS=8 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
wait
say "builds done $(tail -n 1 "$W/build-e64.log")"
timeout $(($(left) - 60)) build-e64/servekit_gpu_tests --gtest_filter='GroupedGemmCuda.*:MoECuda.*' >"$W/tests.log" 2>&1
say "tests e64 rc=$? $(grep -cE '^\[ +OK \]' "$W/tests.log") ok, $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \]' "$W/tests.log" | head -n 10 | tee -a "$W/s26-epitile.txt"
ROWS=("q30 --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192"
  "mix --preset mixtral-8x7b --quant bf16 --tokens 2048")
for rep in 1 2; do
  for row in "${ROWS[@]}"; do
    read -r tag args <<<"$row"
    # shellcheck disable=SC2086
    bench_row "$tag-auto-$rep" -- $args --routing uniform --path dynamic
    # shellcheck disable=SC2086
    BIN=build-e64/servekit bench_row "$tag-e64-$rep" -- $args --routing uniform --path dynamic
  done
done
say "done"
