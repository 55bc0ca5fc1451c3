#!/usr/bin/env bash
# Prepared in session 41 (not yet run): the pair swap tile (swap_pair_tile_config: the cooperative
# 256x144 swap tile in a 1x2 cluster along the tokens, the weight tile multicast to two token
# tiles; SERVEKIT_GEMM_TILE=pair forces it, the auto pick leaves it off) against the 2x1 swap tile
# the auto pick takes, and the 2x2 clusters as a build flag.
# Why: session 41's ncu (H100, ab/2026-12-06-s41-ncu-ds) read deepseek-v3 bf16 8192's GEMM1 at 84%
# of DRAM peak over 11.05 ms, ~31 GB against 15 GB of weights (L2 hit rate 28%): an expert's two
# token tiles read each weight tile apart in time.
#   1. two builds side by side: main (tests on, 10 jobs) in build/; /tmp/c22-tree with
#      -DSERVEKIT_DIAG_SWAP_PAIR_CLUSTER_M=2 (the pair in a 2x2 cluster) and
#      -DSERVEKIT_DIAG_SWAP_PP_CLUSTER_N=2 (the ping-pong swap tile in a 2x2 cluster), tests off
#   2. main: the pair tile's GEMM tests against the fp64 host GEMM (the tile and its fused
#      activation, every B stride, the forced choice and the routing hint)
#   3. dynamic bf16 uniform, --peer off, same lease: deepseek-v3 8192 auto / pair / c22 pair;
#      qwen3-235b 4096 and gpt-oss-120b 8192 (256 routed rows per expert) auto / pair; qwen3-30b
#      8192 (512 rows, ping-pong swap tile) main / c22; deepseek-v3 8192 auto / pair again
#   4. ncu of the pair's two GEMMs at deepseek-v3 8192 (DRAM bytes against the weights')
#   5. main: every other GroupedGemmCuda test and the MoECuda layer tests, then compute-sanitizer
#      memcheck of the pair tile's GEMM tests, with what is left
# Prediction: deepseek-v3 8192 GEMM1 DRAM bytes halve; the layer -20 to -30% (H100: 15.5 ms ->
# ~11-12); qwen3-235b 4096 and gpt-oss 8192 -5 to -15%; qwen3-30b 8192 with the 2x2 ping-pong
# tile -5 to -10% (L2 bytes per MAC -32%, its GEMMs at 88-91% of L2 throughput).
# Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s42-pair.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-570}
B=build
work_dir pair
nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tee -a "$W/$WORK_NAME.txt"
EXTRA=()
[[ -f /usr/include/gtest/gtest.h ]] || EXTRA+=(-DGTEST_ROOT="$PWD/.deps/gtest")
F="-DSERVEKIT_DIAG_SWAP_PAIR_CLUSTER_M=2 -DSERVEKIT_DIAG_SWAP_PP_CLUSTER_N=2"
copy_tree /tmp/c22-tree
(cd /tmp/c22-tree && env JOBS=6 BUILD_DIR=build-c22 SERVEKIT_WERROR=OFF scripts/build.sh \
  -DSERVEKIT_TESTS=OFF "-DCMAKE_CUDA_FLAGS=$F" "-DCMAKE_CXX_FLAGS=$F" >"$W/build-c22.log" 2>&1
  echo $? >"$W/build-c22.rc") &
env JOBS=10 BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=ON "${EXTRA[@]}" \
  >"$W/build.log" 2>&1 || { say "main build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
say "main built"
gtest_run pair "$B" 'GroupedGemmCuda.BF16SwapPair*:GroupedGemmCuda.PairTileChoiceAndRoutingHint' 60
# SMs a cluster shape can use (2x2 clusters must fit whole in a GPC)
nvcc -O3 -arch=sm_90a -o "$W/cluster_occupancy" bench/tools/cluster_occupancy.cu >"$W/occ.log" 2>&1 &&
  "$W/cluster_occupancy" >>"$W/occ.log" 2>&1
cat "$W/occ.log" >>"$W/$WORK_NAME.txt"
wait
say "c22 build rc=$(cat "$W/build-c22.rc")"
C22=/tmp/c22-tree/build-c22/servekit
D="--quant bf16 --routing uniform --path dynamic"
# shellcheck disable=SC2086
ds_round() {
  bench_row "ds-$1-auto" -- --preset deepseek-v3 $D --tokens 8192
  bench_row "ds-$1-pair" SERVEKIT_GEMM_TILE=pair -- --preset deepseek-v3 $D --tokens 8192
}
ds_round 1
# shellcheck disable=SC2086
BIN=$C22 bench_row ds-1-c22 SERVEKIT_GEMM_TILE=pair -- --preset deepseek-v3 $D --tokens 8192
for row in "q235 qwen3-235b-a22b 4096" "oss gpt-oss-120b 8192"; do
  read -r tag preset t <<<"$row"
  # shellcheck disable=SC2086
  bench_row "$tag-auto" -- --preset $preset $D --tokens $t
  # shellcheck disable=SC2086
  bench_row "$tag-pair" SERVEKIT_GEMM_TILE=pair -- --preset $preset $D --tokens $t
done
for round in 1 2; do
  # shellcheck disable=SC2086
  bench_row "q30-$round-main" -- --preset qwen3-30b-a3b $D --tokens 8192
  # shellcheck disable=SC2086
  BIN=$C22 bench_row "q30-$round-c22" -- --preset qwen3-30b-a3b $D --tokens 8192
done
ds_round 2
# ncu of the pair's two GEMMs (session 41 measured the 2x1 swap tile's: ab/2026-12-06-s41-ncu-ds)
profile_row ds-pair "--preset deepseek-v3 --quant bf16 --path dynamic --tokens 8192" \
  "$NCU_GEMM_DETAILS" SERVEKIT_GEMM_TILE=pair
t=$(($(left) - 40)); ((t > 150)) && t=150
((t > 30)) && gtest_run rest "$B" 'GroupedGemmCuda.*:MoECuda.*:-GroupedGemmCuda.BF16SwapPair*' $t
memcheck_run pair "$B" 'GroupedGemmCuda.BF16SwapPair'
say done
