#!/usr/bin/env bash
# Session 43, last call: the ping-pong swap tile at the k-step-64 default (gemm_tile_config.h):
#   1. build with tests (every core)
#   2. the GEMM and layer GPU tests (GroupedGemmCuda.*, MoECuda.*), time-boxed
#   3. qwen3-30b bf16 at 2048 and 8192 tokens with the cuBLAS peer, 32 tokens checked
# Prediction (H200): 2048 ~439 us, 8192 ~1170 us (call 3's k64 build).
# Device (carry [".deps"], ~3-4 min): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-09-s43-k64.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-240}
B=build
work_dir k64
nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tee -a "$W/$WORK_NAME.txt"
build_tests "$W/build.log"
t=$(($(left) - 45)); ((t > 120)) && t=120
gtest_run gemm-layer $B 'GroupedGemmCuda.*:MoECuda.*' $t
((t = $(left) - 5)) && ((t > 20)) && timeout $t $B/servekit bench moe --preset qwen3-30b-a3b --quant bf16 \
  --tokens 2048,8192 --routing uniform --check-tokens 32 --commit "${SERVEKIT_COMMIT:-unknown}" \
  --out "$W/q30.json" >"$W/q30.log" 2>&1
say "q30 rc=$? $(grep -E '^qwen' "$W/q30.log" | awk '{print $3 ":" $6 "/" $8}' | tr '\n' ' ')"
