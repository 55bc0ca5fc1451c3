#!/usr/bin/env bash
# Session 49, third try at the stores' call with ~520 s of device time left (the first try lost its
# machine mid-call, two starts were refused): correctness first, no old tree. Not run either:
# the device time left was too little to start a machine. It applies bench/runs/s49-stores.patch
# to the device's copy of the tree first (main keeps the GPU-checked stores until it has run).
#   1. build this tree with tests on every core, then the whole GPU suite (every fused test: bit
#      for bit against the pass on every fused tile, three activations, with and without a bias,
#      bf16 / e4m3 / e4m3-as-bf16), boxed to end 20 s before the budget;
#   2. with what is left (bench_row skips a row under 35 s): GEMM1 with its activation (stop 3) at 8192 tokens, qwen3-235b int4 and
#      deepseek-v3 fp8_block128, then deepseek-v3's layer; on an H200 they compare with call 1's
#      rows at a12e3a0 (another lease: differences under ~2% are not evidence).
# Prediction: suite passes (160 + the GPU tests added since 4b9a7ee). Stop 3 with the activation
# from 2926.0 to ~2880-2900 us (qwen3-235b int4) and 5850.0 to ~5710-5770 (deepseek-v3 fp8) on
# an H200, as 2026-12-17-s49-stores.sh says.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=370 bash bench/runs/2026-12-17-s49-stores-short.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-370}
work_dir_out s49-short
patch -p1 <bench/runs/s49-stores.patch >/dev/null || { say "bench/runs/s49-stores.patch does not apply"; exit 1; }
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
t=$(($(left) - 20))
((t > 260)) && t=260
gpu_suite "$t"
q235=(--preset qwen3-235b-a22b --quant int4_w4a16 --routing uniform --path dynamic --tokens 8192)
ds=(--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic --tokens 8192)
bench_row q235-stop3-new SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${q235[@]}"
bench_row ds-stop3-new SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
bench_row ds-new -- "${ds[@]}"
say done
