#!/usr/bin/env bash
# Session 34, call 5: bf16's swap-AB tile as 128 weight rows x 144 tokens, ping-pong, with the
# fused activation (W13 in 64-row gate/up blocks for bf16), against main's cooperative 256x144
# fused tile. The ping-pong tile runs one warp group's epilogue under the other's mainloop; the
# cut forward of call 4 put the cooperative tile's exposed epilogue at ~27 us of qwen3-30b's GEMM1
# at 2048 tokens. Build pp = main built with -DSERVEKIT_DIAG_SWAP_PINGPONG=1 (gemm_tile_config.h).
#   1. both builds in parallel (8 jobs each)
#   2. GPU tests on both (in parallel): pp: the fused-activation GEMM tests (the swap tile's bit for
#      bit against GEMM1 + the 64-row-interleaved pass; the 128x256 tile's on the 64-row
#      interleave), BF16Swap, the layer tests that run the swap tile, the pass on interleaved
#      output; main: the same set (the refactored 128x256 store on the 128-row interleave)
#   3. rows (dynamic bf16, uniform), main / pp: qwen3-30b 2048 and qwen3-235b 2048 two rounds,
#      gpt-oss-120b 4096 (I = 2880: no fusion on either, the schedules alone) and deepseek-v3 8192
#      one round
# Device (carry [".deps"], ~6 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s34-swap-pp.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-370}
work_dir s34-swap-pp
PP=/tmp/pp-tree
copy_tree "$PP"
F=-DSERVEKIT_DIAG_SWAP_PINGPONG=1
(cd "$PP" && env JOBS=8 BUILD_DIR=build-pp SERVEKIT_WERROR=OFF scripts/build.sh \
  "-DCMAKE_CUDA_FLAGS=$F" "-DCMAKE_CXX_FLAGS=$F" >"$W/build-pp.log" 2>&1; echo $? >"$W/build-pp.rc") &
env JOBS=8 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
say "main build done"
wait
say "pp build rc=$(cat "$W/build-pp.rc")"
grep -E "error" "$W/build-pp.log" | head -n 10 >>"$W/$WORK_NAME.txt"
PPB=$PP/build-pp
for tu in grouped_gemm_bf16_swap grouped_gemm_bf16; do
  cuobjdump --dump-resource-usage "$PPB/CMakeFiles/servekit.dir/src/cuda/$tu.cu.o" 2>&1 |
    grep -E "REG:" | sed "s|^|pp $tu |" | tail -n 1 >>"$W/$WORK_NAME.txt"
done
FILTER='GroupedGemmCuda.*FusedActivation*:GroupedGemmCuda.BF16Swap:MoECuda.FusedActivationMatchesThePass:MoECuda.SwapTileMatchesReference:MoEQuantCuda.Activation*'
timeout 150 "$PPB/servekit_gpu_tests" --gtest_filter="$FILTER" >"$W/tests-pp.log" 2>&1 &
timeout 150 "$B/servekit_gpu_tests" --gtest_filter="$FILTER" >"$W/tests-main.log" 2>&1
say "main tests rc=$? $(grep -cE '^\[ +OK \]' "$W/tests-main.log") ok, $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests-main.log" | tr '\n' ' ')"
wait
say "pp tests $(grep -cE '^\[ +OK \]' "$W/tests-pp.log") ok, $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests-pp.log" | tr '\n' ' ')"
grep -hE "^\[  FAILED|Failure|vs pass|byte " "$W/tests-main.log" "$W/tests-pp.log" | head -n 20 >>"$W/$WORK_NAME.txt"
DYN="--quant bf16 --routing uniform --path dynamic"
for rep in 1 2; do
  for row in "q30 --preset qwen3-30b-a3b --tokens 2048" "q235 --preset qwen3-235b-a22b --tokens 2048"; do
    read -r tag args <<<"$row"
    # shellcheck disable=SC2086
    bench_row "$tag-main-$rep" -- $args $DYN
    # shellcheck disable=SC2086
    BIN=$PPB/servekit bench_row "$tag-pp-$rep" -- $args $DYN
  done
done
for row in "oss --preset gpt-oss-120b --tokens 4096" "ds --preset deepseek-v3 --tokens 8192"; do
  read -r tag args <<<"$row"
  # shellcheck disable=SC2086
  bench_row "$tag-main" -- $args $DYN
  # shellcheck disable=SC2086
  BIN=$PPB/servekit bench_row "$tag-pp" -- $args $DYN
done
say "done"
