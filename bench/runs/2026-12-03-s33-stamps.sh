#!/usr/bin/env bash
# Prepared in session 32; ran in session 33 at cba776e+stamps (ab/2026-12-03-s33-stamps).
# Where does one token's plan on the routing warp spend 3.8 us on deepseek-v3 (1.3 us on
# qwen3-235b int4)? docs/perf-notes.md, thirty-second pass, Next 2. bench/runs/plan-warp-stamps.patch
# moves two of the route + plan kernel's stamps: "routed" to right after route_token returns
# (before the named-barrier arrive and the PDL trigger), "planned" to after the group offsets
# (before the row, slot and task writes); "tasks done" stays after the partition tables. So:
# routed -> planned = trigger + offsets, planned -> tasks done = rows + tables. Diagnostic
# stamps only (SERVEKIT_DIAG_STATIC_TIMES); nothing else changes.
# Stages: apply the patch; build; RoutePlanCuda.* (the patch touches that kernel); stamps at one
# token, static path, two rounds: deepseek-v3 fp8_block128, qwen3-235b int4, kimi-k2 int4.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha>+stamps bash bench/runs/2026-12-03-s33-stamps.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-400}
work_dir plan-warp-stamps
patch -p1 <bench/runs/plan-warp-stamps.patch >"$W/patch.log" 2>&1 || { say "patch failed"; exit 1; }
build_dev "$W/build.log"
say "build done"
timeout 60 "$B/servekit_gpu_tests" --gtest_filter='RoutePlanCuda.*' >"$W/test-route.log" 2>&1
say "route + plan tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/test-route.log" | tr '\n' ' ')"
for round in 1 2; do
  for row in "deepseek-v3 fp8_block128" "qwen3-235b-a22b int4_w4a16" "kimi-k2 int4_w4a16"; do
    read -r preset quant <<<"$row"
    tag="r$round-${preset%%-*}-${quant%%_*}"
    bench_row "$tag" SERVEKIT_DIAG_STATIC_TIMES=1 -- --preset "$preset" --quant "$quant" \
      --tokens 1 --routing uniform --path static
    grep -E "diag-times route" "$W/$tag.log" | sed "s/^/$tag /" >>"$W/$WORK_NAME.txt"
  done
done
say "done"
