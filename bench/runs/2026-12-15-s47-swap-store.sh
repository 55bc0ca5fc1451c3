#!/usr/bin/env bash
# Session 47, fifth call: the swap-AB fused store with fewer instructions (its SASS had ~56 per
# stored bf16 pair of two SwiGLU activations: the bias reloaded per pair, a 64-bit address
# multiply per store, a branch around each store, per-value bf16 rounding, and __expf's denormal
# fixups; ab/2026-12-06-s47-ncu showed the int4 GEMM1's fused epilogue +16% instructions).
#   1. the fused tests of every swap-AB tile (bit for bit against the pass) and the 128x256
#      tiles' (the activation's exp changed form, bit for bit the same), the int4 layer;
#   2. qwen3-235b int4 at 8192 tokens: GEMM1 with the activation (stop 3), two rounds, and GEMM1
#      alone (the pass's stop 3), against call 2's 2750.1 / 2485.2 us; the layer fused and not
#      at 4096 and 8192, two rounds.
# The new store's SASS (cuobjdump here): SwiGLU ~27 instructions a pair without a bias (~32 with),
# against ~56 before; the predicated st.global.cg replaces the branch and the generic store.
# Prediction: GEMM1 fused ~100 us faster at 8192 (~2650 us against 2750), the layer 1.5-2% ahead
# of the pass.
# Device (carry [".deps"], ~5 min on a fresh machine): SERVEKIT_COMMIT=<sha> BUDGET_S=230 bash bench/runs/2026-12-15-s47-swap-store.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-230}
B=build
work_dir swapstore
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
gtest_run fused "$B" '*FusedActivation*:MoECuda.W4A16GemmOnAndOff' 60
q235=(--preset qwen3-235b-a22b --quant int4_w4a16 --routing uniform --path dynamic)
bench_row stop3-fused-0 SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${q235[@]}" --tokens 8192
bench_row stop3-pass SERVEKIT_DYNAMIC_FUSED_ACT=0 SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${q235[@]}" --tokens 8192
bench_row stop3-fused-1 SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${q235[@]}" --tokens 8192
for round in 0 1; do
  bench_row "q235-fused-$round" -- "${q235[@]}" --tokens 4096,8192
  bench_row "q235-pass-$round" SERVEKIT_DYNAMIC_FUSED_ACT=0 -- "${q235[@]}" --tokens 4096,8192
done
say done
