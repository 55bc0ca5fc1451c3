#!/usr/bin/env bash
# Prepared in session 24, not GPU-run (the session's device time ran out).
# The fused activation (SERVEKIT_DYNAMIC_FUSED_ACT=1, sm90_act_epilogue.cuh) passed its GEMM test
# bit for bit when CUTLASS's store() of D also ran, and hung whenever store() was skipped
# (s24-debug, s24-debug2; docs/perf-notes.md, twenty-fourth pass). This call:
#   1. build; GroupedGemmCuda.*FusedActivation* and MoECuda.FusedActivationMatchesThePass in the
#      merged form (CUTLASS's store of D, then the fused store; this order is compile-checked
#      only: the device ran the other)
#   2. the forms without D, each on the bf16 GEMM test in a 25 s box (a hang is a timeout):
#      SERVEKIT_DIAG_FUSED_EPI=6 (the warp groups meet at the epilogue barrier) and 5 (store()
#      with every subtile skipped); the first that passes also runs the fp8 and layer tests
#   3. A/B on issue 3's rows, one binary: SERVEKIT_DYNAMIC_FUSED_ACT=0, =1 (merged form), and =1
#      with the passing form of step 2 (qwen3-30b-a3b 2048/8192, mixtral-8x7b 2048, deepseek-v3
#      fp8_block128 8192)
# Device (carry [".deps"], ~8 min): bash bench/runs/next-fused-epi.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-470}
work_dir fused-epi
build_dev "$W/build.log"
say "build done"
T='GroupedGemmCuda.*FusedActivation*:MoECuda.FusedActivationMatchesThePass'
timeout 120 "$B/servekit_gpu_tests" --gtest_filter="$T" >"$W/tests-merged.log" 2>&1
say "merged form rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests-merged.log" | tr '\n' ' ')"
MODE=
for d in 6 5; do
  SERVEKIT_DIAG_FUSED_EPI=$d timeout 25 "$B/servekit_gpu_tests" \
    --gtest_filter='GroupedGemmCuda.BF16FusedActivation' >"$W/gemm-d$d.log" 2>&1
  rc=$?
  say "form $d rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' "$W/gemm-d$d.log" | tr '\n' ' ')"
  ((rc == 0)) && { MODE=$d; break; }
done
if [[ -n $MODE ]]; then
  SERVEKIT_DIAG_FUSED_EPI=$MODE timeout 90 "$B/servekit_gpu_tests" --gtest_filter="$T" \
    >"$W/tests-d$MODE.log" 2>&1
  say "form $MODE tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests-d$MODE.log" | tr '\n' ' ')"
fi
ROWS=("q30 --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192"
  "mix --preset mixtral-8x7b --quant bf16 --tokens 2048"
  "dsf8 --preset deepseek-v3 --quant fp8_block128 --tokens 8192")
for row in "${ROWS[@]}"; do
  read -r tag args <<<"$row"
  # shellcheck disable=SC2086
  bench_row "$tag-pass" SERVEKIT_DYNAMIC_FUSED_ACT=0 -- $args --routing uniform --path dynamic
  # shellcheck disable=SC2086
  bench_row "$tag-fused" SERVEKIT_DYNAMIC_FUSED_ACT=1 -- $args --routing uniform --path dynamic
  if [[ -n $MODE ]]; then
    # shellcheck disable=SC2086
    bench_row "$tag-fused-d$MODE" SERVEKIT_DYNAMIC_FUSED_ACT=1 SERVEKIT_DIAG_FUSED_EPI=$MODE -- \
      $args --routing uniform --path dynamic
  fi
done
say "done"
