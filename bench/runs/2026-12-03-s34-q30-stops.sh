#!/usr/bin/env bash
# Session 34, call 4: where qwen3-30b-a3b's dynamic layer spends its time now that GEMM1's
# activation is fused on the swap-AB tile too: the forward cut after each pass
# (SERVEKIT_DIAG_DYNAMIC_STOP=1..5, then the whole layer), graph-timed, at 2048 tokens (swap tile)
# and 8192 (128-row tile); at 2048 also stops 3 and 4 with the swap fusion off
# (SERVEKIT_DIAG_SWAP_FUSED_ACT=0: GEMM1 alone, then GEMM1 + the pass). One round each.
# Device (carry [".deps"], ~4 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s34-q30-stops.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-400}
work_dir s34-q30-stops
env JOBS=16 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
say "build done"
Q="--preset qwen3-30b-a3b --quant bf16 --routing uniform --path dynamic"
for t in 2048 8192; do
  for s in 1 2 3 4 5 0; do
    # shellcheck disable=SC2086
    bench_row "t$t-stop$s" SERVEKIT_DIAG_DYNAMIC_STOP=$s -- $Q --tokens $t
  done
done
for s in 3 4 0; do
  # shellcheck disable=SC2086
  bench_row "t2048-pass-stop$s" SERVEKIT_DIAG_DYNAMIC_STOP=$s SERVEKIT_DIAG_SWAP_FUSED_ACT=0 -- $Q --tokens 2048
done
say "done"
