#!/usr/bin/env bash
# Session 15: where the static path's prefix goes (the time before GEMM1's release: ~12 us on
# qwen3-235b, ~25 us on deepseek-v3 in the s12 stamps). Graph-timed rows cut short by
# SERVEKIT_DIAG_STATIC_STOP (1: route + plan only, 2: + the planner, 0: the whole layer), then
# the isolated kernel durations under ncu, then ncu's per-instruction stall samples of the
# one-CTA route + plan kernel of deepseek-v3 at one token.
# Run (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-01-s15-pre.sh
# Output: OUT/pre.tgz, OUT/pre.txt. ~4 minutes with a fresh build.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-330}
work_dir pre
env JOBS="$(nproc)" BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  >"$W/build.log" 2>&1 || { tail -n 40 "$W/build.log"; exit 1; }
say "build done"
SK="--routing uniform --path static"
for stop in 1 2 0; do
  bench_row "ds-stop$stop" SERVEKIT_DIAG_STATIC_STOP=$stop -- --preset deepseek-v3 --quant fp8_block128 --tokens 1,8 $SK
  bench_row "kimi-stop$stop" SERVEKIT_DIAG_STATIC_STOP=$stop -- --preset kimi-k2 --quant int4_w4a16 --tokens 1,8 $SK
  bench_row "q235-stop$stop" SERVEKIT_DIAG_STATIC_STOP=$stop -- --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8 $SK
done
(($(left) > 90)) && {
  OUT="$W/ncu" BUILD_DIR="$B" BUDGET_S=$(($(left) - 60)) PROFILE_ROWS="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 --path static
 --then --preset kimi-k2 --quant int4_w4a16 --tokens 1 --path static
 --then --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8 --path static" \
    bash scripts/gpu-profile.sh >"$W/ncu.log" 2>&1
  say "ncu durations rc=$?"
  cat "$W/ncu/ncu-table.txt" >>"$W/pre.txt" 2>/dev/null
}
(($(left) > 45)) && {
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
  timeout $(($(left) - 15)) "$NCU" --clock-control none --page source --print-source sass \
    --section SourceCounters --section WarpStateStats --kernel-name regex:route_and_plan \
    --launch-count 1 "$B/servekit" bench moe --preset deepseek-v3 --quant fp8_block128 \
    --tokens 1 --path static --routing uniform --repeats 1 --warmup 0 --peer off \
    --check-tokens 1 >"$W/ncu-source-ds1.txt" 2>&1
  say "ncu source rc=$?"
}
cat "$W/pre.txt"
