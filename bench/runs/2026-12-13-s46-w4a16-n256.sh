#!/usr/bin/env bash
# Session 46, any card: the int4 GEMM's 256-token tile (grouped_gemm_w4a16_n256.cu: 128 weight
# rows x 256 tokens, 5 stages, 168 registers, no spill), picked above kW4A16MidTileMaxRows = 192
# expected rows per routed expert (a guess: not measured before this call), and what sessions 45-46
# left un-run on a GPU.
#   1. build with tests; the int4 GEMM's tests on all three tiles and the forced-tile switch, the
#      fixed MoECuda.SwapTileMatchesReference, the graph test that now covers int4, the layer
#      with the int4 GEMM on and off.
#   2. qwen3-235b-a22b int4, dynamic, uniform, --peer off: 1024-8192 tokens with the tile forced
#      to 128 (session 45's pick there) and to 256, and auto (the new pick); the bf16 copy at 4096
#      and 8192 beside them (session 45: 11% faster than the int4 GEMM at 4096).
#   3. if SUITE=1, in what is left of BUDGET_S: qwen3-235b int4 on both paths at 64-256 tokens
#      (the cutover's crossing, session 45's s45-last.sh, never run), then the whole GPU suite
#      (d71ce56's refactor of the CUTLASS runners' setup touches every GEMM, not GPU-run yet).
#      A second call on the same lease reuses build/: SKIP_ROWS=1 SUITE=1 runs only step 3.
# Prediction: tests pass. 4096 tokens (256 rows per expert): the 256 tile ~10-15% under the 128
# one (2875 us on an H100), level with or under the bf16 copy (2585); 8192: ~15% under; 2048 (128
# rows): the 256 tile slower than 128 (half-empty tiles), so auto keeps 128 there.
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha> BUDGET_S=500 bash bench/runs/2026-12-13-s46-w4a16-n256.sh
# then SERVEKIT_COMMIT=<sha> BUDGET_S=560 SKIP_ROWS=1 SUITE=1 bash bench/runs/2026-12-13-s46-w4a16-n256.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-570}
B=build
work_dir n256
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
if [[ ${SKIP_ROWS:-0} != 1 ]]; then
  gtest_run w4a16 "$B" 'GroupedGemmCuda.W4A16*:GroupedGemmW4A16Layout.*:MoECuda.SwapTileMatchesReference:MoECuda.GraphReplayNoAllocationDeterminism:MoECuda.W4A16GemmOnAndOff' 200
  for tile in 128 256 auto; do
    bench_row "q235-tile-$tile" SERVEKIT_GEMM_W4A16_TILE=$tile -- --preset qwen3-235b-a22b \
      --quant int4_w4a16 --routing uniform --path dynamic --tokens 1024,2048,4096,8192
  done
  bench_row q235-copy SERVEKIT_DYNAMIC_W4A16=0 -- --preset qwen3-235b-a22b --quant int4_w4a16 \
    --routing uniform --path dynamic --tokens 4096,8192
fi
if [[ ${SUITE:-0} == 1 ]]; then
  # the pick as merged after step 2 (kW4A16MidTileMaxRows = 384: 128 at 4096 tokens, 256 at 8192)
  bench_row q235-auto -- --preset qwen3-235b-a22b --quant int4_w4a16 --routing uniform \
    --path dynamic --tokens 4096,8192
  bench_row q235-both -- --preset qwen3-235b-a22b --quant int4_w4a16 --routing uniform \
    --path both --tokens 64,128,192,256
  t=$(($(left) - 20))
  ((t > 60)) && gpu_suite $t
fi
say done
