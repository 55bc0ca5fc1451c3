#!/usr/bin/env bash
# Session 35, call 2: the check of main after the swap-pick merge (1e3ff04), and per-pass data for
# qwen3-30b at 4096 / 8192 tokens under each tile.
#   1. scripts/gpu-check.sh with BENCH_SET=none: build, the whole GPU suite, CPU suite,
#      compute-sanitizer (its files in the tarball, check/)
#   2. issue 3's rows with their cuBLAS peers, 32 tokens checked against the CPU reference
#      (OUT/issue3.json, .log)
#   3. qwen3-30b bf16 8192 (512 rows per expert: the 128x256 tile on the 64-row interleave), the
#      forward cut after each pass (SERVEKIT_DIAG_DYNAMIC_STOP=2..4, whole), under the default
#      tile and under SERVEKIT_GEMM_TILE=swap (both GEMMs on the ping-pong swap tile); 4096 whole
#      under both. One round each.
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s35-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, work_dir, bench_row, issue3_rows
BUDGET_S=${BUDGET_S:-575}
work_dir s35-check
# BUDGET_S=380 cut the GPU tests off after 139 of 144 on a fresh lease (uncached build): use >= 440.
OUT="$W/check" BENCH_SET=none BUDGET_S=380 BUILD_DIR=$B scripts/gpu-check.sh >"$W/check.log" 2>&1
say "check rc=$?"
cat "$W/check/summary.txt" >>"$W/$WORK_NAME.txt" 2>/dev/null
issue3_rows
Q="--preset qwen3-30b-a3b --quant bf16 --routing uniform --path dynamic"
for tile in auto swap; do
  for s in 2 3 4 0; do
    # shellcheck disable=SC2086
    bench_row "t8192-$tile-stop$s" SERVEKIT_GEMM_TILE=$tile SERVEKIT_DIAG_DYNAMIC_STOP=$s -- $Q --tokens 8192
  done
  # shellcheck disable=SC2086
  bench_row "t4096-$tile" SERVEKIT_GEMM_TILE=$tile -- $Q --tokens 4096
done
say "done"
