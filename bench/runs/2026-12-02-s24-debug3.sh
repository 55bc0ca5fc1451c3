#!/usr/bin/env bash
# Session 24, fourth call. s24-debug2: the fused epilogue gives the separate pass's bits when
# CUTLASS's store() also runs (diag 4) and hangs whenever store() is skipped. Two cheaper forms:
#   6: the fused store, then the two warp groups meet at CUTLASS's epilogue named barrier
#   5: the fused store, then CUTLASS's store() with every subtile skipped (no smem, no TMA store)
# The first of 6, 5, 4 that passes the GEMM test (25 s box) runs the layer test, then the A/B of
# SERVEKIT_DYNAMIC_FUSED_ACT=0 vs 1 on issue 3's rows (one round, as the budget allows).
# Device (carry [".deps"], ~6 min): bash bench/runs/2026-12-02-s24-debug3.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-345}
work_dir s24-debug3
build_dev "$W/build.log"
say "build done"
MODE=
for d in 6 5 4; do
  SERVEKIT_DIAG_FUSED_EPI=$d SERVEKIT_DIAG_FUSED_D=1 timeout 25 "$B/servekit_gpu_tests" \
    --gtest_filter='GroupedGemmCuda.BF16FusedActivation' >"$W/gemm-d$d.log" 2>&1
  rc=$?
  say "gemm diag $d rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' "$W/gemm-d$d.log" | tr '\n' ' ')"
  ((rc == 0)) && { MODE=$d; break; }
done
[[ -z $MODE ]] && { say "no mode passed"; exit 0; }
export SERVEKIT_DIAG_FUSED_EPI=$MODE
timeout 60 "$B/servekit_gpu_tests" \
  --gtest_filter='GroupedGemmCuda.FP8Block128FusedActivation:MoECuda.FusedActivationMatchesThePass' \
  >"$W/tests.log" 2>&1
say "tests mode $MODE rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
ROWS=("q30 --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192"
  "mix --preset mixtral-8x7b --quant bf16 --tokens 2048"
  "dsf8 --preset deepseek-v3 --quant fp8_block128 --tokens 8192")
for row in "${ROWS[@]}"; do
  read -r tag args <<<"$row"
  for m in 0 1; do
    # shellcheck disable=SC2086
    bench_row "$tag-f$m" SERVEKIT_DYNAMIC_FUSED_ACT=$m -- $args --routing uniform --path dynamic
  done
done
say "done"
