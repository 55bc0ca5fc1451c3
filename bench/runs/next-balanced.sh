#!/usr/bin/env bash
# Prepared in session 26, not run yet. What the tile padding costs the issue-3 rows: the same
# rows with uniform routing (each expert ~T*K/E rows, random; qwen3-30b at 2048 tokens pads to
# 1.47x the rows, bench/tools/padding_sim.py) and with balanced routing (every expert exactly
# T*K/E rows, +-1: 128 at qwen3-30b 2048, no padding). The difference bounds what a token tile
# fitted to the rows (swap-AB, perf-notes "Twenty-sixth pass", Next 1) can gain.
# Device (carry [".deps"], ~4 min): bash bench/runs/next-balanced.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-300}
work_dir next-balanced
build_dev "$W/build.log"
say "build done"
for rep in 1 2; do
  for r in uniform balanced; do
    bench_row "q30-$r-$rep" -- --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192 --routing $r \
      --path dynamic
    bench_row "mix-$r-$rep" -- --preset mixtral-8x7b --quant bf16 --tokens 2048 --routing $r \
      --path dynamic
  done
done
for r in uniform balanced; do
  bench_row "q30-$r-stop3" SERVEKIT_DIAG_DYNAMIC_STOP=3 -- --preset qwen3-30b-a3b --quant bf16 \
    --tokens 2048,8192 --routing $r --path dynamic
done
say "done"
