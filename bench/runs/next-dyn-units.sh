#!/usr/bin/env bash
# Prepared for the next session's first device call (written 2026-12-01, s13): the GPU tests of
# the static path, which include the dynamic-units variant never yet run on a GPU
# (SERVEKIT_STATIC_DYNAMIC_UNITS, docs/static_moe.md), then a sweep of its threshold against the
# stream-K default on the rows it targets, and the per-CTA stamps with it on.
# Run (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/next-dyn-units.sh
# Output: OUT/dyn.tgz, OUT/dyn.txt. ~6 minutes with a fresh build.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-540}
work_dir dyn
build_dev "$W/build.log"
say "build done"
timeout 150 $B/servekit_gpu_tests --gtest_filter='*Static*:MoECuda*:RoutePlanCuda.*' >"$W/tests.log" 2>&1
say "GPU tests rc=$? $(grep -E 'PASSED|FAILED' "$W/tests.log" | tr '\n' ' ')"
SK="--routing uniform --path static"
for n in 0 4 8 12; do
  bench_row "kimi-dyn$n" SERVEKIT_STATIC_DYNAMIC_UNITS=$n -- --preset kimi-k2 --quant int4_w4a16 --tokens 8,32 $SK
  bench_row "ds-dyn$n" SERVEKIT_STATIC_DYNAMIC_UNITS=$n -- --preset deepseek-v3 --quant fp8_block128 --tokens 8,32 $SK
done
bench_row q235-dyn0 SERVEKIT_STATIC_DYNAMIC_UNITS=0 -- --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 8,32 $SK
bench_row q235-dyn8 SERVEKIT_STATIC_DYNAMIC_UNITS=8 -- --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 8,32 $SK
bench_row stamps-kimi SERVEKIT_STATIC_DYNAMIC_UNITS=8 SERVEKIT_DIAG_STATIC_TIMES=2 -- --preset kimi-k2 --quant int4_w4a16 --tokens 32 $SK
grep -E "diag-times" "$W/stamps-kimi.log" >>"$W/dyn.txt" 2>/dev/null
cat "$W/dyn.txt"
