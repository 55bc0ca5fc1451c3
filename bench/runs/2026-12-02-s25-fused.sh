#!/usr/bin/env bash
# Session 25, second device call (carry [".deps"], ~7 min). The fused activation without D:
# the hang of session 24 was the epilogue load pipeline (a fused tile now releases its stages
# itself; sm90_act_epilogue.cuh), so a fused GEMM1 writes A2 and no H1.
#   1. build; the fused-activation GPU tests (the fused run must leave D's poison) and the layer
#      test; memcheck of the fused layer on the tiny preset (bf16, fp8_block128)
#   2. A/B on issue 3's rows, pass / fused / pass / fused, one binary (the lease drifts: session
#      25's first call had the same kernels 10% apart between rows), and GEMM1 alone: the stop
#      rows (SERVEKIT_DIAG_DYNAMIC_STOP) 3 fused (GEMM1 with the activation) against 4 pass
#      (GEMM1 and the pass)
# Device: bash bench/runs/2026-12-02-s25-fused.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-520}
work_dir s25-fused
build_dev "$W/build.log"
say "build done"
T='GroupedGemmCuda.*FusedActivation*:MoECuda.FusedActivationMatchesThePass:GroupedGemmCuda.BF16:GroupedGemmCuda.FP8Block128'
timeout 120 "$B/servekit_gpu_tests" --gtest_filter="$T" >"$W/tests.log" 2>&1
say "tests rc=$? $(grep -E '^\[ *(OK|FAILED) \]|^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for q in bf16 fp8_block128; do
  SERVEKIT_DYNAMIC_FUSED_ACT=1 timeout 60 "$SAN" --tool memcheck --error-exitcode 1 \
    "$B/servekit" moe --preset tiny --tokens 2000 --quant $q --device cuda --check --repeats 2 \
    >"$W/memcheck-fused-$q.log" 2>&1
  say "memcheck fused $q rc=$? $(grep -E 'ERROR SUMMARY|^check:' "$W/memcheck-fused-$q.log" | tr '\n' ' ')"
done
ROWS=("q30 --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192"
  "mix --preset mixtral-8x7b --quant bf16 --tokens 2048"
  "dsf8 --preset deepseek-v3 --quant fp8_block128 --tokens 8192")
for row in "${ROWS[@]}"; do
  read -r tag args <<<"$row"
  for rep in 1 2; do
    # shellcheck disable=SC2086
    bench_row "$tag-pass-$rep" SERVEKIT_DYNAMIC_FUSED_ACT=0 -- $args --routing uniform --path dynamic
    # shellcheck disable=SC2086
    bench_row "$tag-fused-$rep" SERVEKIT_DYNAMIC_FUSED_ACT=1 -- $args --routing uniform --path dynamic
  done
  [[ $tag == mix ]] && continue
  # shellcheck disable=SC2086
  bench_row "$tag-pass-stop4" SERVEKIT_DYNAMIC_FUSED_ACT=0 SERVEKIT_DIAG_DYNAMIC_STOP=4 -- \
    $args --routing uniform --path dynamic
  # shellcheck disable=SC2086
  bench_row "$tag-fused-stop3" SERVEKIT_DYNAMIC_FUSED_ACT=1 SERVEKIT_DIAG_DYNAMIC_STOP=3 -- \
    $args --routing uniform --path dynamic
  # shellcheck disable=SC2086
  bench_row "$tag-pass-stop3" SERVEKIT_DYNAMIC_FUSED_ACT=0 SERVEKIT_DIAG_DYNAMIC_STOP=3 -- \
    $args --routing uniform --path dynamic
done
say "done"
