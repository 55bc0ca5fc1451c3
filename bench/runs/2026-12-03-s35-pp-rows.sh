#!/usr/bin/env bash
# Session 35, call 3: the ping-pong swap tile up to 512 rows per group (kSwapPingpongMaxRows,
# choose_gemm_tile's new swap_pingpong argument), and the five GPU tests that call 2's suite did
# not reach (its box ran out after 139 of 144, none failed).
#   1. build (tests on)
#   2. the five static tests left over, every GroupedGemmCuda test, the layer tests that run the
#      swap tiles
#   3. qwen3-30b bf16 dynamic, uniform, 1024 / 2048 / 4096 / 8192 / 16384 tokens (64 ... 1024 rows
#      per expert) under auto (the new rule), SERVEKIT_GEMM_TILE=large and =swap; two rounds
# Device (carry [".deps"], ~5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s35-pp-rows.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-420}
work_dir s35-pp-rows
build_dev "$W/build.log"
say "build done"
S='StaticMoECuda.MatchesHostOnDequantizedWeights/(mxfp4_w4a16_swiglu_oai_H2880|bf16_relu2_H2880|nvfp4_w4a16_geglu_H1024|fp8_block128_swiglu_H1024_I512_T32_uniform_bias_y|bf16_swiglu_H512_I384_T8_skewed_bias_y)'
timeout 150 ctest --test-dir "$B" -L gpu -R "$S|GroupedGemmCuda|SwapTile|FusedActivation|RejectsAnUnknown" \
  --output-on-failure --timeout 60 >"$W/tests.log" 2>&1
say "tests rc=$? $(grep -E 'tests passed|tests failed' "$W/tests.log")"
grep -E "Failed|\*\*\*" "$W/tests.log" | head -n 20 >>"$W/$WORK_NAME.txt"
Q="--preset qwen3-30b-a3b --quant bf16 --routing uniform --path dynamic --tokens 1024,2048,4096,8192,16384"
for rep in 1 2; do
  for tile in auto large swap; do
    # shellcheck disable=SC2086
    bench_row "$tile-$rep" SERVEKIT_GEMM_TILE=$tile -- $Q
  done
done
say "done"
