#!/usr/bin/env bash
# Session 45, last call (any card): the fixed premise of MoECuda.SwapTileMatchesReference (int4
# there runs the bf16 GEMMs on its dequantized copy, SERVEKIT_DYNAMIC_W4A16=0; the suite of call 2
# had it fail only on the kernel names, the int4 GEMM having become the default), the int4 GEMM's
# tests again, then qwen3-235b-a22b int4 on both paths at 64-256 tokens: where the static path
# hands over to the int4 GEMM (call 2: int4 GEMM 784.5 us against static 1016.1 at 256 tokens;
# session 44: static 545.7 / 666.1 at 64 / 128).
# Prediction: tests pass; the int4 GEMM flat at ~770-785 us below 256 tokens (one 64-token tile
# per expert, conversion-bound), so the static path ahead at 64 and 128, behind from ~192.
# Device (carry [".deps"], ~4-5 min): SERVEKIT_COMMIT=<sha> BUDGET_S=330 bash bench/runs/2026-12-12-s45-last.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-330}
B=build
work_dir last
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
gtest_run fixed "$B" 'MoECuda.SwapTileMatchesReference:GroupedGemmCuda.W4A16*:MoECuda.W4A16GemmOnAndOff' 120
bench_row q235-both -- --preset qwen3-235b-a22b --quant int4_w4a16 --routing uniform --path both \
  --tokens 64,128,192,256
say done
