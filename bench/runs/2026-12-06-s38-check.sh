#!/usr/bin/env bash
# Session 38, call 1: the full check of HEAD that sessions 36-37 could not run (the whole GPU suite
# last passed in session 35; the flat producer of the ping-pong swap tile, the default since
# session 37, was never under memcheck), in one device call:
#   1. scripts/gpu-check.sh with no benchmark (build, GPU and CPU suites, memcheck, racecheck), into
#      OUT/check
#   2. compute-sanitizer memcheck of the GEMM tests that run the flat producer (the ping-pong swap
#      tile with and without the fused activation, B's group strides)
#   3. the plan's scan inside the scatter launch (SERVEKIT_PLAN_SCAN_KERNEL=0) against the one-block
#      scan launch (=1, the default): qwen3-30b bf16 dynamic at 2048 and 8192 tokens cut after
#      route + plan (SERVEKIT_DIAG_DYNAMIC_STOP=1), two rounds, then the whole layer, one round
#   4. qwen3-30b bf16 at 2048 and 8192 tokens (issue 3's rows that the flat producer moved) with
#      the cuBLAS peer, 32 tokens checked, into OUT/q30.json and .log, with what is left
# Device (carry [".deps"], ~9.5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-06-s38-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-585}
work_dir check-s38
OUT=$OUT/check BUDGET_S=$((BUDGET_S - 75)) BENCH_SET=none scripts/gpu-check.sh >"$W/gpu-check.txt" 2>&1
say "gpu-check rc=$? $(grep -E 'tests passed|tests failed' "$OUT/check/tests.log" | tr '\n' ' ')"
tail -n 12 "$W/gpu-check.txt" >>"$W/$WORK_NAME.txt"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [[ -x build/servekit_gpu_tests ]] && (($(left) > 40)); then
  timeout $(($(left) > 100 ? 60 : $(left) - 35)) "$SAN" --tool memcheck --error-exitcode 1 \
    build/servekit_gpu_tests \
    --gtest_filter='GroupedGemmCuda.BF16SwapPingpong*:GroupedGemmCuda.BGroupStride' \
    >"$W/memcheck-flat.log" 2>&1
  say "memcheck flat rc=$? $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$W/memcheck-flat.log" | tr '\n' ' ')"
fi
BIN=build/servekit
Q="--preset qwen3-30b-a3b --quant bf16 --routing uniform --path dynamic --tokens 2048,8192"
for r in 1 2; do
  for m in 1 0; do
    # shellcheck disable=SC2086
    bench_row "stop1-scan$m-r$r" SERVEKIT_PLAN_SCAN_KERNEL=$m SERVEKIT_DIAG_DYNAMIC_STOP=1 -- $Q
  done
done
for m in 1 0; do
  # shellcheck disable=SC2086
  bench_row "layer-scan$m" SERVEKIT_PLAN_SCAN_KERNEL=$m -- $Q
done
t=$(($(left) - 10))
if ((t > 25)); then
  timeout $t build/servekit bench moe --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192 \
    --routing uniform --check-tokens 32 --max-seconds $((t - 10)) \
    --commit "${SERVEKIT_COMMIT:-unknown}" --out "$OUT/q30.json" >"$OUT/q30.log" 2>&1
  say "q30 rc=$? $(grep -E '^qwen' "$OUT/q30.log" | awk '{print $3 ":" $6 "/" $9}' | tr '\n' ' ')"
fi
say done
