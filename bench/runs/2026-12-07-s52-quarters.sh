#!/usr/bin/env bash
# Session 52: fp8_block128's 128x256 tile with the promotion in 64-column quarters, each promoted
# under the warp group's next quarter's wgmma (src/cuda/kernels/gemm/sm90_blockwise_quarters.cuh,
# build flag SERVEKIT_DIAG_FP8_QUARTERS=1), against main's halves mainloop, one lease:
#   1. a copy of the tree with bench/runs/s52-quarters.patch applied, built with the flag
#      (servekit and the GPU tests, every core; main's build folder `build` is the one
#      scripts/gpu-check.sh left on this lease, built here if absent);
#   2. the flagged build's GEMM and layer GPU tests (every fp8_block128 GEMM test, the quantized
#      layer tests), then memcheck of its fp8_block128 GEMM tests;
#   3. deepseek-v3 fp8_block128 at 8192 tokens, uniform, dynamic path, `--peer off`: the layer and
#      GEMM1 alone (SERVEKIT_DIAG_DYNAMIC_STOP=3, which reports fail / rc=1 by design: a stopped
#      forward writes no output), main and quarters alternated, two rounds; the layer at 2048.
# Prediction: per k-tile and warp group the halves mainloop promotes 2 x 64 FFMA with none of its
# own wgmma in flight, the quarters 32; if the tensor pipe idles for that (57% busy in session 41's
# ncu), GEMM1 and GEMM2 -5 to -15% (deepseek-v3 fp8 8192 layer 9186 -> ~8000-8700 us on an H200);
# if the m64n64 wgmma's extra A reads from shared memory bound it instead, level or slower.
# Ran once, session 52 at 1cf04f3 (the change then in the tree, the copy only built with the flag) on
# an H100 (BUDGET_S=540; bench/results/h100/ab/2026-12-07-s52-quarters): tests 46/46 and memcheck 0
# errors on the quarters build; layer medians main 8560.2 / 8512.5, quarters 8836.7 / 8684.0 us;
# GEMM1 (stop 3) main 5531.2 / 5555.4, quarters 5604.8 / 5700.5: slower, so the change left main
# for the patch (which applies to main's header since) and this script applies it.
# Device (carry [".deps"]), right after `scripts/gpu-check.sh` on the same lease:
#   SERVEKIT_COMMIT=<sha> BUDGET_S=560 bash bench/runs/2026-12-07-s52-quarters.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-560}
work_dir_out s52-quarters
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
B=build
[[ -x build/servekit ]] || build_tests "$W/build-main.log"
extra=()
[[ -f /usr/include/gtest/gtest.h ]] || extra+=(-DGTEST_ROOT="$PWD/.deps/gtest")
copy_tree /tmp/q-tree bench/runs/s52-quarters.patch
(cd /tmp/q-tree && cmake -S . -B build-q -G Ninja -DSERVEKIT_WERROR=OFF -DSERVEKIT_TESTS=ON "${extra[@]}" \
  "-DCMAKE_CUDA_FLAGS=-DSERVEKIT_DIAG_FP8_QUARTERS=1" >/dev/null &&
  cmake --build build-q -j "$(nproc)" --target servekit servekit_gpu_tests) >"$W/build-q.log" 2>&1 ||
  { say "quarters build failed: $(grep -E ' error|C75' "$W/build-q.log" | head -n 5)"; exit 1; }
QB=/tmp/q-tree/build-q
say "quarters built; C7514 lines: $(grep -c C7514 "$W/build-q.log")"
gtest_run quarters "$QB" '*FP8Block128*:*Fp8Block128*:MoEQuantCuda.*:*MoECudaQuant*:MoECuda.*' 200
memcheck_run quarters "$QB" 'GroupedGemmCuda.FP8Block128*'
ds=(--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic)
for round in 1 2; do
  BIN=build/servekit bench_row "main-8192-$round" -- "${ds[@]}" --tokens 8192
  BIN=$QB/servekit bench_row "quarters-8192-$round" -- "${ds[@]}" --tokens 8192
  BIN=build/servekit bench_row "main-stop3-$round" SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}" --tokens 8192
  BIN=$QB/servekit bench_row "quarters-stop3-$round" SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}" --tokens 8192
done
BIN=build/servekit bench_row main-2048 -- "${ds[@]}" --tokens 2048
BIN=$QB/servekit bench_row quarters-2048 -- "${ds[@]}" --tokens 2048
say done
