#!/usr/bin/env bash
# Session 48, the one call that 14 refused starts left room for (~480 s of device time, any card):
# the GPU tests that the swap-AB and 128x256 fused stores (sm90_act_epilogue.cuh) and
# activation_math.cuh's one_plus_exp reach, then the stop rows of 2026-12-16-s48-first.sh.
#   1. every fused-activation test (bit for bit against the pass: every tile, three activations,
#      with and without a bias, bf16 / e4m3 / e4m3-as-bf16), the static path's format tests (its
#      GEMM1 epilogue activates), the layer tests, the activation pass's (MoEQuantCuda), the
#      cuBLAS peer's and the layer's quant cases: ~160 s of the suite's ~245;
#   2. qwen3-235b int4 and deepseek-v3 fp8_block128 at 8192 tokens, GEMM1 with the activation
#      (stop 3) and alone (the pass's stop 3), while the budget lasts.
# Prediction: all pass; q235 GEMM1 fused ~2650 us on an H100 (2750.1 before), the fused-store
# overhead over GEMM1 alone down from ~265 to ~165 us; deepseek-v3's ~1% smaller.
# Not run in session 48 (no machine started); like the first call, it needs `git merge s48-stores`.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=330 bash bench/runs/2026-12-16-s48-short.sh
# Session 49 called it on its rebuild of the same stores (c052ccb; the branch was lost) with the
# ~340 s of device time that refused and lost calls left (its default FILTER, ROWS_S=30,
# BUDGET_S=290): refused, too little time to start a machine. Main now keeps the old stores;
# the change is bench/runs/s49-stores.patch (2026-12-17-s49-stores-short.sh applies it).
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-330}
B=build
work_dir short
# The logs straight under OUT: a call stopped at the device-time limit runs no exit trap.
W=$OUT/short
mkdir -p "$W"
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
# FILTER narrows the tests when the budget is shorter still ('GroupedGemmCuda.*FusedActivation*',
# ~15 s); ROWS_S: seconds kept for the rows (45).
gtest_run act "$B" "${FILTER:-*FusedActivation*:Formats/StaticMoECuda.*:MoECuda.*:MoEQuantCuda.*:CublasPeer.*:AllFormats/MoECudaQuant.*}" $(($(left) - ${ROWS_S:-45}))
q235=(--preset qwen3-235b-a22b --quant int4_w4a16 --routing uniform --path dynamic --tokens 8192)
ds=(--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic --tokens 8192)
bench_row stop3-fused SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${q235[@]}"
bench_row stop3-pass SERVEKIT_DYNAMIC_FUSED_ACT=0 SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${q235[@]}"
bench_row ds-stop3-fused SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
bench_row ds-stop3-pass SERVEKIT_DYNAMIC_FUSED_ACT=0 SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
say done
