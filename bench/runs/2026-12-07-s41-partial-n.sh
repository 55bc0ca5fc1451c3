#!/usr/bin/env bash
# Prepared in session 40, not yet run: the partial token tile (sm90_flat_tma_mainloop.cuh,
# -DSERVEKIT_DIAG_PARTIAL_N=1: a group's last token tile of the ping-pong swap tile runs the
# narrowest of m64n48 / n96 / n128 / n144 wgmma that covers its real rows) against main.
#   1. main (tests off) in build/ and, beside it, the flagged tree (tests on), 8 jobs each
#   2. on the flagged build: every GroupedGemmCuda and MoECuda test (the GEMM tests' groups of
#      1, 17, 29, 61, 64, 65, 128, 144, 145 and 300 rows reach all four widths), then
#      compute-sanitizer memcheck of the ping-pong swap GEMM tests
#   3. qwen3-30b bf16 dynamic, uniform, --peer off: 2048, 8192 two rounds each, 4096 and 16384
#      one, main / flagged (same lease)
# Prediction (padding_sim.py: 144-token tiles pad 1.20x / 1.13x the rows at 2048 / 8192, the four
# widths ~1.06x / ~1.03x): 8192, tensor- and power-bound, -3 to -5% of the layer; 2048 -1 to -3%
# on an H200, level on an H100 (memory-bound there).
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s41-partial-n.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-560}
B=build
work_dir partial-n
build_beside pn -DSERVEKIT_DIAG_PARTIAL_N=1
gtest_run pn "$FB" 'GroupedGemmCuda.*:MoECuda.*' 170
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
if [[ -n $CS ]] && (($(left) > 150)); then
  timeout 90 "$CS" --tool memcheck "$FB/servekit_gpu_tests" \
    --gtest_filter='GroupedGemmCuda.BF16SwapPingpong*' >"$W/memcheck-pn.log" 2>&1
  say "memcheck pn rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$W/memcheck-pn.log" | tr '\n' ' ')"
fi
Q="--preset qwen3-30b-a3b --quant bf16 --routing uniform --path dynamic"
for row in "t2048-1 2048" "t8192-1 8192" "t4096 4096" "t2048-2 2048" "t8192-2 8192" "t16384 16384"; do
  read -r tag t <<<"$row"
  # shellcheck disable=SC2086
  bench_row "$tag-main" -- $Q --tokens $t
  # shellcheck disable=SC2086
  BIN=$FB/servekit bench_row "$tag-pn" -- $Q --tokens $t
done
say done
