#!/usr/bin/env bash
# Session 35, call 4: issue 3's rows at the session's final GEMM code (the ping-pong swap tile up to
# 1024 rows per group), and where qwen3-30b's layer spends its time on the ping-pong swap tile.
#   1. build (tests off)
#   2. issue 3's rows with their cuBLAS peers, 32 tokens checked against the CPU reference
#      (OUT/issue3.json, .log)
#   3. qwen3-30b bf16 dynamic, 2048 and 8192 tokens, the forward cut after each pass
#      (SERVEKIT_DIAG_DYNAMIC_STOP=1, 2, 3, 5, then whole; 4 is the activation pass, fused here)
# Device (carry [".deps"], ~5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s35-final.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, work_dir, bench_row, issue3_rows
BUDGET_S=${BUDGET_S:-400}
work_dir s35-final
env JOBS=16 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
say "build done"
issue3_rows
Q="--preset qwen3-30b-a3b --quant bf16 --routing uniform --path dynamic"
for t in 2048 8192; do
  for s in 1 2 3 5 0; do
    # shellcheck disable=SC2086
    bench_row "t$t-stop$s" SERVEKIT_DIAG_DYNAMIC_STOP=$s -- $Q --tokens $t
  done
done
say "done"
