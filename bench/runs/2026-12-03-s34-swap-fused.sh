#!/usr/bin/env bash
# Session 34, call 1: GEMM1's activation in the epilogue of bf16's 256x144 swap-AB tile
# (sm90_act_epilogue.cuh, fused_store_swap). One build; SERVEKIT_DIAG_SWAP_FUSED_ACT=0 gives the
# previous behaviour on that tile (the separate pass), so the A/B runs one binary.
#   1. build (tests included)
#   2. GPU tests: every GroupedGemmCuda test (BF16SwapFusedActivation is new: the fused swap
#      tile against GEMM1 + the pass, bit for bit, D untouched, guard rows), the layer tests that
#      run the swap tile (FusedActivationMatchesThePass at 384 tokens, SwapTileMatchesReference),
#      TokenCounts
#   3. rows (dynamic bf16, uniform), two rounds, swap fused 1 / 0: qwen3-30b 2048 and qwen3-235b
#      2048 (128 rows per expert: the swap tile); deepseek-v3 bf16 8192 (286 rows: the swap tile),
#      one round; qwen3-30b 4096 (256 rows), the new pick (swap tile, fused) against the 128-row
#      fused tile forced (the pick before this change), two rounds
#   4. memcheck of the new GEMM test
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s34-swap-fused.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-580}
work_dir s34-swap-fused
build_dev "$W/build.log"
say "build done"
for tu in grouped_gemm_bf16_swap grouped_gemm_bf16; do
  cuobjdump --dump-resource-usage "$B/CMakeFiles/servekit.dir/src/cuda/$tu.cu.o" 2>&1 |
    grep -E "REG:" | sed "s/^/$tu /" | head -n 3 >>"$W/$WORK_NAME.txt"
done
T=$B/servekit_gpu_tests
timeout 200 "$T" --gtest_filter='GroupedGemmCuda.*:MoECuda.FusedActivationMatchesThePass:MoECuda.SwapTileMatchesReference:MoECuda.TokenCounts' \
  >"$W/tests.log" 2>&1
say "tests rc=$? $(grep -cE '^\[ +OK \]' "$W/tests.log") ok, $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|fused .* vs pass" "$W/tests.log" | head -20 >>"$W/$WORK_NAME.txt"
DYN="--quant bf16 --routing uniform --path dynamic"
for rep in 1 2; do
  for v in 1 0; do
    # shellcheck disable=SC2086
    bench_row "q30-2048-fused$v-$rep" SERVEKIT_DIAG_SWAP_FUSED_ACT=$v -- --preset qwen3-30b-a3b --tokens 2048 $DYN
    # shellcheck disable=SC2086
    bench_row "q235-2048-fused$v-$rep" SERVEKIT_DIAG_SWAP_FUSED_ACT=$v -- --preset qwen3-235b-a22b --tokens 2048 $DYN
  done
  # shellcheck disable=SC2086
  bench_row "q30-4096-auto-$rep" -- --preset qwen3-30b-a3b --tokens 4096 $DYN
  # shellcheck disable=SC2086
  bench_row "q30-4096-large-$rep" SERVEKIT_GEMM_TILE=large -- --preset qwen3-30b-a3b --tokens 4096 $DYN
done
for v in 1 0; do
  # shellcheck disable=SC2086
  bench_row "ds-8192-fused$v" SERVEKIT_DIAG_SWAP_FUSED_ACT=$v -- --preset deepseek-v3 --tokens 8192 $DYN
done
t=$(($(left) - 10))
if ((t > 30)); then
  ((t > 120)) && t=120
  timeout --kill-after=5 $t compute-sanitizer --tool memcheck --error-exitcode 1 "$T" \
    --gtest_filter='GroupedGemmCuda.BF16SwapFusedActivation' >"$W/memcheck.log" 2>&1
  say "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/memcheck.log" | tr '\n' ' ')"
else
  say "memcheck skipped (budget)"
fi
say "done"
