#!/usr/bin/env bash
# Session 15: how much of the static path's prefix is its cold start. The s15 prefix call
# (2026-12-01-s15-pre.sh) found the one-CTA route + plan kernel of deepseek-v3 at 20 us under ncu
# (which flushes every cache) for one token, ~2400 instructions of one routing warp, and the
# fp8_block128 planner at 6 us for a few microseconds of work. Here the same diag-stop rows with
# and without the benchmark's L2 flush (SERVEKIT_DIAG_BENCH_WARM_L2=1): kernel code and the
# small inputs come from DRAM only in the flushed rows.
# Run (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-01-s15-warm.sh
# Output: OUT/warm.tgz, OUT/warm.txt. ~3.5 minutes with a fresh build.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-250}
work_dir warm
env JOBS="$(nproc)" BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  >"$W/build.log" 2>&1 || { tail -n 40 "$W/build.log"; exit 1; }
say "build done"
SK="--routing uniform --path static"
for warm in 0 1; do
  for stop in 1 2 0; do
    bench_row "ds-warm$warm-stop$stop" SERVEKIT_DIAG_BENCH_WARM_L2=$warm SERVEKIT_DIAG_STATIC_STOP=$stop \
      -- --preset deepseek-v3 --quant fp8_block128 --tokens 1,8 $SK
  done
  for stop in 1 0; do
    bench_row "q235-warm$warm-stop$stop" SERVEKIT_DIAG_BENCH_WARM_L2=$warm SERVEKIT_DIAG_STATIC_STOP=$stop \
      -- --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8 $SK
  done
done
cat "$W/warm.txt"
