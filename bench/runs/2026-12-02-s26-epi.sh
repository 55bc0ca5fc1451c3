#!/usr/bin/env bash
# Session 26, second device call (carry [".deps"], ~9 min). Two epilogue changes, A/B in one lease:
#   staged:  the fused GEMM1 tile stages each warp's 16 rows of the intermediate in D's free
#            shared memory and writes whole 128-byte lines (sm90_act_epilogue.cuh); the direct
#            stores from registers stay under SERVEKIT_DIAG_FUSED_DIRECT_STORE=1 (same binary)
#   evt:     bf16 and fp8_block128 take a one-node EVT instead of the ptr-array LinearCombination,
#            so the epilogue producer warp commits no load stages (sm90_grouped_gemm.cuh); the
#            old fusion is a second build, -DSERVEKIT_DIAG_EPI_LINCOMB=1 (build-lc)
#   1. both builds (in parallel); the GEMM and fused-activation GPU tests and the layer tests on
#      build-dev; memcheck of the fused layer on the tiny preset (bf16, fp8_block128)
#   2. rows, two rounds: new (staged + evt) / direct (+ evt) / lincomb (staged + LinearCombination)
#      on qwen3-30b bf16 2048,8192 and deepseek-v3 fp8_block128 8192; then GEMM1 alone (stop 3)
# Device: bash bench/runs/2026-12-02-s26-epi.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-585}
work_dir s26-epi
(env JOBS=8 BUILD_DIR=build-lc SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  -DCMAKE_CUDA_FLAGS=-DSERVEKIT_DIAG_EPI_LINCOMB=1 >"$W/build-lc.log" 2>&1; echo "lc rc=$?" >>"$W/build-lc.log") &
env JOBS=8 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=ON >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
wait
say "builds done $(tail -n 1 "$W/build-lc.log")"
T='GroupedGemmCuda.*:MoECuda.*'
timeout 200 "$B/servekit_gpu_tests" --gtest_filter="$T" >"$W/tests.log" 2>&1
say "tests rc=$? $(grep -cE '^\[ +OK \]' "$W/tests.log") ok, $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \]' "$W/tests.log" | head -n 10 | tee -a "$W/s26-epi.txt"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for q in bf16 fp8_block128; do
  timeout 60 "$SAN" --tool memcheck --error-exitcode 1 \
    "$B/servekit" moe --preset tiny --tokens 2000 --quant $q --device cuda --check --repeats 2 \
    >"$W/memcheck-fused-$q.log" 2>&1
  say "memcheck fused $q rc=$? $(grep -E 'ERROR SUMMARY|^check:' "$W/memcheck-fused-$q.log" | tr '\n' ' ')"
done
ROWS=("q30 --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192"
  "dsf8 --preset deepseek-v3 --quant fp8_block128 --tokens 8192")
for row in "${ROWS[@]}"; do
  read -r tag args <<<"$row"
  for rep in 1 2; do
    # shellcheck disable=SC2086
    bench_row "$tag-new-$rep" -- $args --routing uniform --path dynamic
    # shellcheck disable=SC2086
    bench_row "$tag-direct-$rep" SERVEKIT_DIAG_FUSED_DIRECT_STORE=1 -- $args --routing uniform --path dynamic
    # shellcheck disable=SC2086
    BIN=build-lc/servekit bench_row "$tag-lincomb-$rep" -- $args --routing uniform --path dynamic
  done
done
for row in "${ROWS[@]}"; do
  read -r tag args <<<"$row"
  # shellcheck disable=SC2086
  bench_row "$tag-new-stop3" SERVEKIT_DIAG_DYNAMIC_STOP=3 -- $args --routing uniform --path dynamic
  # shellcheck disable=SC2086
  bench_row "$tag-direct-stop3" SERVEKIT_DIAG_DYNAMIC_STOP=3 SERVEKIT_DIAG_FUSED_DIRECT_STORE=1 -- \
    $args --routing uniform --path dynamic
  # shellcheck disable=SC2086
  BIN=build-lc/servekit bench_row "$tag-lincomb-stop3" SERVEKIT_DIAG_DYNAMIC_STOP=3 -- \
    $args --routing uniform --path dynamic
done
say "done"
