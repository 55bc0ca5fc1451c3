#!/usr/bin/env bash
# Session 39, call 3: the ping-pong swap tile's k-step of 128 (the default from this commit on,
# measured faster on an H100 in calls 2-3) on an H200, in one lease:
#   1. main (k-step 128, tests on) in build/ and, in parallel, the tree with
#      -DSERVEKIT_DIAG_SWAP_PP_TILE_K=64 (the old step, tests off), 8 jobs each
#   2. main's GEMM and layer GPU tests (GroupedGemmCuda.*, MoECuda.*)
#   3. qwen3-30b bf16 dynamic, uniform, --peer off: 2048 and 8192, two rounds, 4096 one, 64 / 128
#   4. issue 3's qwen3-30b rows on main with the cuBLAS peer, 32 tokens checked (OUT/q30.json)
# TESTS=<gtest filter> narrows step 2 when the budget is short.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-06-s39-h200.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-480}
B=build
work_dir h200-s39
copy_tree /tmp/k64-tree
FLAG=-DSERVEKIT_DIAG_SWAP_PP_TILE_K=64
(cd /tmp/k64-tree && env JOBS=8 BUILD_DIR=build-k64 SERVEKIT_WERROR=OFF scripts/build.sh \
  -DSERVEKIT_TESTS=OFF "-DCMAKE_CUDA_FLAGS=$FLAG" "-DCMAKE_CXX_FLAGS=$FLAG" >"$W/build-k64.log" 2>&1
  echo $? >"$W/build-k64.rc") &
EXTRA=(-DSERVEKIT_TESTS=ON)
[[ -f /usr/include/gtest/gtest.h ]] || EXTRA+=(-DGTEST_ROOT="$PWD/.deps/gtest")
env JOBS=8 BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh "${EXTRA[@]}" >"$W/build.log" 2>&1 ||
  { say "main build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
say "main build done"
wait
say "k64 build rc=$(cat "$W/build-k64.rc")"
K64=/tmp/k64-tree/build-k64
gtest_run main $B "${TESTS:-GroupedGemmCuda.*:MoECuda.*}" 150
Q="--preset qwen3-30b-a3b --quant bf16 --routing uniform --path dynamic"
for row in "t2048-1 2048" "t8192-1 8192" "t4096 4096" "t2048-2 2048" "t8192-2 8192"; do
  read -r tag t <<<"$row"
  # shellcheck disable=SC2086
  BIN=$K64/servekit bench_row "$tag-k64" -- $Q --tokens $t
  # shellcheck disable=SC2086
  bench_row "$tag-k128" -- $Q --tokens $t
done
t=$(($(left) - 10))
if ((t > 25)); then
  timeout $t $B/servekit bench moe --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192 \
    --routing uniform --check-tokens 32 --max-seconds $((t - 10)) \
    --commit "${SERVEKIT_COMMIT:-unknown}" --out "$OUT/q30.json" >"$OUT/q30.log" 2>&1
  say "q30 rc=$? $(grep -E '^qwen' "$OUT/q30.log" | awk '{print $3 ":" $6 "/" $9 "/" $11}' | tr '\n' ' ')"
fi
say done
