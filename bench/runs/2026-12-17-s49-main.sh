#!/usr/bin/env bash
# Session 49, first call, any card (an H200 wanted): main as it stands (kernel sources as at
# 76aa47d, whose whole GPU suite passed on an H100 at 4b9a7ee in session 47):
#   1. scripts/gpu-check.sh with BENCH_SET=issues and the sanitizer stages (no ctest stage):
#      issues 3's and 4's target rows, the first on an H200 since session 43 (c3c9065) if one
#      comes; sessions 44-47 changed the bias routers' "uniform" rows, the pair pick's default,
#      the 4-bit cutovers and the dynamic path's int4 GEMM (with its fused activation);
#   2. with what is left, the stop rows of the fused stores' A/B to come: qwen3-235b int4 and
#      deepseek-v3 fp8_block128 at 8192 tokens, GEMM1 with its activation (stop 3) and with the
#      separate pass.
# Prediction (H200): issue 3's rows within 1-2% of session 43's (qwen3-30b 2048 / 8192 434.9 /
# 1210.3 us, deepseek-v3 fp8 8192 9133.5, bf16 8192 14226.9); issue 4's 4-bit static rows as
# session 43's (qwen3-235b int4 8 / 32 tokens 182.2 / 399.4 us); the dynamic int4 rows faster than
# session 43's (458.8 / 1021.5 us at 8 / 32 tokens, before the int4 GEMM).
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=575 bash bench/runs/2026-12-17-s49-main.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-575}
work_dir s49-main
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
env OUT="$OUT/check" BENCH_SET=issues RUN_TESTS=sanitize BUILD_DIR="$B" \
  BUDGET_S=$(($(left) - 110)) scripts/gpu-check.sh >"$W/gpu-check.log" 2>&1
say "gpu-check rc=$?"
tail -n 12 "$OUT/check/summary.txt" >>"$W/$WORK_NAME.txt" 2>/dev/null
q235=(--preset qwen3-235b-a22b --quant int4_w4a16 --routing uniform --path dynamic --tokens 8192)
ds=(--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic --tokens 8192)
bench_row stop3-fused SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${q235[@]}"
bench_row stop3-pass SERVEKIT_DYNAMIC_FUSED_ACT=0 SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${q235[@]}"
bench_row ds-stop3-fused SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
bench_row ds-stop3-pass SERVEKIT_DYNAMIC_FUSED_ACT=0 SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
say done
