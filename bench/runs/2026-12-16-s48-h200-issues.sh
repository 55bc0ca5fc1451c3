#!/usr/bin/env bash
# Session 48, on an H200 warm from 2026-12-16-s48-first.sh (its build in build/, its tests passed
# there): issues 3's and 4's target rows at the commit, the sanitizer stages (memcheck of the
# bench rows, racecheck), no test stage (the first call ran the whole suite). The first H200 rows
# since session 43 (c3c9065): sessions 44-48 changed the bias routers' "uniform" rows, the pair
# pick's default, the 4-bit cutovers, the dynamic path's int4 GEMM and the fused stores. On any
# other card it stops at once.
# Prediction: issue 3's bf16 and fp8 rows within 1-2% of session 43's (qwen3-30b 2048 / 8192
# 434.9 / 1210.3 us, deepseek-v3 fp8 8192 9133.5, bf16 8192 14226.9; the fp8 one ~1% faster with
# the 128x256 store); issue 4's 4-bit static rows as session 43's.
# Not run in session 48 (no machine started).
# Device (carry [".deps"], ~6 min warm): SERVEKIT_COMMIT=<sha> BUDGET_S=420 bash bench/runs/2026-12-16-s48-h200-issues.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
case $name in
  *H200*) ;;
  *) echo "not an H200 ($name): stopping"; exit 3 ;;
esac
env OUT="${OUT:-$PWD/out}" BENCH_SET=issues RUN_TESTS=sanitize BUILD_DIR=build \
  BUDGET_S="${BUDGET_S:-420}" scripts/gpu-check.sh
