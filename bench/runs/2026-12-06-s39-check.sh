#!/usr/bin/env bash
# Session 39, call 1: the GPU run session 38's weight-scale tail (286a31c) never had, and the
# whole suite on it, in one device call:
#   1. scripts/gpu-check.sh with no benchmark (build with tests, GPU and CPU suites, memcheck and
#      racecheck of the small layers), into OUT/check
#   2. compute-sanitizer memcheck of the GEMM tests that found the over-read (BGroupStride, every
#      fp8_block128 GEMM test) and the flat producer's (BF16SwapPingpong*), from check's build
#   3. with what is left: deepseek-v3's issue-3 rows (fp8_block128 and bf16 at 8192 tokens,
#      uniform, cuBLAS peer, 32 tokens checked), not measured since session 35, into OUT/ds.json
# Device (carry [".deps"], ~9.5 min): SERVEKIT_COMMIT=<sha> BUDGET_S=570 bash bench/runs/2026-12-06-s39-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-570}
work_dir check-s39
OUT=$OUT/check BUDGET_S=$((BUDGET_S - 150)) BENCH_SET=none scripts/gpu-check.sh >"$W/gpu-check.txt" 2>&1
say "gpu-check rc=$? $(grep -E 'tests passed|tests failed' "$OUT/check/tests.log" | tr '\n' ' ')"
tail -n 12 "$W/gpu-check.txt" >>"$W/$WORK_NAME.txt"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [[ -x build/servekit_gpu_tests ]] && (($(left) > 40)); then
  timeout $(($(left) > 140 ? 110 : $(left) - 30)) "$SAN" --tool memcheck --error-exitcode 1 \
    build/servekit_gpu_tests \
    --gtest_filter='GroupedGemmCuda.BGroupStride:GroupedGemmCuda.FP8Block128*:GroupedGemmCuda.BF16SwapPingpong*' \
    >"$W/memcheck-gemm.log" 2>&1
  say "memcheck gemm rc=$? $(grep -cE '^\[ +OK \]' "$W/memcheck-gemm.log") ok, $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED) ' "$W/memcheck-gemm.log" | tr '\n' ' ')"
  grep -E "Invalid|Access to|^\[  FAILED" "$W/memcheck-gemm.log" | head -n 10 >>"$W/$WORK_NAME.txt"
fi
t=$(($(left) - 10))
if ((t > 40)) && [[ -x build/servekit ]]; then
  timeout $t build/servekit bench moe --preset deepseek-v3 --quant fp8_block128,bf16 --tokens 8192 \
    --routing uniform --check-tokens 32 --max-seconds $((t - 10)) \
    --commit "${SERVEKIT_COMMIT:-unknown}" --out "$OUT/ds.json" >"$OUT/ds.log" 2>&1
  say "ds rc=$? $(grep -E '^deepseek' "$OUT/ds.log" | awk '{print $2 ":" $6 "us," $9 "TF," $13}' | tr '\n' ' ')"
fi
say done
