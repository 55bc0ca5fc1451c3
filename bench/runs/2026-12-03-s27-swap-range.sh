#!/usr/bin/env bash
# Session 27, call 2: where the swap-AB bf16 tile wins, and whether a 256 (weights) x 144 (tokens)
# swap tile beats the 128 x 144 one (bytes per MAC 0.0109 against 0.0148 and the 128x256 tile's
# 0.0117; compiled here: 168 registers, 0 spill, 4 stages against 6).
# bench/runs/bf16-swap-ab-v2.patch = bf16-swap-ab.patch with the swap tile's M and cluster M from
# SERVEKIT_SWAP_TM / SERVEKIT_SWAP_CM (default 128, 2). Three binaries: build-dev (head; small = the
# 64x128 ping-pong tile), swap128 and swap256 (the patched tree; small = the swap tile; the 256
# binary rebuilds only grouped_gemm_bf16_small_m.cu with SERVEKIT_SWAP_TM 256 defined in it).
#   rows, uniform, dynamic bf16, one round each: large (128x256, fused) / small64 / swap128 /
#   swap256 on qwen3-30b 512-8192, qwen3-235b 1024-4096, gpt-oss-120b 2048-8192, deepseek-v3
#   4096, 8192; the swap256 tile against the CPU reference (GEMM test + layer tests).
# Device (carry [".deps"], ~8 min): bash bench/runs/2026-12-03-s27-swap-range.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-560}
work_dir s27-swap-range
SW=/tmp/swap-tree
copy_tree "$SW" bench/runs/bf16-swap-ab-v2.patch
(cd "$SW" && env JOBS=8 BUILD_DIR=build-swap SERVEKIT_WERROR=OFF scripts/build.sh >"$W/build-swap.log" 2>&1;
  echo $? >"$W/build-swap.rc") &
env JOBS=8 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
say "build-dev done"
wait
say "build-swap rc=$(cat "$W/build-swap.rc")"
mkdir -p /tmp/bin128 /tmp/bin256
cp "$SW/build-swap/servekit" "$SW/build-swap/servekit_gpu_tests" /tmp/bin128/
sed -i '1i #define SERVEKIT_SWAP_TM 256' "$SW/src/cuda/grouped_gemm_bf16_small_m.cu"
(cd "$SW" && env JOBS=16 BUILD_DIR=build-swap SERVEKIT_WERROR=OFF scripts/build.sh >"$W/build-swap256.log" 2>&1;
  echo $? >"$W/build-swap256.rc"; cp build-swap/servekit build-swap/servekit_gpu_tests /tmp/bin256/) &
PIDB=$!
ROWS=("q30 --preset qwen3-30b-a3b --tokens 512,1024,2048,4096,8192"
  "q235 --preset qwen3-235b-a22b --tokens 1024,2048,4096"
  "oss --preset gpt-oss-120b --tokens 2048,4096,8192"
  "ds --preset deepseek-v3 --tokens 4096,8192")
run_rows() {  # run_rows VARIANT BIN ENV
  local v=$1 bin=$2 envv=$3 row tag args
  for row in "${ROWS[@]}"; do
    read -r tag args <<<"$row"
    # shellcheck disable=SC2086
    BIN=$bin bench_row "$tag-$v" $envv -- $args --quant bf16 --routing uniform --path dynamic
  done
}
run_rows large "$B/servekit" SERVEKIT_GEMM_TILE=large
run_rows small64 "$B/servekit" SERVEKIT_GEMM_TILE=small
run_rows swap128 /tmp/bin128/servekit SERVEKIT_GEMM_TILE=small
wait $PIDB
say "build-swap256 rc=$(cat "$W/build-swap256.rc")"
timeout 60 /tmp/bin256/servekit_gpu_tests --gtest_filter='GroupedGemmCuda.BF16SmallM:GroupedGemmCuda.BF16' \
  >"$W/tests-gemm256.log" 2>&1
say "swap256 gemm tests rc=$? $(grep -E '^\[ +(OK|FAILED) +\]' "$W/tests-gemm256.log" | tr '\n' ' ')"
run_rows swap256 /tmp/bin256/servekit SERVEKIT_GEMM_TILE=small
t=$(($(left) - 10))
if ((t > 30)); then
  SERVEKIT_GEMM_TILE=small timeout $t /tmp/bin256/servekit_gpu_tests --gtest_filter='MoECuda.*' \
    >"$W/tests-layer256.log" 2>&1
  say "swap256 layer tests rc=$? $(grep -cE '^\[       OK' "$W/tests-layer256.log") ok, failed: $(grep -E '^\[  FAILED  \] [A-Z]' "$W/tests-layer256.log" | tr '\n' ' ')"
fi
say "done"
