#!/usr/bin/env bash
# Session 41, call 5: the cooperative 256x144 swap tile's cluster. Call 4's ncu (H100,
# deepseek-v3 bf16 8192, ab/2026-12-06-s41-ncu-ds) read GEMM1's weights ~2.1x from DRAM (84% of
# peak over 11.05 ms, L2 hit rate 28%): an expert's two token tiles read each weight tile apart in
# time. A 1x2 cluster multicasts the weight tile to both token tiles (2x2: and the token tile to
# two weight tiles).
#   1. three builds side by side, 5 jobs each: main (tests off) in build/; /tmp/c12-tree with
#      -DSERVEKIT_DIAG_SWAP_CLUSTER_M=1 -DSERVEKIT_DIAG_SWAP_CLUSTER_N=2 (tests on); /tmp/c22-tree
#      with 2 and 2 (tests off)
#   2. deepseek-v3 bf16 dynamic uniform 4096 and 8192 tokens (128 / 256 routed rows per expert:
#      one and two token tiles), main / c12 / c22
#   3. on c12: the swap GEMM tests (groups of 0-300 rows: odd token-tile counts) and the layer's
#   4. deepseek-v3 8192 again, main / c12 / c22, with what is left
# Prediction: 8192 GEMM1 11.0 -> ~7 ms and GEMM2 4.9 -> ~3.5 ms under ncu, the layer -20 to -30%;
# 4096 slower on c12 / c22 (every group's single token tile padded to two).
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s41-swap-cluster.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-420}
B=build
work_dir swap-cluster
EXTRA=()
[[ -f /usr/include/gtest/gtest.h ]] || EXTRA+=(-DGTEST_ROOT="$PWD/.deps/gtest")
build_tree() {  # TAG TESTS FLAGS: /tmp/TAG-tree built in build-TAG, 5 jobs; rc into $W
  local tag=$1 tests=$2 flags=$3
  copy_tree "/tmp/$tag-tree"
  (cd "/tmp/$tag-tree" && env JOBS=5 BUILD_DIR="build-$tag" SERVEKIT_WERROR=OFF scripts/build.sh \
    "-DSERVEKIT_TESTS=$tests" "-DCMAKE_CUDA_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" "${EXTRA[@]}" \
    >"$W/build-$tag.log" 2>&1
    echo $? >"$W/build-$tag.rc")
}
build_tree c12 ON "-DSERVEKIT_DIAG_SWAP_CLUSTER_M=1 -DSERVEKIT_DIAG_SWAP_CLUSTER_N=2" &
build_tree c22 OFF "-DSERVEKIT_DIAG_SWAP_CLUSTER_M=2 -DSERVEKIT_DIAG_SWAP_CLUSTER_N=2" &
env JOBS=6 BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF "${EXTRA[@]}" \
  >"$W/build.log" 2>&1 || { say "main build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
wait
say "builds done: c12 rc=$(cat "$W/build-c12.rc"), c22 rc=$(cat "$W/build-c22.rc")"
C12=/tmp/c12-tree/build-c12
C22=/tmp/c22-tree/build-c22
D="--preset deepseek-v3 --quant bf16 --routing uniform --path dynamic"
# shellcheck disable=SC2086
bench_row ds-1-main -- $D --tokens 4096,8192
# shellcheck disable=SC2086
BIN=$C12/servekit bench_row ds-1-c12 -- $D --tokens 4096,8192
# shellcheck disable=SC2086
BIN=$C22/servekit bench_row ds-1-c22 -- $D --tokens 4096,8192
t=$(($(left) - 20)); ((t > 90)) && t=90
((t > 20)) && gtest_run c12 "$C12" \
  'GroupedGemmCuda.BF16Swap*:GroupedGemmCuda.BF16PicksTheTilePerRun:MoECuda.SwapTileMatchesReference:MoECuda.TokenCounts' $t
for tag in main c12 c22; do
  bin=$B/servekit
  [[ $tag == c12 ]] && bin=$C12/servekit
  [[ $tag == c22 ]] && bin=$C22/servekit
  # shellcheck disable=SC2086
  BIN=$bin bench_row "ds-2-$tag" -- $D --tokens 8192
done
say done
