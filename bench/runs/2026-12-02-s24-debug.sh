#!/usr/bin/env bash
# RAN in session 24 (bb235ee): every form hung; docs/perf-notes.md, twenty-fourth pass.
# Session 24, second call: the fused epilogue's first call hung (GroupedGemmCuda.BF16FusedActivation,
# every bench row with SERVEKIT_DYNAMIC_FUSED_ACT=1) and memcheck found writes one row past the
# intermediate on the tiny preset (N / 256 odd: the 1x2 cluster's tile past N; guarded now).
# Which part hangs: SERVEKIT_DIAG_FUSED_EPI=2 (the fused epilogue returns at once), 1 (computes, no
# stores), 0 (as merged), each on the GEMM test with a 40 s box; then the layer test and memcheck.
# Device (carry [".deps"], ~5 min): bash bench/runs/2026-12-02-s24-debug.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-330}
work_dir s24-debug
build_dev "$W/build.log"
say "build done"
for d in 2 1 0; do
  SERVEKIT_DIAG_FUSED_EPI=$d timeout 40 "$B/servekit_gpu_tests" \
    --gtest_filter='GroupedGemmCuda.BF16FusedActivation' >"$W/gemm-d$d.log" 2>&1
  say "gemm diag $d rc=$? $(grep -E '^\[  (PASSED|FAILED) |Failure' "$W/gemm-d$d.log" | head -3 | tr '\n' ' ')"
done
timeout 60 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.FP8Block128FusedActivation' \
  >"$W/gemm-fp8.log" 2>&1
say "gemm fp8 rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/gemm-fp8.log" | tr '\n' ' ')"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 60 "$SAN" --tool memcheck --error-exitcode 1 "$B/servekit" bench moe --preset tiny \
  --quant bf16,fp8_block128 --tokens 512 --routing uniform --path dynamic --repeats 2 --warmup 1 \
  --check-tokens 8 --threads 4 --peer off >"$W/memcheck-fused.log" 2>&1
say "memcheck fused rc=$? $(grep -E 'ERROR SUMMARY' "$W/memcheck-fused.log" | tr '\n' ' ')"
timeout 60 "$SAN" --tool memcheck --error-exitcode 1 "$B/servekit_gpu_tests" \
  --gtest_filter='GroupedGemmCuda.BF16FusedActivation' >"$W/memcheck-gemm.log" 2>&1
say "memcheck gemm rc=$? $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED) ' "$W/memcheck-gemm.log" | tr '\n' ' ')"
timeout 60 "$B/servekit_gpu_tests" --gtest_filter='MoECuda.FusedActivationMatchesThePass' \
  >"$W/moe.log" 2>&1
say "moe rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/moe.log" | tr '\n' ' ')"
say "done"
